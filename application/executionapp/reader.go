package executionapp

import (
	"context"
	"time"

	"github.com/yukta/yukta/domain/execution"
)

// ExecutionView is an execution as status readers see it.
type ExecutionView struct {
	ID, SessionID, WorkflowID string
	Status                    execution.Status
	Draining                  bool
	StartedAt, EndedAt        time.Time
	Result                    any
	HasResult                 bool
	Error                     string
	RestartOf, FromNodeID     string
	Actor, Channel            string
	Nodes                     []NodeView
	// Edges are the run's own edges, from the definition it started with
	// (a session applied since does not change them).
	Edges []EdgeView
	// Spend is what the run's workers reported for its TASK nodes (per
	// node, per run, and the gaps). GetExecution sets it; nil in views
	// read without it (the answers of a start or stop that waited).
	Spend *execution.Spend
}

// NodeView is one node of an ExecutionView.
type NodeView struct {
	NodeID, Type      string
	Status            execution.NodeStatus
	Received, Emitted int64
	Paused, StepMode  bool
	Credits           int
	Skipped           bool
	Breakpoint        *execution.Breakpoint
	Error             string
	// StartedAt is when the node's plugin first started (zero when it never
	// ran); EndedAt is set once the node has ended: when its last attempt
	// finished, or when it ended if its plugin never ran. RunTime is the
	// plugin's run time summed over attempts (the API's wallMs).
	StartedAt, EndedAt time.Time
	RunTime            time.Duration
	// Waiting is how many messages the node holds and has not finished
	// (a DELAY's timers, retries, inputs, closed gates); DueAt is when the
	// first that waits for a timer is due (zero: none does).
	Waiting int64
	DueAt   time.Time
	// Attempts is how many times the node's plugin was started on a
	// message, retries included; AttemptsKnown is false once retention
	// pruned the run's messages, which held the count.
	Attempts      int64
	AttemptsKnown bool
}

// EdgeView is one edge of an execution's definition.
type EdgeView struct {
	Source, Target, SourcePort string
}

// ExecutionSummary is an execution in a history list.
type ExecutionSummary struct {
	ID, WorkflowID     string
	Status             execution.Status
	StartedAt, EndedAt time.Time
	RestartOf          string
	// Actor started it (key:<name>, supervisor:<id>, anonymous) through
	// Channel.
	Actor, Channel string
}

// HistoryQuery selects a page of a session's executions, newest first.
type HistoryQuery struct {
	SessionID  string
	WorkflowID string
	Status     execution.Status
	Limit      int
	// After is the last execution of the previous page.
	After string
}

// StoredEvent is an outbox row with its position: the id of the
// transaction that wrote it (XID) and its seq. Events are read in (XID,
// Seq) order.
type StoredEvent struct {
	XID uint64
	Seq int64
	Event
}

// EventQuery selects events after a position, oldest first.
type EventQuery struct {
	SessionID string
	// AlsoSessionless, with SessionID, keeps the events of no session too
	// (supervisor changes, delegations): a supervisor's read of one
	// session still sees the delegations sent to it.
	AlsoSessionless bool
	ExecutionID     string
	// Sessions, when not nil, keeps only events of these sessions (a
	// session-limited key reading across sessions).
	Sessions []string
	// AfterSeq alone is a position by its event: the read goes on after
	// the event with this seq, from the start when no such event exists.
	// With AfterXID the position is (AfterXID, AfterSeq) itself and nothing
	// is looked up, so a position whose event was deleted reads on from
	// where it was (the supervisor cursors, ADR 0011).
	AfterSeq int64
	AfterXID uint64
	Limit    int
}

// Reader answers the read-side questions about executions, outside
// transactions.
type Reader interface {
	Execution(ctx context.Context, sessionID, id string) (ExecutionView, error)
	History(ctx context.Context, q HistoryQuery) ([]ExecutionSummary, error)
	// LogsBefore returns up to limit lines with seq < before, newest first
	// (before = 0 means from the end), and the execution's line count.
	LogsBefore(ctx context.Context, executionID string, before int64, limit int) ([]LogEntry, int64, error)
	// Inputs lists inputs, oldest first; q.Sessions filters before any cap.
	Inputs(ctx context.Context, q InputQuery) ([]Input, error)
	// Events returns committed events after a position, in commit order.
	// The position is looked up among q.Sessions' events only: a seq outside
	// them reads from the start, as a seq of no event does.
	Events(ctx context.Context, q EventQuery) ([]StoredEvent, error)
	// EventExists reports whether an event with this seq was stored in one
	// of sessions (any session when sessions is nil).
	EventExists(ctx context.Context, seq int64, sessions []string) (bool, error)
}
