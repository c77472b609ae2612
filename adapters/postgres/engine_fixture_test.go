package postgres_test

import (
	"context"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/yukta/yukta/adapters/plugins"
	"github.com/yukta/yukta/adapters/postgres"
	"github.com/yukta/yukta/application/executionapp"
	"github.com/yukta/yukta/application/sessionapp"
)

// engineFixture is the real engine over a throwaway database holding one
// applied session, with the start use case beside it.
type engineFixture struct {
	engine *executionapp.Engine
	start  *executionapp.StartExecution
}

// newEngineFixture applies doc as session sid and builds an engine on pool.
// A nil runners means the built-in ones. The engine is not running yet
// (queue work first to have it claimed in one batch); run starts it.
func newEngineFixture(t testing.TB, pool *pgxpool.Pool, sid, doc string, runners executionapp.Runners,
	onError func(op string, err error), cfg executionapp.EngineConfig) *engineFixture {
	t.Helper()
	cat := registry(t)
	apply := sessionapp.NewApplySession(postgres.NewTransactor(pool), cat, time.Now)
	if _, err := apply.Handle(t.Context(), sessionapp.ApplyInput{ID: sid, Document: []byte(doc)}); err != nil {
		t.Fatal(err)
	}
	q, err := postgres.NewQueue(pool)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(q.Close)
	if runners == nil {
		if runners, err = plugins.NewRunners(plugins.RunnerConfig{}); err != nil {
			t.Fatal(err)
		}
	}
	tx := postgres.NewExecutionTransactor(pool)
	engine := executionapp.NewEngine(executionapp.EngineDeps{
		Tx: tx, Queue: q, Runners: runners, Signals: quietSignals{}, Catalog: cat, Owner: t.Name(), Now: time.Now, OnError: onError,
	}, cfg)
	return &engineFixture{engine: engine,
		start: executionapp.NewStartExecution(tx, rawWorkflows{postgres.NewSessionStore(pool)}, cat, engine, nil, time.Now)}
}

// run starts the engine until the test ends, and joins it then.
func (f *engineFixture) run(t *testing.T) {
	ctx, stop := context.WithCancel(context.WithoutCancel(t.Context()))
	stopped := make(chan struct{})
	go func() { defer close(stopped); _ = f.engine.Run(ctx) }()
	t.Cleanup(func() { stop(); <-stopped })
}
