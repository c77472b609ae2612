package execution_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/yukta/yukta/domain/execution"
	"github.com/yukta/yukta/domain/fault"
)

func TestNewExecution(t *testing.T) {
	t.Parallel()
	e := execution.New("e-2", "s", "w", "e-1", "fetch", t0)
	want := execution.State{ID: "e-2", SessionID: "s", WorkflowID: "w", Status: execution.Running, RestartOf: "e-1",
		FromNodeID: "fetch", StartedAt: t0}
	if got := e.State(); got != want {
		t.Errorf("New(...).State() got %+v, want %+v", got, want)
	}
	if e.ID() != "e-2" || e.Status() != execution.Running || e.Draining() {
		t.Errorf("got id %q status %s draining %v, want e-2 RUNNING false", e.ID(), e.Status(), e.Draining())
	}
}

func TestRestoreExecution(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		state   execution.State
		wantErr bool
	}{
		{"running", execution.State{ID: "e-1", Status: execution.Running, Draining: true, StartedAt: t0}, false},
		{"finished", execution.State{ID: "e-1", Status: execution.Failure, StartedAt: t0, EndedAt: t1, Error: "x"}, false},
		{"unknown status", execution.State{ID: "e-1", Status: "DONE"}, true},
		{"lower case status", execution.State{ID: "e-1", Status: "running"}, true},
		{"empty status", execution.State{ID: "e-1"}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			e, err := execution.Restore(tt.state)
			if tt.wantErr {
				if err == nil || !strings.Contains(err.Error(), string(tt.state.Status)) {
					t.Errorf("Restore(%+v): got error %v, want one naming the status", tt.state, err)
				}
				return
			}
			if err != nil {
				t.Fatalf("Restore(%+v): got error %v, want nil", tt.state, err)
			}
			if got := e.State(); got != tt.state {
				t.Errorf("Restore(s).State() got %+v, want %+v", got, tt.state)
			}
		})
	}
}

func TestStop(t *testing.T) {
	t.Parallel()
	tests := []struct {
		from         execution.Status
		mode         execution.StopMode
		wantEffect   execution.StopEffect
		wantStatus   execution.Status
		wantDraining bool
	}{
		{execution.Running, execution.Drain, execution.StopEffect{}, execution.Running, true},
		{execution.Running, execution.Cancel, execution.StopEffect{DropQueued: true, Ended: true}, execution.Stopped, false},
		{execution.Running, execution.Kill, execution.StopEffect{DropQueued: true, CancelInFlight: true, Ended: true}, execution.Stopped, false},
		{execution.Paused, execution.Drain, execution.StopEffect{}, execution.Paused, true},
		{execution.Paused, execution.Cancel, execution.StopEffect{DropQueued: true, Ended: true}, execution.Stopped, false},
		{execution.Paused, execution.Kill, execution.StopEffect{DropQueued: true, CancelInFlight: true, Ended: true}, execution.Stopped, false},
		{execution.Pending, execution.Drain, execution.StopEffect{}, execution.Pending, true},
		{execution.Pending, execution.Cancel, execution.StopEffect{DropQueued: true, Ended: true}, execution.Stopped, false},
		{execution.Pending, execution.Kill, execution.StopEffect{DropQueued: true, CancelInFlight: true, Ended: true}, execution.Stopped, false},
	}
	for _, tt := range tests {
		t.Run(string(tt.from)+"/"+string(tt.mode), func(t *testing.T) {
			t.Parallel()
			e := restoreExecution(t, execution.State{Status: tt.from})
			eff, err := e.Stop(tt.mode, t1)
			if err != nil {
				t.Fatalf("Stop(%s) from %s: got error %v, want nil", tt.mode, tt.from, err)
			}
			if eff != tt.wantEffect {
				t.Errorf("Stop(%s) from %s: got effect %+v, want %+v", tt.mode, tt.from, eff, tt.wantEffect)
			}
			if e.Status() != tt.wantStatus || e.Draining() != tt.wantDraining {
				t.Errorf("Stop(%s) from %s: got (%s, draining %v), want (%s, draining %v)", tt.mode, tt.from, e.Status(), e.Draining(), tt.wantStatus, tt.wantDraining)
			}
			if ended := e.State().EndedAt; eff.Ended != ended.Equal(t1) {
				t.Errorf("Stop(%s) from %s: got endedAt %v, want %v exactly when Ended", tt.mode, tt.from, ended, t1)
			}
		})
	}
}

func TestStopDrainTwiceThenComplete(t *testing.T) {
	t.Parallel()
	e := restoreExecution(t, execution.State{Status: execution.Running})
	for range 2 {
		if _, err := e.Stop(execution.Drain, t0); err != nil {
			t.Fatalf("Stop(DRAIN): got %v, want nil", err)
		}
	}
	if err := e.Complete(t1); err != nil {
		t.Fatalf("Complete while draining: got %v, want nil", err)
	}
	if e.Status() != execution.Stopped || !e.State().EndedAt.Equal(t1) {
		t.Errorf("got (%s, %v), want (STOPPED, %v)", e.Status(), e.State().EndedAt, t1)
	}
}

func TestComplete(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		from     execution.Status
		draining bool
		want     execution.Status
		wantErr  error
	}{
		{"running ends SUCCESS", execution.Running, false, execution.Success, nil},
		{"paused ends SUCCESS", execution.Paused, false, execution.Success, nil},
		{"draining running ends STOPPED", execution.Running, true, execution.Stopped, nil},
		{"draining paused ends STOPPED", execution.Paused, true, execution.Stopped, nil},
		{"draining pending ends STOPPED", execution.Pending, true, execution.Stopped, nil},
		{"pending cannot succeed", execution.Pending, false, execution.Pending, execution.ErrInvalidTransition},
		{"success is final", execution.Success, false, execution.Success, execution.ErrFinished},
		{"stopped is final even draining", execution.Stopped, true, execution.Stopped, execution.ErrFinished},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			e := restoreExecution(t, execution.State{Status: tt.from, Draining: tt.draining})
			err := e.Complete(t1)
			if !errors.Is(err, tt.wantErr) || (tt.wantErr == nil) != (err == nil) {
				t.Fatalf("Complete from %s (draining %v): got error %v, want %v", tt.from, tt.draining, err, tt.wantErr)
			}
			if e.Status() != tt.want {
				t.Errorf("Complete from %s (draining %v): got %s, want %s", tt.from, tt.draining, e.Status(), tt.want)
			}
		})
	}
}

func TestFail(t *testing.T) {
	t.Parallel()
	for _, from := range []execution.Status{execution.Pending, execution.Running, execution.Paused} {
		t.Run(string(from), func(t *testing.T) {
			t.Parallel()
			e := restoreExecution(t, execution.State{Status: from, Draining: true})
			if err := e.Fail(t1, "node fetch failed: 500"); err != nil {
				t.Fatalf("Fail from %s: got %v, want nil", from, err)
			}
			s := e.State()
			if s.Status != execution.Failure || s.Error != "node fetch failed: 500" || !s.EndedAt.Equal(t1) {
				t.Errorf("Fail from %s: got (%s, %q, %v), want (FAILURE, %q, %v)", from, s.Status, s.Error, s.EndedAt, "node fetch failed: 500", t1)
			}
		})
	}
	t.Run("finished keeps its error", func(t *testing.T) {
		t.Parallel()
		e := restoreExecution(t, execution.State{Status: execution.Failure, Error: "first", EndedAt: t0})
		if err := e.Fail(t1, "second"); !errors.Is(err, execution.ErrFinished) {
			t.Fatalf("Fail on FAILURE: got %v, want ErrFinished", err)
		}
		if s := e.State(); s.Error != "first" || !s.EndedAt.Equal(t0) {
			t.Errorf("got (%q, %v), want (%q, %v)", s.Error, s.EndedAt, "first", t0)
		}
	})
}

// TestCommandsOnFinishedExecution: every command on an execution that has
// ended is refused with ErrFinished, and the sentence names the status and
// the next call to make (RESTART).
func TestCommandsOnFinishedExecution(t *testing.T) {
	t.Parallel()
	cmds := []struct {
		name string
		do   func(*execution.Execution) error
	}{
		{"Pause", (*execution.Execution).Pause},
		{"Resume", (*execution.Execution).Resume},
		{"Stop(DRAIN)", func(e *execution.Execution) error { _, err := e.Stop(execution.Drain, t1); return err }},
		{"Stop(CANCEL)", func(e *execution.Execution) error { _, err := e.Stop(execution.Cancel, t1); return err }},
		{"Stop(KILL)", func(e *execution.Execution) error { _, err := e.Stop(execution.Kill, t1); return err }},
		{"Complete", func(e *execution.Execution) error { return e.Complete(t1) }},
		{"Fail", func(e *execution.Execution) error { return e.Fail(t1, "x") }},
	}
	for _, status := range []execution.Status{execution.Success, execution.Failure, execution.Stopped} {
		for _, c := range cmds {
			t.Run(string(status)+"/"+c.name, func(t *testing.T) {
				t.Parallel()
				e := restoreExecution(t, execution.State{Status: status, EndedAt: t0})
				before := e.State()
				err := c.do(e)
				if !errors.Is(err, execution.ErrFinished) || !errors.Is(err, fault.ErrConflict) {
					t.Fatalf("%s on %s: got %v, want ErrFinished (a fault.ErrConflict)", c.name, status, err)
				}
				for _, want := range []string{"e-1", string(status), "RESTART"} {
					if !strings.Contains(err.Error(), want) {
						t.Errorf("%s on %s: got message %q, want it to name %q", c.name, status, err, want)
					}
				}
				if got := e.State(); got != before {
					t.Errorf("%s on %s: got state %+v, want %+v unchanged", c.name, status, got, before)
				}
			})
		}
	}
}

func TestPauseResume(t *testing.T) {
	t.Parallel()
	e := restoreExecution(t, execution.State{Status: execution.Running, Draining: true})
	steps := []struct {
		name string
		do   func() error
		want execution.Status
	}{
		{"pause", e.Pause, execution.Paused},
		{"pause again", e.Pause, execution.Paused},
		{"resume", e.Resume, execution.Running},
		{"resume again", e.Resume, execution.Running},
	}
	for _, s := range steps { // sequential: one execution, in order
		if err := s.do(); err != nil || e.Status() != s.want {
			t.Fatalf("%s: got (%s, %v), want (%s, nil)", s.name, e.Status(), err, s.want)
		}
	}
	if !e.Draining() || !e.State().EndedAt.IsZero() {
		t.Errorf("got draining %v endedAt %v, want draining kept and no end time", e.Draining(), e.State().EndedAt)
	}
}
