package postgres_test

import (
	"testing"

	"github.com/yukta/yukta/adapters/postgres"
	"github.com/yukta/yukta/adapters/postgres/pgtest"
)

// TestQueuePoolCompilesNoQueryPlan: the queue's pool turns the planner's
// sorts off (its claims must walk their index in order), and a worker's
// poll over several queues must still sort the few ready items it finds:
// the disabled sort's penalty cost pushed that claim past jit_above_cost,
// and PostgreSQL spent 0.6 to 0.9 s compiling it on every poll that found
// work (e2e TestWorkersExactlyOnceInEffect saw leases run out while
// workers waited for their polls). Every query on this pool is driven by a
// handful of rows, so JIT never pays: it is off there.
func TestQueuePoolCompilesNoQueryPlan(t *testing.T) {
	t.Parallel()
	pool := pgtest.NewPool(t)
	q, err := postgres.NewQueue(pool)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(q.Close)
	var jit, sort string
	if err := postgres.QueuePool(q).QueryRow(t.Context(), `SELECT current_setting('jit'), current_setting('enable_sort')`).Scan(&jit, &sort); err != nil {
		t.Fatal(err)
	}
	if jit != "off" || sort != "off" {
		t.Fatalf("the queue's pool has jit=%s and enable_sort=%s, want both off", jit, sort)
	}
}
