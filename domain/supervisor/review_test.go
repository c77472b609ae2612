package supervisor

import (
	"encoding/json"
	"errors"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/yukta/yukta/domain/execution"
	"github.com/yukta/yukta/domain/fault"
)

func newTestReview(t *testing.T, def Decision, reviewers ...string) Review {
	t.Helper()
	cmd, ok := ControlCommand(execution.Command{Scope: execution.ScopeExecution, Action: execution.ActionStop, Mode: execution.Kill}, "ci", "build", "e1")
	if !ok {
		t.Fatal("STOP has no command type")
	}
	r, err := NewReview(ReviewSpec{ID: "r1", SessionID: "ci", WorkflowID: "build", ExecutionID: "e1", Command: cmd, Actor: "key:alice",
		Channel: "rest", Reviewers: reviewers, Timeout: 30 * time.Second, Default: def, At: t0})
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func verdict(t *testing.T, d Decision, reason string) Verdict {
	t.Helper()
	v, err := NewVerdict(d, reason)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

var noParents ParentOfFunc = func(string) string { return "" }

func TestReviewAllowAsksEachReviewerThenAllows(t *testing.T) {
	t.Parallel()
	r := newTestReview(t, Deny, "team", "ops")
	if r.Status() != ReviewPending || r.Asking() != "team" || !r.Deadline().Equal(t0.Add(30*time.Second)) {
		t.Fatalf("new review: %s asking %q until %s", r.Status(), r.Asking(), r.Deadline())
	}
	if err := r.Answer("ops", verdict(t, Allow, ""), noParents, t0); !errors.Is(err, ErrReviewSettled) || strings.Contains(err.Error(), "team") {
		t.Fatalf("an answer from a reviewer not asked yet: %v, want ErrReviewSettled not naming the one asked", err)
	}
	// A supervisor that is no reviewer learns nothing: the review answers
	// as one that does not exist, in the same words.
	if err := r.Answer("stranger", verdict(t, Allow, ""), noParents, t0); !errors.Is(err, ErrReviewNotFound) || err.Error() != ReviewNotFound(r.ID()).Error() {
		t.Fatalf("an answer from a supervisor that is no reviewer: %v, want %v", err, ReviewNotFound(r.ID()))
	}
	at := t0.Add(time.Second)
	if err := r.Answer("team", verdict(t, Allow, ""), noParents, at); err != nil {
		t.Fatal(err)
	}
	if r.Status() != ReviewPending || r.Asking() != "ops" || !r.Deadline().Equal(at.Add(30*time.Second)) {
		t.Fatalf("after the first ALLOW: %s asking %q until %s, want PENDING asking ops with a fresh deadline", r.Status(), r.Asking(), r.Deadline())
	}
	if err := r.Answer("ops", verdict(t, Allow, ""), noParents, at); err != nil {
		t.Fatal(err)
	}
	if r.Status() != ReviewAllowed || r.Asking() != "" {
		t.Fatalf("after the last ALLOW: %s asking %q, want ALLOWED", r.Status(), r.Asking())
	}
	if err := r.Applied([]byte(`{"commandId":"c1"}`), at); err != nil || r.Status() != ReviewApplied {
		t.Fatalf("Applied: %v, %s", err, r.Status())
	}
	if err := r.Applied(nil, at); !errors.Is(err, ErrReviewSettled) || !strings.Contains(err.Error(), "already APPLIED") {
		t.Fatalf("Applied twice: %v", err)
	}
	moves := []ReviewMove{}
	for _, s := range r.Steps() {
		moves = append(moves, s.Move)
	}
	if got, _ := json.Marshal(moves); string(got) != `["REQUEST","ALLOW","ALLOW","APPLIED"]` {
		t.Fatalf("steps: %s", got)
	}
}

func TestReviewDenyAndApproval(t *testing.T) {
	t.Parallel()
	r := newTestReview(t, Allow, "gate")
	if err := r.Answer("gate", verdict(t, Deny, "stops need a ticket"), noParents, t0); err != nil {
		t.Fatal(err)
	}
	if r.Status() != ReviewDenied {
		t.Fatalf("after DENY: %s", r.Status())
	}
	err := r.Denial()
	if !errors.Is(err, ErrCommandDenied) || !errors.Is(err, fault.ErrForbidden) ||
		!strings.Contains(err.Error(), "StopWorkflow was denied by supervisor:gate: stops need a ticket") {
		t.Fatalf("Denial: %v", err)
	}
	if err := r.Approve("key:root", "", t0); !errors.Is(err, ErrReviewSettled) {
		t.Fatalf("approving a denied review: %v", err)
	}

	r = newTestReview(t, Allow, "gate")
	if err := r.Approve("key:root", "", t0); !errors.Is(err, ErrReviewSettled) || !strings.Contains(err.Error(), "verdict") {
		t.Fatalf("approving a review that waits for a verdict: %v", err)
	}
	if err := r.Answer("gate", verdict(t, RequireApproval, "a person decides"), noParents, t0); err != nil || r.Status() != ReviewAwaitingApproval {
		t.Fatalf("REQUIRE_APPROVAL: %v, %s", err, r.Status())
	}
	if err := r.Answer("gate", verdict(t, Allow, ""), noParents, t0); !errors.Is(err, ErrReviewSettled) || !strings.Contains(err.Error(), "ADMIN") {
		t.Fatalf("a verdict on a parked review: %v", err)
	}
	if err := r.Reject("key:root", strings.Repeat("x", MaxReasonLen+1), t0); !errors.Is(err, fault.ErrInvalid) {
		t.Fatalf("a reason too long: %v", err)
	}
	if err := r.Reject("key:root", "not today", t0); err != nil || r.Status() != ReviewDenied || r.LastStep().By != "key:root" {
		t.Fatalf("Reject: %v, %s by %s", err, r.Status(), r.LastStep().By)
	}
}

func TestReviewNoOpinionClimbsToTheParentThenTheDefault(t *testing.T) {
	t.Parallel()
	parents := ParentOfFunc(func(id string) string { return map[string]string{"team": "ops"}[id] })
	r := newTestReview(t, RequireApproval, "team")
	if err := r.Answer("team", Verdict{decision: NoOpinion}, parents, t0); err != nil {
		t.Fatal(err)
	}
	if r.Status() != ReviewPending || r.Asking() != "ops" || r.LastStep().Move != MoveNoOpinion || r.LastStep().Asking != "ops" {
		t.Fatalf("no opinion with a parent: %s asking %q, step %+v", r.Status(), r.Asking(), r.LastStep())
	}
	if err := r.Answer("ops", Verdict{decision: NoOpinion}, parents, t0); err != nil {
		t.Fatal(err)
	}
	if r.Status() != ReviewAwaitingApproval || !strings.Contains(r.LastStep().Reason, "default decision REQUIRE_APPROVAL") {
		t.Fatalf("no opinion at the root: %s, %q; want the default", r.Status(), r.LastStep().Reason)
	}
}

func TestReviewTimeoutTakesTheDefault(t *testing.T) {
	t.Parallel()
	for _, def := range []Decision{Allow, Deny, RequireApproval} {
		r := newTestReview(t, def, "slow")
		if err := r.Expire(t0.Add(29 * time.Second)); !errors.Is(err, ErrReviewSettled) || r.Status() != ReviewPending {
			t.Fatalf("%s: expiring before the deadline: %v, %s", def, err, r.Status())
		}
		if err := r.Expire(t0.Add(30 * time.Second)); err != nil {
			t.Fatal(err)
		}
		want := map[Decision]ReviewStatus{Allow: ReviewAllowed, Deny: ReviewDenied, RequireApproval: ReviewAwaitingApproval}[def]
		s := r.LastStep()
		if r.Status() != want || s.By != "system" || s.Move != MoveTimeout || !strings.Contains(s.Reason, "did not answer within 30s") {
			t.Fatalf("%s: after the deadline %s, step %+v; want %s by system", def, r.Status(), s, want)
		}
		if err := r.Expire(t0.Add(time.Hour)); !errors.Is(err, ErrReviewSettled) {
			t.Fatalf("%s: expiring twice: %v", def, err)
		}
	}
}

func TestNewReviewListsEveryProblem(t *testing.T) {
	t.Parallel()
	_, err := NewReview(ReviewSpec{Default: "MAYBE"})
	checkViolations(t, err, violation{"id", "required"}, violation{"sessionId", "required"}, violation{"command", "required"},
		violation{"reviewers", "at least one"}, violation{"timeout", "positive"}, violation{"default", "MAYBE"})
}

// TestReviewTableMatchesDocs: the table in docs/supervisors.md is the
// table the methods use.
func TestReviewTableMatchesDocs(t *testing.T) {
	t.Parallel()
	raw, err := os.ReadFile("../../docs/supervisors.md")
	if err != nil {
		t.Fatal(err)
	}
	b := string(raw)
	for from, moves := range ReviewTransitions() {
		for m, to := range moves {
			row := "| `" + string(from) + "` | `" + string(m) + "` | `" + string(to) + "` |"
			if !strings.Contains(b, row) {
				t.Errorf("docs/supervisors.md lacks the row %s", row)
			}
		}
	}
}

func TestReviewersOfOrdersByUnitAndSkipsTheSender(t *testing.T) {
	t.Parallel()
	mk := func(id string, owns ...string) Supervisor {
		s, err := New(Spec{ID: id, Name: id, EngineType: "rules", Settings: map[string]any{"schemaVersion": 1, "rules": []any{
			map[string]any{"id": "d", "deny": map[string]any{"command": "StopWorkflow"}}}}, Owns: owns, Enabled: true}, nil)
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	sups := []Supervisor{mk("srv", "server"), mk("b-sess", "session:ci"), mk("a-sess", "session:ci"), mk("wf", "workflow:ci/build"), mk("other", "session:cd")}
	got := ReviewersOf(sups, StopWorkflow, Place{SessionID: "ci", WorkflowID: "build"}, "key:alice")
	if strings.Join(got, ",") != "wf,a-sess,b-sess,srv" {
		t.Fatalf("reviewers: %v", got)
	}
	got = ReviewersOf(sups, StopWorkflow, Place{SessionID: "ci", WorkflowID: "build"}, "supervisor:wf")
	if strings.Join(got, ",") != "a-sess,b-sess,srv" {
		t.Fatalf("reviewers of wf's own directive: %v", got)
	}
	if got := ReviewersOf(sups, PauseWorkflow, Place{SessionID: "ci", WorkflowID: "build"}, ""); len(got) != 0 {
		t.Fatalf("reviewers of a type nobody reviews: %v", got)
	}
}

func TestNotReviewableTypesAreRefused(t *testing.T) {
	t.Parallel()
	_, err := New(Spec{ID: "s", Name: "s", EngineType: "rules", Settings: map[string]any{"schemaVersion": 1, "rules": []any{
		map[string]any{"id": "d", "deny": map[string]any{"command": "StopWorkflow"}}}},
		Owns: []string{"session:ci"}, Reviews: []CommandType{AnswerInput, Hold, StopWorkflow}, Enabled: true}, nil)
	checkViolations(t, err, violation{"reviews[0]", "AnswerInput cannot be reviewed"}, violation{"reviews[1]", "Hold cannot be reviewed"})
}

func TestParseCommandRoundTrips(t *testing.T) {
	t.Parallel()
	bp := execution.Breakpoint{Field: "order.id", Equals: "7"}
	for _, c := range []execution.Command{
		{Scope: execution.ScopeExecution, Action: execution.ActionStop, Mode: execution.Drain},
		{Scope: execution.ScopeExecution, Action: execution.ActionRestartFromNode, FromNodeID: "n2"},
		{Scope: execution.ScopeNode, Action: execution.ActionBreakpoint, NodeID: "n1", Breakpoint: &bp},
		{Scope: execution.ScopeWorkflow, Action: execution.ActionStopAll, Mode: execution.Kill},
	} {
		cmd, ok := ControlCommand(c, "ci", "build", "0197a3e0-0000-7000-8000-000000000001")
		if !ok {
			t.Fatalf("%s/%s has no type", c.Scope, c.Action)
		}
		b, _ := json.Marshal(cmd)
		back, err := ParseCommand(b)
		if err != nil {
			t.Fatalf("%s: %v", b, err)
		}
		b2, _ := json.Marshal(back)
		if string(b) != string(b2) {
			t.Fatalf("round trip: %s != %s", b, b2)
		}
	}
	s := StartCommand("ci", "build", map[string]any{"n": 1})
	b, _ := json.Marshal(s)
	if string(b) != `{"type":"StartWorkflow","target":"workflow:ci/build","payload":{"n":1}}` {
		t.Fatalf("start: %s", b)
	}
}
