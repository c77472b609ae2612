package execution

import (
	"fmt"
	"time"

	"github.com/yukta/yukta/domain/fault"
)

// ErrNodeNotLive is matched when a command targets a node that has finished.
var ErrNodeNotLive = fmt.Errorf("execution: node has finished: %w", fault.ErrConflict)

// Node is one node of one execution. Its visible status is derived from its
// lifecycle phase and its control flags, so flags combine (a paused node in
// step mode reads PAUSED, and STEP_DISABLE while paused keeps it PAUSED).
type Node struct {
	id         string
	typ        string
	phase      NodeStatus // PENDING, RUNNING or a terminal status
	paused     bool
	stepMode   bool
	credits    int
	skipped    bool
	parked     int
	breakpoint *Breakpoint
	received   int64
	emitted    int64
	err        string
	// startedAt is when the node's plugin first started (zero: it never
	// ran); endedAt is when the node ended (zero: it is live): when its last
	// attempt finished, or when it settled if its plugin never ran.
	startedAt time.Time
	endedAt   time.Time
	// runTime is the plugin's run time summed over every attempt; the
	// latest attempt (the one that finished last) ran from attemptStart to
	// attemptEnd.
	runTime                  time.Duration
	attemptStart, attemptEnd time.Time
}

// NewNode is a node of a new execution.
func NewNode(id, typ string) *Node { return &Node{id: id, typ: typ, phase: NodePending} }

// NodeState is a node's stored form.
type NodeState struct {
	ID, Type           string
	Phase              NodeStatus
	Paused, StepMode   bool
	Credits            int
	Skipped            bool
	Parked             int
	Breakpoint         *Breakpoint
	Received, Emitted  int64
	Error              string
	StartedAt, EndedAt time.Time
	// RunTime is the plugin's run time summed over attempts;
	// AttemptStartedAt and AttemptEndedAt bound the latest attempt.
	RunTime                          time.Duration
	AttemptStartedAt, AttemptEndedAt time.Time
}

// RestoreNode rebuilds a stored node.
func RestoreNode(s NodeState) (*Node, error) {
	switch s.Phase {
	case NodePending, NodeRunning, NodeSuccess, NodeFailure, NodeStopped, NodeSkipped:
	default:
		return nil, fmt.Errorf("execution: stored node %q has unknown phase %q", s.ID, s.Phase)
	}
	return &Node{id: s.ID, typ: s.Type, phase: s.Phase, paused: s.Paused, stepMode: s.StepMode, credits: s.Credits,
		skipped: s.Skipped, parked: s.Parked, breakpoint: s.Breakpoint, received: s.Received, emitted: s.Emitted,
		err: s.Error, startedAt: s.StartedAt, endedAt: s.EndedAt, runTime: s.RunTime, attemptStart: s.AttemptStartedAt,
		attemptEnd: s.AttemptEndedAt}, nil
}

// State returns the stored form.
func (n *Node) State() NodeState {
	return NodeState{ID: n.id, Type: n.typ, Phase: n.phase, Paused: n.paused, StepMode: n.stepMode, Credits: n.credits,
		Skipped: n.skipped, Parked: n.parked, Breakpoint: n.breakpoint, Received: n.received, Emitted: n.emitted,
		Error: n.err, StartedAt: n.startedAt, EndedAt: n.endedAt, RunTime: n.runTime, AttemptStartedAt: n.attemptStart,
		AttemptEndedAt: n.attemptEnd}
}

// ID returns the node id.
func (n *Node) ID() string { return n.id }

// Type returns the plugin type.
func (n *Node) Type() string { return n.typ }

// Breakpoint returns the node's breakpoint, or nil.
func (n *Node) Breakpoint() *Breakpoint { return n.breakpoint }

// Status is what the node shows: a terminal phase wins, then the control
// flags (skip, pause, step without credit or a parked input), then the phase.
func (n *Node) Status() NodeStatus {
	switch {
	case n.phase.Terminal() || n.phase == NodeSkipped:
		return n.phase
	case n.skipped:
		return NodeSkipped
	case n.paused:
		return NodePaused
	case n.parked > 0 || n.stepMode && n.credits == 0:
		return NodeWaiting
	}
	return n.phase
}

// Live reports whether the node can still change.
func (n *Node) Live() bool { return !n.Status().Terminal() && n.phase != NodeSkipped }

// Gate says whether messages waiting at a node may be taken.
type Gate int

// The gates.
const (
	// GateOpen: messages are taken as they come.
	GateOpen Gate = iota
	// GateClosed: messages wait (the execution or the node is paused, or
	// the node has ended).
	GateClosed
	// GateStep: each message waits for a STEP credit.
	GateStep
)

// Gate returns the node's gate while its execution has status ex. A skipped
// node's messages pass through even in step mode; a pause holds them all.
func (n *Node) Gate(ex Status) Gate {
	switch {
	case ex != Running || !n.Live() || n.paused:
		return GateClosed
	case n.skipped || !n.stepMode:
		return GateOpen
	}
	return GateStep
}

// TakeCredit spends one STEP credit to release one message; it reports
// false when there is none.
func (n *Node) TakeCredit() bool {
	if n.credits == 0 {
		return false
	}
	n.credits--
	return true
}

// PassThrough reports whether messages skip the plugin and go out unchanged.
func (n *Node) PassThrough() bool { return n.skipped }

// change applies f and checks the visible move against the table, undoing f
// when it is refused.
func (n *Node) change(f func()) error {
	if !n.Live() {
		return fault.Newf(ErrNodeNotLive, "node %q is %s; node commands apply only to nodes that have not finished (to run it again, use node RETRY)", n.id, n.Status())
	}
	before, saved := n.Status(), *n
	f()
	if err := moveNode("node "+n.id, before, n.Status()); err != nil {
		*n = saved
		return err
	}
	return nil
}

// Pause stops new messages from being taken; one already running finishes.
func (n *Node) Pause() error { return n.change(func() { n.paused = true }) }

// Resume lets messages be taken again.
func (n *Node) Resume() error { return n.change(func() { n.paused = false }) }

// EnableStep makes the node take one message per Step.
func (n *Node) EnableStep() error { return n.change(func() { n.stepMode, n.credits = true, 0 }) }

// DisableStep returns the node to free running.
func (n *Node) DisableStep() error { return n.change(func() { n.stepMode, n.credits = false, 0 }) }

// Step releases exactly one message of a node in step mode.
func (n *Node) Step() error {
	if n.Live() && !n.stepMode {
		return fault.Newf(fault.ErrConflict, "node %q is not in step mode; send STEP_ENABLE first", n.id)
	}
	return n.change(func() { n.credits++ })
}

// Skip makes messages pass through unchanged on every outbound edge.
func (n *Node) Skip() error { return n.change(func() { n.skipped = true }) }

// Unskip makes the node run its plugin again.
func (n *Node) Unskip() error { return n.change(func() { n.skipped = false }) }

// SetBreakpoint installs bp (replacing any other).
func (n *Node) SetBreakpoint(bp Breakpoint) error { return n.change(func() { n.breakpoint = &bp }) }

// ClearBreakpoint removes the breakpoint.
func (n *Node) ClearBreakpoint() error { return n.change(func() { n.breakpoint = nil }) }

// HitBreakpoint pauses the node because a message matched its breakpoint.
func (n *Node) HitBreakpoint() error { return n.Pause() }

// Stop ends the node: its queue is dropped and nothing more arrives.
func (n *Node) Stop(at time.Time) error {
	return n.change(func() { n.phase, n.endedAt = NodeStopped, n.end(at) })
}

// Ran records one attempt: the node's plugin ran on one message from start
// to end, whatever came of it (a failure that will be retried, a timer, a
// parked input, a success). StartedAt becomes the start of the earliest
// attempt, RunTime grows by end − start, and the attempt that finished last
// is the latest one. Times are kept to the microsecond, as they are stored,
// so what is shown and what is journaled agree. A node that has ended
// records nothing: what it shows never changes again.
func (n *Node) Ran(start, end time.Time) {
	if !n.Live() {
		return
	}
	start, end = start.Truncate(time.Microsecond), end.Truncate(time.Microsecond)
	end = later(start, end) // a wall clock stepped back: a run of 0
	n.runTime += end.Sub(start)
	if n.startedAt.IsZero() || start.Before(n.startedAt) {
		n.startedAt = start
	}
	if !end.Before(n.attemptEnd) {
		n.attemptStart, n.attemptEnd = start, end
	}
}

// end is when a node ending at `at` ended: when its last attempt finished,
// or at itself when its plugin never ran.
func (n *Node) end(at time.Time) time.Time {
	if !n.attemptEnd.IsZero() {
		return n.attemptEnd
	}
	return at.Truncate(time.Microsecond)
}

func later(a, b time.Time) time.Time {
	if b.Before(a) {
		return a
	}
	return b
}

// Processed records one message taken and n messages emitted. The first
// one makes a PENDING node RUNNING.
func (n *Node) Processed(emitted int) {
	if n.phase == NodePending {
		n.phase = NodeRunning
	}
	n.received++
	n.emitted += int64(emitted)
}

// Park counts a message waiting for input; Unpark undoes the count when the
// input is answered.
func (n *Node) Park()   { n.parked++ }
func (n *Node) Unpark() { n.parked = max(0, n.parked-1) }

// ClearParked forgets parked messages that were dropped.
func (n *Node) ClearParked() { n.parked = 0 }

// Fail ends the node with an error.
func (n *Node) Fail(at time.Time, msg string) error {
	return n.change(func() { n.phase, n.err, n.endedAt = NodeFailure, msg, n.end(at) })
}

// Settle ends a node no message can reach any more: SUCCESS when it took
// messages, SKIPPED when none ever came (an untaken branch) or it was skipped.
func (n *Node) Settle(at time.Time) {
	if !n.Live() {
		return
	}
	switch {
	case n.skipped || n.phase == NodePending:
		n.phase = NodeSkipped
	default:
		n.phase = NodeSuccess
	}
	n.endedAt = n.end(at)
}

// Cut ends a node because its execution stopped or failed: STOPPED when it
// had taken or still held work, SKIPPED when nothing ever reached it.
func (n *Node) Cut(at time.Time, hadWork bool) {
	if !n.Live() {
		return
	}
	if n.phase == NodePending && n.received == 0 && !hadWork {
		n.phase = NodeSkipped
	} else {
		n.phase = NodeStopped
	}
	n.endedAt = n.end(at)
}

// MarkUpstreamSkipped is for restart-from-node: nodes before the restart
// point do not run in the new execution. A node that has finished keeps its
// status: terminal statuses never change.
func (n *Node) MarkUpstreamSkipped(at time.Time) {
	if !n.Live() {
		return
	}
	n.phase, n.endedAt = NodeSkipped, n.end(at)
}
