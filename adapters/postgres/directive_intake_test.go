package postgres_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/yukta/yukta/application/executionapp"
	"github.com/yukta/yukta/application/supervisorapp"
	"github.com/yukta/yukta/domain/supervisor"
)

// TestSettledLedgerEntryIsNeverOverwritten: once a key is settled, no later
// Settle (another result, a rejection, another directive) or Claim (even
// with an expired claim) changes it or appends its events, and a rejection
// never settles a key another sender holds pending.
func TestSettledLedgerEntryIsNeverOverwritten(t *testing.T) {
	t.Parallel()
	f := newSVFixture(t)
	ctx := t.Context()
	run := f.startRun(t, "ci", false)
	entry := func(key, fp, status, result string) supervisorapp.LedgerEntry {
		return supervisorapp.LedgerEntry{SupervisorID: "s", Key: key, Fingerprint: fp, Directive: []byte(`{"key":"` + key + `"}`),
			Status: status, Plan: []byte(`[]`), Result: []byte(result), Channel: "agent"}
	}
	ev := func(msg string) []executionapp.Event {
		return []executionapp.Event{{Type: supervisorapp.EventDirectiveApplied, At: time.Now(), SessionID: "ci", WorkflowID: "flaky",
			ExecutionID: run, Actor: "supervisor:s", Channel: "agent", Data: map[string]any{"message": msg}}}
	}
	first := entry("k", "fp", supervisorapp.LedgerAccepted, `{"message":"first"}`)
	if _, ok, err := f.store.Settle(ctx, nil, first, ev("first")); err != nil || !ok {
		t.Fatalf("the first Settle: %v, %v", ok, err)
	}
	var at time.Time
	if err := f.pool.QueryRow(ctx, `SELECT settled_at FROM supervisor_directives WHERE key = 'k'`).Scan(&at); err != nil {
		t.Fatal(err)
	}
	later := []struct {
		name string
		do   func() (supervisorapp.LedgerEntry, bool, error)
	}{
		{"another result", func() (supervisorapp.LedgerEntry, bool, error) {
			return f.store.Settle(ctx, nil, entry("k", "fp", supervisorapp.LedgerAccepted, `{"message":"second"}`), ev("second"))
		}},
		{"a rejection", func() (supervisorapp.LedgerEntry, bool, error) {
			return f.store.Settle(ctx, nil, entry("k", "fp", supervisorapp.LedgerRejected, `{"message":"no"}`), nil)
		}},
		{"another directive", func() (supervisorapp.LedgerEntry, bool, error) {
			return f.store.Settle(ctx, nil, entry("k", "other", supervisorapp.LedgerAccepted, `{"message":"other"}`), ev("other"))
		}},
		{"a claim", func() (supervisorapp.LedgerEntry, bool, error) {
			return f.store.Claim(ctx, nil, entry("k", "fp", supervisorapp.LedgerPending, ""), "late", time.Millisecond)
		}},
		{"a claim after the ttl", func() (supervisorapp.LedgerEntry, bool, error) {
			time.Sleep(5 * time.Millisecond) // the claim above, had it been taken, has expired
			return f.store.Claim(ctx, nil, entry("k", "fp", supervisorapp.LedgerPending, ""), "later", time.Millisecond)
		}},
	}
	for _, l := range later {
		stored, changed, err := l.do()
		if err != nil {
			t.Fatalf("%s: %v", l.name, err)
		}
		if changed || stored.Status != supervisorapp.LedgerAccepted || string(stored.Result) != `{"message": "first"}` {
			t.Fatalf("%s on a settled key: changed %v, stored %s %s; want the first answer, unchanged", l.name, changed, stored.Status, stored.Result)
		}
	}
	if ok, err := f.store.ExtendClaim(ctx, nil, "s", "k", "late", time.Minute); err != nil || ok {
		t.Fatalf("ExtendClaim of a settled key: %v, %v; want false", ok, err)
	}
	var again time.Time
	if err := f.pool.QueryRow(ctx, `SELECT settled_at FROM supervisor_directives WHERE key = 'k'`).Scan(&again); err != nil || !again.Equal(at) {
		t.Fatalf("settled_at moved from %s to %s (%v)", at, again, err)
	}
	if n := f.count(t, `SELECT count(*) FROM events WHERE type = 'DirectiveApplied' AND execution_id = $1`, run); n != 1 {
		t.Fatalf("events appended: %d, want only the first Settle's", n)
	}

	// A key pending under another sender's claim is not settled by a
	// rejection: that sender found the directive acceptable and applies it.
	if _, ok, err := f.store.Claim(ctx, nil, entry("p", "fp", supervisorapp.LedgerPending, ""), "mine", time.Minute); err != nil || !ok {
		t.Fatalf("claim p: %v, %v", ok, err)
	}
	stored, ok, err := f.store.Settle(ctx, nil, entry("p", "fp", supervisorapp.LedgerRejected, `{"message":"no"}`), nil)
	if err != nil || ok || stored.Status != supervisorapp.LedgerPending {
		t.Fatalf("a rejection of a pending key: settled %v, %s, %v; want it left pending", ok, stored.Status, err)
	}
	if _, ok, err := f.store.Settle(ctx, nil, entry("p", "fp", supervisorapp.LedgerAccepted, `{"message":"done"}`), nil); err != nil || !ok {
		t.Fatalf("the claimer's Settle: %v, %v", ok, err)
	}
}

// TestTargetsExpandToAtMostMaxTargetRuns: owned.running over exactly
// supervisor.MaxTargetRuns runs is accepted (one outcome per run); one run
// more is refused before any effect, naming the count.
func TestTargetsExpandToAtMostMaxTargetRuns(t *testing.T) {
	t.Parallel()
	f := newSVFixture(t)
	f.supervisor(t, "wide", `{"name":"Wide","engine":{"type":"http","settings":{}},"owns":["session:ci"]}`)
	for range supervisor.MaxTargetRuns {
		f.startRun(t, "ci", false)
	}
	// ifStatus FAILURE holds for no unfinished run: each run refuses its
	// part, so the test checks the expansion without 200 pauses.
	send := func(key string) (supervisorapp.DirectiveResult, error) {
		return f.submit.Handle(t.Context(), supervisorapp.SubmitInput{SupervisorID: "wide",
			Directive: svDirective(t, `{"key":"`+key+`","ifStatus":"FAILURE","command":{"type":"PauseWorkflow","target":"owned.running"}}`)})
	}
	res, err := send("at-the-bound")
	if err != nil || res.Status != supervisorapp.DirectiveAccepted || len(res.Outcomes) != supervisor.MaxTargetRuns {
		t.Fatalf("%d runs: got %s with %d outcomes, %v; want accepted with one outcome per run", supervisor.MaxTargetRuns, res.Status, len(res.Outcomes), err)
	}
	commands := f.count(t, `SELECT count(*) FROM commands WHERE actor = 'supervisor:wide'`)
	f.startRun(t, "ci", false)
	res, err = send("one-above")
	want := fmt.Sprintf("target owned.running names %d runs; one directive may touch at most %d", supervisor.MaxTargetRuns+1, supervisor.MaxTargetRuns)
	if !errors.Is(err, supervisor.ErrTooManyRuns) || res.Status != supervisorapp.DirectiveRejected || !strings.Contains(err.Error(), want) {
		t.Fatalf("%d runs: got %+v, %v; want ErrTooManyRuns saying %q", supervisor.MaxTargetRuns+1, res, err, want)
	}
	if n := f.count(t, `SELECT count(*) FROM commands WHERE actor = 'supervisor:wide'`); n != commands {
		t.Fatalf("commands went from %d to %d: the refused directive had an effect", commands, n)
	}
}
