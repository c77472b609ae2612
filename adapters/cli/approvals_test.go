package cli

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
)

// reviewAnswer is a review as the server sends it: waiting for approval,
// its command with a number beyond a double's exact range.
const reviewAnswer = `{"reviewId":"r-1","status":"AWAITING_APPROVAL","sessionId":"ci","workflowId":"nap","executionId":"e-1",
	"command":{"type":"StopWorkflow","target":"execution:e-1","mode":"CANCEL","args":{"n":9007199254740993}},
	"actor":"key:ops","channel":"cli (claimed)","reason":"operator stop","reviewers":["approver"],"createdAt":"2026-03-01T12:00:00Z",
	"steps":[{"at":"2026-03-01T12:00:00Z","by":"key:ops","move":"REQUEST","reason":"operator stop","status":"PENDING","asking":"approver"},
	{"at":"2026-03-01T12:00:01Z","by":"supervisor:approver","move":"REQUIRE_APPROVAL","reason":"a person decides stops","status":"AWAITING_APPROVAL"}]}`

func TestApprovalCommands(t *testing.T) {
	var body atomic.Value
	f := newFake(t, func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		body.Store(string(b))
		switch {
		case r.Method == http.MethodGet && r.URL.Path == "/api/approvals" && r.URL.Query().Get("status") == "DENIED":
			writeJSON(w, 200, map[string]any{"reviews": []any{}})
		case r.Method == http.MethodGet && r.URL.Path == "/api/approvals":
			w.Header().Set("Content-Type", "application/json")
			_, _ = io.WriteString(w, `{"reviews":[`+reviewAnswer+`]}`)
		case r.Method == http.MethodGet:
			w.Header().Set("Content-Type", "application/json")
			_, _ = io.WriteString(w, reviewAnswer)
		case r.Method == http.MethodPost && strings.Contains(string(b), "REJECT"):
			w.Header().Set("Content-Type", "application/problem+json")
			w.WriteHeader(409)
			_, _ = io.WriteString(w, `{"type":"urn:yukta:problem:conflict","title":"Conflict","status":409,"detail":"review r-1 is already APPLIED; nothing was changed"}`)
		case r.Method == http.MethodPost:
			w.Header().Set("Content-Type", "application/json")
			_, _ = io.WriteString(w, strings.Replace(strings.Replace(reviewAnswer, `"status":"AWAITING_APPROVAL","sessionId"`, `"status":"APPLIED","sessionId"`, 1),
				`"reviewers"`, `"outcome":{"commandId":"c-9","status":"applied"},"reviewers"`, 1))
		}
	})
	env := map[string]string{"YUKTA_SERVER": f.URL}

	out, errOut, code := run(t, env, "approvals", "list")
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if code != 0 || len(lines) != 2 || !strings.HasPrefix(lines[0], "APPROVAL") ||
		strings.Join(strings.Fields(lines[1]), " ") != "r-1 AWAITING_APPROVAL ci StopWorkflow execution:e-1 key:ops 2026-03-01T12:00:00.000Z a person decides stops" {
		t.Fatalf("list: exit %d\n%s%s", code, out, errOut)
	}
	if q := f.requests()[0].URL.RawQuery; q != "" {
		t.Errorf("list sent the query %q, want none (the server's default)", q)
	}
	out, _, code = run(t, env, "approvals", "list", "--status", "denied", "--limit", "5")
	if q := f.requests()[1].URL.Query(); code != 0 || out != "no reviews\n" || q.Get("status") != "DENIED" || q.Get("limit") != "5" {
		t.Fatalf("list --status denied: exit %d %q, query %v", code, out, q)
	}

	out, _, code = run(t, env, "approvals", "show", "r-1")
	for _, want := range []string{"approval: r-1\nstatus: AWAITING_APPROVAL\nsession: ci\nworkflow: nap\nexecution: e-1\n",
		`command: {"args":{"n":9007199254740993},"mode":"CANCEL","target":"execution:e-1","type":"StopWorkflow"}`,
		"\nreviewers: approver\n", "\nAT ", "supervisor:approver  REQUIRE_APPROVAL  AWAITING_APPROVAL  a person decides stops"} {
		if code != 0 || !strings.Contains(out, want) {
			t.Fatalf("show: exit %d, lacks %q\n%s", code, want, out)
		}
	}
	if r := f.requests()[2]; r.URL.Path != "/api/approvals/r-1" {
		t.Errorf("show asked %s", r.URL.Path)
	}

	out, _, code = run(t, env, "approvals", "approve", "r-1", "--reason", "change 42")
	var sent map[string]any
	_ = json.Unmarshal([]byte(body.Load().(string)), &sent)
	if code != 0 || !strings.Contains(out, "status: APPLIED\n") || !strings.Contains(out, `outcome: {"commandId":"c-9","status":"applied"}`) ||
		sent["decision"] != "APPROVE" || sent["reason"] != "change 42" || f.requests()[3].URL.Path != "/api/approvals/r-1" {
		t.Fatalf("approve: exit %d, sent %v\n%s", code, sent, out)
	}
	out, errOut, code = run(t, env, "approvals", "reject", "r-1")
	if code != 1 || out != "" || !strings.Contains(errOut, "409 Conflict: review r-1 is already APPLIED") {
		t.Fatalf("reject: exit %d %q %q", code, out, errOut)
	}

	// Usage errors reach no server.
	n := len(f.requests())
	for _, args := range [][]string{{}, {"explode"}, {"show"}, {"approve"}, {"reject", "a", "b"}, {"list", "x"}, {"list", "--limit", "501"}} {
		if _, _, code := run(t, env, "approvals", args...); code != 2 {
			t.Errorf("approvals %v: exit %d, want 2", args, code)
		}
	}
	if len(f.requests()) != n {
		t.Errorf("usage errors sent %d requests", len(f.requests())-n)
	}
}

// ticketAnswer is a 202: the command is held for review.
const ticketAnswer = `{"reviewId":"r-2","status":"PENDING","asking":"approver","deadline":"2026-03-01T12:00:30Z","message":"StopWorkflow is held for review by supervisor approver (review r-2)"}`

func TestHeldCommandsPrintTheirReview(t *testing.T) {
	f := newFake(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(202)
		_, _ = io.WriteString(w, ticketAnswer)
	})
	env := map[string]string{"YUKTA_SERVER": f.URL}
	want := "status: review\nreview: r-2\nreview-status: PENDING\nasking: approver\ndeadline: 2026-03-01T12:00:30.000Z\n" +
		"message: StopWorkflow is held for review by supervisor approver (review r-2)\nfollow: yukta approvals show r-2\n"
	for _, args := range [][]string{
		{"control", "s1", "e-1", "STOP"},
		{"control", "s1", "e-1", "--node", "n", "RETRY"},
		{"control", "s1", "e-1", "--node", "n", "BREAKPOINT", "--field", "a", "--equals", "1"},
		{"stop-all", "s1", "wf"},
		{"run", "s1/wf"},
	} {
		out, errOut, code := run(t, env, args[0], args[1:]...)
		if code != 0 || out != want {
			t.Errorf("%v: exit %d\n%s%s\nwant\n%s", args, code, out, errOut, want)
		}
	}
}

// TestRunWatchFollowsAHeldStart: run --watch on a held start follows the
// review; a denied start exits 1 with who said no.
func TestRunWatchFollowsAHeldStart(t *testing.T) {
	f := newFake(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		if r.Method == http.MethodPost {
			w.WriteHeader(202)
			_, _ = io.WriteString(w, strings.Replace(ticketAnswer, `"PENDING"`, `"AWAITING_APPROVAL"`, 1))
			return
		}
		_, _ = io.WriteString(w, `{"reviewId":"r-2","status":"DENIED","sessionId":"s1","command":{"type":"StartWorkflow","target":"workflow:s1/wf"},
			"actor":"key:ops","channel":"cli (claimed)","reviewers":["approver"],"createdAt":"2026-03-01T12:00:00Z",
			"steps":[{"at":"2026-03-01T12:00:00Z","by":"key:ops","move":"REQUEST","status":"PENDING"},
			{"at":"2026-03-01T12:00:02Z","by":"key:admin","move":"REJECT","reason":"not today","status":"DENIED"}]}`)
	})
	out, errOut, code := run(t, map[string]string{"YUKTA_SERVER": f.URL}, "run", "s1/wf", "--watch")
	if code != 1 || !strings.Contains(out, "decide: yukta approvals approve r-2") || !strings.HasSuffix(out, "review DENIED\n") ||
		!strings.Contains(errOut, "the start was denied: not today") {
		t.Fatalf("exit %d\n%s%s", code, out, errOut)
	}
}
