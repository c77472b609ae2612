package executionapp

import (
	"context"
	"time"

	"github.com/yukta/yukta/domain/execution"
	"github.com/yukta/yukta/domain/plugin"
)

// Transactor runs fn in one database transaction with stores bound to it. fn
// may run again on a serialization failure, so it does storage work only.
type Transactor interface {
	WithinTx(ctx context.Context, fn func(ctx context.Context, s Stores) error) error
}

// Stores are the stores bound to one transaction.
type Stores struct {
	Executions ExecutionStore
	Items      ItemStore
	Events     EventStore
	Logs       LogStore
	Commands   CommandStore
	Inputs     InputStore
	Signals    SignalSender
	// Admission is the scheduler's view of the runs (limits, slots, the
	// queue of waiting runs).
	Admission AdmissionStore
	// Pauses are the workflows' pauses (PAUSE_WORKFLOW), and the lock that
	// keeps a start from slipping past a pause.
	Pauses WorkflowPauseStore
	// Runs notes the runs this transaction starts and ends, for the
	// metrics once it commits (RunMetrics); nil notes nothing.
	Runs RunMetrics
}

// WorkflowPauseStore keeps the workflows' pauses inside a transaction. A
// start and a pause of the same workflow are serialized by one lock per
// (session, workflow), held to the end of the transaction: a start takes it
// shared, so starts never wait for each other, and a pause or resume takes
// it exclusive. A start that reads no pause under the lock has its run
// committed before any pause can read the workflow's active runs, so the
// pause finds it and pauses it; a start after the pause reads the pause.
type WorkflowPauseStore interface {
	// GuardStart takes the lock shared and returns the workflow's pause,
	// ok false when it is not paused.
	GuardStart(ctx context.Context, sessionID, workflowID string) (p execution.WorkflowPause, ok bool, err error)
	// Lock takes the lock exclusive and returns the workflow's pause, ok
	// false when it is not paused.
	Lock(ctx context.Context, sessionID, workflowID string) (p execution.WorkflowPause, ok bool, err error)
	// Put stores a pause (the caller holds Lock).
	Put(ctx context.Context, p execution.WorkflowPause) error
	// Delete lifts a pause (the caller holds Lock).
	Delete(ctx context.Context, sessionID, workflowID string) error
}

// NewExecution is everything a start writes.
type NewExecution struct {
	ID             string
	SessionID      string
	WorkflowID     string
	Definition     []byte // session.MarshalDefinition of the workflow
	Payload        any
	Actor, Channel string
	IdempotencyKey string
	RestartOf      string
	FromNodeID     string
	StartedAt      time.Time
	Status         execution.Status
	// Origin is what caused the run (the zero Origin: a person, a webhook
	// or a schedule).
	Origin Origin
}

// Origin is what caused a run: the supervisor whose directive started (or
// restarted) it and its causal depth, one more than the run whose event the
// supervisor reacted to (docs/supervisors.md#loop-bounds). The zero Origin
// is a run a person, a webhook or a schedule started: depth 0. It is stored
// with the run and named in its ExecutionStarted event, so the next
// supervisor reacting to the run knows how deep it is.
type Origin struct {
	Depth      int    `json:"depth,omitempty"`
	Supervisor string `json:"supervisor,omitempty"`
}

// ExecutionStore keeps executions and their nodes.
type ExecutionStore interface {
	// Insert stores a new execution unless one with the same idempotency key
	// exists for the workflow; then it returns that one's id and
	// created=false, or ErrKeyReused if it was started with another payload.
	Insert(ctx context.Context, e NewExecution) (id string, created bool, err error)
	InsertNodes(ctx context.Context, executionID string, nodes []*execution.Node) error
	// Lock loads and locks executions until the transaction ends, in id
	// order so two committers never deadlock. Missing ids are left out.
	Lock(ctx context.Context, ids []string) (map[string]*execution.Execution, error)
	// LockOne loads and locks one execution of a session, or reports
	// ErrExecutionNotFound (the same for unknown and foreign ids).
	LockOne(ctx context.Context, sessionID, id string) (*execution.Execution, error)
	// Save writes the status fields of executions.
	Save(ctx context.Context, es []*execution.Execution) error
	SetResult(ctx context.Context, id string, result any) error
	Nodes(ctx context.Context, ids []string) (map[string]map[string]*execution.Node, error)
	// SaveNodes writes changed nodes, keyed by execution id.
	SaveNodes(ctx context.Context, nodes map[string][]*execution.Node) error
	// NextLogSeqs reserves counts[id] log sequence numbers per execution and
	// returns the first of each.
	NextLogSeqs(ctx context.Context, counts map[string]int) (map[string]int64, error)
	// Active lists executions of a workflow that have not ended.
	Active(ctx context.Context, sessionID, workflowID string) ([]string, error)
	// Source returns what a restart needs of an execution: its definition
	// and trigger payload.
	Source(ctx context.Context, id string) (RunSource, error)
}

// RunSource is the stored definition of an execution and what started it.
type RunSource struct {
	ExecutionID, SessionID, WorkflowID string
	Definition                         []byte
	Payload                            any
	StartedAt                          time.Time
}

// Claim is one work item a worker took.
type Claim struct {
	ItemID      int64
	Token       int64
	ExecutionID string
	NodeID      string
	Payload     any
	Attempt     int
	Resumed     bool
	Answer      any
	AnsweredBy  string
	BPPassed    bool
	Skipped     bool
	Breakpoint  *execution.Breakpoint
}

// Item states.
const (
	ItemReady = "ready"
	// ItemHeld waits behind a closed gate (paused execution or node, step
	// mode without credit); claims only ever look at ready items. A claimed
	// item keeps its state and carries a lease instead.
	ItemHeld    = "held"
	ItemParked  = "parked"
	ItemDone    = "done"
	ItemDropped = "dropped"
)

// ItemUpdate finishes or releases a claimed item, if its lease still holds.
type ItemUpdate struct {
	ItemID      int64
	Token       int64
	State       string
	AvailableAt time.Time
	Resumed     bool
	BPPassed    bool
	// Uncount gives back the attempt the claim counted (the item did not
	// really run: shutdown, breakpoint).
	Uncount bool
}

// NewItem is a message for a node.
type NewItem struct {
	ExecutionID string
	NodeID      string
	Payload     any
	AvailableAt time.Time
	Held        bool
	// Task is set for a message of a node remote workers run (TASK): it
	// waits in the task's queue, out of the engine's claims.
	Task *plugin.Task
}

// ItemStore is the work queue.
type ItemStore interface {
	Insert(ctx context.Context, items []NewItem) error
	// Finish applies updates to items still claimed under the given token
	// and returns the ids it applied; an item whose lease was lost (reaped,
	// dropped by a stop) is left alone and its outcome must be discarded.
	Finish(ctx context.Context, owner string, updates []ItemUpdate) (map[int64]bool, error)
	// LiveCounts counts ready, claimed and parked items per node.
	LiveCounts(ctx context.Context, executionIDs []string) (map[string]map[string]int, error)
	// Drop drops the ready, parked and claimed items of an execution (of one
	// node when nodeID is set) and returns how many.
	Drop(ctx context.Context, executionID, nodeID string) (int, error)
	// DropParked drops the items of an execution that wait for input.
	DropParked(ctx context.Context, executionID string) (int, error)
	// Inputs returns, in arrival order, the payloads a node received.
	Inputs(ctx context.Context, executionID, nodeID string) ([]any, error)
	// Resume makes a parked item ready (or held) again with an answer.
	Resume(ctx context.Context, itemID int64, answer any, answeredBy string, held bool) error
	// Hold moves ready items behind a closed gate.
	Hold(ctx context.Context, itemIDs []int64) error
	// Gate sets the waiting items of an execution's nodes: ready for the
	// open nodes, held for the closed ones.
	Gate(ctx context.Context, executionID string, open, closed []string) error
	// ReleaseHeld makes up to n held items of a node ready, oldest first,
	// and returns how many it released.
	ReleaseHeld(ctx context.Context, executionID, nodeID string, n int) (int, error)
	// Requeue moves the waiting, unleased items of a node into the queue of
	// task, or out of every queue to the engine when task is nil (a skipped
	// TASK node passes its messages on without a worker).
	Requeue(ctx context.Context, executionID, nodeID string, task *plugin.Task) error
}

// Event is one outbox row.
type Event struct {
	Type        string
	At          time.Time
	SessionID   string
	WorkflowID  string
	ExecutionID string
	NodeID      string
	Actor       string
	// Channel is the door the actor came through: rest, cli, mcp,
	// webhook, schedule, or engine for the engine's own changes.
	Channel string
	Data    map[string]any
}

// Event types (DESIGN §6).
const (
	EventExecutionStarted       = "ExecutionStarted"
	EventExecutionStatusChanged = "ExecutionStatusChanged"
	EventNodeStatusChanged      = "NodeStatusChanged"
	EventBreakpointHit          = "BreakpointHit"
	EventInputRequested         = "InputRequested"
	EventInputAnswered          = "InputAnswered"
	EventCommandAccepted        = "CommandAccepted"
	EventCommandApplied         = "CommandApplied"
	EventCommandRejected        = "CommandRejected"
)

// EventStore appends to the outbox in the caller's transaction.
type EventStore interface {
	Append(ctx context.Context, events []Event) error
}

// LogEntry is one stored log line.
type LogEntry struct {
	ExecutionID string
	Seq         int64
	At          time.Time
	Level       string
	NodeID      string
	Message     string
}

// LogStore appends log lines in the caller's transaction.
type LogStore interface {
	Append(ctx context.Context, lines []LogEntry) error
}

// CommandRecord is a stored control command.
type CommandRecord struct {
	ID                 string
	SessionID          string
	ExecutionID        string
	WorkflowID         string
	NodeID             string
	Command            execution.Command
	Status             string // accepted | applied | rejected
	Message            string
	ResultExecutionIDs []string
	CreatedAt          time.Time
	// Cause is what the sender reacted to (not stored with the command:
	// only its events carry it).
	Cause string
	// drainedNow is set when a DRAIN found nothing to drain and ended the
	// run at once, so the command is applied, not waiting.
	drainedNow bool
}

// CommandStore records control commands; the key makes a command idempotent.
type CommandStore interface {
	// LockKey holds, until the transaction ends, a lock on a command key of
	// a session, so that requests with one key run one after another and
	// the second finds what the first stored.
	LockKey(ctx context.Context, sessionID, key string) error
	// ByKey returns the command stored under like's key for the same
	// target (execution, workflow, node) and action, if any.
	ByKey(ctx context.Context, like CommandRecord) (CommandRecord, bool, error)
	Insert(ctx context.Context, c CommandRecord) error
	Update(ctx context.Context, c CommandRecord) error
	// ApplyPending marks the accepted (waiting) commands of an execution
	// applied and returns their ids.
	ApplyPending(ctx context.Context, executionID string, at time.Time) ([]string, error)
}

// Input is a question a parked message waits on.
type Input struct {
	ID          string
	SessionID   string
	ExecutionID string
	NodeID      string
	ItemID      int64
	Prompt      string
	Schema      map[string]any
	Status      string // open | answered | cancelled
	Answer      any
	AnsweredBy  string
	CreatedAt   time.Time
	AnsweredAt  time.Time
}

// InputStore keeps requested inputs.
type InputStore interface {
	Create(ctx context.Context, in Input) error
	// Lock loads and locks an input.
	Lock(ctx context.Context, id string) (Input, error)
	Save(ctx context.Context, in Input) error
	// CancelOpen cancels the open inputs of an execution (of one node when
	// nodeID is set).
	CancelOpen(ctx context.Context, executionID, nodeID string) error
}

// SignalSender tells every instance, when the transaction commits, that
// running work of an execution must stop. It is a hint: the stop itself is
// already in the committed state, so a lost signal only delays the cancel.
type SignalSender interface {
	Cancel(ctx context.Context, executionID, nodeID string) error
}

// Waker wakes this instance's engine after a commit made work runnable
// (a start, a RESUME, an answer). It is in-process on purpose: a NOTIFY per
// start would serialize every such commit on PostgreSQL's notify lock, and
// any instance may run any item, so other instances find the work on their
// next poll.
type Waker interface {
	Wake()
}

// Signals is what the engine receives from SignalSender, on any instance.
type Signals interface {
	Wakeups() <-chan struct{}
	Cancels() <-chan CancelSignal
}

// CancelSignal names running work to cancel (all of an execution when NodeID
// is empty).
type CancelSignal struct {
	ExecutionID, NodeID string
}

// Queue is the claim side of the work queue, outside transactions.
type Queue interface {
	// Claim takes up to n ready items of running executions under a lease,
	// oldest first.
	Claim(ctx context.Context, owner string, n int, lease time.Duration) ([]Claim, error)
	// Heartbeat extends the leases of the owner's items that are still
	// running or waiting for their commit.
	Heartbeat(ctx context.Context, owner string, itemIDs []int64, lease time.Duration) error
	// Reap makes items whose lease expired ready again and returns how many.
	Reap(ctx context.Context) (int, error)
	// Source loads what the engine needs to run an execution's nodes.
	Source(ctx context.Context, executionID string) (RunSource, error)
}

// AdmissionStore is what the scheduler limits read and lock, in the caller's
// transaction (docs/adr/0007-scheduler-admission.md). A run holds a slot
// while it is RUNNING, or PAUSED after it was admitted; a run waits while it
// is PENDING.
type AdmissionStore interface {
	// Bounds returns the maxRunning of a session and of one of its
	// workflows (0: none; a missing one reads 0) and, when serverLimited
	// is set or either bound is above 0, takes the admission lock in the
	// same statement. The lock is held until the transaction ends, so the
	// caller's next statements see every admission committed before it.
	Bounds(ctx context.Context, sessionID, workflowID string, serverLimited bool) (sessionMax, workflowMax int, err error)
	// Lock takes the admission lock until the transaction ends: every
	// transaction that admits a run under a limit, on every instance,
	// holds it while it counts and admits.
	Lock(ctx context.Context) error
	// Counts counts the runs holding a slot and the runs waiting: of one
	// session, or of the whole server when all is set.
	Counts(ctx context.Context, sessionID string, all bool) (held, waiting execution.Tally, err error)
	// Held counts the runs holding a slot on the whole server.
	Held(ctx context.Context) (execution.Tally, error)
	// Waiting lists up to n waiting runs whose start position is after
	// after, in start order, with the bounds of their session and workflow
	// as they are now.
	Waiting(ctx context.Context, after int64, n int) ([]WaitingRun, error)
	// MarkReserved records that a new run asks for the reserved pool.
	MarkReserved(ctx context.Context, executionID string) error
	// Admitted reports whether a run has held a slot (became RUNNING) at
	// any time.
	Admitted(ctx context.Context, executionID string) (bool, error)
}

// WaitingRun is a PENDING run in the queue.
type WaitingRun struct {
	execution.Candidate
	// Seq is its start position.
	Seq int64
}
