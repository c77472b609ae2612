package executionapp

import (
	"context"
	"fmt"
	"time"

	"github.com/yukta/yukta/domain/execution"
	"github.com/yukta/yukta/domain/session"
)

// AdmissionConfig is the server's part of the scheduler limits.
type AdmissionConfig struct {
	// Slots are the server-wide bounds: --max-running and
	// --reserved-supervisor-slots. Every instance sharing a database
	// should use the same values; each admits by its own.
	Slots execution.Slots
	// Batch caps the runs one pass admits in one transaction (default 256);
	// a pass that hit it runs again at once.
	Batch int
	// Poll is how often a pass runs without a nudge (default 1 s): it finds
	// the slots other instances freed and limits raised by an apply, and
	// after a restart it starts the runs that waited through it.
	Poll time.Duration
}

func (c AdmissionConfig) withDefaults() AdmissionConfig {
	if c.Batch <= 0 {
		c.Batch = 256
	}
	if c.Poll <= 0 {
		c.Poll = time.Second
	}
	return c
}

// waitingPage is how many waiting runs one read of the queue takes.
const waitingPage = 500

// WaitingReader answers, outside any transaction, whether any run waits for
// a slot, so a pass with nothing to do costs one index probe and no lock.
type WaitingReader interface {
	AnyWaiting(ctx context.Context) (bool, error)
}

// SourceLoader loads what admitting a run needs of it (its definition).
type SourceLoader interface {
	Source(ctx context.Context, executionID string) (RunSource, error)
}

// AdmissionDeps are the ports the scheduler uses.
type AdmissionDeps struct {
	Tx      Transactor
	Waiting WaitingReader
	Sources SourceLoader
	Catalog session.Catalog
	// Waker wakes this instance's engine after an admission, so the
	// admitted runs' first messages are claimed at once; nil wakes none.
	Waker Waker
	Now   func() time.Time
	// OnError hears of a pass that failed (the next one tries again).
	OnError func(error)
}

// Admission is the scheduler limits of one instance: it decides, inside a
// start's transaction, whether the run starts now or waits (Place), and
// its loop admits the waiting runs in start order as slots free (Run).
// Every admission holds the admission lock (AdmissionStore.Lock) from
// before it counts until it commits, so instances sharing a database never
// admit past a limit together. The queue is the executions table itself
// (PENDING rows, in queue order), so it survives crashes and restarts.
type Admission struct {
	tx      Transactor
	waiting WaitingReader
	sources SourceLoader
	catalog session.Catalog
	waker   Waker
	now     func() time.Time
	onError func(error)
	cfg     AdmissionConfig
	nudge   chan struct{}
}

// NewAdmission returns the scheduler; Run starts its loop.
func NewAdmission(d AdmissionDeps, cfg AdmissionConfig) (*Admission, error) {
	if err := cfg.Slots.Validate(); err != nil {
		return nil, err
	}
	a := &Admission{tx: d.Tx, waiting: d.Waiting, sources: d.Sources, catalog: d.Catalog, waker: d.Waker, now: d.Now,
		onError: d.OnError, cfg: cfg.withDefaults(), nudge: make(chan struct{}, 1)}
	if a.onError == nil {
		a.onError = func(error) {}
	}
	return a, nil
}

// Slots returns the server-wide bounds this instance admits by.
func (a *Admission) Slots() execution.Slots { return a.cfg.Slots }

// Nudge asks for a pass now. It never blocks: nudges that arrive while a
// pass runs make one more pass. Hook it to every commit that changed an
// execution's status (a run that ends frees its slot).
func (a *Admission) Nudge() {
	select {
	case a.nudge <- struct{}{}:
	default:
	}
}

// Run admits waiting runs until ctx ends: once at start (runs that waited
// through a restart), then on every nudge and every Poll. It returns when
// ctx ends and no pass is running.
func (a *Admission) Run(ctx context.Context) {
	t := time.NewTicker(a.cfg.Poll)
	defer t.Stop()
	for {
		n, err := a.Pass(ctx)
		if err != nil && ctx.Err() == nil {
			a.onError(err)
		}
		if n == a.cfg.Batch {
			continue // the cap was hit: more may fit
		}
		select {
		case <-ctx.Done():
			return
		case <-a.nudge:
		case <-t.C:
		}
	}
}

// PlaceInput is a new run asking for a slot.
type PlaceInput struct {
	ID, SessionID, WorkflowID string
	// RestartOf and FromNodeID are the lineage of a restart.
	RestartOf, FromNodeID string
	Pool                  execution.Pool
	At                    time.Time
}

// Place decides, inside the transaction that will insert a new run, whether
// the run starts now (RUNNING) or waits (PENDING), and returns it. A run no
// limit applies to starts at once and costs one small read. Otherwise the
// admission lock is taken, held until the transaction ends, and the run
// starts now only if every limit that applies to it has room and no run
// waits under one of them (it would be ahead). The caller inserts the
// returned execution with its status, seeds it (seed holds the messages of
// a waiting run) and, for PoolReserved, calls Reserve once it is inserted.
// A nil Admission places every run RUNNING.
func (a *Admission) Place(ctx context.Context, st Stores, in PlaceInput) (*execution.Execution, error) {
	now := func() *execution.Execution {
		return execution.New(in.ID, in.SessionID, in.WorkflowID, in.RestartOf, in.FromNodeID, in.At)
	}
	if a == nil {
		return now(), nil
	}
	if !in.Pool.Valid() {
		return nil, fmt.Errorf("execution: unknown slot pool %q", in.Pool)
	}
	slots := a.cfg.Slots
	sm, wm, err := st.Admission.Bounds(ctx, in.SessionID, in.WorkflowID, slots.MaxRunning > 0)
	if err != nil {
		return nil, err
	}
	c := execution.Candidate{ID: in.ID, SessionID: in.SessionID, WorkflowID: in.WorkflowID, Pool: in.Pool, SessionMax: sm, WorkflowMax: wm}
	if !slots.Limited(c) {
		return now(), nil
	}
	held, waiting, err := st.Admission.Counts(ctx, in.SessionID, slots.MaxRunning > 0)
	if err != nil {
		return nil, err
	}
	if slots.StartsNow(held, waiting, c) {
		return now(), nil
	}
	return execution.NewPending(in.ID, in.SessionID, in.WorkflowID, in.RestartOf, in.FromNodeID, in.At), nil
}

// Reserve records that an inserted run asks for the reserved pool.
func (a *Admission) Reserve(ctx context.Context, st Stores, executionID string, p execution.Pool) error {
	if a == nil || p != execution.PoolReserved {
		return nil
	}
	return st.Admission.MarkReserved(ctx, executionID)
}

// Resume is RESUME for the scheduler, inside the command's transaction: a
// PAUSED run that never held a slot (it was paused while it waited) goes
// back to the queue (PENDING, in its first place) instead of RUNNING. It
// reports whether it requeued the run; when it did not, the caller resumes
// it as usual. A nil Admission requeues nothing.
func (a *Admission) Resume(ctx context.Context, st Stores, ex *execution.Execution) (bool, error) {
	if a == nil || ex.Status() != execution.Paused {
		return false, nil
	}
	admitted, err := st.Admission.Admitted(ctx, ex.ID())
	if err != nil || admitted {
		return false, err
	}
	return true, ex.Requeue()
}

// Pass admits, in one transaction, the waiting runs that fit, in start
// order, at most Batch; it returns how many it admitted. Each becomes
// RUNNING with an ExecutionStatusChanged event, its held messages become
// ready, and this instance's engine is woken.
func (a *Admission) Pass(ctx context.Context) (int, error) {
	if any, err := a.waiting.AnyWaiting(ctx); err != nil || !any {
		return 0, err
	}
	slots := a.cfg.Slots
	var admitted []string
	err := a.tx.WithinTx(ctx, func(ctx context.Context, st Stores) error {
		admitted = nil // the transaction may run again
		if err := st.Admission.Lock(ctx); err != nil {
			return err
		}
		held, err := st.Admission.Held(ctx)
		if err != nil {
			return err
		}
		var ids []string
		var after int64
		for len(ids) < a.cfg.Batch && !slots.Full(held) {
			page, err := st.Admission.Waiting(ctx, after, waitingPage)
			if err != nil {
				return err
			}
			cands := make([]execution.Candidate, len(page))
			for i, r := range page {
				cands[i] = r.Candidate
			}
			ids = append(ids, slots.Admit(held, cands, a.cfg.Batch-len(ids))...)
			if len(page) < waitingPage {
				break
			}
			after = page[len(page)-1].Seq
		}
		if len(ids) == 0 {
			return nil
		}
		w, err := newWork(ctx, st, ids, a.now())
		if err != nil {
			return err
		}
		for _, id := range ids {
			ex := w.execs[id]
			if ex == nil || ex.Status() != execution.Pending {
				delete(w.execs, id) // stopped or paused since the queue was read: not ours to touch
				continue
			}
			if err := ex.Admit(); err != nil {
				return err
			}
			if err := w.reconcile(ctx, id); err != nil {
				return err
			}
			admitted = append(admitted, id)
		}
		runs := &runCache{runs: map[string]*run{}, catalog: a.catalog, load: a.sources.Source}
		return w.finish(ctx, runs)
	})
	if err != nil {
		return 0, fmt.Errorf("admit waiting runs: %w", err)
	}
	if len(admitted) > 0 {
		wake(a.waker)
	}
	return len(admitted), nil
}
