package bootstrap

import (
	"context"
	"crypto/rand"
	"fmt"
	"os"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"go.uber.org/fx"
	"go.uber.org/zap"

	"github.com/yukta/yukta/adapters/cel"
	"github.com/yukta/yukta/adapters/egress"
	"github.com/yukta/yukta/adapters/httpapi"
	"github.com/yukta/yukta/adapters/metrics"
	"github.com/yukta/yukta/adapters/plugins"
	"github.com/yukta/yukta/adapters/postgres"
	"github.com/yukta/yukta/application/executionapp"
	"github.com/yukta/yukta/application/sessionapp"
	"github.com/yukta/yukta/application/supervisorapp"
	"github.com/yukta/yukta/domain/session"
)

// executionModule wires the runtime: plugin runners, the queue and its
// signals, the engine, and the execution use cases.
var executionModule = fx.Module("executions",
	fx.Provide(
		func(cfg Config) (*cel.Evaluator, error) {
			return cel.New(cel.WithMaxOutput(cfg.Limits.MaxMessageBytes, executionapp.SettingMaxMessage))
		},
		func(cfg Config) (*egress.Client, error) {
			return egress.New(egress.Options{AllowedHosts: cfg.EgressAllowed, Timeout: plugins.DefaultEgressCeiling})
		},
		newRegisteredTypes,
		func(types registeredTypes) (*plugins.RunnerSet, error) { return plugins.NewRunnerSet(types) },
		postgres.NewExecutionTransactor,
		func(lc fx.Lifecycle, pool *pgxpool.Pool) (*postgres.Queue, error) {
			q, err := postgres.NewQueue(pool)
			if err == nil {
				lc.Append(fx.StopHook(q.Close))
			}
			return q, err
		},
		postgres.NewReader,
		newListener,
		func(t *postgres.ExecutionTransactor) executionapp.Transactor { return t },
		func(r *postgres.Reader) executionapp.Reader { return r },
		func(r *postgres.Reader) executionapp.SpendReader { return r },
		func(s *sessionapp.GetWorkflow) executionapp.WorkflowReader { return rawWorkflows{s} },
		newEngine,
		newFeed,
		executionapp.NewAwait,
		func(tx executionapp.Transactor, w executionapp.WorkflowReader, c session.Catalog, e *executionapp.Engine, a *executionapp.Await,
			m *metrics.Metrics) *executionapp.StartExecution {
			s := executionapp.NewStartExecution(tx, w, c, e, a, time.Now)
			s.UseSkips(m)
			return s
		},
		func(pool *pgxpool.Pool) executionapp.DeliveryLedger { return postgres.NewDeliveryLedger(pool) },
		executionapp.NewStartFromWebhook,
		executionapp.NewGetExecution,
		executionapp.NewListExecutions,
		func(r executionapp.Reader, q *postgres.Queue, c session.Catalog) *executionapp.TailLogs {
			return executionapp.NewTailLogs(r, q, c, time.Now)
		},
		func(tx executionapp.Transactor, w executionapp.WorkflowReader, q *postgres.Queue, c session.Catalog, e *executionapp.Engine,
			ev *cel.Evaluator, a *executionapp.Await, adm *executionapp.Admission, holds *postgres.SupervisorRuntime, g *supervisorapp.Gate,
			m *metrics.Metrics) *executionapp.Control {
			return executionapp.NewControl(executionapp.ControlDeps{Tx: tx, Workflows: w, Queue: q, Catalog: c, Waker: e,
				Conditions: celConditions{ev}, Holds: holds, Admission: adm, Await: a, Reviews: g, Skips: m, Now: time.Now})
		},
		executionapp.NewListInputs,
		func(tx executionapp.Transactor, e *executionapp.Engine, q *postgres.Queue, c session.Catalog) *executionapp.AnswerInput {
			return executionapp.NewAnswerInput(tx, plugins.AnswerValidator{}, e, time.Now).WithSecretValues(q, c)
		},
		executionapp.NewReadEvents,
		// The worker API (docs/workers.md).
		func(e *executionapp.Engine, q *postgres.Queue) *executionapp.PollTasks {
			return executionapp.NewPollTasks(e, q)
		},
		func(q *postgres.Queue, l *executionapp.AppendTaskLogs) *executionapp.HeartbeatTask {
			return executionapp.NewHeartbeatTask(q, l)
		},
		func(e *executionapp.Engine, q *postgres.Queue) *executionapp.CompleteTask {
			return executionapp.NewCompleteTask(e, q)
		},
		func(e *executionapp.Engine, q *postgres.Queue) *executionapp.FailTask {
			return executionapp.NewFailTask(e, q)
		},
		func(e *executionapp.Engine, q *postgres.Queue) *executionapp.AppendTaskLogs {
			return executionapp.NewAppendTaskLogs(e, q)
		},
		func(p *executionapp.PollTasks, h *executionapp.HeartbeatTask, c *executionapp.CompleteTask, f *executionapp.FailTask,
			l *executionapp.AppendTaskLogs) httpapi.WorkerUseCases {
			return httpapi.WorkerUseCases{Poll: p, Heartbeat: h, Complete: c, Fail: f, Logs: l}
		},
	),
	fx.Invoke(func(*executionapp.Engine) {}),
	fx.Invoke(runScheduler),
)

func runScheduler(lc fx.Lifecycle, log *zap.Logger, store *postgres.SessionStore, start *executionapp.StartExecution) {
	s := executionapp.NewScheduler(store, plugins.NewCronClock(), start, time.Now, time.Second,
		func(err error) { log.Warn("scheduler", zap.Error(err)) })
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	lc.Append(fx.Hook{
		OnStart: func(context.Context) error { go func() { defer close(done); s.Run(ctx) }(); return nil },
		OnStop:  func(context.Context) error { cancel(); <-done; return nil },
	})
}

// rawWorkflows reads workflows with their secrets: the engine and webhooks
// need the real values, never shown to a reader.
type rawWorkflows struct{ uc *sessionapp.GetWorkflow }

func (r rawWorkflows) Workflow(ctx context.Context, sessionID, workflowID string) (session.Workflow, error) {
	return r.uc.Unmasked(ctx, sessionID, workflowID)
}

// newFeed starts the instance's event feed, which this instance's commits
// nudge, and stops it with the server.
func newFeed(lc fx.Lifecycle, r *postgres.Reader, t *postgres.ExecutionTransactor, log *zap.Logger) *executionapp.Feed {
	f := executionapp.NewFeed(r, executionapp.FeedInterval, func(err error) { log.Warn("event feed", zap.Error(err)) })
	t.OnCommittedEvents(f.Nudge)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	lc.Append(fx.Hook{
		OnStart: func(context.Context) error { go func() { defer close(done); f.Run(ctx) }(); return nil },
		OnStop:  func(context.Context) error { cancel(); <-done; return nil },
	})
	return f
}

func newListener(lc fx.Lifecycle, pool *pgxpool.Pool, log *zap.Logger) *postgres.Listener {
	l := postgres.NewListener(pool, func(err error) { log.Warn("signal listener reconnecting", zap.Error(err)) })
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	lc.Append(fx.Hook{
		OnStart: func(context.Context) error { go func() { defer close(done); l.Run(ctx) }(); return nil },
		OnStop:  func(context.Context) error { cancel(); <-done; return nil },
	})
	return l
}

func newEngine(lc fx.Lifecycle, cfg Config, log *zap.Logger, tx executionapp.Transactor, q *postgres.Queue,
	runners *plugins.RunnerSet, ev *cel.Evaluator, l *postgres.Listener, c session.Catalog, em executionapp.EngineMetrics) *executionapp.Engine {
	host, _ := os.Hostname()
	owner := fmt.Sprintf("%s/%d/%s", host, os.Getpid(), rand.Text()[:8])
	e := executionapp.NewEngine(executionapp.EngineDeps{
		Tx: tx, Queue: q, Runners: runners, Conditions: celConditions{ev}, Signals: l, Catalog: c, Owner: owner, Now: time.Now,
		OnError: func(op string, err error) { log.Warn("engine", zap.String("op", op), zap.Error(err)) },
		Metrics: em, Expired: q,
	}, executionapp.EngineConfig{Concurrency: cfg.Workers, Lease: cfg.Lease, Limits: cfg.Limits})
	runInBackground(lc, "engine", func(ctx context.Context) { _ = e.Run(ctx) },
		func() { log.Info("engine started", zap.String("owner", owner), zap.Int("workers", cfg.Workers)) },
		func() {
			st := e.Stats()
			log.Info("engine stopped", zap.Int64("claimed", st.Claimed), zap.Int64("committed", st.Committed), zap.Int64("commits", st.Commits))
		})
	return e
}

// celConditions adapts the CEL evaluator to breakpoint conditions.
type celConditions struct{ ev *cel.Evaluator }

// CheckCondition compiles a condition before a breakpoint stores it.
func (c celConditions) CheckCondition(expr string) error { return c.ev.CompileBool(expr) }

func (c celConditions) Match(ctx context.Context, cond string, payload any, exec map[string]any) (bool, error) {
	return c.ev.EvalBool(ctx, cond, cel.Vars{Payload: payload, Execution: exec})
}
