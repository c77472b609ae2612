package postgres

import (
	"context"
	"math/rand/v2"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/yukta/yukta/application/executionapp"
	"github.com/yukta/yukta/application/sessionapp"
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
}

// NewExecutionTransactor returns an ExecutionTransactor on pool.
func NewExecutionTransactor(pool *pgxpool.Pool) *ExecutionTransactor {
	return &ExecutionTransactor{pool: pool}
}

var _ executionapp.Transactor = (*ExecutionTransactor)(nil)

// WithinTx runs fn with execution stores bound to one transaction.
func (t *ExecutionTransactor) WithinTx(ctx context.Context, fn func(context.Context, executionapp.Stores) error) error {
	var events *EventStore
	err := inTx(ctx, t.pool, func(tx pgx.Tx) error {
		events = &EventStore{db: tx}
		return fn(ctx, executionapp.Stores{
			Executions: &ExecutionStore{db: tx}, Items: &ItemStore{db: tx}, Events: events,
			Logs: &LogStore{db: tx}, Commands: &CommandStore{db: tx}, Inputs: &InputStore{db: tx},
			Signals: &SignalSender{db: tx}, Admission: &AdmissionStore{db: tx},
		})
	})
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

// inTx commits when fn returns nil, rolls back otherwise, and retries a few
// times on serialization failures and deadlocks, which are expected under
// contention and go away on a second try.
func inTx(ctx context.Context, pool *pgxpool.Pool, fn func(pgx.Tx) error) error {
	for attempt := 1; ; attempt++ {
		err := pgx.BeginTxFunc(ctx, pool, pgx.TxOptions{}, fn)
		if err == nil || attempt == 5 || !retryable(err) {
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
