package processengine_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/yukta/yukta/adapters/cel"
	"github.com/yukta/yukta/adapters/postgres"
	"github.com/yukta/yukta/adapters/postgres/pgtest"
	"github.com/yukta/yukta/application/engines/processengine"
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

// runEngine runs the supervisor runtime with the process engine built
// from d over the real store until the test ends; stop ends it and
// returns once Run has.
func runEngine(t *testing.T, e *env, d processengine.Deps) (stop func()) {
	t.Helper()
	st := postgres.NewSupervisorRuntime(e.pool)
	r := postgres.NewReader(e.pool)
	rt := supervisorapp.NewRuntime(supervisorapp.RuntimeDeps{Supervisors: e.store, Leases: st, Cursors: st, Events: r, Positions: r,
		Runs: st, Holds: st, Redactor: plainRedactor{}, Reviews: st, Delegations: st, Owner: "test",
		Engines: map[string]supervisorapp.EngineFactory{"process": processengine.NewFactory(d)},
		OnError: func(id string, err error) { t.Logf("runtime, supervisor %s: %v", id, err) },
	}, supervisorapp.RuntimeConfig{LeaseTTL: time.Second, Poll: 20 * time.Millisecond, Rescan: 50 * time.Millisecond})
	ctx, cancel := context.WithCancel(context.WithoutCancel(t.Context()))
	done := make(chan struct{})
	go func() { defer close(done); rt.Run(ctx) }()
	var once sync.Once
	stop = func() { once.Do(func() { cancel(); <-done }) }
	t.Cleanup(stop)
	return stop
}
