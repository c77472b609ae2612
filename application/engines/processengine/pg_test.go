package processengine_test

import (
	"context"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/yukta/yukta/adapters/cel"
	"github.com/yukta/yukta/adapters/postgres"
	"github.com/yukta/yukta/adapters/postgres/pgtest"
	"github.com/yukta/yukta/application/executionapp"
	"github.com/yukta/yukta/application/supervisorapp"
)

// The tests that run the engine under the runtime do so over the real
// store on a throwaway PostgreSQL: one cluster per test binary, one
// migrated database per test.
func TestMain(m *testing.M) { pgtest.Main(m) }

// env is a fresh database with the supervisor store, and the use case
// that saves supervisors as every door does.
type env struct {
	pool  *pgxpool.Pool
	store *postgres.SupervisorStore
	apply *supervisorapp.ApplySupervisor
}

func newEnv(t *testing.T) *env {
	t.Helper()
	pool := pgtest.NewPool(t)
	c, err := cel.NewConditions()
	if err != nil {
		t.Fatal(err)
	}
	return &env{pool: pool, store: postgres.NewSupervisorStore(pool),
		apply: supervisorapp.NewApplySupervisor(postgres.NewSupervisorTransactor(pool), c.Check, time.Now)}
}

// put applies doc as id, by key:admin over rest, and fails the test on an
// error.
func (e *env) put(t *testing.T, id, doc string) {
	t.Helper()
	if _, err := e.apply.Handle(t.Context(), supervisorapp.ApplyInput{ID: id, Document: []byte(doc), Actor: "key:admin", Channel: "rest"}); err != nil {
		t.Fatalf("apply %s: %v", id, err)
	}
}

// plainRedactor redacts nothing.
type plainRedactor struct{}

func (plainRedactor) Redact(_ context.Context, e executionapp.StoredEvent) (map[string]any, error) {
	return e.Data, nil
}
