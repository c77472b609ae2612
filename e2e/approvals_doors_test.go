package e2e

import (
	"context"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/yukta/yukta/adapters/mcpserver"
)

// doorsWorld is a server with the access keys and a rules supervisor that
// parks every STOP on "alpha" and "beta" for an ADMIN's approval; its own
// requests are an ADMIN's.
type doorsWorld struct{ *reviewWorld }

func newDoorsWorld(t *testing.T) *doorsWorld {
	w := &doorsWorld{newReviewWorld(t, "YUKTA_API_KEYS="+writeKeyFile(t))}
	w.key = testKeys["admin"]
	for _, sid := range []string{"alpha", "beta"} {
		w.must("PUT", "/api/sessions/"+sid, napSession(sid), 201)
	}
	w.must("PUT", "/api/supervisors/approver", []byte(`{"name":"Approver","owns":["session:alpha","session:beta"],
		"engine":{"type":"rules","settings":{"schemaVersion":1,"rules":[
		{"id":"ask-a-person","requireApproval":{"command":"StopWorkflow","reason":"a person decides stops"}}]}}}`), 201)
	return w
}

// must sends an ADMIN's request and wants the status.
func (w *doorsWorld) must(method, path string, body []byte, want int) []byte {
	w.t.Helper()
	st, b, _ := call(w.t, w.s, method, path, w.key, body)
	if st != want {
		w.t.Fatalf("%s %s: %d %s, want %d", method, path, st, b, want)
	}
	return b
}

// yuktaAs runs the client with key as YUKTA_API_KEY (at most a minute).
func yuktaAs(t *testing.T, url, key string, args ...string) cliOut {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := cliCmd(t, ctx, url, args...)
	cmd.Env = append(cmd.Env, "YUKTA_API_KEY="+key)
	var stdout, stderr strings.Builder
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	out := cliOut{stdout: stdout.String(), stderr: stderr.String()}
	if ee, ok := err.(*exec.ExitError); ok {
		out.code = ee.ExitCode()
	} else if err != nil {
		t.Fatalf("yukta %s: %v", strings.Join(args, " "), err)
	}
	if ctx.Err() != nil {
		t.Fatalf("yukta %s did not finish within a minute\n%s", strings.Join(args, " "), out)
	}
	return out
}

// TestApprovalDoors drives a command held for approval through every door
// but REST's own tests: MCP (an OPERATOR's control_workflow STOP comes back
// under review, list_approvals shows it, an ADMIN's decide_approval applies
// it and the run stops) and the CLI (an OPERATOR's STOP prints its ticket,
// yukta approvals list/show follow it, an ADMIN rejects it and the run goes
// on). VIEWER and OPERATOR keys cannot decide, over MCP or REST.
func TestApprovalDoors(t *testing.T) {
	t.Parallel()
	w := newDoorsWorld(t)

	t.Run("MCP: held, listed, approved", func(t *testing.T) {
		w := &doorsWorld{w.in(t)}
		id := w.napping("alpha")
		operator := mustConnect(t, w.s.URL, testKeys["operator"])
		viewer := mustConnect(t, w.s.URL, testKeys["viewer"])
		admin := mustConnect(t, w.s.URL, testKeys["admin"])

		stop := map[string]any{"sessionId": "alpha", "executionId": id, "action": "STOP", "mode": "CANCEL", "reason": "operator stop", "key": "mcp-stop-1"}
		var held mcpserver.CommandOut
		mustCall(t, operator, "control_workflow", stop, &held)
		if held.Status != "review" || held.Review == nil || held.Review.ReviewID == "" || held.CommandID != "" ||
			!strings.Contains(held.Next, "wait") || !strings.Contains(held.Next, "list_approvals") {
			t.Fatalf("STOP under review over MCP: %+v", held)
		}
		rid := held.Review.ReviewID

		// The rules supervisor asks for approval; list_approvals shows it.
		var found *mcpserver.ReviewView
		for deadline := time.Now().Add(15 * time.Second); found == nil; time.Sleep(50 * time.Millisecond) {
			var list mcpserver.ApprovalList
			mustCall(t, viewer, "list_approvals", nil, &list)
			for _, r := range list.Reviews {
				if r.ReviewID == rid {
					found = &r
				}
			}
			if found == nil && time.Now().After(deadline) {
				t.Fatalf("list_approvals never showed %s", rid)
			}
		}
		if found.Status != "AWAITING_APPROVAL" || found.SessionID != "alpha" || found.ExecutionID != id || found.Command["type"] != "StopWorkflow" ||
			found.Actor != "key:operator" || found.Channel != "mcp" || found.Reason != "operator stop" {
			t.Fatalf("the approval as listed: %+v", found)
		}
		steps := found.Steps
		if last := steps[len(steps)-1]; last.Move != "REQUIRE_APPROVAL" || last.By != "supervisor:approver" || last.Reason != "a person decides stops" {
			t.Errorf("the approval's last step: %+v", last)
		}
		if s := w.status("alpha", id); s != "RUNNING" {
			t.Fatalf("the run is %s while its STOP waits for approval", s)
		}
		// The key limited to alpha sees it too.
		var limited mcpserver.ApprovalList
		mustCall(t, mustConnect(t, w.s.URL, testKeys["limited"]), "list_approvals", map[string]any{"approvalId": rid}, &limited)
		if len(limited.Reviews) != 1 || limited.Reviews[0].Status != "AWAITING_APPROVAL" {
			t.Errorf("limited list_approvals by id: %+v", limited)
		}

		// VIEWER and OPERATOR cannot decide, over MCP or REST.
		decide := map[string]any{"approvalId": rid, "decision": "APPROVE", "reason": "looks fine"}
		for _, k := range []struct {
			name string
			cs   *mcp.ClientSession
		}{{"viewer", viewer}, {"operator", operator}} {
			if res := mcpCall(t, k.cs, "decide_approval", decide, nil); !res.IsError || !strings.HasPrefix(text(res), "Forbidden: key:"+k.name) {
				t.Errorf("%s decide_approval over MCP: %q, want forbidden", k.name, text(res))
			}
			lt, err := k.cs.ListTools(t.Context(), nil)
			if err != nil {
				t.Fatal(err)
			}
			for _, tl := range lt.Tools {
				if tl.Name == "decide_approval" {
					t.Errorf("%s's tools/list shows decide_approval", k.name)
				}
			}
			if st, b, _ := call(t, w.s, "POST", "/api/approvals/"+rid, testKeys[k.name], []byte(`{"decision":"APPROVE"}`)); st != 403 {
				t.Errorf("%s POST /api/approvals: %d %s, want 403", k.name, st, b)
			}
		}
		if s := w.status("alpha", id); s != "RUNNING" {
			t.Fatalf("a refused decision changed the run: %s", s)
		}

		var decided mcpserver.DecideOut
		mustCall(t, admin, "decide_approval", decide, &decided)
		if decided.Review.Status != "APPLIED" || decided.Review.Outcome["commandId"] == nil || !strings.Contains(decided.Next, "get_workflow_status") {
			t.Fatalf("decide_approval APPROVE: %+v", decided)
		}
		if s := w.status("alpha", id); s != "STOPPED" {
			t.Fatalf("after the approval the run is %s, want STOPPED", s)
		}
		// The same STOP with its key and a wait now answers as applied.
		stop["wait"] = 2
		var again mcpserver.CommandOut
		mustCall(t, operator, "control_workflow", stop, &again)
		if again.Status == "review" || again.CommandID != decided.Review.Outcome["commandId"] || again.Review == nil || again.Review.Status != "APPLIED" {
			t.Errorf("the approved STOP again with its key: %+v, want the applied command %v", again, decided.Review.Outcome["commandId"])
		}
		if res := mcpCall(t, admin, "decide_approval", decide, nil); !res.IsError || !strings.Contains(text(res), "already APPLIED") {
			t.Errorf("deciding twice: %q", text(res))
		}
	})

	t.Run("CLI: held, listed, rejected", func(t *testing.T) {
		w := &doorsWorld{w.in(t)}
		id := w.napping("beta")
		out := yuktaAs(t, w.s.URL, testKeys["operator"], "control", "beta", id, "STOP", "--reason", "cli stop", "--key", "cli-stop-1")
		cliWant(t, out, 0, "status: review\n", "follow: yukta approvals show ")
		rid := cliField(t, out, "review")

		for deadline := time.Now().Add(15 * time.Second); ; time.Sleep(50 * time.Millisecond) {
			out = yuktaAs(t, w.s.URL, testKeys["viewer"], "approvals", "show", rid)
			if out.code == 0 && strings.Contains(out.stdout, "status: AWAITING_APPROVAL\n") {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("the review never waited for approval\n%s", out)
			}
		}
		cliWant(t, out, 0, "approval: "+rid+"\n", "session: beta\n", "execution: "+id+"\n", `"type":"StopWorkflow"`, "actor: key:operator\n",
			"reason: cli stop\n", "supervisor:approver", "REQUIRE_APPROVAL", "a person decides stops")
		out = yuktaAs(t, w.s.URL, testKeys["viewer"], "approvals", "list")
		cliWant(t, out, 0, rid)

		// An OPERATOR's rejection is refused; an ADMIN's denies the STOP.
		out = yuktaAs(t, w.s.URL, testKeys["operator"], "approvals", "reject", rid, "--reason", "not now")
		if out.code != 1 || !strings.Contains(out.stderr, "403") {
			t.Fatalf("an OPERATOR's reject: %s", out)
		}
		out = yuktaAs(t, w.s.URL, testKeys["admin"], "approvals", "reject", rid, "--reason", "not now")
		cliWant(t, out, 0, "status: DENIED\n", "key:admin", "REJECT", "not now")
		if s := w.status("beta", id); s != "RUNNING" {
			t.Fatalf("after the rejection the run is %s, want RUNNING", s)
		}
		// The same STOP with its key and a wait is refused naming who and why.
		out = yuktaAs(t, w.s.URL, testKeys["operator"], "control", "beta", id, "STOP", "--reason", "cli stop", "--key", "cli-stop-1", "--wait", "2")
		if out.code != 1 || !strings.Contains(out.stderr, "denied by key:admin: not now") {
			t.Fatalf("the rejected STOP again: %s", out)
		}
		out = yuktaAs(t, w.s.URL, testKeys["viewer"], "approvals", "list", "--status", "DENIED")
		cliWant(t, out, 0, rid, "not now")
		if s := w.status("beta", id); s != "RUNNING" {
			t.Fatalf("the run is %s, want RUNNING", s)
		}
	})

	// Without the supervisor the runs can be stopped, so every journal
	// settles before the harness checks it.
	w.must("DELETE", "/api/supervisors/approver", nil, 200)
	rows, err := w.db.Query(context.Background(), `SELECT session_id, execution_id::text FROM executions WHERE status = 'RUNNING'`)
	if err != nil {
		t.Fatal(err)
	}
	type run struct{ session, id string }
	var left []run
	for rows.Next() {
		var r run
		if err := rows.Scan(&r.session, &r.id); err != nil {
			t.Fatal(err)
		}
		left = append(left, r)
	}
	rows.Close()
	for _, r := range left {
		w.must("POST", "/api/sessions/"+r.session+"/executions/"+r.id+"/control", []byte(`{"action":"STOP","mode":"CANCEL","wait":8}`), 200)
	}
}
