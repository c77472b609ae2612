package executionapp

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/yukta/yukta/domain/execution"
	"github.com/yukta/yukta/domain/fault"
)

// What remote workers see and send (docs/workers.md). A task is one work
// item of a TASK node: its id is the item's, its lease token the claim's,
// and a worker's answer commits through the engine's own commit, so a
// retry, a breakpoint, a pause or a stop treats it like any built-in work.

// WorkerChannel is the channel of what workers change.
const WorkerChannel = "worker"

// EventTaskCompleted journals each task a worker completed, with the usage
// and cost it reported (docs/journal.md#spend).
const EventTaskCompleted = execution.EventTaskCompleted

// The bounds of the worker API, declared once.
const (
	MaxPollQueues = 20
	MaxPollTasks  = 100
	MaxPollWait   = 30 * time.Second
	MaxTaskLines  = 100
)

// WorkerActor is the actor of what the worker with key name did.
func WorkerActor(keyName string) string { return "worker:" + keyName }

// Worker is the caller of the worker API: its key's name and what the key
// is limited to (nil: every queue, every session).
type Worker struct {
	Name     string
	Queues   []string
	Sessions []string
}

func (w Worker) owner() string { return WorkerActor(w.Name) }

func (w Worker) mayUse(queue, sessionID string) bool {
	return allows(w.Queues, queue) && allows(w.Sessions, sessionID)
}

func allows(list []string, v string) bool {
	if list == nil {
		return true
	}
	for _, s := range list {
		if s == v {
			return true
		}
	}
	return false
}

// TaskClaim is a claimed task item with what a delivery needs.
type TaskClaim struct {
	Claim
	Owner                 string
	Queue                 string
	SessionID, WorkflowID string
	ClaimedAt             time.Time
	// QueuedAt is when the task came due (its available_at).
	QueuedAt             time.Time
	LeaseUntil, Deadline time.Time
	Lease                time.Duration
}

// Task is one delivery to a worker.
type Task struct {
	TaskID         string
	LeaseToken     string
	Queue          string
	SessionID      string
	WorkflowID     string
	ExecutionID    string
	NodeID         string
	Attempt        int
	Payload        any
	IdempotencyKey string
	Deadline       time.Time
	LeaseUntil     time.Time
	Lease          time.Duration
}

// TaskLease is a task item as an answer finds it.
type TaskLease struct {
	ItemID                int64
	ExecutionID, NodeID   string
	SessionID, WorkflowID string
	Queue                 string
	State                 string
	Attempt               int
	// Owner and Token are the current lease's; empty and zero when the
	// item is not leased.
	Owner               string
	Token               int64
	Resumed, BPPassed   bool
	ClaimedAt, Deadline time.Time
	LeaseUntil          time.Time
	// Lapsed is set when the lease ran out (by the database's clock) and
	// the reaper has not yet failed the attempt.
	Lapsed bool
	// Skipped is set when the task's node is skipped: its message passes
	// on unchanged, whatever the worker answers.
	Skipped bool
	// Payload is the task's message.
	Payload any
}

// TaskLeases reads and extends task leases.
type TaskLeases interface {
	// Lease returns a task item; ok is false when no item of a queue has
	// that id.
	Lease(ctx context.Context, itemID int64) (l TaskLease, ok bool, err error)
	// Extend renews a lease the owner holds under token, never past its
	// deadline; ok is false when it no longer holds it.
	Extend(ctx context.Context, itemID, token int64, owner string) (leaseUntil, deadline time.Time, ok bool, err error)
}

// taskAnswer is what a worker's complete journals.
type taskAnswer struct {
	port        string
	usage, cost map[string]any
}

func (a *taskAnswer) data(c Claim) map[string]any {
	d := map[string]any{"itemId": c.ItemID, "attempt": c.Attempt, "port": a.port}
	if a.usage != nil {
		d["usage"] = a.usage
	}
	if a.cost != nil {
		d["cost"] = a.cost
	}
	return d
}

// ErrTaskNotFound answers a task id that names no task the caller may see.
var ErrTaskNotFound = fmt.Errorf("task not found: %w", fault.ErrNotFound)

// ErrLeaseLost answers an answer or log line whose lease is not held.
var ErrLeaseLost = fmt.Errorf("task lease not held: %w", fault.ErrConflict)

// parseTaskID reads a task id as a poll gave it.
func parseTaskID(s string) (int64, error) {
	id, err := strconv.ParseInt(s, 10, 64)
	if err != nil || id <= 0 {
		return 0, fault.Newf(fault.ErrInvalid, "taskId %q is not a task id; use the taskId a poll returned", s)
	}
	return id, nil
}

// parseLeaseToken reads a lease token as a poll gave it.
func parseLeaseToken(s string) (int64, error) {
	t, err := strconv.ParseInt(s, 10, 64)
	if err != nil || t <= 0 {
		return 0, fault.Newf(fault.ErrInvalid, "leaseToken %q is not a lease token; send the leaseToken of the poll that delivered the task", s)
	}
	return t, nil
}

// findLease loads the task a worker names and checks that it may see it and
// holds its lease under token. A task of a queue or session the worker may
// not use reads as one that does not exist.
func findLease(ctx context.Context, leases TaskLeases, w Worker, taskID, leaseToken string) (TaskLease, error) {
	id, err := parseTaskID(taskID)
	if err != nil {
		return TaskLease{}, err
	}
	token, err := parseLeaseToken(leaseToken)
	if err != nil {
		return TaskLease{}, err
	}
	l, ok, err := leases.Lease(ctx, id)
	if err != nil {
		return TaskLease{}, err
	}
	if !ok || !w.mayUse(l.Queue, l.SessionID) {
		return TaskLease{}, fault.Newf(ErrTaskNotFound, "no task %s is in a queue this key may use; use a taskId a poll returned", taskID)
	}
	if l.Owner != w.owner() || l.Token != token || l.Lapsed {
		return l, lostLease(l, w)
	}
	return l, nil
}

// lostLease says why a worker no longer holds a task.
func lostLease(l TaskLease, w Worker) error {
	var why string
	switch {
	case l.State == ItemDone:
		why = "it was already answered"
	case l.State == ItemDropped:
		why = "its run or node was stopped, so it will not be applied"
	case l.Lapsed && l.Owner == w.owner():
		why = fmt.Sprintf("its lease ran out at %s (no heartbeat, or past its deadline), so attempt %d counts as failed", l.LeaseUntil.UTC().Format(time.RFC3339Nano), l.Attempt)
	case l.Owner == "":
		why = fmt.Sprintf("its lease ran out and it waits to be delivered again (attempt %d was the last)", l.Attempt)
	case l.Owner != w.owner():
		why = fmt.Sprintf("it is leased to another worker (attempt %d)", l.Attempt)
	default:
		why = fmt.Sprintf("it was delivered again since (attempt %d); answer with that delivery's leaseToken, or let it be", l.Attempt)
	}
	return fault.Newf(ErrLeaseLost, "task %d is not leased to %s under this leaseToken: %s; nothing changed", l.ItemID, w.owner(), why)
}

// ErrNodeSkipped answers a worker whose task's node was skipped after the
// task was delivered.
var ErrNodeSkipped = fmt.Errorf("the task's node was skipped: %w", fault.ErrConflict)

// passSkipped lets a skipped node's leased task through unchanged, as SKIP
// promises, and says so to the worker that answered it (its answer is not
// used). The pass-through is committed against the worker's lease, so a
// second answer finds nothing.
func (e *Engine) passSkipped(ctx context.Context, w Worker, l TaskLease) error {
	r, err := e.runs.get(ctx, l.ExecutionID)
	if err != nil {
		return err
	}
	by := committer{owner: w.owner(), actor: EngineActor, channel: EngineChannel}
	if err := e.commitRetrying(ctx, nil, by, []result{{claim: l.claimOf(), run: r, passAll: true}}); err != nil {
		return err
	}
	return fault.Newf(ErrNodeSkipped, "node %s was skipped after task %d was delivered: its message went on unchanged, and this answer changes nothing", l.NodeID, l.ItemID)
}

// claimOf is the engine's claim of a task a worker holds.
func (l TaskLease) claimOf() Claim {
	return Claim{ItemID: l.ItemID, Token: l.Token, ExecutionID: l.ExecutionID, NodeID: l.NodeID, Attempt: l.Attempt,
		Resumed: l.Resumed, BPPassed: l.BPPassed, Payload: l.Payload}
}

// errTaskTimedOut and errTaskSilent are the failures of a lapsed lease.
var (
	errTaskTimedOut = errors.New("timed out")
	errTaskSilent   = errors.New("no heartbeat")
)
