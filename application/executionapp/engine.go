package executionapp

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/yukta/yukta/domain/fault"
	"github.com/yukta/yukta/domain/jsonvalue"
	"github.com/yukta/yukta/domain/session"
)

// EngineConfig tunes the worker of one instance.
type EngineConfig struct {
	// Concurrency is how many items may run at once on this instance.
	Concurrency int
	// ClaimBatch caps the items one claim takes.
	ClaimBatch int
	// CommitBatch caps the results one transaction commits.
	CommitBatch int
	// Lease is how long a claim holds without a heartbeat; an instance that
	// dies loses its items to others after at most this long.
	Lease time.Duration
	// Poll is the fallback claim interval when no wake-up arrives (other
	// instances' work, timers coming due).
	Poll time.Duration
	// ShutdownGrace is how long running items may finish when the engine stops.
	ShutdownGrace time.Duration
	// Limits bound what one node attempt may produce.
	Limits ValueLimits
}

func (c EngineConfig) withDefaults() EngineConfig {
	if c.Concurrency <= 0 {
		c.Concurrency = 64
	}
	if c.ClaimBatch <= 0 {
		c.ClaimBatch = c.Concurrency
	}
	if c.CommitBatch <= 0 {
		c.CommitBatch = 256
	}
	if c.Lease <= 0 {
		c.Lease = 15 * time.Second
	}
	if c.Poll <= 0 {
		c.Poll = 500 * time.Millisecond
	}
	if c.ShutdownGrace <= 0 {
		c.ShutdownGrace = 5 * time.Second
	}
	c.Limits = c.Limits.withDefaults()
	return c
}

// Conditions evaluates breakpoint conditions (CEL) against a message.
type Conditions interface {
	Match(ctx context.Context, condition string, payload any, execution map[string]any) (bool, error)
}

// Engine moves work on one instance: it claims batches of runnable items,
// runs their plugins outside any transaction, and commits their outcomes in
// batches. Several engines (instances) share one database safely: claims
// skip locked rows, and a result is only applied while its lease holds.
type Engine struct {
	tx         Transactor
	queue      Queue
	runners    Runners
	conditions Conditions
	signals    Signals
	owner      string
	cfg        EngineConfig
	now        func() time.Time
	onError    func(op string, err error)
	metrics    EngineMetrics
	runs       *runCache
	expired    ExpiredTasks
	tmetrics   TaskMetrics

	wake chan struct{} // local: a commit made new work
	// tasks wakes the long polls of remote workers when a commit queues
	// work for their queues.
	tasks *taskBell

	mu sync.Mutex
	// claimSeq numbers this engine's claims; newest is the number of the
	// latest claim of each item it holds. After a database crash the same
	// item can be claimed again while the result of its lost claim still
	// waits for the completer; that older result is stale.
	claimSeq int64
	newest   map[int64]int64
	flights  map[int64]*flight
	// pending are items whose results wait for the completer; their leases
	// are renewed until the commit, and dropped if it gives up, so the
	// reaper can hand them to another claim.
	pending map[int64]bool
	stats   Stats
}

type flight struct {
	executionID, nodeID string
	cancel              context.CancelCauseFunc
	seq                 int64
}

// Stats are counters the metrics adapter reads.
type Stats struct {
	Claimed, Committed, Commits int64
}

// Errors that cancel a running item, told apart by context cause.
var (
	errCancelled = errors.New("cancelled by a stop")
	errShutdown  = errors.New("instance shutting down")
)

// EngineDeps are the ports the engine uses.
type EngineDeps struct {
	Tx         Transactor
	Queue      Queue
	Runners    Runners
	Conditions Conditions
	Signals    Signals
	Catalog    session.Catalog
	// Owner names this instance in leases; unique per process.
	Owner string
	Now   func() time.Time
	// OnError reports failures the engine survives (a commit that will be
	// retried by lease expiry, a claim that failed); the edge logs them.
	OnError func(op string, err error)
	// Metrics counts claims, commits and node outcomes; nil keeps none.
	Metrics EngineMetrics
	// Expired finds the task items whose worker lease ran out; nil when
	// the server has no worker API.
	Expired ExpiredTasks
}

// NewEngine returns an engine; Run starts it.
func NewEngine(d EngineDeps, cfg EngineConfig) *Engine {
	e := &Engine{tx: d.Tx, queue: d.Queue, runners: d.Runners, conditions: d.Conditions, signals: d.Signals,
		owner: d.Owner, expired: d.Expired, cfg: cfg.withDefaults(), now: d.Now, onError: d.OnError, metrics: d.Metrics,
		wake: make(chan struct{}, 1), tasks: newTaskBell(), flights: map[int64]*flight{}, pending: map[int64]bool{}, newest: map[int64]int64{}}
	if e.onError == nil {
		e.onError = func(string, error) {}
	}
	e.tmetrics = noTaskMetrics{}
	if tm, ok := d.Metrics.(TaskMetrics); ok {
		e.tmetrics = tm
	}
	if e.metrics == nil {
		e.metrics = noMetrics{}
	} else {
		report := e.onError
		e.onError = func(op string, err error) { e.metrics.EngineError(op); report(op, err) }
	}
	e.runs = &runCache{runs: map[string]*run{}, catalog: d.Catalog, load: d.Queue.Source}
	return e
}

// Stats returns a snapshot of the counters.
func (e *Engine) Stats() Stats {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.stats
}

// Run works until ctx ends, then stops claiming, lets running items finish
// for ShutdownGrace (then cancels and releases them), commits what finished,
// and returns once every goroutine it started has returned.
func (e *Engine) Run(ctx context.Context) error {
	results := make(chan result, e.cfg.Concurrency)
	var runners sync.WaitGroup
	var loops sync.WaitGroup

	commitCtx, stopCommits := context.WithCancel(context.WithoutCancel(ctx))
	completerDone := make(chan struct{})
	go func() { defer close(completerDone); e.complete(commitCtx, ctx.Done(), results) }()

	loops.Go(func() { e.heartbeat(ctx) })
	loops.Go(func() { e.reap(ctx) })
	loops.Go(func() { e.reapTasks(ctx) })
	loops.Go(func() { e.listenCancels(ctx) })

	runCtx, stopRuns := context.WithCancelCause(context.WithoutCancel(ctx))
	slots := make(chan struct{}, e.cfg.Concurrency)
	e.dispatch(ctx, runCtx, slots, results, &runners)

	// Shutdown: running items get a grace period, then are cancelled.
	grace := time.AfterFunc(e.cfg.ShutdownGrace, func() { stopRuns(errShutdown) })
	runners.Wait()
	grace.Stop()
	stopRuns(errShutdown)
	close(results)
	<-completerDone
	stopCommits()
	loops.Wait()
	return nil
}

// dispatch claims while there is capacity, until ctx ends.
func (e *Engine) dispatch(ctx, runCtx context.Context, slots chan struct{}, results chan<- result, wg *sync.WaitGroup) {
	poll := time.NewTicker(e.cfg.Poll)
	defer poll.Stop()
	for {
		free := cap(slots) - len(slots)
		full := false
		// A claim costs about the same for 1 item or 100, so while plenty is
		// running, wait for a good share of slots before claiming again.
		if busy := len(slots); busy > 0 && free < e.cfg.ClaimBatch/2 {
			free = 0
		}
		if free > 0 {
			claims, err := e.queue.Claim(ctx, e.owner, min(free, e.cfg.ClaimBatch), e.cfg.Lease)
			if err != nil && ctx.Err() == nil {
				e.onError("claim", err)
			}
			if err == nil {
				e.metrics.Claimed(len(claims))
			}
			e.mu.Lock()
			e.stats.Claimed += int64(len(claims))
			e.mu.Unlock()
			for _, c := range claims {
				slots <- struct{}{}
				fctx, cancel := context.WithCancelCause(runCtx)
				seq := e.track(c, cancel)
				wg.Go(func() {
					defer func() { <-slots; e.wakeUp() }()
					r := e.execute(fctx, c)
					r.seq = seq
					e.handOver(c.ItemID, seq)
					results <- r
					cancel(nil)
				})
			}
			full = len(claims) == min(free, e.cfg.ClaimBatch) && len(claims) > 0
		}
		if full && ctx.Err() == nil {
			continue // there may be more waiting
		}
		select {
		case <-ctx.Done():
			return
		case <-e.wake:
		case <-e.signals.Wakeups():
		case <-poll.C:
		}
	}
}

// Wake makes the engine claim now instead of at its next poll, and the
// workers' long polls look again: a start, a RESUME or a step may have
// opened a gate in front of queued tasks.
func (e *Engine) Wake() { e.wakeUp(); e.tasks.ringAll() }

func (e *Engine) wakeUp() {
	select {
	case e.wake <- struct{}{}:
	default:
	}
}

func (e *Engine) track(c Claim, cancel context.CancelCauseFunc) int64 {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.claimSeq++
	e.newest[c.ItemID] = e.claimSeq
	e.flights[c.ItemID] = &flight{executionID: c.ExecutionID, nodeID: c.NodeID, cancel: cancel, seq: e.claimSeq}
	return e.claimSeq
}

// handOver moves an item from running to waiting for its commit, unless a
// newer claim of it has taken over.
func (e *Engine) handOver(id, seq int64) {
	e.mu.Lock()
	if f, ok := e.flights[id]; ok && f.seq == seq {
		delete(e.flights, id)
	}
	if e.newest[id] == seq {
		e.pending[id] = true
	}
	e.mu.Unlock()
}

// fresh drops the results of a batch whose item has been claimed again
// since (their claim was lost with the database): at most one result per
// item reaches a commit, and it is the newest.
func (e *Engine) fresh(batch []result) (keep []result, stale int) {
	e.mu.Lock()
	defer e.mu.Unlock()
	for _, r := range batch {
		if e.newest[r.claim.ItemID] != r.seq {
			stale++
			continue
		}
		keep = append(keep, r)
	}
	return keep, stale
}

func (e *Engine) settled(batch []result) {
	e.mu.Lock()
	for _, r := range batch {
		if e.newest[r.claim.ItemID] == r.seq {
			delete(e.pending, r.claim.ItemID)
			delete(e.newest, r.claim.ItemID)
		}
	}
	e.mu.Unlock()
}

// held lists the items whose leases this instance must keep.
func (e *Engine) held() []int64 {
	e.mu.Lock()
	defer e.mu.Unlock()
	ids := make([]int64, 0, len(e.flights)+len(e.pending))
	for id := range e.flights {
		ids = append(ids, id)
	}
	for id := range e.pending {
		ids = append(ids, id)
	}
	return ids
}

// CancelRunning cancels this instance's running items of an execution (of
// one node when nodeID is set). Their results are then discarded: the stop
// that asked for it already dropped the items.
func (e *Engine) CancelRunning(executionID, nodeID string) int {
	e.mu.Lock()
	defer e.mu.Unlock()
	n := 0
	for _, f := range e.flights {
		if f.executionID == executionID && (nodeID == "" || f.nodeID == nodeID) {
			f.cancel(errCancelled)
			n++
		}
	}
	return n
}

func (e *Engine) listenCancels(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			return
		case s := <-e.signals.Cancels():
			e.CancelRunning(s.ExecutionID, s.NodeID)
		}
	}
}

func (e *Engine) heartbeat(ctx context.Context) {
	t := time.NewTicker(e.cfg.Lease / 3)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			ids := e.held()
			if len(ids) == 0 {
				continue
			}
			if err := e.queue.Heartbeat(ctx, e.owner, ids, e.cfg.Lease); err != nil && ctx.Err() == nil {
				e.onError("heartbeat", err)
			}
		}
	}
}

func (e *Engine) reap(ctx context.Context) {
	t := time.NewTicker(max(e.cfg.Lease/3, time.Second))
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			n, err := e.queue.Reap(ctx)
			if err != nil && ctx.Err() == nil {
				e.onError("reap", err)
			}
			if n > 0 {
				e.wakeUp()
			}
		}
	}
}

// result is what running one claim produced.
type result struct {
	claim     Claim
	run       *run
	out       Outcome
	err       error
	permanent bool // err is the node's own and retrying cannot help
	bpHit     bool
	passAll   bool // skipped node: the input goes out on every edge
	released  bool // shutdown: give the item back untouched
	discarded bool // cancelled by a stop: the stop already dropped it
	// task is a worker's answer to a task (TASK): the event it journals.
	task *taskAnswer
	seq  int64 // the engine's number of the claim
	// began and ended bound the plugin's run (wall clock); zero when the
	// plugin did not run (a pass-through, a breakpoint, a failure before it).
	began, ended time.Time
}

// execute runs one claim's plugin (or decides not to) outside any transaction.
func (e *Engine) execute(ctx context.Context, c Claim) result {
	r, err := e.runs.get(ctx, c.ExecutionID)
	if err != nil {
		// A database hiccup must not fail the run: give the item back.
		transient := ctx.Err() != nil || errors.Is(err, fault.ErrUnavailable) || errors.Is(err, context.DeadlineExceeded)
		return result{claim: c, err: err, released: transient}
	}
	res := result{claim: c, run: r}
	node, ok := r.nodes[c.NodeID]
	if !ok {
		res.err = fmt.Errorf("node %q is not in the execution's definition", c.NodeID)
		return res
	}
	if e.intercept(ctx, c, r, &res) {
		return res
	}
	if node.missing {
		res.err = fmt.Errorf("plugin type %s is not installed on this server", node.typ)
		return res
	}
	runner, ok := e.runners.Runner(node.typ)
	if !ok {
		res.err = fmt.Errorf("plugin type %s has no runner", node.typ)
		return res
	}
	inv := Invocation{
		SessionID: r.src.SessionID, WorkflowID: r.src.WorkflowID, ExecutionID: c.ExecutionID,
		NodeID: c.NodeID, NodeType: node.typ, ItemID: c.ItemID,
		IdempotencyKey: idempotencyKey(c),
		Attempt:        c.Attempt, Config: node.config, Payload: c.Payload, Execution: r.vars,
	}
	if c.Resumed {
		inv.Resume = &Resume{Answer: c.Answer, AnsweredBy: c.AnsweredBy}
	}
	// The attempt's timing is the plugin's own: from the call to its
	// return, whatever it returns. It starts before the timeout does, so a
	// run cut by its timeout shows at least the timeout.
	res.began = e.now()
	inv.Now = res.began
	rctx, cancel := context.WithTimeout(ctx, node.timeout)
	defer cancel()
	out, err := runner.Run(rctx, inv)
	res.ended = e.now()
	switch cause := context.Cause(ctx); {
	case errors.Is(cause, errShutdown):
		res.released = true
	case errors.Is(cause, errCancelled):
		res.discarded = true
	case err != nil && errors.Is(rctx.Err(), context.DeadlineExceeded):
		res.err = fmt.Errorf("node %s timed out after %s (config timeout)", c.NodeID, node.timeout)
	default:
		res.out, res.err = out, err
		// A value that cannot be stored is the same on every run.
		res.permanent = errors.As(err, new(*jsonvalue.Error))
		if err == nil {
			if err := e.cfg.Limits.check(&res.out); err != nil {
				res.out, res.err, res.permanent = Outcome{}, err, true
			}
		}
	}
	return res
}

// intercept decides what happens to a claim before its plugin (or worker)
// sees it: a skipped node passes the message on, a breakpoint that matches
// parks it. It reports whether it decided.
func (e *Engine) intercept(ctx context.Context, c Claim, r *run, res *result) bool {
	if c.Skipped {
		res.passAll = true
		return true
	}
	bp := c.Breakpoint
	if bp == nil || c.BPPassed {
		return false
	}
	hit := false
	if bp.Condition != "" {
		if e.conditions != nil {
			m, err := e.conditions.Match(ctx, bp.Condition, c.Payload, r.vars)
			hit = err == nil && m
		}
	} else {
		hit = bp.MatchField(c.Payload)
	}
	res.bpHit = hit
	return hit
}

// complete commits results in batches: it takes what has arrived, commits
// it in one transaction, and repeats. Under load batches grow by themselves.
// shutdown closes when the engine is stopping.
func (e *Engine) complete(ctx context.Context, shutdown <-chan struct{}, results <-chan result) {
	for r := range results {
		batch := []result{r}
	drain:
		for len(batch) < e.cfg.CommitBatch {
			select {
			case r, ok := <-results:
				if !ok {
					break drain
				}
				batch = append(batch, r)
			default:
				break drain
			}
		}
		keep, stale := e.fresh(batch)
		if stale > 0 {
			e.metrics.NodeResults(OutcomeLost, stale)
		}
		if len(keep) > 0 {
			e.commitIsolating(ctx, shutdown, keep)
		}
		e.settled(batch)
	}
}

// commitIsolating commits a batch so that one result's bad data cannot hold
// back the others. A batch the database refuses for its data (fault.ErrInvalid:
// SQLSTATE class 22, a value that cannot be encoded) is split in halves until
// the result that carries the bad data stands alone; every other result
// commits, and that one commits as a failure of its node attempt, so no
// plugin runs again because of it. Values are checked before they get here
// (ValueLimits.check), so this is the backstop for what the checks miss.
func (e *Engine) commitIsolating(ctx context.Context, shutdown <-chan struct{}, batch []result) {
	err := e.commitRetrying(ctx, shutdown, e.self(), batch)
	switch {
	case err == nil:
		return
	case !errors.Is(err, fault.ErrInvalid):
		// The items stay claimed but their leases are no longer renewed:
		// they expire and the reaper hands them to another claim (plugin
		// effects are at-least-once by design).
		e.onError("commit", err)
		return
	case len(batch) > 1:
		mid := len(batch) / 2
		e.commitIsolating(ctx, shutdown, batch[:mid])
		e.commitIsolating(ctx, shutdown, batch[mid:])
		return
	}
	r := batch[0]
	e.onError("commit", fmt.Errorf("execution %s node %s: the database refused the attempt's data; failing the attempt: %w", r.claim.ExecutionID, r.claim.NodeID, err))
	failed := result{claim: r.claim, run: r.run, permanent: true, began: r.began, ended: r.ended,
		err: fmt.Errorf("its output could not be stored: %w", err)}
	if err := e.commitRetrying(ctx, shutdown, e.self(), []result{failed}); err != nil {
		e.onError("commit", err)
	}
}

// commitRetrying commits one batch. A data error returns at once (the same
// data fails the same way); a database that is away is waited for, with
// growing pauses, for as long as the engine runs, since giving up would
// re-run every plugin of the batch once the leases lapse; other errors (a
// serialization failure that outlived the transaction's own retries) get a
// few attempts.
func (e *Engine) commitRetrying(ctx context.Context, shutdown <-chan struct{}, by committer, batch []result) error {
	_, err := e.commitCounting(ctx, shutdown, by, batch)
	return err
}

// commitCounting is commitRetrying that also says how many results were
// applied (a result whose lease was lost is not).
func (e *Engine) commitCounting(ctx context.Context, shutdown <-chan struct{}, by committer, batch []result) (applied int, err error) {
	var tally outcomeTally
	var ended []string
	var queues []string
	pause := 50 * time.Millisecond
	for attempt := 1; ; attempt++ {
		began := time.Now()
		err := e.commit(ctx, by, batch, &tally, &ended, &queues)
		if err == nil {
			e.tasks.ring(queues)
			// An ended run gets no more work here; keeping its definition
			// would grow the cache with every run the instance executed.
			for _, id := range ended {
				e.runs.forget(id)
			}
			e.metrics.Committed(len(batch), time.Since(began))
			for o, n := range tally {
				if n > 0 {
					e.metrics.NodeResults(NodeOutcome(o), n)
				}
			}
			e.mu.Lock()
			e.stats.Commits++
			e.stats.Committed += int64(len(batch))
			e.mu.Unlock()
			e.wakeUp()
			return len(batch) - tally[OutcomeLost], nil
		}
		stopping := false
		select {
		case <-shutdown:
			stopping = true
		default:
		}
		waitForDB := errors.Is(err, fault.ErrUnavailable) && !stopping
		if errors.Is(err, fault.ErrInvalid) || ctx.Err() != nil || (!waitForDB && attempt >= 5) {
			return 0, err
		}
		if waitForDB && attempt%20 == 0 {
			e.onError("commit", fmt.Errorf("waiting for the database (attempt %d): %w", attempt, err))
		}
		select {
		case <-time.After(pause):
		case <-ctx.Done():
			return 0, err
		}
		pause = min(pause*2, 2*time.Second)
	}
}
