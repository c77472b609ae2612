package supervisor

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/yukta/yukta/domain/execution"
	"github.com/yukta/yukta/domain/fault"
)

var t0 = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

// holdStep is one call on a run's ledger.
type holdStep struct {
	op      string // hold, release, end
	sup     string
	run     execution.Status
	effect  HoldEffect
	wantErr error
}

func TestRunHoldsTransitions(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		steps   []holdStep
		holders []string
		paused  bool
	}{
		{"hold pauses a running run, release resumes it", []holdStep{
			{"hold", "a", execution.Running, PauseRun, nil},
			{"release", "a", execution.Paused, ResumeRun, nil},
		}, nil, false},
		{"hold of a pending run pauses it", []holdStep{{"hold", "a", execution.Pending, PauseRun, nil}}, []string{"a"}, true},
		{"hold of a paused run does not resume it on release", []holdStep{
			{"hold", "a", execution.Paused, NoEffect, nil},
			{"release", "a", execution.Paused, NoEffect, nil},
		}, nil, false},
		{"two holders: only the last release resumes", []holdStep{
			{"hold", "a", execution.Running, PauseRun, nil},
			{"hold", "b", execution.Paused, NoEffect, nil},
			{"release", "a", execution.Paused, NoEffect, nil},
			{"release", "b", execution.Paused, ResumeRun, nil},
		}, nil, false},
		{"holding again keeps the first line", []holdStep{
			{"hold", "a", execution.Running, PauseRun, nil},
			{"hold", "a", execution.Paused, NoEffect, nil},
		}, []string{"a"}, true},
		{"release without a hold is refused", []holdStep{{"release", "a", execution.Running, NoEffect, ErrNotHeld}}, nil, false},
		{"release by another supervisor is refused", []holdStep{
			{"hold", "a", execution.Running, PauseRun, nil},
			{"release", "b", execution.Paused, NoEffect, ErrNotHeld},
		}, []string{"a"}, true},
		{"a finished run cannot be held", []holdStep{{"hold", "a", execution.Success, NoEffect, execution.ErrInvalidTransition}}, nil, false},
		{"a run resumed by hand is not resumed again", []holdStep{
			{"hold", "a", execution.Running, PauseRun, nil},
			{"release", "a", execution.Running, NoEffect, nil},
		}, nil, false},
		{"the run ending clears every hold", []holdStep{
			{"hold", "a", execution.Running, PauseRun, nil},
			{"hold", "b", execution.Paused, NoEffect, nil},
			{"end", "", execution.Stopped, NoEffect, nil},
		}, nil, false},
		{"release after the run ended", []holdStep{
			{"hold", "a", execution.Running, PauseRun, nil},
			{"release", "a", execution.Stopped, NoEffect, nil},
		}, nil, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			h := NewRunHolds("e1")
			for i, s := range tt.steps {
				var eff HoldEffect
				var err error
				switch s.op {
				case "hold":
					h, eff, err = h.Hold(s.sup, "reason "+s.sup, t0.Add(time.Duration(i)*time.Minute), s.run)
				case "release":
					h, eff, err = h.Release(s.sup, s.run)
				case "end":
					h = h.End()
				}
				if s.wantErr != nil {
					if !errors.Is(err, s.wantErr) {
						t.Fatalf("step %d (%s %s): got %v, want %v", i, s.op, s.sup, err, s.wantErr)
					}
				} else if err != nil {
					t.Fatalf("step %d (%s %s): %v", i, s.op, s.sup, err)
				}
				if eff != s.effect {
					t.Errorf("step %d (%s %s): effect got %q, want %q", i, s.op, s.sup, eff, s.effect)
				}
			}
			var holders []string
			for _, e := range h.Entries() {
				holders = append(holders, e.SupervisorID())
			}
			if strings.Join(holders, ",") != strings.Join(tt.holders, ",") {
				t.Errorf("holders: got %v, want %v", holders, tt.holders)
			}
			if h.PausedByHold() != tt.paused {
				t.Errorf("paused by hold: got %v, want %v", h.PausedByHold(), tt.paused)
			}
			if h.Held() != (len(tt.holders) > 0) {
				t.Errorf("Held: got %v with holders %v", h.Held(), tt.holders)
			}
		})
	}
}

func TestHoldKeepsFirstLine(t *testing.T) {
	t.Parallel()
	h, _, _ := NewRunHolds("e1").Hold("a", "first", t0, execution.Running)
	h, _, _ = h.Hold("a", "second", t0.Add(time.Hour), execution.Paused)
	e, ok := h.HeldBy("a")
	if !ok || e.Reason() != "first" || !e.Since().Equal(t0) {
		t.Errorf("got %+v %v, want the first reason and time", e, ok)
	}
	if h.State("a") != Holding || h.State("b") != Free {
		t.Errorf("State: got a=%s b=%s", h.State("a"), h.State("b"))
	}
}

func TestHoldNeedsAReason(t *testing.T) {
	t.Parallel()
	for _, reason := range []string{"", "  ", strings.Repeat("r", 1025)} {
		h, eff, err := NewRunHolds("e1").Hold("a", reason, t0, execution.Running)
		if !errors.Is(err, fault.ErrInvalid) || h.Held() || eff != NoEffect {
			t.Errorf("reason %q: got %v held=%v effect=%q, want ErrInvalid and no change", reason[:min(len(reason), 5)], err, h.Held(), eff)
		}
	}
}

func TestCheckResume(t *testing.T) {
	t.Parallel()
	h := NewRunHolds("e1")
	if err := h.CheckResume(); err != nil {
		t.Fatalf("free run: got %v", err)
	}
	h, _, _ = h.Hold("guard", "vendor outage", t0, execution.Running)
	h, _, _ = h.Hold("ops", "maintenance", t0, execution.Paused)
	err := h.CheckResume()
	if !errors.Is(err, ErrRunHeld) || !errors.Is(err, fault.ErrConflict) {
		t.Fatalf("held run: got %v, want ErrRunHeld", err)
	}
	want := `execution e1 is held by supervisor "guard" and supervisor "ops" (since 2026-03-01T12:00:00Z: vendor outage); the holder must send Release`
	if !strings.HasPrefix(err.Error(), want) {
		t.Errorf("message: got %q, want it to start with %q", err, want)
	}
}

func TestHoldTableMatchesMethods(t *testing.T) {
	t.Parallel()
	// The table documented in docs/supervisors.md.
	want := map[HoldState]map[HoldEvent]HoldState{
		Free:    {EventHold: Holding, EventRunEnded: Free},
		Holding: {EventHold: Holding, EventRelease: Free, EventRunEnded: Free},
	}
	if len(holdNext) != len(want) {
		t.Fatalf("got %d states, want %d", len(holdNext), len(want))
	}
	for from, evs := range want {
		for ev, to := range evs {
			if got, ok := holdNext[from][ev]; !ok || got != to {
				t.Errorf("%s on %s: got %s (%v), want %s", from, ev, got, ok, to)
			}
		}
		if len(holdNext[from]) != len(evs) {
			t.Errorf("%s: got %d events, want %d", from, len(holdNext[from]), len(evs))
		}
	}
	if _, ok := holdNext[Free][EventRelease]; ok {
		t.Error("FREE on Release must be refused")
	}
}

func TestRestoreRunHolds(t *testing.T) {
	t.Parallel()
	h := RestoreRunHolds("e1", []HoldEntry{RestoreHoldEntry("a", t0, "why")}, true)
	h, eff, err := h.Release("a", execution.Paused)
	if err != nil || eff != ResumeRun || h.Held() {
		t.Errorf("release of a restored hold: got %v %q held=%v, want RESUME", err, eff, h.Held())
	}
	if RestoreRunHolds("e1", nil, true).PausedByHold() {
		t.Error("a ledger without lines cannot have paused the run")
	}
}
