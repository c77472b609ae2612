package postgres_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/yukta/yukta/adapters/postgres"
	"github.com/yukta/yukta/adapters/postgres/pgtest"
	"github.com/yukta/yukta/application/executionapp"
	"github.com/yukta/yukta/domain/execution"
)

// runLog records what the transactor passes on.
type runLog struct {
	mu     sync.Mutex
	events []string
}

func (l *runLog) RunStarted(sessionID, workflowID string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.events = append(l.events, "started "+sessionID+"/"+workflowID)
}

func (l *runLog) RunEnded(sessionID, workflowID string, status execution.Status, took time.Duration) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.events = append(l.events, "ended "+sessionID+"/"+workflowID+" "+string(status)+" "+took.String())
}

func (l *runLog) take() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := l.events
	l.events = nil
	return out
}

// TestRunNotesCountOnlyTheCommittedAttempt: what a transaction notes reaches
// the RunMetrics after it commits, once, even when an attempt was retried
// after a serialization failure; a transaction that rolls back passes
// nothing on.
func TestRunNotesCountOnlyTheCommittedAttempt(t *testing.T) {
	pool := pgtest.NewPool(t)
	tx := postgres.NewExecutionTransactor(pool)
	var log runLog
	tx.OnCommittedRuns(&log)
	ctx := context.Background()

	attempts := 0
	err := tx.WithinTx(ctx, func(ctx context.Context, st executionapp.Stores) error {
		attempts++
		st.Runs.RunStarted("s", "w")
		st.Runs.RunEnded("s", "w", execution.Success, time.Second)
		if attempts == 1 {
			return &pgconn.PgError{Code: "40001", Message: "could not serialize access"}
		}
		return nil
	})
	if err != nil || attempts != 2 {
		t.Fatalf("WithinTx: %v after %d attempts, want success on the second", err, attempts)
	}
	if got := log.take(); len(got) != 2 || got[0] != "started s/w" || got[1] != "ended s/w SUCCESS 1s" {
		t.Fatalf("passed on %q, want one start and one end", got)
	}

	refused := errors.New("refused")
	err = tx.WithinTx(ctx, func(ctx context.Context, st executionapp.Stores) error {
		st.Runs.RunStarted("s", "w")
		return refused
	})
	if !errors.Is(err, refused) {
		t.Fatalf("WithinTx: %v, want the refusal", err)
	}
	if got := log.take(); len(got) != 0 {
		t.Fatalf("a rolled-back transaction passed on %q", got)
	}
}
