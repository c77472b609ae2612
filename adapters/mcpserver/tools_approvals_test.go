package mcpserver

import (
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"go.uber.org/zap"

	"github.com/yukta/yukta/adapters/postgres"
	"github.com/yukta/yukta/application/executionapp"
	"github.com/yukta/yukta/application/supervisorapp"
)

// reviewServer serves the tools over use cases wired as bootstrap wires
// them with reviews: a rules supervisor of "own" asks for approval of
// every STOP and every start. No supervisor runtime runs, so a review
// stays PENDING until expire settles it with the default decision
// (REQUIRE_APPROVAL) once its 1 ms timeout has passed.
func reviewServer(t *testing.T) (*httptest.Server, *testEnv, *supervisorapp.ExpireReviews) {
	t.Helper()
	e := newEnv(t)
	apply := supervisorapp.NewApplySupervisor(postgres.NewSupervisorTransactor(e.admin), nil, time.Now)
	doc := `{"name":"Approver","owns":["session:own"],"engine":{"type":"rules","settings":{"schemaVersion":1,"rules":[
		{"id":"ask-a-person","requireApproval":{"command":"StopWorkflow","reason":"a person decides stops"}},
		{"id":"ask-for-starts","requireApproval":{"command":"StartWorkflow","reason":"a person decides starts"}}]}}}`
	if _, err := apply.Handle(t.Context(), supervisorapp.ApplyInput{ID: "approver", Document: []byte(doc), Actor: "key:admin", Channel: "rest"}); err != nil {
		t.Fatal(err)
	}
	sups := postgres.NewSupervisorStore(e.pool)
	st := postgres.NewSupervisorRuntime(e.pool)
	gate := supervisorapp.NewGate(sups, st, st, supervisorapp.ReviewConfig{Timeout: time.Millisecond}, time.Now)
	cd := e.control
	cd.Reviews = gate
	control := executionapp.NewControl(cd)
	start := e.deps.Start.(*executionapp.StartExecution)
	start.UseReviews(gate)
	ad := supervisorapp.ApplierDeps{Store: st, Control: control, Start: start, Supervisors: sups, Now: time.Now}
	d := e.deps
	d.Control = control
	d.ListApprovals = supervisorapp.NewListApprovals(st)
	d.DecideApproval = supervisorapp.NewDecideApproval(ad)
	h, err := New(d, "test", zap.NewNop())
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(authenticated(t, h))
	t.Cleanup(ts.Close)
	return ts, e, supervisorapp.NewExpireReviews(ad, time.Hour)
}

// awaitApproval settles due reviews until list_approvals shows id waiting
// for approval.
func awaitApproval(t *testing.T, expire *supervisorapp.ExpireReviews, list func() ApprovalList, id string) ReviewView {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(5 * time.Millisecond) {
		if _, err := expire.Handle(t.Context()); err != nil {
			t.Fatal(err)
		}
		for _, r := range list().Reviews {
			if r.ReviewID == id {
				return r
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("review %s never waited for approval", id)
		}
	}
}

func TestApprovalTools(t *testing.T) {
	t.Parallel()
	ts, e, expire := reviewServer(t)
	admin := connect(t, ts.URL, secretOf("admin"))
	viewer := connect(t, ts.URL, secretOf("viewer"))
	limited := connect(t, ts.URL, secretOf("limited"))
	lister := func() ApprovalList {
		var out ApprovalList
		decode(t, callOK(t, viewer, "list_approvals", nil), &out)
		return out
	}

	// Nothing waits yet: the note says how to see every review.
	if l := lister(); len(l.Reviews) != 0 || !strings.Contains(l.Note, "status ALL") {
		t.Fatalf("empty list_approvals: %+v", l)
	}

	// A STOP on a unit the supervisor reviews is held, not applied.
	stop := map[string]any{"sessionId": "own", "executionId": e.liveExec, "action": "STOP", "key": "stop-1"}
	var held CommandOut
	decode(t, callOK(t, admin, "control_workflow", stop), &held)
	if held.Status != executionapp.CommandInReview || held.Review == nil || held.Review.ReviewID == "" || held.CommandID != "" ||
		!strings.Contains(held.Next, "same arguments and key plus wait") || !strings.Contains(held.Next, "list_approvals") {
		t.Fatalf("held STOP: %+v", held)
	}
	id := held.Review.ReviewID
	if held.Review.Status != "PENDING" || held.Review.Asking != "approver" || held.Review.Deadline == "" {
		t.Errorf("held STOP's review: %+v, want PENDING asking approver with a deadline", held.Review)
	}
	var st ExecutionStatus
	decode(t, callOK(t, viewer, "get_workflow_status", map[string]any{"sessionId": "own", "executionId": e.liveExec}), &st)
	if st.Status != "RUNNING" {
		t.Fatalf("the run is %s while its STOP is under review", st.Status)
	}

	r := awaitApproval(t, expire, lister, id)
	if r.Status != "AWAITING_APPROVAL" || r.SessionID != "own" || r.ExecutionID != e.liveExec || r.Command["type"] != "StopWorkflow" ||
		r.Actor != "key:admin" || r.Channel != Channel || r.Reason != defaultStopReason || len(r.Reviewers) != 1 || r.Deadline != "" ||
		len(r.Steps) != 2 || r.Steps[0].Move != "REQUEST" || r.Steps[1].Move != "TIMEOUT" || r.Steps[1].Status != "AWAITING_APPROVAL" {
		t.Fatalf("review waiting for approval: %+v", r)
	}
	// The limited key sees its session's review; another session reads as
	// one that does not exist.
	var own ApprovalList
	decode(t, callOK(t, limited, "list_approvals", map[string]any{"sessionId": "own"}), &own)
	if len(own.Reviews) != 1 || own.Reviews[0].ReviewID != id {
		t.Errorf("limited list_approvals of own: %+v", own)
	}
	foreign := call(t, limited, "list_approvals", map[string]any{"sessionId": "foreign"})
	unknown := call(t, limited, "list_approvals", map[string]any{"sessionId": "nosuch"})
	if !foreign.IsError || text(foreign) != strings.ReplaceAll(text(unknown), "nosuch", "foreign") {
		t.Errorf("limited list_approvals of foreign: %q, unknown %q", text(foreign), text(unknown))
	}
	if res := call(t, limited, "decide_approval", map[string]any{"approvalId": id, "decision": "APPROVE", "sessionId": "foreign"}); !res.IsError ||
		!strings.HasPrefix(text(res), "Session not found: foreign") {
		t.Errorf("limited decide_approval naming foreign: %q", text(res))
	}

	// Sending it again with its key finds the same review; the wait runs
	// out while it waits for a person.
	stop["wait"] = 0.2
	var again CommandOut
	decode(t, callOK(t, admin, "control_workflow", stop), &again)
	if again.Review == nil || again.Review.ReviewID != id || again.Review.Status != "AWAITING_APPROVAL" ||
		!strings.Contains(again.Next, "decide_approval") {
		t.Fatalf("the same STOP again: %+v", again)
	}

	// VIEWER and OPERATOR cannot decide; ADMIN can.
	for _, key := range []string{"viewer", "operator"} {
		res := call(t, connect(t, ts.URL, secretOf(key)), "decide_approval", map[string]any{"approvalId": id, "decision": "APPROVE"})
		if !res.IsError || !strings.HasPrefix(text(res), "Forbidden: key:"+key) || !strings.Contains(text(res), "ADMIN") {
			t.Errorf("%s decide_approval: %q, want forbidden", key, text(res))
		}
	}
	var decided DecideOut
	decode(t, callOK(t, admin, "decide_approval", map[string]any{"approvalId": id, "decision": "APPROVE", "reason": "change ticket 42"}), &decided)
	if decided.Review.Status != "APPLIED" || decided.Review.Outcome["commandId"] == nil || !strings.Contains(decided.Next, "get_workflow_status") {
		t.Fatalf("approve: %+v", decided)
	}
	last := decided.Review.Steps[len(decided.Review.Steps)-1]
	if approve := decided.Review.Steps[len(decided.Review.Steps)-2]; approve.Move != "APPROVE" || approve.By != "key:admin" || approve.Reason != "change ticket 42" || last.Move != "APPLIED" {
		t.Errorf("approve steps: %+v", decided.Review.Steps)
	}
	decode(t, callOK(t, viewer, "get_workflow_status", map[string]any{"sessionId": "own", "executionId": e.liveExec}), &st)
	if st.Status != "STOPPED" {
		t.Errorf("after the approval the run is %s, want STOPPED", st.Status)
	}
	if res := call(t, admin, "decide_approval", map[string]any{"approvalId": id, "decision": "REJECT"}); !res.IsError ||
		!strings.Contains(text(res), "already APPLIED") || !strings.Contains(text(res), "Use list_approvals") {
		t.Errorf("deciding twice: %q", text(res))
	}
	if res := call(t, admin, "decide_approval", map[string]any{"approvalId": "00000000-0000-4000-8000-000000000001", "decision": "APPROVE"}); !res.IsError ||
		text(res) != "Approval not found: 00000000-0000-4000-8000-000000000001. Use list_approvals to see the commands waiting for a decision (status ALL for every review)." {
		t.Errorf("unknown approval: %q", text(res))
	}
	var one ApprovalList
	decode(t, callOK(t, viewer, "list_approvals", map[string]any{"approvalId": id}), &one)
	if len(one.Reviews) != 1 || one.Reviews[0].Status != "APPLIED" {
		t.Errorf("list_approvals by id: %+v", one)
	}

	// A start under review: no run yet; rejected, the same start with its
	// key and a wait is refused naming who and why.
	startArgs := map[string]any{"sessionId": "own", "workflowId": buildWorkflow, "idempotencyKey": "start-1"}
	var so StartOut
	decode(t, callOK(t, admin, "start_workflow", startArgs), &so)
	if so.ExecutionID != "" || so.Status != executionapp.CommandInReview || so.Review == nil ||
		!strings.Contains(so.Next, "idempotencyKey plus waitSeconds") {
		t.Fatalf("held start: %+v", so)
	}
	awaitApproval(t, expire, lister, so.Review.ReviewID)
	var rejected DecideOut
	decode(t, callOK(t, admin, "decide_approval", map[string]any{"approvalId": so.Review.ReviewID, "decision": "REJECT", "reason": "not today"}), &rejected)
	if r := rejected.Review; r.Status != "DENIED" || r.Outcome != nil || r.ExecutionID != "" || r.Command["type"] != "StartWorkflow" ||
		r.Command["target"] != "workflow:own/"+buildWorkflow || !strings.Contains(rejected.Next, "nothing was changed") {
		t.Fatalf("reject: %+v", rejected)
	}
	startArgs["waitSeconds"] = 1
	if res := call(t, admin, "start_workflow", startArgs); !res.IsError || !strings.Contains(text(res), "denied by key:admin: not today") ||
		!strings.Contains(text(res), "list_approvals") {
		t.Errorf("the rejected start again: %q", text(res))
	}
	var all ApprovalList
	decode(t, callOK(t, viewer, "list_approvals", map[string]any{"status": "ALL"}), &all)
	if len(all.Reviews) != 2 || all.Reviews[0].Status != "DENIED" || all.Reviews[1].Status != "APPLIED" {
		t.Errorf("list_approvals ALL: %+v", all)
	}
}

// TestApprovalToolsWithoutReviews: a server wired without approvals answers
// as REST does.
func TestApprovalToolsWithoutReviews(t *testing.T) {
	t.Parallel()
	ts, _ := newTestServer(t)
	admin := connect(t, ts.URL, secretOf("admin"))
	for tool, args := range map[string]map[string]any{
		"list_approvals":  nil,
		"decide_approval": {"approvalId": "00000000-0000-4000-8000-000000000001", "decision": "APPROVE"},
	} {
		if res := call(t, admin, tool, args); !res.IsError || text(res) != "approvals are not enabled on this server" {
			t.Errorf("%s: %q", tool, text(res))
		}
	}
}
