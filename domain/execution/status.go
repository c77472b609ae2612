// Package execution holds the rules of a running workflow: the execution and
// node state machines (one transition table each, drawn in
// docs/state-machines.md), the control commands people, programs and agents
// send, breakpoints, step credits, stop modes and restart lineage. It decides;
// the application sequences its decisions against storage.
package execution

import (
	"fmt"
	"slices"

	"github.com/yukta/yukta/domain/fault"
)

// Status is the status of an execution.
type Status string

// Execution statuses. SUCCESS, FAILURE and STOPPED are terminal.
const (
	Pending Status = "PENDING"
	Running Status = "RUNNING"
	Paused  Status = "PAUSED"
	Success Status = "SUCCESS"
	Failure Status = "FAILURE"
	Stopped Status = "STOPPED"
)

// statusNext is the execution transition table. A status without an entry is
// terminal: it never changes again.
var statusNext = map[Status][]Status{
	Pending: {Running, Paused, Stopped, Failure},
	Running: {Paused, Success, Failure, Stopped},
	Paused:  {Running, Pending, Success, Stopped, Failure},
}

// Statuses lists every execution status.
var Statuses = []Status{Pending, Running, Paused, Success, Failure, Stopped}

// Valid reports whether s is a known status.
func (s Status) Valid() bool { return slices.Contains(Statuses, s) }

// Terminal reports whether s can never change again.
func (s Status) Terminal() bool { _, ok := statusNext[s]; return s.Valid() && !ok }

// ErrInvalidTransition is matched by every refused status change.
var ErrInvalidTransition = fmt.Errorf("execution: invalid transition: %w", fault.ErrConflict)

// TransitionError says which move was refused.
type TransitionError struct {
	What     string // "execution e-1" or "node fetch"
	From, To string
}

func (e *TransitionError) Error() string {
	return fmt.Sprintf("%s is %s and cannot become %s", e.What, e.From, e.To)
}

// Unwrap makes errors.Is(err, ErrInvalidTransition) true.
func (e *TransitionError) Unwrap() error { return ErrInvalidTransition }

func moveStatus(what string, from, to Status) error {
	if from == to {
		return nil
	}
	if !slices.Contains(statusNext[from], to) {
		return &TransitionError{What: what, From: string(from), To: string(to)}
	}
	return nil
}

// NodeStatus is the status of one node of an execution.
type NodeStatus string

// Node statuses. SUCCESS, FAILURE and STOPPED are terminal. WAITING means the
// node is in step mode without a credit, or holds a message parked for input.
// SKIPPED means its messages pass through unrun (SKIP, or upstream of a
// restart point, or on a branch no message took).
const (
	NodePending NodeStatus = "PENDING"
	NodeRunning NodeStatus = "RUNNING"
	NodePaused  NodeStatus = "PAUSED"
	NodeWaiting NodeStatus = "WAITING"
	NodeSkipped NodeStatus = "SKIPPED"
	NodeSuccess NodeStatus = "SUCCESS"
	NodeFailure NodeStatus = "FAILURE"
	NodeStopped NodeStatus = "STOPPED"
)

// NodeStatuses lists every node status.
var NodeStatuses = []NodeStatus{NodePending, NodeRunning, NodePaused, NodeWaiting, NodeSkipped, NodeSuccess, NodeFailure, NodeStopped}

var live = []NodeStatus{NodePending, NodeRunning, NodePaused, NodeWaiting, NodeSkipped}

// nodeNext is the node transition table: every live status may move to any
// other live status (pause, step, skip and their inverses combine freely) and
// to any terminal one; terminal statuses have no entry.
var nodeNext = map[NodeStatus][]NodeStatus{
	NodePending: append(slices.Clone(live), NodeSuccess, NodeFailure, NodeStopped),
	NodeRunning: append(slices.Clone(live), NodeSuccess, NodeFailure, NodeStopped),
	NodePaused:  append(slices.Clone(live), NodeSuccess, NodeFailure, NodeStopped),
	NodeWaiting: append(slices.Clone(live), NodeSuccess, NodeFailure, NodeStopped),
	NodeSkipped: append(slices.Clone(live), NodeSuccess, NodeFailure, NodeStopped),
}

// Valid reports whether s is a known node status.
func (s NodeStatus) Valid() bool { return slices.Contains(NodeStatuses, s) }

// Terminal reports whether s can never change again.
func (s NodeStatus) Terminal() bool { _, ok := nodeNext[s]; return s.Valid() && !ok }

func moveNode(what string, from, to NodeStatus) error {
	if from == to {
		return nil
	}
	if !slices.Contains(nodeNext[from], to) {
		return &TransitionError{What: what, From: string(from), To: string(to)}
	}
	return nil
}
