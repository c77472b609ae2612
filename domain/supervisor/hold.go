package supervisor

import (
	"fmt"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/yukta/yukta/domain/execution"
	"github.com/yukta/yukta/domain/fault"
)

// HoldState is the state of one supervisor's hold on one run.
type HoldState string

// The hold states.
const (
	// Free: the supervisor does not hold the run.
	Free HoldState = "FREE"
	// Holding: the supervisor holds the run; it stays paused until every
	// holder released it.
	Holding HoldState = "HELD"
)

// HoldEvent is what moves a hold.
type HoldEvent string

// The hold events.
const (
	// EventHold: the supervisor sends Hold for the run.
	EventHold HoldEvent = "Hold"
	// EventRelease: the supervisor sends Release for the run (or an ADMIN
	// ends the hold in its name).
	EventRelease HoldEvent = "Release"
	// EventRunEnded: the run reached SUCCESS, FAILURE or STOPPED.
	EventRunEnded HoldEvent = "RunEnded"
)

// holdNext is the hold transition table, per run and supervisor. A pair
// without an entry is refused.
var holdNext = map[HoldState]map[HoldEvent]HoldState{
	Free:    {EventHold: Holding, EventRunEnded: Free},
	Holding: {EventHold: Holding, EventRelease: Free, EventRunEnded: Free},
}

// HoldEffect is what the application must do to the run after a hold
// transition.
type HoldEffect string

// The hold effects.
const (
	// NoEffect: leave the run as it is.
	NoEffect HoldEffect = ""
	// PauseRun: pause the run (the first hold on a PENDING or RUNNING run).
	PauseRun HoldEffect = "PAUSE"
	// ResumeRun: resume the run (the last hold ended, the first hold paused
	// it, and it is still PAUSED).
	ResumeRun HoldEffect = "RESUME"
)

// ErrNotHeld is matched when a supervisor releases a run it does not hold.
var ErrNotHeld = fmt.Errorf("supervisor: run not held: %w", fault.ErrConflict)

// ErrRunHeld is matched when a run cannot resume because it is held.
var ErrRunHeld = fmt.Errorf("supervisor: run is held: %w", fault.ErrConflict)

// HoldEntry is one line of the hold ledger: a supervisor holds a run since
// a time, for a reason.
type HoldEntry struct {
	supervisorID string
	since        time.Time
	reason       string
}

// RestoreHoldEntry rebuilds a stored ledger line. Only storage adapters
// call it.
func RestoreHoldEntry(supervisorID string, since time.Time, reason string) HoldEntry {
	return HoldEntry{supervisorID: supervisorID, since: since, reason: reason}
}

// SupervisorID returns the holder.
func (e HoldEntry) SupervisorID() string { return e.supervisorID }

// Since returns when the hold began.
func (e HoldEntry) Since() time.Time { return e.since }

// Reason returns why the supervisor holds the run.
func (e HoldEntry) Reason() string { return e.reason }

// RunHolds is the hold ledger of one run: who holds it, and whether the
// holds paused it (so the last Release knows whether to resume it).
type RunHolds struct {
	executionID string
	entries     []HoldEntry
	paused      bool
}

// NewRunHolds returns the empty ledger of a run.
func NewRunHolds(executionID string) RunHolds { return RunHolds{executionID: executionID} }

// RestoreRunHolds rebuilds a stored ledger. Only storage adapters call it.
func RestoreRunHolds(executionID string, entries []HoldEntry, pausedByHold bool) RunHolds {
	return RunHolds{executionID: executionID, entries: slices.Clone(entries), paused: pausedByHold && len(entries) > 0}
}

// ExecutionID returns the run.
func (h RunHolds) ExecutionID() string { return h.executionID }

// Entries returns a copy of the ledger lines, oldest first.
func (h RunHolds) Entries() []HoldEntry { return slices.Clone(h.entries) }

// Held reports whether any supervisor holds the run.
func (h RunHolds) Held() bool { return len(h.entries) > 0 }

// PausedByHold reports whether the holds paused the run.
func (h RunHolds) PausedByHold() bool { return h.paused }

// HeldBy returns supervisorID's ledger line, if it holds the run.
func (h RunHolds) HeldBy(supervisorID string) (HoldEntry, bool) {
	i := h.index(supervisorID)
	if i < 0 {
		return HoldEntry{}, false
	}
	return h.entries[i], true
}

// State returns supervisorID's hold state on the run.
func (h RunHolds) State(supervisorID string) HoldState {
	if h.index(supervisorID) >= 0 {
		return Holding
	}
	return Free
}

func (h RunHolds) index(supervisorID string) int {
	return slices.IndexFunc(h.entries, func(e HoldEntry) bool { return e.supervisorID == supervisorID })
}

func (h RunHolds) move(supervisorID string, ev HoldEvent) (HoldState, error) {
	from := h.State(supervisorID)
	to, ok := holdNext[from][ev]
	if !ok {
		if ev == EventRelease {
			return from, fault.Newf(ErrNotHeld, "supervisor %q does not hold execution %s%s; nothing to release",
				supervisorID, h.executionID, h.holdersText())
		}
		return from, fault.Newf(fault.ErrConflict, "hold of execution %s by %q cannot go from %s on %s", h.executionID, supervisorID, from, ev)
	}
	return to, nil
}

// Hold records that supervisorID holds the run, given the run's status
// now. The first hold on a PENDING or RUNNING run pauses it. Holding again
// keeps the first line (its since and reason). A finished run cannot be
// held, and a hold needs a reason.
func (h RunHolds) Hold(supervisorID, reason string, at time.Time, run execution.Status) (RunHolds, HoldEffect, error) {
	switch {
	case strings.TrimSpace(reason) == "":
		return h, NoEffect, fault.Newf(fault.ErrInvalid, "a hold needs a reason; it is shown in the hold ledger")
	case utf8.RuneCountInString(reason) > MaxReasonLen:
		return h, NoEffect, fault.Newf(fault.ErrInvalid, "the hold reason is %d characters long; the limit is %d", utf8.RuneCountInString(reason), MaxReasonLen)
	case run.Terminal():
		return h, NoEffect, fault.Newf(execution.ErrInvalidTransition, "execution %s is %s and has finished; there is nothing to hold", h.executionID, run)
	case !run.Valid():
		return h, NoEffect, fmt.Errorf("supervisor: hold execution %s: unknown run status %q", h.executionID, run)
	}
	if _, err := h.move(supervisorID, EventHold); err != nil {
		return h, NoEffect, err
	}
	if h.index(supervisorID) >= 0 {
		return h, NoEffect, nil
	}
	out := RunHolds{executionID: h.executionID, entries: append(slices.Clone(h.entries), HoldEntry{supervisorID, at, reason}), paused: h.paused}
	if len(h.entries) == 0 && (run == execution.Pending || run == execution.Running) {
		out.paused = true
		return out, PauseRun, nil
	}
	return out, NoEffect, nil
}

// Release ends supervisorID's hold, given the run's status now. When the
// last hold ends, a run the holds paused and that is still PAUSED resumes.
// Releasing a run the supervisor does not hold is refused (ErrNotHeld).
func (h RunHolds) Release(supervisorID string, run execution.Status) (RunHolds, HoldEffect, error) {
	if _, err := h.move(supervisorID, EventRelease); err != nil {
		return h, NoEffect, err
	}
	i := h.index(supervisorID)
	out := RunHolds{executionID: h.executionID, entries: slices.Delete(slices.Clone(h.entries), i, i+1), paused: h.paused}
	if len(out.entries) > 0 {
		return out, NoEffect, nil
	}
	out.paused = false
	if h.paused && run == execution.Paused {
		return out, ResumeRun, nil
	}
	return out, NoEffect, nil
}

// End clears the ledger when the run has finished: every hold ends.
// (Holding and Free both go to Free on RunEnded.)
func (h RunHolds) End() RunHolds { return RunHolds{executionID: h.executionID} }

// CheckResume refuses a resume of a held run: while any supervisor holds
// it, the holders must release it first (an ADMIN may end a hold).
func (h RunHolds) CheckResume() error {
	if !h.Held() {
		return nil
	}
	e := h.entries[0]
	return fault.Newf(ErrRunHeld, "execution %s is held by %s (since %s: %s); the holder must send Release (or an ADMIN ends the hold) before it can resume",
		h.executionID, h.holderNames(), e.since.UTC().Format(time.RFC3339), e.reason)
}

func (h RunHolds) holderNames() string {
	names := make([]string, len(h.entries))
	for i, e := range h.entries {
		names[i] = fmt.Sprintf("supervisor %q", e.supervisorID)
	}
	if len(names) == 1 {
		return names[0]
	}
	return strings.Join(names[:len(names)-1], ", ") + " and " + names[len(names)-1]
}

func (h RunHolds) holdersText() string {
	if !h.Held() {
		return " (no supervisor holds it)"
	}
	return " (it is held by " + h.holderNames() + ")"
}
