package execution

import (
	"fmt"
	"time"

	"github.com/yukta/yukta/domain/fault"
)

// ErrFinished is matched when a command targets an execution that has ended.
var ErrFinished = fmt.Errorf("execution: execution has finished: %w", fault.ErrConflict)

// ErrQueued is matched when a command needs a run that has started, and the
// run still waits for a slot (PENDING under the scheduler limits).
var ErrQueued = fmt.Errorf("execution: execution waits for a slot: %w", fault.ErrConflict)

// ErrNotQueued is matched when the scheduler admits a run that is not
// waiting for a slot.
var ErrNotQueued = fmt.Errorf("execution: execution is not waiting for a slot: %w", fault.ErrConflict)

// Execution is one run of a workflow.
type Execution struct {
	id, sessionID, workflowID string
	status                    Status
	draining                  bool
	restartOf, fromNodeID     string
	startedAt, endedAt        time.Time
	err                       string
}

// State is an execution's stored form.
type State struct {
	ID, SessionID, WorkflowID string
	Status                    Status
	Draining                  bool
	RestartOf, FromNodeID     string
	StartedAt, EndedAt        time.Time
	Error                     string
}

// New starts an execution. restartOf and fromNodeID record lineage (empty
// for a fresh start).
func New(id, sessionID, workflowID, restartOf, fromNodeID string, at time.Time) *Execution {
	return &Execution{id: id, sessionID: sessionID, workflowID: workflowID, status: Running,
		restartOf: restartOf, fromNodeID: fromNodeID, startedAt: at}
}

// NewPending starts an execution that waits for a slot: a start over a
// scheduler limit. It stays PENDING, its messages held, until Admit.
func NewPending(id, sessionID, workflowID, restartOf, fromNodeID string, at time.Time) *Execution {
	e := New(id, sessionID, workflowID, restartOf, fromNodeID, at)
	e.status = Pending
	return e
}

// Restore rebuilds a stored execution.
func Restore(s State) (*Execution, error) {
	if !s.Status.Valid() {
		return nil, fmt.Errorf("execution: stored execution %q has unknown status %q", s.ID, s.Status)
	}
	return &Execution{id: s.ID, sessionID: s.SessionID, workflowID: s.WorkflowID, status: s.Status, draining: s.Draining,
		restartOf: s.RestartOf, fromNodeID: s.FromNodeID, startedAt: s.StartedAt, endedAt: s.EndedAt, err: s.Error}, nil
}

// State returns the stored form.
func (e *Execution) State() State {
	return State{ID: e.id, SessionID: e.sessionID, WorkflowID: e.workflowID, Status: e.status, Draining: e.draining,
		RestartOf: e.restartOf, FromNodeID: e.fromNodeID, StartedAt: e.startedAt, EndedAt: e.endedAt, Error: e.err}
}

// ID returns the execution id.
func (e *Execution) ID() string { return e.id }

// Status returns the status.
func (e *Execution) Status() Status { return e.status }

// Draining reports whether a STOP DRAIN is in progress.
func (e *Execution) Draining() bool { return e.draining }

func (e *Execution) move(to Status, at time.Time) error {
	if e.status.Terminal() {
		return fault.Newf(ErrFinished, "execution %s is %s and has finished; start a new one with RESTART", e.id, e.status)
	}
	if err := moveStatus("execution "+e.id, e.status, to); err != nil {
		return err
	}
	e.status = to
	if to.Terminal() {
		e.endedAt = at
	}
	return nil
}

// Pause stops new claims; in-flight messages finish.
func (e *Execution) Pause() error { return e.move(Paused, time.Time{}) }

// Resume lets claims happen again. A PENDING run is refused: it has not
// started, and only the scheduler starts it (Admit), in its turn.
func (e *Execution) Resume() error {
	if e.status == Running && !e.status.Terminal() {
		return nil
	}
	if e.status == Pending {
		return fault.Newf(ErrQueued, "execution %s is PENDING: it waits for a slot under the scheduler limits (GET /api/scheduler) "+
			"and starts by itself, in start order, when one frees; there is nothing to resume. To drop it, STOP it", e.id)
	}
	return e.move(Running, time.Time{})
}

// Admit starts a run that waited for a slot: the scheduler found it one.
// Only a PENDING run is admitted; admitting a RUNNING one changes nothing.
func (e *Execution) Admit() error {
	if e.status == Paused {
		return fault.Newf(ErrNotQueued, "execution %s is PAUSED, not waiting for a slot; RESUME it", e.id)
	}
	return e.move(Running, time.Time{})
}

// Requeue puts a PAUSED run that never held a slot (it was paused while it
// waited) back in the queue, for a RESUME: it is PENDING again, in its
// first place, and starts when the scheduler admits it. Only the caller
// knows whether the run held a slot.
func (e *Execution) Requeue() error { return e.move(Pending, time.Time{}) }

// StopEffect tells the runtime what a stop means for the work of the run.
type StopEffect struct {
	DropQueued     bool // delete messages not yet taken
	CancelInFlight bool // cancel the contexts of running plugins
	Ended          bool // the execution is STOPPED now (else when drained)
}

// Stop applies a stop mode: DRAIN lets queued work finish and ends STOPPED
// when nothing is left; CANCEL drops queued work and lets running plugins
// finish; KILL also cancels running plugins.
func (e *Execution) Stop(mode StopMode, at time.Time) (StopEffect, error) {
	if e.status.Terminal() {
		return StopEffect{}, fault.Newf(ErrFinished, "execution %s is %s and has finished; nothing to stop (to run it again, use RESTART)", e.id, e.status)
	}
	switch mode {
	case Drain:
		e.draining = true
		return StopEffect{}, nil
	case Kill:
		return StopEffect{DropQueued: true, CancelInFlight: true, Ended: true}, e.move(Stopped, at)
	default:
		return StopEffect{DropQueued: true, Ended: true}, e.move(Stopped, at)
	}
}

// Complete ends an execution that has no work left: SUCCESS, or STOPPED when
// it was draining.
func (e *Execution) Complete(at time.Time) error {
	if e.draining {
		return e.move(Stopped, at)
	}
	return e.move(Success, at)
}

// Fail ends the execution because a node failed (fail-fast).
func (e *Execution) Fail(at time.Time, msg string) error {
	if err := e.move(Failure, at); err != nil {
		return err
	}
	e.err = msg
	return nil
}
