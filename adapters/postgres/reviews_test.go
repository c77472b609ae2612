package postgres_test

import (
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/yukta/yukta/application/executionapp"
	"github.com/yukta/yukta/application/supervisorapp"
	"github.com/yukta/yukta/domain/execution"
	"github.com/yukta/yukta/domain/supervisor"
)

// reviewGate is a gate over the fixture's stores with the given timeout.
func (f *svFixture) reviewGate(timeout time.Duration) (*supervisorapp.Gate, supervisorapp.ApplierDeps) {
	g := supervisorapp.NewGate(f.sups, f.store, f.store, supervisorapp.ReviewConfig{Timeout: timeout, Default: supervisor.Deny}, time.Now)
	return g, supervisorapp.ApplierDeps{Store: f.store, Control: f.control, Start: f.exec.start, Supervisors: f.sups, Now: time.Now}
}

const stopReviewer = `{"name":"Gate","owns":["session:ci"],"reviews":["StopWorkflow"],
	"engine":{"type":"http","settings":{"url":"https://agent.example.com/signals"}}}`

func stopRequest(id, key string) executionapp.ControlRequest {
	return executionapp.ControlRequest{SessionID: "ci", ExecutionID: id, Scope: execution.ScopeExecution, Action: "STOP", Mode: "CANCEL",
		Key: key, Actor: "key:alice", Channel: "rest"}
}

// TestReviewStoreOnceAndFenced: the same key opens one review; of two
// concurrent verdicts one moves the review and the other is told it moved
// on; a verdict under a stale lease changes nothing; an ALLOW applies the
// STOP once.
func TestReviewStoreOnceAndFenced(t *testing.T) {
	t.Parallel()
	f := newSVFixture(t)
	f.supervisor(t, "gate", stopReviewer)
	gate, deps := f.reviewGate(time.Minute)
	id := f.startRun(t, "ci", false)
	f.waitStatus(t, "RUNNING", id)
	cmd := execution.Command{Scope: execution.ScopeExecution, Action: execution.ActionStop, Mode: execution.Cancel}
	req := stopRequest(id, "k1")
	open := func() executionapp.ReviewTicket {
		tk, held, err := gate.Open(t.Context(), executionapp.Reviewable{SessionID: "ci", ExecutionID: id, Command: cmd, Control: &req})
		if err != nil || !held {
			t.Fatalf("open: held %v, %v", held, err)
		}
		return tk
	}
	first, again := open(), open()
	if first.ReviewID != again.ReviewID || first.Asking != "gate" || first.Status != "PENDING" {
		t.Fatalf("the same key opened %s and %s (asking %q)", first.ReviewID, again.ReviewID, first.Asking)
	}
	if n := f.count(t, `SELECT count(*) FROM supervisor_reviews`); n != 1 {
		t.Fatalf("%d reviews for one key", n)
	}

	// A verdict under a lease that is not the supervisor's is refused.
	answer := supervisorapp.NewAnswerReview(deps)
	allow, _ := supervisor.NewVerdict(supervisor.Allow, "")
	stale := &supervisorapp.Fence{SupervisorID: "gate", Owner: "nobody", Token: 99}
	if _, err := answer.Handle(t.Context(), supervisorapp.AnswerInput{ReviewID: first.ReviewID, SupervisorID: "gate", Verdict: allow, Fence: stale}); !errors.Is(err, supervisorapp.ErrLeaseLost) {
		t.Fatalf("a stale fence: %v, want ErrLeaseLost", err)
	}

	// Two answers at once: one wins.
	var wg sync.WaitGroup
	errs := make([]error, 2)
	for i := range 2 {
		wg.Go(func() {
			_, errs[i] = answer.Handle(t.Context(), supervisorapp.AnswerInput{ReviewID: first.ReviewID, SupervisorID: "gate", Verdict: allow})
		})
	}
	wg.Wait()
	wins := 0
	for _, err := range errs {
		switch {
		case err == nil:
			wins++
		case !errors.Is(err, supervisor.ErrReviewSettled):
			t.Fatalf("the losing answer: %v, want ErrReviewSettled", err)
		}
	}
	if wins != 1 {
		t.Fatalf("%d answers won, want 1 (%v)", wins, errs)
	}
	r, ok, err := f.store.Review(t.Context(), first.ReviewID)
	if err != nil || !ok || r.Status() != supervisor.ReviewApplied {
		t.Fatalf("after ALLOW: %v %v %s", ok, err, r.Status())
	}
	if s := f.status(t, id); s != "STOPPED" {
		t.Fatalf("the run is %s after its STOP was allowed", s)
	}
	if n := f.count(t, `SELECT count(*) FROM commands WHERE execution_id = $1`, id); n != 1 {
		t.Fatalf("%d commands, want the one STOP", n)
	}
	if n := f.count(t, `SELECT count(*) FROM events WHERE execution_id = $1 AND type IN ('ReviewRequested', 'ReviewDecided')`, id); n != 3 {
		t.Fatalf("%d review events, want requested, ALLOW and APPLIED", n)
	}
}

// TestExpireReviewsTakesTheDefaultAndFinishesAllowed: a review past its
// deadline takes the default (DENY here) and its command never applies;
// an ALLOWED review whose applier died is applied by the sweeper, once.
func TestExpireReviewsTakesTheDefaultAndFinishesAllowed(t *testing.T) {
	t.Parallel()
	f := newSVFixture(t)
	f.supervisor(t, "gate", stopReviewer)
	gate, deps := f.reviewGate(time.Second)
	sweep := supervisorapp.NewExpireReviews(deps, 0)
	id := f.startRun(t, "ci", false)
	f.waitStatus(t, "RUNNING", id)
	cmd := execution.Command{Scope: execution.ScopeExecution, Action: execution.ActionStop, Mode: execution.Cancel}
	req := stopRequest(id, "")
	tk, held, err := gate.Open(t.Context(), executionapp.Reviewable{SessionID: "ci", ExecutionID: id, Command: cmd, Control: &req})
	if err != nil || !held {
		t.Fatal(held, err)
	}
	if n, err := sweep.Handle(t.Context()); err != nil || n != 0 {
		t.Fatalf("a sweep before the deadline moved %d (%v)", n, err)
	}
	time.Sleep(1100 * time.Millisecond)
	if n, err := sweep.Handle(t.Context()); err != nil || n != 1 {
		t.Fatalf("a sweep after the deadline moved %d (%v), want 1", n, err)
	}
	r, _, _ := f.store.Review(t.Context(), tk.ReviewID)
	if r.Status() != supervisor.ReviewDenied || r.LastStep().Move != supervisor.MoveTimeout {
		t.Fatalf("after the timeout: %s %+v", r.Status(), r.LastStep())
	}
	if s := f.status(t, id); s != "RUNNING" {
		t.Fatalf("a STOP denied by the default stopped the run (%s)", s)
	}

	// An ALLOWED review nobody applied (its applier died after the verdict
	// committed): the sweeper applies it, and a second sweep does nothing.
	req2 := stopRequest(id, "")
	tk2, _, err := gate.Open(t.Context(), executionapp.Reviewable{SessionID: "ci", ExecutionID: id, Command: cmd, Control: &req2})
	if err != nil {
		t.Fatal(err)
	}
	allow, _ := supervisor.NewVerdict(supervisor.Allow, "")
	if _, err := f.store.ChangeReview(t.Context(), tk2.ReviewID, nil, func(r supervisor.Review) (supervisor.Review, []executionapp.Event, error) {
		err := r.Answer("gate", allow, func(string) string { return "" }, time.Now())
		return r, nil, err
	}); err != nil {
		t.Fatal(err)
	}
	if r2, _, _ := f.store.Review(t.Context(), tk2.ReviewID); r2.Status() != supervisor.ReviewAllowed {
		t.Fatalf("the review is %s after the verdict, want ALLOWED", r2.Status())
	}
	if n, err := sweep.Handle(t.Context()); err != nil || n != 1 {
		t.Fatalf("the sweep of an allowed review moved %d (%v)", n, err)
	}
	if n, err := sweep.Handle(t.Context()); err != nil || n != 0 {
		t.Fatalf("a second sweep moved %d (%v)", n, err)
	}
	if s := f.status(t, id); s != "STOPPED" {
		t.Fatalf("the allowed STOP did not apply: %s", s)
	}
	if n := f.count(t, `SELECT count(*) FROM commands WHERE execution_id = $1`, id); n != 1 {
		t.Fatalf("%d commands, want one", n)
	}
}
