package postgres

import (
	"context"
	"errors"
	"math/rand/v2"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/yukta/yukta/application/executionapp"
	"github.com/yukta/yukta/application/sessionapp"
	"github.com/yukta/yukta/domain/execution"
	"github.com/yukta/yukta/domain/fault"
)

// Transactor opens transactions for the application's use cases.
type Transactor struct{ pool *pgxpool.Pool }

// NewTransactor returns a Transactor on pool.
func NewTransactor(pool *pgxpool.Pool) *Transactor { return &Transactor{pool: pool} }

var _ sessionapp.Transactor = (*Transactor)(nil)

// WithinTx runs fn with session stores bound to one transaction.
func (t *Transactor) WithinTx(ctx context.Context, fn func(context.Context, sessionapp.Stores) error) error {
	return inTx(ctx, t.pool, func(tx pgx.Tx) error {
		return fn(ctx, sessionapp.Stores{Sessions: &SessionStore{db: tx}, Audit: &SessionAudit{db: tx}})
	})
}

// ExecutionTransactor opens transactions for the execution use cases and the engine.
type ExecutionTransactor struct {
	pool *pgxpool.Pool
	// committed hear of every commit that appended events; statusChanged
	// of every commit that appended an ExecutionStatusChanged. Both are set
	// before the first transaction and only read after.
	committed     []func()
	statusChanged []func()
	// runs hears of the runs each commit started and ended; nil when no
	// one listens. Set before the first transaction.
	runs executionapp.RunMetrics
}

// NewExecutionTransactor returns an ExecutionTransactor on pool.
func NewExecutionTransactor(pool *pgxpool.Pool) *ExecutionTransactor {
	return &ExecutionTransactor{pool: pool}
}

var _ executionapp.Transactor = (*ExecutionTransactor)(nil)

// WithinTx runs fn with execution stores bound to one transaction.
func (t *ExecutionTransactor) WithinTx(ctx context.Context, fn func(context.Context, executionapp.Stores) error) error {
	var events *EventStore
	var runs *runNotes
	err := inTx(ctx, t.pool, func(tx pgx.Tx) error {
		// Each attempt notes afresh: a rolled-back attempt's notes are
		// dropped with it.
		events, runs = &EventStore{db: tx}, nil
		st := executionapp.Stores{
			Executions: &ExecutionStore{db: tx}, Items: &ItemStore{db: tx}, Events: events,
			Logs: &LogStore{db: tx}, Commands: &CommandStore{db: tx}, Inputs: &InputStore{db: tx},
			Signals: &SignalSender{db: tx}, Admission: &AdmissionStore{db: tx}, Pauses: &WorkflowPauseStore{db: tx},
		}
		if t.runs != nil {
			runs = &runNotes{}
			st.Runs = runs
		}
		return fn(ctx, st)
	})
	if err == nil && runs != nil {
		runs.replay(t.runs)
	}
	if err == nil && events.appended {
		for _, f := range t.committed {
			f()
		}
		if events.statusChanged {
			for _, f := range t.statusChanged {
				f()
			}
		}
	}
	return err
}

// OnCommittedEvents adds f to what hears of each commit that appended events
// (the instance's event feed). Add them before the first transaction; f
// runs on the committing goroutine, so it must not block.
func (t *ExecutionTransactor) OnCommittedEvents(f func()) { t.committed = append(t.committed, f) }

// OnCommittedStatusChanges adds f to what hears of each commit that changed
// an execution's status (appended an ExecutionStatusChanged): a run that
// ends frees its slot, so the scheduler's admission loop listens here. Add
// them before the first transaction; f must not block.
func (t *ExecutionTransactor) OnCommittedStatusChanges(f func()) {
	t.statusChanged = append(t.statusChanged, f)
}

// OnCommittedRuns makes m hear of the runs each commit started and ended
// (executionapp.RunMetrics), after the commit, on the committing goroutine.
// Set it before the first transaction; m must not block.
func (t *ExecutionTransactor) OnCommittedRuns(m executionapp.RunMetrics) { t.runs = m }

// runNotes holds the runs one transaction attempt started and ended until
// it commits.
type runNotes struct {
	started []runRef
	ended   []runEnd
}

type runRef struct{ sessionID, workflowID string }

type runEnd struct {
	runRef
	status execution.Status
	took   time.Duration
}

func (n *runNotes) RunStarted(sessionID, workflowID string) {
	n.started = append(n.started, runRef{sessionID, workflowID})
}

func (n *runNotes) RunEnded(sessionID, workflowID string, status execution.Status, took time.Duration) {
	n.ended = append(n.ended, runEnd{runRef{sessionID, workflowID}, status, took})
}

func (n *runNotes) replay(m executionapp.RunMetrics) {
	for _, r := range n.started {
		m.RunStarted(r.sessionID, r.workflowID)
	}
	for _, r := range n.ended {
		m.RunEnded(r.sessionID, r.workflowID, r.status, r.took)
	}
}

// inTx commits when fn returns nil, rolls back otherwise, and retries a few
// times on serialization failures and deadlocks, which are expected under
// contention and go away on a second try. It also retries when the
// connection is lost inside fn, before the commit was sent: nothing of that
// attempt can have committed. That is how PostgreSQL's idle-in-transaction
// timeout, which frees a frozen instance's locks, meets a live instance that
// merely stalled that long.
func inTx(ctx context.Context, pool *pgxpool.Pool, fn func(pgx.Tx) error) error {
	for attempt := 1; ; attempt++ {
		var bodyErr error
		err := pgx.BeginTxFunc(ctx, pool, pgx.TxOptions{}, func(tx pgx.Tx) error {
			bodyErr = fn(tx)
			return bodyErr
		})
		lostInBody := err != nil && err == bodyErr && ctx.Err() == nil && errors.Is(translate(err), fault.ErrUnavailable)
		if err == nil || attempt == 5 || !(retryable(err) || lostInBody) {
			return translate(err)
		}
		d := time.Duration(attempt*attempt) * 10 * time.Millisecond
		select {
		case <-time.After(d + rand.N(d)):
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}
