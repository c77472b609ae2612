package postgres_test

import (
	"sync"
	"testing"
	"time"

	"github.com/yukta/yukta/adapters/postgres"
	"github.com/yukta/yukta/adapters/postgres/pgtest"
)

// TestDeliveryLedgerAcceptsEachDeliveryOnce: of twenty concurrent records
// of one delivery exactly one is new; another workflow's delivery with the
// same signature is its own; expired deliveries are swept.
func TestDeliveryLedgerAcceptsEachDeliveryOnce(t *testing.T) {
	t.Parallel()
	pool := pgtest.NewPool(t)
	l := postgres.NewDeliveryLedger(pool)
	ctx := t.Context()
	expires := time.Now().Add(5 * time.Minute)
	var mu sync.Mutex
	fresh := 0
	var wg sync.WaitGroup
	for range 20 {
		wg.Go(func() {
			ok, err := l.Record(ctx, "s", "w", "sha256=ab", expires)
			if err != nil {
				t.Error(err)
			}
			if ok {
				mu.Lock()
				fresh++
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	if fresh != 1 {
		t.Fatalf("%d of 20 records of one delivery were new, want 1", fresh)
	}
	if ok, err := l.Record(ctx, "s", "other", "sha256=ab", expires); err != nil || !ok {
		t.Fatalf("another workflow's delivery: %v, %v", ok, err)
	}
	if _, err := l.Record(ctx, "s", "w", "sha256=old", time.Now().Add(-time.Minute)); err != nil {
		t.Fatal(err)
	}
	if _, err := l.Record(ctx, "s", "w", "sha256=next", expires); err != nil {
		t.Fatal(err)
	}
	var n int
	if err := pool.QueryRow(ctx, `SELECT count(*) FROM webhook_deliveries WHERE expires_at < now()`).Scan(&n); err != nil || n != 0 {
		t.Fatalf("%d expired deliveries left (%v), want them swept", n, err)
	}
}
