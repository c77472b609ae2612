package executionapp

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/yukta/yukta/domain/access"
	"github.com/yukta/yukta/domain/fault"
)

// TaskClaimer takes ready task items of queues under a worker's lease.
type TaskClaimer interface {
	// ClaimTasks leases up to n ready items of the queues (of the sessions,
	// when sessions is not nil) to owner, oldest first, each for its node's
	// heartbeatTimeout and with its attempt's deadline.
	ClaimTasks(ctx context.Context, owner string, queues, sessions []string, n int) ([]TaskClaim, error)
	// SeeWorker records that worker polled queues now.
	SeeWorker(ctx context.Context, worker string, queues []string) error
}

// PollInput is one poll of a worker.
type PollInput struct {
	Worker Worker
	Queues []string
	// Wait is how long to wait for a task when none is ready.
	Wait time.Duration
	// Max is the most tasks to take (1 when zero).
	Max int
}

// PollTasks is a worker's long poll: it leases ready tasks of its queues,
// or waits for one until Wait runs out. A commit on this instance that
// queues a task for one of its queues wakes it at once; work queued on
// another instance, or coming due (a retry's backoff), is found within the
// engine's poll interval.
type PollTasks struct {
	engine *Engine
	store  TaskClaimer
	// recheck is how often a waiting poll looks again without a wake-up.
	recheck time.Duration
	seen    seenWorkers
}

// NewPollTasks returns the use case.
func NewPollTasks(e *Engine, store TaskClaimer) *PollTasks {
	return &PollTasks{engine: e, store: store, recheck: e.cfg.Poll, seen: seenWorkers{last: map[string]time.Time{}}}
}

// Handle polls.
func (uc *PollTasks) Handle(ctx context.Context, in PollInput) ([]Task, error) {
	if err := checkPoll(in); err != nil {
		return nil, err
	}
	n := max(in.Max, 1)
	uc.seen.note(ctx, uc.store, in.Worker.owner(), in.Queues, uc.engine.onError)
	var waitUntil <-chan time.Time
	if in.Wait > 0 {
		t := time.NewTimer(in.Wait)
		defer t.Stop()
		waitUntil = t.C
	}
	waiter, stop := uc.engine.tasks.listen(in.Queues)
	defer stop()
	for {
		claims, err := uc.store.ClaimTasks(ctx, in.Worker.owner(), in.Queues, in.Worker.Sessions, n)
		if err != nil {
			return nil, err
		}
		tasks, err := uc.engine.deliver(ctx, in.Worker, claims)
		if err != nil {
			return nil, err
		}
		if len(tasks) > 0 || waitUntil == nil {
			return tasks, nil
		}
		if len(claims) > 0 {
			continue // the engine kept them (a skip, a breakpoint): look again
		}
		recheck := time.NewTimer(uc.recheck)
		select {
		case <-ctx.Done():
			recheck.Stop()
			return nil, ctx.Err()
		case <-waitUntil:
			recheck.Stop()
			return []Task{}, nil
		case <-waiter.c:
		case <-recheck.C:
		}
		recheck.Stop()
	}
}

func checkPoll(in PollInput) error {
	if len(in.Queues) == 0 || len(in.Queues) > MaxPollQueues {
		return fault.Newf(fault.ErrInvalid, "queues must name 1 to %d queues, got %d", MaxPollQueues, len(in.Queues))
	}
	for i, q := range in.Queues {
		if err := access.ValidateQueueName(q); err != nil {
			return fault.Newf(fault.ErrInvalid, "queues[%d]: %s", i, err)
		}
		if slices.Contains(in.Queues[:i], q) {
			return fault.Newf(fault.ErrInvalid, "queues[%d]: %q is named twice; name each queue once", i, q)
		}
		if !allows(in.Worker.Queues, q) {
			return fault.Newf(fault.ErrForbidden, "queues[%d]: %s may not take tasks of the queue %q; its queues are %v. Poll those, or use a key limited to %q",
				i, in.Worker.owner(), q, in.Worker.Queues, q)
		}
	}
	if in.Wait < 0 || in.Wait > MaxPollWait {
		return fault.Newf(fault.ErrInvalid, "wait must be 0 to %d seconds, got %s", int(MaxPollWait.Seconds()), in.Wait)
	}
	if in.Max < 0 || in.Max > MaxPollTasks {
		return fault.Newf(fault.ErrInvalid, "max must be 1 to %d, got %d", MaxPollTasks, in.Max)
	}
	return nil
}

// deliver turns claimed task items into deliveries. What the engine decides
// itself (a skipped node passes the message on, a breakpoint parks it, a
// message its inputSchema refuses fails the node) is committed here and not
// delivered; the rest is.
func (e *Engine) deliver(ctx context.Context, w Worker, claims []TaskClaim) ([]Task, error) {
	tasks := make([]Task, 0, len(claims))
	var kept []result
	for _, tc := range claims {
		c := tc.Claim
		r, err := e.runs.get(ctx, c.ExecutionID)
		if err != nil {
			// The lease runs out and the reaper gives it back.
			return tasks, err
		}
		res := result{claim: c, run: r}
		node := r.nodes[c.NodeID]
		if e.intercept(ctx, c, r, &res) {
			kept = append(kept, res)
			continue
		}
		if remote, ok := e.remote(node.typ); ok {
			if err := remote.CheckInput(node.config, c.Payload); err != nil {
				res.err, res.permanent = err, true
				kept = append(kept, res)
				continue
			}
		}
		e.tmetrics.TaskDelivered(tc.ClaimedAt.Sub(tc.QueuedAt))
		tasks = append(tasks, Task{
			TaskID: strconv.FormatInt(c.ItemID, 10), LeaseToken: strconv.FormatInt(c.Token, 10),
			Queue: tc.Queue, SessionID: tc.SessionID, WorkflowID: tc.WorkflowID, ExecutionID: c.ExecutionID, NodeID: c.NodeID,
			Attempt: c.Attempt, Payload: c.Payload, IdempotencyKey: idempotencyKey(c),
			Deadline: tc.Deadline, LeaseUntil: tc.LeaseUntil, Lease: tc.Lease,
		})
	}
	if len(kept) > 0 {
		by := committer{owner: w.owner(), actor: EngineActor, channel: EngineChannel}
		if err := e.commitRetrying(ctx, nil, by, kept); err != nil {
			return tasks, err
		}
	}
	return tasks, nil
}

// remote is the Remote behaviour of a node type, if it has one.
func (e *Engine) remote(typ string) (Remote, bool) {
	r, ok := e.runners.Runner(typ)
	if !ok {
		return nil, false
	}
	rem, ok := r.(Remote)
	return rem, ok
}

// idempotencyKey is stable across retries and re-runs of one message.
func idempotencyKey(c Claim) string {
	return fmt.Sprintf("%s:%s:%d", c.ExecutionID, c.NodeID, c.ItemID)
}

// seenWorkers writes "this worker polled these queues" at most once per
// seenEvery per worker and instance, so a busy poller costs no write per poll.
type seenWorkers struct {
	mu   sync.Mutex
	last map[string]time.Time
}

const seenEvery = 5 * time.Second

func (s *seenWorkers) note(ctx context.Context, store TaskClaimer, worker string, queues []string, onError func(string, error)) {
	key := worker + "\x00" + fmt.Sprint(queues)
	now := time.Now()
	s.mu.Lock()
	if now.Sub(s.last[key]) < seenEvery {
		s.mu.Unlock()
		return
	}
	if len(s.last) > 10_000 { // a crude bound: forgetting costs one write
		clear(s.last)
	}
	s.last[key] = now
	s.mu.Unlock()
	if err := store.SeeWorker(ctx, worker, queues); err != nil && ctx.Err() == nil {
		onError("see worker", err)
	}
}
