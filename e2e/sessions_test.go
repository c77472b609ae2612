package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/yukta/yukta/adapters/postgres/pgtest"
	"github.com/yukta/yukta/api/apiclient"
)

const jsonType = "application/json"

func session(id string, workflows ...string) []byte {
	var wfs []string
	for _, w := range workflows {
		wfs = append(wfs, fmt.Sprintf(`{"workflowId":%q,"description":"wf %s","nodes":[
			{"nodeId":"start","type":"MANUAL"},
			{"nodeId":"call","type":"HTTP_REQUEST","config":{"url":"https://example.com/hook","authorization":"Bearer canary-7f3a"}},
			{"nodeId":"out","type":"RESULT"}],
			"edges":[{"source":"start","target":"call"},{"source":"call","target":"out"}]}`, w, w))
	}
	return fmt.Appendf(nil, `{"name":"Session %s","description":"e2e","initiator":"e2e","workflows":[%s]}`, id, strings.Join(wfs, ","))
}

func TestSessionLifecycle(t *testing.T) {
	t.Parallel()
	s := startServer(t, serverOptions{DSN: pgtest.NewDatabase(t)})
	ctx := context.Background()
	c := s.Client

	put, err := c.PutSessionWithBodyWithResponse(ctx, "orders", nil, jsonType, bytes.NewReader(session("orders", "intake", "billing")))
	if err != nil {
		t.Fatal(err)
	}
	if put.StatusCode() != http.StatusCreated || put.JSON201 == nil || !slices.Equal(put.JSON201.Workflows, []string{"intake", "billing"}) {
		t.Fatalf("create: %d %s, want 201 listing intake,billing", put.StatusCode(), put.Body)
	}

	got, err := c.GetSessionWithResponse(ctx, "orders")
	if err != nil || got.JSON200 == nil {
		t.Fatalf("get: %v %s", err, got.Body)
	}
	if deref(got.JSON200.SessionId) != "orders" || got.JSON200.Name != "Session orders" || len(got.JSON200.Workflows) != 2 {
		t.Fatalf("get = %+v", got.JSON200)
	}
	if cfg := deref(got.JSON200.Workflows[0].Nodes[1].Config); cfg["authorization"] != "***" || cfg["url"] != "https://example.com/hook" {
		t.Fatalf("secret config field read back as %v, want *** (url kept)", cfg)
	}
	if strings.Contains(string(got.Body), "canary-7f3a") {
		t.Fatal("a secret leaked in the session read")
	}

	// Replace: billing is dropped. Sending the read document back keeps the masked secret.
	doc := *got.JSON200
	doc.Workflows = doc.Workflows[:1]
	body, _ := json.Marshal(doc)
	put, err = c.PutSessionWithBodyWithResponse(ctx, "orders", nil, jsonType, bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if put.StatusCode() != http.StatusOK || put.JSON200 == nil || !slices.Equal(put.JSON200.RemovedWorkflows, []string{"billing"}) {
		t.Fatalf("replace: %d %s, want 200 removing billing", put.StatusCode(), put.Body)
	}
	wf, err := c.GetWorkflowWithResponse(ctx, "orders", "billing")
	if err != nil || wf.StatusCode() != http.StatusNotFound || !strings.Contains(string(wf.Body), "get_session_details") {
		t.Fatalf("removed workflow: %d %s, want 404 naming the next call", wf.StatusCode(), wf.Body)
	}
	wf, err = c.GetWorkflowWithResponse(ctx, "orders", "intake")
	if err != nil || wf.JSON200 == nil || len(wf.JSON200.Nodes) != 3 || deref(wf.JSON200.Edges[0].SourcePort) != "default" {
		t.Fatalf("workflow: %v %s", err, wf.Body)
	}

	list, err := c.ListSessionsWithResponse(ctx, &apiclient.ListSessionsParams{})
	if err != nil || list.JSON200 == nil || len(list.JSON200.Sessions) != 1 || list.JSON200.Sessions[0].WorkflowCount != 1 {
		t.Fatalf("list: %v %s", err, list.Body)
	}

	del, err := c.DeleteSessionWithResponse(ctx, "orders", nil)
	if err != nil || del.StatusCode() != http.StatusNoContent {
		t.Fatalf("delete: %v %d", err, del.StatusCode())
	}
	got, err = c.GetSessionWithResponse(ctx, "orders")
	if err != nil || got.StatusCode() != http.StatusNotFound || got.ApplicationproblemJSON404 == nil ||
		!strings.Contains(deref(got.ApplicationproblemJSON404.Detail), "GET /api/sessions") {
		t.Fatalf("get after delete: %d %s, want 404 naming the list call", got.StatusCode(), got.Body)
	}
}

func TestInvalidSessionListsEveryErrorAndStoresNothing(t *testing.T) {
	t.Parallel()
	s := startServer(t, serverOptions{DSN: pgtest.NewDatabase(t)})
	ctx := context.Background()
	bad := []byte(`{"name":"Broken","colour":"red","workflows":[{"workflowId":"w","nodes":[
		{"nodeId":"start","type":"MANUAL"},
		{"nodeId":"a","type":"LOG"},
		{"nodeId":"b","type":"LOG"},
		{"nodeId":"out","type":"RESULT"}],
		"edges":[
		{"source":"start","target":"a"},
		{"source":"a","target":"b"},
		{"source":"b","target":"a"},
		{"source":"a","target":"ghost"},
		{"source":"start","target":"out","sourcePort":"approved"}]}]}`)
	res, err := s.Client.PutSessionWithBodyWithResponse(ctx, "broken", nil, jsonType, bytes.NewReader(bad))
	if err != nil {
		t.Fatal(err)
	}
	if res.StatusCode() != http.StatusBadRequest || res.ApplicationproblemJSON400 == nil {
		t.Fatalf("got %d %s, want 400 problem", res.StatusCode(), res.Body)
	}
	if ct := res.HTTPResponse.Header.Get("Content-Type"); ct != "application/problem+json" {
		t.Fatalf("content type %q, want application/problem+json", ct)
	}
	want := map[string]string{ // path -> a word the message must contain
		"colour":                           "unknown field",
		"workflows[0].edges":               "cycle",
		"workflows[0].edges[3].target":     "ghost",
		"workflows[0].edges[4].sourcePort": "approved",
	}
	errs := deref(res.ApplicationproblemJSON400.Errors)
	for path, word := range want {
		if !slices.ContainsFunc(errs, func(v apiclient.Violation) bool { return v.Path == path && strings.Contains(v.Message, word) }) {
			t.Errorf("no violation at %s mentioning %q in %+v", path, word, errs)
		}
	}
	got, _ := s.Client.GetSessionWithResponse(ctx, "broken")
	if got.StatusCode() != http.StatusNotFound {
		t.Fatalf("refused session was stored: %d", got.StatusCode())
	}
}

func TestDataSurvivesKill(t *testing.T) {
	t.Parallel()
	dsn := pgtest.NewDatabase(t)
	s := startServer(t, serverOptions{DSN: dsn})
	res, err := s.Client.PutSessionWithBodyWithResponse(context.Background(), "durable", nil, jsonType, bytes.NewReader(session("durable", "w")))
	if err != nil || res.StatusCode() != http.StatusCreated {
		t.Fatalf("apply: %v %s", err, res.Body)
	}
	s.Kill() // kill -9: the apply was acknowledged, so it must be there
	s2 := startServer(t, serverOptions{DSN: dsn})
	got, err := s2.Client.GetSessionWithResponse(context.Background(), "durable")
	if err != nil || got.JSON200 == nil || got.JSON200.Workflows[0].WorkflowId != "w" {
		t.Fatalf("after kill -9 and restart: %v %s", err, got.Body)
	}
}

func TestExamplesApply(t *testing.T) {
	t.Parallel()
	s := startServer(t, serverOptions{DSN: pgtest.NewDatabase(t)})
	files, _ := filepath.Glob("../examples/*.json")
	if len(files) == 0 {
		t.Fatal("no examples found")
	}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		var head struct {
			SessionID string `json:"sessionId"`
		}
		_ = json.Unmarshal(b, &head)
		res, err := s.Client.PutSessionWithBodyWithResponse(context.Background(), head.SessionID, nil, jsonType, bytes.NewReader(b))
		if err != nil || res.StatusCode() != http.StatusCreated || res.JSON201 == nil || len(res.JSON201.Warnings) != 0 {
			t.Errorf("%s: %v %s, want 201 with no warnings", f, err, res.Body)
		}
	}
}

func deref[T any](p *T) T {
	var zero T
	if p == nil {
		return zero
	}
	return *p
}

// TestSessionListShowsLastRunsAndSearches: the sessions list carries each
// workflow's newest run and pause (what the console's sessions page shows),
// the search runs on the server within a limited key's sessions, the
// session's own workflow list reads the same, and the history names who
// started each run through which door.
func TestSessionListShowsLastRunsAndSearches(t *testing.T) {
	t.Parallel()
	e := newAccessEnv(t)
	ctx := context.Background()
	op := keyedClient(t, e.s, testKeys["operator"])
	second := e.start("alpha", "wf", map[string]any{"n": 2})
	e.waitStatus("alpha", second, apiclient.ExecutionStatusSUCCESS)
	if res, err := op.PauseWorkflowWithResponse(ctx, "beta", "wf", nil, apiclient.WorkflowPauseRequest{Reason: ptr("maintenance")}); err != nil || res.StatusCode() != http.StatusOK {
		t.Fatalf("pause beta/wf: %v %s", err, res.Body)
	}

	list := func(c *apiclient.ClientWithResponses, q string) []apiclient.SessionSummary {
		t.Helper()
		p := &apiclient.ListSessionsParams{}
		if q != "" {
			p.Q = &q
		}
		res, err := c.ListSessionsWithResponse(ctx, p)
		if err != nil || res.JSON200 == nil {
			t.Fatalf("list sessions q=%q: %v %d %s", q, err, res.StatusCode(), res.Body)
		}
		return res.JSON200.Sessions
	}
	all := list(e.c, "")
	if len(all) != 2 {
		t.Fatalf("sessions: %+v", all)
	}
	a, b := all[0], all[1]
	if a.SessionId != "alpha" || len(a.Workflows) != 1 || a.Workflows[0].WorkflowId != "wf" || a.Workflows[0].NodeCount != 2 ||
		a.Workflows[0].LastExecution == nil || a.Workflows[0].LastExecution.ExecutionId != second ||
		a.Workflows[0].LastExecution.Status != apiclient.ExecutionStatusSUCCESS || a.Workflows[0].LastExecution.EndedAt == nil ||
		a.Workflows[0].Pause != nil {
		t.Errorf("alpha = %+v, want wf with its newest run %s SUCCESS and no pause", a, second)
	}
	if b.SessionId != "beta" || b.Workflows[0].LastExecution == nil || b.Workflows[0].LastExecution.ExecutionId != e.execs["beta"] ||
		b.Workflows[0].Pause == nil || b.Workflows[0].Pause.By != "key:operator" || b.Workflows[0].Pause.Reason != "maintenance" {
		t.Errorf("beta = %+v, want wf paused by key:operator for maintenance", b)
	}
	ids := func(ss []apiclient.SessionSummary) (out []string) {
		for _, s := range ss {
			out = append(out, s.SessionId)
		}
		return out
	}
	limited := keyedClient(t, e.s, testKeys["limited"])
	for _, c := range []struct {
		name string
		c    *apiclient.ClientWithResponses
		q    string
		want []string
	}{
		{"admin, by id", e.c, "ALPH", []string{"alpha"}},
		{"admin, by name", e.c, "e2e beta", []string{"beta"}},
		{"admin, everything", e.c, "e2e", []string{"alpha", "beta"}},
		{"limited, its own", limited, "e2e", []string{"alpha"}},
		{"limited, another's", limited, "beta", nil},
	} {
		if got := ids(list(c.c, c.q)); !slices.Equal(got, c.want) {
			t.Errorf("%s: q=%q listed %v, want %v", c.name, c.q, got, c.want)
		}
	}
	status, body, _ := call(t, e.s, http.MethodGet, "/api/sessions?q="+strings.Repeat("x", 201), testKeys["viewer"], nil)
	if status != http.StatusBadRequest || !strings.Contains(string(body), "q") {
		t.Errorf("a 201-character search: %d %s, want 400 naming q", status, body)
	}

	ws, err := keyedClient(t, e.s, testKeys["viewer"]).ListWorkflowsWithResponse(ctx, "beta")
	if err != nil || ws.JSON200 == nil || len(ws.JSON200.Workflows) != 1 || ws.JSON200.Workflows[0].Pause == nil ||
		ws.JSON200.Workflows[0].LastExecution == nil || ws.JSON200.Workflows[0].LastExecution.ExecutionId != e.execs["beta"] {
		t.Fatalf("workflows of beta: %v %s", err, ws.Body)
	}
	if ws, err := limited.ListWorkflowsWithResponse(ctx, "beta"); err != nil || ws.StatusCode() == http.StatusOK {
		t.Errorf("a key limited to alpha lists beta's workflows: %v %d", err, ws.StatusCode())
	}
	if ws, err := e.c.ListWorkflowsWithResponse(ctx, "nope"); err != nil || ws.StatusCode() != http.StatusNotFound {
		t.Errorf("workflows of an unknown session: %v %d %s", err, ws.StatusCode(), ws.Body)
	}

	hist, err := e.c.ListExecutionsWithResponse(ctx, "alpha", nil)
	if err != nil || hist.JSON200 == nil || len(hist.JSON200.Executions) != 2 {
		t.Fatalf("history: %v %s", err, hist.Body)
	}
	for _, x := range hist.JSON200.Executions {
		if x.Actor != "key:admin" || x.Channel != "rest" {
			t.Errorf("run %s started by %q via %q, want key:admin via rest", x.ExecutionId, x.Actor, x.Channel)
		}
	}
}
