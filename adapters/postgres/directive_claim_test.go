package postgres_test

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/yukta/yukta/application/executionapp"
	"github.com/yukta/yukta/application/supervisorapp"
	"github.com/yukta/yukta/domain/fault"
)

// losingLedger is the real ledger whose claims are always lost on
// extension: another sender takes every key over.
type losingLedger struct {
	*svFixture
	extends atomic.Int32
}

func (l *losingLedger) Directive(ctx context.Context, sid, key string) (supervisorapp.LedgerEntry, bool, error) {
	return l.store.Directive(ctx, sid, key)
}

func (l *losingLedger) Claim(ctx context.Context, f *supervisorapp.Fence, e supervisorapp.LedgerEntry, claim string, ttl time.Duration) (supervisorapp.LedgerEntry, bool, error) {
	return l.store.Claim(ctx, f, e, claim, ttl)
}

func (l *losingLedger) ExtendClaim(context.Context, *supervisorapp.Fence, string, string, string, time.Duration) (bool, error) {
	l.extends.Add(1)
	return false, nil
}

func (l *losingLedger) Settle(ctx context.Context, f *supervisorapp.Fence, e supervisorapp.LedgerEntry, evs []executionapp.Event) (supervisorapp.LedgerEntry, bool, error) {
	return l.store.Settle(ctx, f, e, evs)
}

// losingSender is an intake over ledger whose clock reads a minute later
// at every look, so each claim looks old enough to extend and is lost.
func losingSender(f *svFixture, ledger *losingLedger) *supervisorapp.SubmitDirective {
	var clock atomic.Int64
	now := func() time.Time { return time.Unix(0, 0).Add(time.Duration(clock.Add(1)) * time.Minute) }
	return supervisorapp.NewSubmitDirective(supervisorapp.SubmitDeps{Supervisors: f.sups, Ledger: ledger, Runs: f.store, Holds: f.store,
		Control: f.control, Start: f.exec.start, Now: now, ClaimTTL: 20 * time.Millisecond})
}

// TestSubmitGivesUpAfterLosingItsClaim: a sender that loses its key to
// another sender starts again a bounded number of times
// (MaxDirectiveAttempts), then answers unavailable with nothing applied,
// instead of recursing without end.
func TestSubmitGivesUpAfterLosingItsClaim(t *testing.T) {
	t.Parallel()
	f := newSVFixture(t)
	f.supervisor(t, "slow", `{"name":"Slow","engine":{"type":"http","settings":{}},"owns":["session:ci"]}`)
	run := f.startRun(t, "ci", false)
	f.waitStatus(t, "RUNNING", run)
	ledger := &losingLedger{svFixture: f}
	submit := losingSender(f, ledger)
	_, err := submit.Handle(t.Context(), supervisorapp.SubmitInput{SupervisorID: "slow",
		Directive: svDirective(t, `{"key":"pause","command":{"type":"PauseWorkflow","target":"execution:`+run+`"}}`)})
	if !errors.Is(err, fault.ErrUnavailable) || !strings.Contains(err.Error(), "send the directive again") {
		t.Fatalf("a sender that always loses its claim: got %v, want unavailable telling it to send again", err)
	}
	if n := ledger.extends.Load(); n != supervisorapp.MaxDirectiveAttempts {
		t.Fatalf("attempts: %d, want %d", n, supervisorapp.MaxDirectiveAttempts)
	}
	if s := f.status(t, run); s != "RUNNING" {
		t.Fatalf("the run is %s, want RUNNING: nothing applied", s)
	}
	// The key stays open: the ordinary intake takes it over and applies it.
	res, err := f.submit.Handle(t.Context(), supervisorapp.SubmitInput{SupervisorID: "slow",
		Directive: svDirective(t, `{"key":"pause","command":{"type":"PauseWorkflow","target":"execution:`+run+`"}}`)})
	if err != nil || res.Status != supervisorapp.DirectiveAccepted {
		t.Fatalf("the key sent again: %+v, %v", res, err)
	}
	f.waitStatus(t, "PAUSED", run)
}

// TestATakenOverKeyRechecksOwnership: a key whose first sender died (its
// claim lost) is carried out by the next sender from the stored plan; a
// run the supervisor no longer owns by then (an ADMIN narrowed owns) gets
// nothing, and the answer says so.
func TestATakenOverKeyRechecksOwnership(t *testing.T) {
	t.Parallel()
	f := newSVFixture(t)
	f.supervisor(t, "slow", `{"name":"Slow","engine":{"type":"http","settings":{}},"owns":["session:ci"]}`)
	run := f.startRun(t, "ci", false)
	f.waitStatus(t, "RUNNING", run)
	slow := losingSender(f, &losingLedger{svFixture: f})
	dir := `{"key":"kill","command":{"type":"StopWorkflow","mode":"KILL","target":"execution:` + run + `"}}`
	if _, err := slow.Handle(t.Context(), supervisorapp.SubmitInput{SupervisorID: "slow", Directive: svDirective(t, dir)}); !errors.Is(err, fault.ErrUnavailable) {
		t.Fatalf("the first sender: %v, want it to give up with the key open", err)
	}
	f.supervisor(t, "slow", `{"name":"Slow","engine":{"type":"http","settings":{}},"owns":["session:other"]}`)
	res, err := f.submit.Handle(t.Context(), supervisorapp.SubmitInput{SupervisorID: "slow", Directive: svDirective(t, dir)})
	if err != nil || len(res.Outcomes) != 1 || res.Outcomes[0].Status != supervisorapp.OutcomeRejected ||
		!strings.Contains(res.Outcomes[0].Message, "no longer owns") {
		t.Fatalf("the key taken over after owns narrowed: %+v, %v; want the run refused as no longer owned", res, err)
	}
	if s := f.status(t, run); s != "RUNNING" {
		t.Fatalf("the run is %s, want RUNNING: a run no longer owned was stopped", s)
	}
}
