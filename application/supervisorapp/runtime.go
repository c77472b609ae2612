package supervisorapp

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/yukta/yukta/application/executionapp"
	"github.com/yukta/yukta/domain/supervisor"
)

// RuntimeDeps are what the runtime needs. Engines maps engine types to
// their factories; a supervisor whose type has none is not run here.
type RuntimeDeps struct {
	Supervisors Reader
	Leases      LeaseStore
	Cursors     CursorStore
	Events      executionapp.EventTail
	// Positions gives the outbox's head, where a supervisor without a
	// creation event starts.
	Positions OutboxPositions
	Runs      RunDirectory
	Holds     HoldStore
	Redactor  EventRedactor
	// Reviews is read for the REVIEW signals of the supervisors asked;
	// nil: no reviews are delivered.
	Reviews ReviewStore
	// Delegations is read for the DELEGATED and CONSULTED signals of
	// delegations' targets and senders; nil: none are delivered.
	Delegations DelegationStore
	Engines     map[string]EngineFactory
	// Owner names this instance in leases; unique per process.
	Owner string
	Now   func() time.Time
	// OnError hears what the runtime retries: a failed read, a failed
	// engine (supervisorID "" for the supervisor list).
	OnError func(supervisorID string, err error)
}

// RuntimeConfig tunes the runtime; zero values take the defaults.
type RuntimeConfig struct {
	// LeaseTTL is how long a lease lasts without renewal (default 15 s):
	// how long a supervisor waits for a dead instance's engine to be taken
	// over. It is renewed every third of it.
	LeaseTTL time.Duration
	// Poll is how often an engine reads the outbox when it has caught up
	// (default 250 ms).
	Poll time.Duration
	// Rescan is how often the supervisor list is read again, to start,
	// restart and stop engines as supervisors change (default 2 s).
	Rescan time.Duration
	// Batch is how many outbox events one read takes (default 200).
	Batch int
	// MaxBackoff caps the wait after a failure (default 5 s).
	MaxBackoff time.Duration
}

// Runtime runs the engine of every enabled supervisor whose engine type it
// knows, each as a fenced singleton across instances: a worker per
// supervisor takes the supervisor's lease, hands the engine its signals in
// order (STARTED with a snapshot, EVENT for each outbox event on an owned
// unit from the durable cursor on, TICK every tickSeconds) and moves the
// cursor with the lease's token, so an instance that lost the lease cannot
// move it. Delivery is at least once: a signal handled when the instance
// died is handled again by the next owner.
type Runtime struct {
	d   RuntimeDeps
	cfg RuntimeConfig
	// parents are the ids of supervisors that are another's parent (as of
	// the last supervisor scan): they read every session's events, since a
	// child's review may be escalated to them from a session they do not
	// own.
	parents atomic.Pointer[map[string]bool]
}

// NewRuntime returns the runtime.
func NewRuntime(d RuntimeDeps, cfg RuntimeConfig) *Runtime {
	if cfg.LeaseTTL <= 0 {
		cfg.LeaseTTL = 15 * time.Second
	}
	if cfg.Poll <= 0 {
		cfg.Poll = 250 * time.Millisecond
	}
	if cfg.Rescan <= 0 {
		cfg.Rescan = 2 * time.Second
	}
	if cfg.Batch <= 0 {
		cfg.Batch = 200
	}
	if cfg.MaxBackoff <= 0 {
		cfg.MaxBackoff = 5 * time.Second
	}
	if d.OnError == nil {
		d.OnError = func(string, error) {}
	}
	if d.Now == nil {
		d.Now = time.Now
	}
	return &Runtime{d: d, cfg: cfg}
}

// worker is one supervisor's goroutine: version says which document it
// runs, so a changed supervisor gets a fresh engine.
type worker struct {
	version string
	cancel  context.CancelFunc
	done    chan struct{}
}

// Run supervises until ctx ends, then stops every engine, gives their
// leases back and returns once every worker has returned.
func (rt *Runtime) Run(ctx context.Context) {
	workers := map[string]*worker{}
	defer func() {
		for _, w := range workers {
			w.cancel()
		}
		for _, w := range workers {
			<-w.done
		}
	}()
	t := time.NewTicker(rt.cfg.Rescan)
	defer t.Stop()
	for {
		if err := rt.sync(ctx, workers); err != nil && ctx.Err() == nil {
			rt.d.OnError("", err)
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// sync starts, restarts and stops workers to match the stored supervisors.
func (rt *Runtime) sync(ctx context.Context, workers map[string]*worker) error {
	list, err := rt.d.Supervisors.Supervisors(ctx)
	if err != nil {
		return fmt.Errorf("supervisor runtime: list supervisors: %w", err)
	}
	want := map[string]Summary{}
	versions := map[string]string{}
	parents := map[string]bool{}
	for _, s := range list {
		if p := s.Supervisor.ParentID(); p != "" {
			parents[p] = true
		}
	}
	rt.parents.Store(&parents)
	for _, s := range list {
		sup := s.Supervisor
		if _, ok := rt.d.Engines[sup.EngineType()]; !ok || !sup.Enabled() {
			continue
		}
		b, err := sup.MarshalJSON()
		if err != nil {
			return fmt.Errorf("supervisor runtime: supervisor %s: %w", sup.ID(), err)
		}
		want[sup.ID()], versions[sup.ID()] = s, fmt.Sprintf("%x/%s", sha256.Sum256(b), generation(s))
	}
	for id, w := range workers {
		if v, ok := versions[id]; ok && v == w.version {
			continue
		}
		w.cancel()
		<-w.done
		delete(workers, id)
	}
	for id, s := range want {
		if _, ok := workers[id]; ok {
			continue
		}
		wctx, cancel := context.WithCancel(ctx)
		w := &worker{version: versions[id], cancel: cancel, done: make(chan struct{})}
		workers[id] = w
		go func() {
			defer close(w.done)
			rt.supervise(wctx, s.Supervisor, generation(s))
		}()
	}
	return nil
}

// generation names one life of a supervisor id: its creation time.
func generation(s Summary) string { return s.CreatedAt.UTC().Format(time.RFC3339Nano) }

// supervise takes the supervisor's lease whenever it can and serves the
// engine while it holds it, until ctx ends.
func (rt *Runtime) supervise(ctx context.Context, sup supervisor.Supervisor, gen string) {
	var backoff time.Duration
	for ctx.Err() == nil {
		f, ok, err := rt.d.Leases.Acquire(ctx, sup.ID(), rt.d.Owner, rt.cfg.LeaseTTL)
		switch {
		case err != nil:
			if ctx.Err() == nil {
				rt.d.OnError(sup.ID(), fmt.Errorf("take the lease: %w", err))
			}
			backoff = rt.backoff(backoff)
			sleep(ctx, backoff)
			continue
		case !ok:
			sleep(ctx, rt.cfg.LeaseTTL/3)
			continue
		}
		err = rt.serve(ctx, sup, gen, f)
		if !errors.Is(err, ErrLeaseLost) {
			// Give the lease back at once so another instance need not
			// wait for it to expire (a stop, or a failure here).
			rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 2*time.Second)
			if rerr := rt.d.Leases.Release(rctx, f); rerr != nil && err == nil {
				err = rerr
			}
			cancel()
		}
		if ctx.Err() != nil {
			return
		}
		if err != nil && !errors.Is(err, ErrLeaseLost) {
			rt.d.OnError(sup.ID(), err)
			backoff = rt.backoff(backoff)
			sleep(ctx, backoff)
			continue
		}
		backoff = 0
	}
}

func (rt *Runtime) backoff(prev time.Duration) time.Duration {
	return min(max(2*prev, 100*time.Millisecond), rt.cfg.MaxBackoff)
}

func sleep(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-t.C:
	}
}

// serve runs the engine while f is the supervisor's lease. It returns nil
// when ctx ends, ErrLeaseLost when the lease went to another tenure, and
// any other error for a failure (the caller backs off and starts again).
// The lease is renewed by a goroutine of its own, so a signal that takes
// long (a directive waiting for a key another sender holds) does not lose
// it; when renewal fails the engine's context ends.
func (rt *Runtime) serve(ctx context.Context, sup supervisor.Supervisor, gen string, f Fence) (err error) {
	var wg sync.WaitGroup
	defer wg.Wait() // deferred first, so it runs after the cancel below
	sctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	wg.Go(func() { rt.renew(sctx, f, cancel) })
	defer func() {
		if errors.Is(context.Cause(sctx), ErrLeaseLost) {
			err = ErrLeaseLost
		}
	}()
	return rt.run(sctx, sup, gen, f)
}

// renew keeps f's lease until ctx ends. When the lease is lost, or could
// not be renewed for a whole TTL (the database is unreachable: another
// instance may have it by now), it ends the engine's context with
// ErrLeaseLost.
func (rt *Runtime) renew(ctx context.Context, f Fence, lost context.CancelCauseFunc) {
	t := time.NewTicker(rt.cfg.LeaseTTL / 3)
	defer t.Stop()
	renewed := time.Now()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		ok, err := rt.d.Leases.Renew(ctx, f, rt.cfg.LeaseTTL)
		switch {
		case ctx.Err() != nil:
			return
		case err != nil:
			rt.d.OnError(f.SupervisorID, fmt.Errorf("renew the lease: %w", err))
			if time.Since(renewed) < rt.cfg.LeaseTTL {
				continue
			}
			lost(ErrLeaseLost)
			return
		case !ok:
			lost(ErrLeaseLost)
			return
		}
		renewed = time.Now()
	}
}

// run reads the cursor, starts the engine and feeds it signals until ctx
// ends or something fails.
func (rt *Runtime) run(ctx context.Context, sup supervisor.Supervisor, gen string, f Fence) error {
	cur, ok, err := rt.d.Cursors.Cursor(ctx, sup.ID())
	if err != nil {
		return ctxErr(ctx, fmt.Errorf("read the cursor: %w", err))
	}
	if !ok || cur.Generation != gen {
		// A new supervisor (or one created again under an old id) is told
		// about what happens from its creation on, however long this
		// instance took to pick it up, and gets the present in STARTED.
		// Without a creation event (it predates them) it starts at the
		// outbox's head.
		from, err := startPosition(ctx, rt.d.Cursors, rt.d.Positions, sup.ID())
		if err != nil {
			return ctxErr(ctx, fmt.Errorf("find where the supervisor starts reading: %w", err))
		}
		cur = Cursor{Generation: gen, Pos: from}
		if err := rt.d.Cursors.SaveCursor(ctx, f, cur); err != nil {
			return ctxErr(ctx, err)
		}
	}
	eng, err := rt.d.Engines[sup.EngineType()](ctx, sup, f, cur.State)
	if err != nil {
		return fmt.Errorf("start the %s engine: %w", sup.EngineType(), err)
	}
	if c, ok := eng.(EngineCloser); ok {
		// The engine's program or posts end with its run, before the
		// lease is given back (supervise releases it after serve returns).
		defer func() {
			if err := c.Close(); err != nil {
				rt.d.OnError(sup.ID(), fmt.Errorf("stop the %s engine: %w", sup.EngineType(), err))
			}
		}()
	}
	if sup.Takes(supervisor.KindStarted) {
		snap, err := BuildSnapshot(ctx, rt.d.Runs, rt.d.Holds, sup, cur.Pos)
		if err != nil {
			return ctxErr(ctx, fmt.Errorf("snapshot: %w", err))
		}
		sig := supervisor.NewSignal(supervisor.FormatCursor(cur.Pos), supervisor.StartedSignal{At: rt.d.Now(), Snapshot: snap})
		if err := hand(ctx, sup, eng, sig); err != nil {
			return ctxErr(ctx, fmt.Errorf("STARTED: %w", err))
		}
	}
	var ticks <-chan time.Time
	if sup.TickSeconds() > 0 && sup.Takes(supervisor.KindTick) {
		tk := time.NewTicker(sup.Tick())
		defer tk.Stop()
		ticks = tk.C
	}
	poll := time.NewTimer(0)
	defer poll.Stop()
	for {
		n, err := rt.pump(ctx, sup, f, eng, &cur)
		if err != nil {
			return ctxErr(ctx, err)
		}
		if n == rt.cfg.Batch {
			if ctx.Err() != nil {
				return nil
			}
			continue // more is waiting
		}
		poll.Reset(rt.cfg.Poll)
		select {
		case <-ctx.Done():
			return nil
		case <-poll.C:
		case <-ticks:
			sig := supervisor.NewSignal(supervisor.FormatCursor(cur.Pos), supervisor.TickSignal{At: rt.d.Now()})
			if err := hand(ctx, sup, eng, sig); err != nil {
				return ctxErr(ctx, fmt.Errorf("TICK: %w", err))
			}
		}
	}
}

// hand gives eng sig when its supervisor hears it (supervisor.Hears): a
// kind its engine takes, and no EVENT the supervisor caused itself (actor
// supervisor:<id>) unless its engine hears its own effects (http). This is
// the one guard in front of every engine: an engine that reacted to its
// own directives could feed on them without end, and none repeats the
// check. A signal not heard counts as handled: the cursor moves past it.
func hand(ctx context.Context, sup supervisor.Supervisor, eng Engine, sig supervisor.Signal) error {
	if !sup.Hears(sig) {
		return nil
	}
	return eng.Handle(ctx, sig)
}

// startPosition is where a supervisor without a cursor starts reading: the
// event that created it, or the outbox's head for one that predates those
// events. Never the head for one that has its creation event: the head
// lies before every transaction still running, so it may lie before
// events committed long before the supervisor existed.
func startPosition(ctx context.Context, cursors CursorStore, positions OutboxPositions, id string) (supervisor.Position, error) {
	created, found, err := cursors.CreatedAt(ctx, id)
	if err != nil || found {
		return created, err
	}
	return positions.Head(ctx)
}

// ctxErr turns a failure caused by ctx ending (a stop, or a lost lease,
// which serve reports) into nil.
func ctxErr(ctx context.Context, err error) error {
	if ctx.Err() != nil && !errors.Is(err, ErrLeaseLost) {
		return nil
	}
	return err
}

// pump reads one batch of the outbox after the cursor, hands the engine the
// events of owned units, and moves the cursor (with the engine's state)
// past what was handled. It returns how many events it read.
func (rt *Runtime) pump(ctx context.Context, sup supervisor.Supervisor, f Fence, eng Engine, cur *Cursor) (int, error) {
	q := executionapp.EventQuery{AfterXID: cur.Pos.XID, AfterSeq: cur.Pos.Seq, Limit: rt.cfg.Batch}
	if p := rt.parents.Load(); p == nil || !(*p)[sup.ID()] {
		q.SessionID = onlySession(sup.Owns())
		q.AlsoSessionless = rt.d.Delegations != nil
	}
	evs, err := rt.d.Events.Events(ctx, q)
	if err != nil {
		return 0, fmt.Errorf("read the outbox: %w", err)
	}
	if b, ok := eng.(BatchEngine); ok {
		b.BeginBatch(batchRuns(sup, evs))
		defer b.EndBatch()
	}
	// The cursor moves only past signals handled: a failed one stops the
	// batch there and comes again (at least once).
	handled := cur.Pos
	var failed error
	for _, e := range evs {
		sig, ok, err := signalOf(ctx, rt.d.Redactor, rt.d.Reviews, rt.d.Delegations, sup, e)
		if err == nil && ok {
			err = hand(ctx, sup, eng, sig)
		}
		if err != nil {
			failed = fmt.Errorf("event %d (%s): %w", e.Seq, e.Type, err)
			break
		}
		handled = EventPosition(e)
	}
	if handled != cur.Pos {
		state, err := eng.State()
		if err != nil {
			return 0, fmt.Errorf("engine state: %w", err)
		}
		next := Cursor{Generation: cur.Generation, Pos: handled, State: state}
		if err := rt.d.Cursors.SaveCursor(ctx, f, next); err != nil {
			return 0, err
		}
		*cur = next
	}
	return len(evs), failed
}

// batchRuns lists, once each, the runs of the owned events of a batch.
func batchRuns(sup supervisor.Supervisor, evs []executionapp.StoredEvent) []string {
	var out []string
	seen := map[string]bool{}
	for _, e := range evs {
		if e.ExecutionID != "" && !seen[e.ExecutionID] && sup.OwnsPlace(supervisor.Place{SessionID: e.SessionID, WorkflowID: e.WorkflowID}) {
			seen[e.ExecutionID] = true
			out = append(out, e.ExecutionID)
		}
	}
	return out
}

// onlySession is the one session every owned unit lies in ("" when they
// span several, or the server), so the outbox read can use the session's
// index. The position lookup of an outbox read by SessionID is global, so
// the cursor may be any event's seq.
func onlySession(units []supervisor.Unit) string {
	s := ""
	for _, u := range units {
		if u.Kind() == supervisor.UnitServer || u.SessionID() == "" || (s != "" && u.SessionID() != s) {
			return ""
		}
		s = u.SessionID()
	}
	return s
}
