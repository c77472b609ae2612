package postgres_test

import (
	"context"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/yukta/yukta/adapters/postgres"
	"github.com/yukta/yukta/adapters/postgres/pgtest"
)

// TestInTxRetriesAfterIdleTimeout: PostgreSQL ends a transaction that idles
// past idle_in_transaction_session_timeout (how a frozen instance's locks
// are released). Nothing of it committed, so a live caller stalled that
// long is given a fresh attempt on another connection rather than an error.
func TestInTxRetriesAfterIdleTimeout(t *testing.T) {
	pool, err := postgres.NewPool(pgtest.NewDatabase(t), postgres.PoolOptions{IdleInTransaction: 200 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	ctx := context.Background()
	if _, err := pool.Exec(ctx, `CREATE TABLE idle_probe (n int)`); err != nil {
		t.Fatal(err)
	}
	attempts := 0
	err = postgres.InTx(ctx, pool, func(tx pgx.Tx) error {
		attempts++
		if _, err := tx.Exec(ctx, `INSERT INTO idle_probe VALUES ($1)`, attempts); err != nil {
			return err
		}
		if attempts == 1 {
			time.Sleep(600 * time.Millisecond) // stalled between statements
		}
		_, err := tx.Exec(ctx, `INSERT INTO idle_probe VALUES ($1)`, attempts)
		return err
	})
	if err != nil {
		t.Fatalf("inTx after an idle timeout: %v", err)
	}
	if attempts != 2 {
		t.Fatalf("%d attempts, want 2", attempts)
	}
	var rows, first int
	if err := pool.QueryRow(ctx, `SELECT count(*), count(*) FILTER (WHERE n = 1) FROM idle_probe`).Scan(&rows, &first); err != nil {
		t.Fatal(err)
	}
	if rows != 2 || first != 0 {
		t.Fatalf("%d rows, %d of the cut attempt: want the second attempt's 2 only", rows, first)
	}
}
