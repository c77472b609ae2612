package supervisorapp

import (
	"context"
	"fmt"
	"time"

	"github.com/yukta/yukta/application/executionapp"
	"github.com/yukta/yukta/domain/execution"
	"github.com/yukta/yukta/domain/fault"
	"github.com/yukta/yukta/domain/supervisor"
)

// ErrLeaseLost is returned for a write that carries a fencing token which is
// no longer the supervisor's current one: another instance took the
// supervisor's engine over (or this one restarted it), so this engine must
// stop. Nothing was written.
var ErrLeaseLost = fmt.Errorf("supervisorapp: the supervisor's lease was lost: %w", fault.ErrConflict)

// Fence is one tenure of a supervisor's lease: the instance that holds it
// and the token its writes carry.
type Fence struct {
	SupervisorID string
	Owner        string
	Token        int64
}

// LeaseStore keeps one lease per supervisor, on the database clock. A
// supervisor's engine runs only on the instance that holds its lease.
type LeaseStore interface {
	// Acquire takes the lease when it is free, expired or already the
	// owner's, with a new token; ok is false while another owner holds it.
	Acquire(ctx context.Context, supervisorID, owner string, ttl time.Duration) (f Fence, ok bool, err error)
	// Renew extends the lease while f is still its tenure; false when it
	// was lost.
	Renew(ctx context.Context, f Fence, ttl time.Duration) (bool, error)
	// Release ends f's tenure at once, so another instance takes over
	// without waiting for the expiry. A lost lease is left alone.
	Release(ctx context.Context, f Fence) error
}

// Cursor is where a supervisor is in the outbox: the position of the last
// event its engine handled (the zero Position: none), and the engine's
// state at that point. Generation names the supervisor it belongs to (its
// creation time): a supervisor deleted and created again does not inherit
// the old cursor. Within a generation the position never moves back; the
// store refuses it (ErrCursorBehind).
type Cursor struct {
	Generation string
	Pos        supervisor.Position
	State      []byte
}

// ErrCursorBehind is returned for a cursor save that would move a
// supervisor's cursor back within its generation: nothing was written.
var ErrCursorBehind = fmt.Errorf("supervisorapp: a supervisor's cursor never moves back: %w", fault.ErrConflict)

// CursorStore keeps each supervisor's cursor.
type CursorStore interface {
	// Cursor returns the supervisor's cursor; ok is false when it has none
	// yet.
	Cursor(ctx context.Context, supervisorID string) (c Cursor, ok bool, err error)
	// CreatedAt is the outbox position of the event that created the
	// supervisor (its latest SupervisorApplied with created true); ok is
	// false when there is none.
	CreatedAt(ctx context.Context, supervisorID string) (pos supervisor.Position, ok bool, err error)
	// SaveCursor moves the cursor, fenced: a stale f is refused with
	// ErrLeaseLost, a position before the stored one of the same
	// generation with ErrCursorBehind, and nothing moves.
	SaveCursor(ctx context.Context, f Fence, c Cursor) error
}

// OutboxPositions says where cursors are in the outbox.
type OutboxPositions interface {
	// Head is where "from now on" starts: every event of a transaction
	// older than the oldest one still running lies at or before it, every
	// event committed later after it (so may some committed just before,
	// by a transaction younger than one still running: reading from the
	// head never misses an event). It never moves back.
	Head(ctx context.Context) (supervisor.Position, error)
	// Frontier bounds every position the outbox has given: each lies
	// before its XID and at or before its Seq. It never moves back,
	// retention included, so a cursor this server gave never lies beyond
	// a later frontier (supervisor.Position.Beyond).
	Frontier(ctx context.Context) (supervisor.Position, error)
	// PositionOf returns the position of the event with seq (an older
	// server's cursor); ok is false when no such event exists.
	PositionOf(ctx context.Context, seq int64) (pos supervisor.Position, ok bool, err error)
}

// Ledger entry statuses.
const (
	LedgerPending  = "pending"
	LedgerAccepted = "accepted"
	LedgerRejected = "rejected"
)

// LedgerEntry is one directive of the ledger. Directive, Plan and Result
// are JSON the intake writes and reads; the store keeps them as they are.
type LedgerEntry struct {
	SupervisorID string
	Key          string
	// Fingerprint identifies the directive (its wire form's hash): the
	// same key with another fingerprint is another directive.
	Fingerprint string
	Directive   []byte
	Status      string
	Plan        []byte
	Result      []byte
	// Channel is the door the directive came through (ChannelSupervisor,
	// "agent").
	Channel string
}

// DirectiveLedger is the directive ledger. A fence, when given, must be
// the supervisor's current tenure (ErrLeaseLost otherwise): an engine that
// lost its lease starts nothing new.
type DirectiveLedger interface {
	// Directive returns the entry of a key.
	Directive(ctx context.Context, supervisorID, key string) (LedgerEntry, bool, error)
	// Claim stores e as pending under claim, held until ttl from now, when
	// the key is new, or takes over a pending entry whose claim expired.
	// Otherwise it returns the stored entry and claimed = false.
	Claim(ctx context.Context, fence *Fence, e LedgerEntry, claim string, ttl time.Duration) (stored LedgerEntry, claimed bool, err error)
	// ExtendClaim keeps a claim for ttl more; false when it is no longer
	// claim's (it expired and was taken over, or the entry settled).
	ExtendClaim(ctx context.Context, fence *Fence, supervisorID, key, claim string, ttl time.Duration) (bool, error)
	// Settle stores e (status accepted or rejected, with its result) and
	// appends events, in one transaction and once: a new key is inserted
	// settled, a pending entry with e's fingerprint is settled; an entry
	// already settled (or another directive's) is returned unchanged with
	// settled = false, and nothing is appended.
	Settle(ctx context.Context, fence *Fence, e LedgerEntry, events []executionapp.Event) (stored LedgerEntry, settled bool, err error)
}

// RunInfo is where a run lives and how it stands.
type RunInfo struct {
	ID         string
	SessionID  string
	WorkflowID string
	Status     execution.Status
	StartedAt  time.Time
}

// Place is the run's place, for supervisor.CheckDirective.
func (r RunInfo) Place() supervisor.Place {
	return supervisor.Place{SessionID: r.SessionID, WorkflowID: r.WorkflowID}
}

// RunFacts are what a rule's condition reads of a run (the execution
// variable, docs/supervisors.md).
type RunFacts struct {
	RunInfo
	// LastProgressAt is the last time one of its nodes changed status or
	// finished a message; StartedAt before that.
	LastProgressAt time.Time
	// ActiveCount is how many runs of its workflow are unfinished, this one
	// included when it is.
	ActiveCount int
	// Nodes maps node ids to their statuses.
	Nodes map[string]execution.NodeStatus
}

// InputInfo is an input and where it lives.
type InputInfo struct {
	ID          string
	SessionID   string
	WorkflowID  string
	ExecutionID string
	NodeID      string
	Prompt      string
	Status      string
	AnsweredBy  string
	CreatedAt   time.Time
}

// RunDirectory looks runs and inputs up by id, across sessions: the
// supervisor runtime decides on ownership itself.
type RunDirectory interface {
	// Runs returns the runs of ids that exist (unknown ids are left out).
	Runs(ctx context.Context, ids []string) (map[string]RunInfo, error)
	// ActiveRuns returns up to limit unfinished runs (PENDING, RUNNING,
	// PAUSED) of the units, oldest first.
	ActiveRuns(ctx context.Context, units []supervisor.Unit, limit int) ([]RunInfo, error)
	// Facts returns what conditions read of a run; ok is false when it
	// does not exist.
	Facts(ctx context.Context, executionID string) (RunFacts, bool, error)
	// FactsMany returns what conditions read of the runs of ids that exist
	// (unknown ids are left out), all as of one moment.
	FactsMany(ctx context.Context, ids []string) (map[string]RunFacts, error)
	// Input returns an input; ok is false when it does not exist.
	Input(ctx context.Context, id string) (InputInfo, bool, error)
	// OpenInputs returns up to limit open inputs of the units, oldest first.
	OpenInputs(ctx context.Context, units []supervisor.Unit, limit int) ([]InputInfo, error)
}

// HoldStore keeps the hold ledger of runs.
type HoldStore interface {
	// ChangeHolds locks the hold ledger of a run, calls change with it and
	// the run's status, and stores what change returns, in one
	// transaction. A run that does not exist is ErrExecutionNotFound.
	// change must be pure: it may run again on a retried transaction.
	ChangeHolds(ctx context.Context, executionID string,
		change func(h supervisor.RunHolds, status execution.Status) (supervisor.RunHolds, error)) (supervisor.RunHolds, error)
	// Holds returns the ledgers of runs, each unfinished run that has any
	// hold (all of them when executionIDs is nil).
	Holds(ctx context.Context, executionIDs []string) ([]supervisor.RunHolds, error)
	// HeldRuns returns the unfinished runs a supervisor holds, oldest hold
	// first, at most limit.
	HeldRuns(ctx context.Context, supervisorID string, limit int) ([]RunInfo, error)
}

// Controller is the control use case every door calls
// (*executionapp.Control).
type Controller interface {
	Handle(ctx context.Context, r executionapp.ControlRequest) (executionapp.ControlResult, error)
}

// Starter starts runs (*executionapp.StartExecution).
type Starter interface {
	Handle(ctx context.Context, in executionapp.StartInput) (executionapp.StartResult, error)
}

// Answerer answers inputs (*executionapp.AnswerInput).
type Answerer interface {
	Handle(ctx context.Context, in executionapp.AnswerRequest) (executionapp.Input, error)
}

// ConditionEvaluator evaluates a supervisor condition (CEL) with the
// variables of its context.
type ConditionEvaluator interface {
	EvalBool(ctx context.Context, expr string, vars map[string]any) (bool, error)
}

// The outbox event types of the directive intake. Both become decision
// records in the journal of each run they name (journalapp).
const (
	// EventDirectiveApplied records a directive's effect that is not a
	// control command (StartWorkflow, AnswerInput, Hold, Release); control
	// commands are recorded by their own CommandAccepted/Applied/Rejected.
	EventDirectiveApplied = "DirectiveApplied"
	// EventDirectiveRejected records a part of an accepted directive that
	// an owned run refused (a finished run, an ifStatus that does not
	// hold). A directive the intake refuses is no event: it is recorded
	// with its sender only (ListRefusals).
	EventDirectiveRejected = "DirectiveRejected"
)
