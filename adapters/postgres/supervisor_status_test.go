package postgres_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/yukta/yukta/application/supervisorapp"
	"github.com/yukta/yukta/domain/fault"
)

// TestSupervisorStatusReadsTheRuntime: a supervisor no instance took is
// idle, with no lease, no cursor and no directives; while a runtime serves
// it, it is running under that instance's live lease, its cursor catches up
// to lag 0 and its accepted directives are listed newest first; once the
// runtime stops, it is idle again with the expired lease, and the events
// committed since count as its lag. A refused directive is listed rejected,
// with why; a disabled supervisor is disabled; a bad count names the field
// and an unknown supervisor is not found.
func TestSupervisorStatusReadsTheRuntime(t *testing.T) {
	t.Parallel()
	f := newSVFixture(t)
	f.supervisor(t, "pauser", pauserDoc)
	uc := supervisorapp.NewGetStatus(f.sups, f.store)
	status := func(id string) supervisorapp.Status {
		t.Helper()
		st, err := uc.Handle(t.Context(), supervisorapp.StatusInput{SupervisorID: id})
		if err != nil {
			t.Fatal(err)
		}
		return st
	}
	if st := status("pauser"); st.State != supervisorapp.StateIdle || st.Lease != nil || st.Cursor != nil || len(st.LastDirectives) != 0 {
		t.Fatalf("before any runtime: %+v, want idle with nothing", st)
	}

	stop := f.runtime(t, "instance-a", svRuntimeOptions{})
	f.waitCursor(t, "pauser")
	runs := []string{f.startRun(t, "ci", false), f.startRun(t, "ci", false)}
	f.waitStatus(t, "PAUSED", runs...)
	svEventually(t, 20*time.Second, func() (bool, string) {
		st := status("pauser")
		ok := st.State == supervisorapp.StateRunning && st.Lease != nil && st.Lease.Owner == "instance-a" && st.Lease.Live &&
			st.Cursor != nil && st.Cursor.Lag == 0 && !st.Cursor.UpdatedAt.IsZero() && len(st.LastDirectives) == 2
		return ok, fmt.Sprintf("while served: %+v (lease %+v, cursor %+v)", st, st.Lease, st.Cursor)
	})
	st := status("pauser")
	for i, d := range st.LastDirectives {
		if d.Status != "accepted" || d.Channel != supervisorapp.ChannelSupervisor || d.At.IsZero() || d.SettledAt.IsZero() ||
			!strings.Contains(string(d.Directive), "PauseWorkflow") {
			t.Errorf("directive %d: %+v", i, d)
		}
	}
	if !strings.Contains(string(st.LastDirectives[0].Directive), runs[1]) || !st.LastDirectives[0].At.After(st.LastDirectives[1].At.Add(-time.Nanosecond)) {
		t.Errorf("the newest directive is not first: %s then %s", st.LastDirectives[0].Directive, st.LastDirectives[1].Directive)
	}
	if one, err := uc.Handle(t.Context(), supervisorapp.StatusInput{SupervisorID: "pauser", Directives: 1}); err != nil || len(one.LastDirectives) != 1 {
		t.Errorf("one directive asked: %+v, %v", one.LastDirectives, err)
	}

	stop()
	late := f.startRun(t, "ci", false)
	f.waitStatus(t, "RUNNING", late)
	// The late run's events reach the outbox with its commits, which a
	// RUNNING status read may see before the last of them: wait for the lag.
	svEventually(t, 10*time.Second, func() (bool, string) {
		st := status("pauser")
		ok := st.State == supervisorapp.StateIdle && st.Lease != nil && !st.Lease.Live && st.Cursor != nil && st.Cursor.Lag > 0 && !st.LagCapped
		return ok, fmt.Sprintf("after the runtime stopped: %+v (lease %+v, cursor %+v), want idle, an expired lease and a lag", st, st.Lease, st.Cursor)
	})

	// A refused directive, a disabled supervisor, bad requests.
	f.supervisor(t, "narrow", `{"name":"Narrow","engine":{"type":"http","settings":{}},"owns":["session:ci"],"allowedCommands":["PauseWorkflow"],"enabled":false}`)
	d := svDirective(t, `{"key":"stop-it","command":{"type":"StopWorkflow","target":"execution:`+late+`"}}`)
	_, _ = f.submit.Handle(t.Context(), supervisorapp.SubmitInput{SupervisorID: "narrow", Directive: d})
	st = status("narrow")
	if st.State != supervisorapp.StateDisabled || len(st.LastDirectives) != 1 || st.LastDirectives[0].Status != "rejected" ||
		st.LastDirectives[0].Key != "stop-it" || st.LastDirectives[0].Message == "" {
		t.Fatalf("the disabled narrow: %+v", st)
	}
	var ve *fault.ValidationError
	if _, err := uc.Handle(t.Context(), supervisorapp.StatusInput{SupervisorID: "pauser", Directives: 101}); !errors.As(err, &ve) || ve.Violations[0].Path != "directives" {
		t.Errorf("101 directives: %v, want a violation at directives", err)
	}
	if _, err := uc.Handle(t.Context(), supervisorapp.StatusInput{SupervisorID: "ghost"}); !errors.Is(err, fault.ErrNotFound) {
		t.Errorf("an unknown supervisor: %v, want not found", err)
	}
}
