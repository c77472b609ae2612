package bootstrap

import (
	"context"
	"fmt"
	"net/netip"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"go.uber.org/fx"
	"go.uber.org/fx/fxevent"
	"go.uber.org/zap"

	"github.com/yukta/yukta/adapters/cel"
	"github.com/yukta/yukta/adapters/httpapi"
	"github.com/yukta/yukta/adapters/metrics"
	"github.com/yukta/yukta/adapters/plugins"
	"github.com/yukta/yukta/adapters/postgres"
	"github.com/yukta/yukta/adapters/web"
	"github.com/yukta/yukta/application/accessapp"
	"github.com/yukta/yukta/application/executionapp"
	"github.com/yukta/yukta/application/pluginapp"
	"github.com/yukta/yukta/application/sessionapp"
	"github.com/yukta/yukta/application/supervisorapp"
	"github.com/yukta/yukta/domain/access"
	"github.com/yukta/yukta/domain/session"
)

// DSN is the database the server uses (named so fx cannot confuse it with
// another string).
type DSN string

// Module is the whole server: one fx module per adapter plus the use cases.
// It needs a Config, a DSN, a *zap.Logger and the Extensions supplied.
var Module = fx.Options(
	fx.WithLogger(func(l *zap.Logger) fxevent.Logger {
		zl := &fxevent.ZapLogger{Logger: l.Named("fx")}
		zl.UseLogLevel(zap.DebugLevel)
		return zl
	}),
	postgresModule,
	pluginModule,
	sessionModule,
	supervisorModule,
	apiKeyModule,
	executionModule,
	schedulerModule,
	supervisorRuntimeModule,
	metricsModule,
	journalModule,
	retentionModule,
	httpModule,
	keyFileModule,
	mcpModule,
	debugModule,
)

var postgresModule = fx.Module("postgres",
	fx.Provide(
		newPool,
		postgres.NewSessionStore,
		postgres.NewTransactor,
		fx.Annotate(func(s *postgres.SessionStore) sessionapp.SessionStore { return s }),
		func(s *postgres.SessionStore) sessionapp.WorkflowSummaries { return s },
		fx.Annotate(func(t *postgres.Transactor) sessionapp.Transactor { return t }),
		func(pool *pgxpool.Pool) sessionapp.PauseReader { return postgres.NewWorkflowPauseReader(pool) },
	),
)

// idleInTransactionFloor is the least idle_in_transaction_session_timeout
// the pool sets, whatever the lease: how long an instance frozen inside a
// commit can hold the others' rows (docs/architecture.md, "Leases").
const idleInTransactionFloor = 5 * time.Second

func newPool(lc fx.Lifecycle, dsn DSN, cfg Config, log *zap.Logger) (*pgxpool.Pool, error) {
	pool, err := postgres.NewPool(string(dsn), postgres.PoolOptions{MaxConns: int32(cfg.DBMaxConns),
		// No legitimate transaction idles for seconds, and one that is cut
		// off before its commit is retried (inTx); the floor of 5 s keeps a
		// short test lease from cutting many off on a loaded machine, while
		// a frozen instance's locks still go within a few seconds.
		IdleInTransaction: max(cfg.Lease, idleInTransactionFloor)})
	if err != nil {
		return nil, err
	}
	lc.Append(fx.Hook{
		OnStart: func(ctx context.Context) error {
			if err := pool.Ping(ctx); err != nil {
				return err
			}
			if err := postgres.Migrate(ctx, pool); err != nil {
				return err
			}
			if v, err := postgres.SynchronousCommit(ctx, pool); err == nil && v != "on" && v != "remote_apply" && v != "remote_write" {
				log.Warn("synchronous_commit is not on: a database crash can lose work Yukta already acknowledged; set synchronous_commit=on",
					zap.String("synchronous_commit", v))
			}
			return nil
		},
		OnStop: func(context.Context) error { pool.Close(); return nil },
	})
	return pool, nil
}

var pluginModule = fx.Module("plugins",
	fx.Provide(
		// Expressions are compiled when a session is applied, so a typo is
		// refused then, not when a run reaches the node.
		func(ev *cel.Evaluator, types registeredTypes) (*pluginapp.Registry, error) {
			return pluginapp.NewRegistry(plugins.WithExpressionChecks(plugins.DescriptorsOf(types), ev)...)
		},
		func(r *pluginapp.Registry) session.Catalog { return r },
		pluginapp.NewListPlugins,
		pluginapp.NewDescribePlugin,
	),
)

var sessionModule = fx.Module("sessions",
	fx.Provide(
		func(tx sessionapp.Transactor, c session.Catalog) *sessionapp.ApplySession {
			return sessionapp.NewApplySession(tx, c, time.Now)
		},
		sessionapp.NewGetSession,
		sessionapp.NewListSessions,
		func(tx sessionapp.Transactor) *sessionapp.DeleteSession {
			return sessionapp.NewDeleteSession(tx, time.Now)
		},
		sessionapp.NewGetWorkflow,
		sessionapp.NewListWorkflows,
	),
)

type httpParams struct {
	fx.In
	LC             fx.Lifecycle
	Cfg            Config
	Log            *zap.Logger
	Pool           *pgxpool.Pool
	ApplySession   *sessionapp.ApplySession
	GetSession     *sessionapp.GetSession
	ListSessions   *sessionapp.ListSessions
	DeleteSession  *sessionapp.DeleteSession
	GetWorkflow    *sessionapp.GetWorkflow
	ListWorkflows  *sessionapp.ListWorkflows
	ListPlugins    *pluginapp.ListPlugins
	DescribePlugin *pluginapp.DescribePlugin
	Start          *executionapp.StartExecution
	Webhook        *executionapp.StartFromWebhook
	GetExecution   *executionapp.GetExecution
	ListExecutions *executionapp.ListExecutions
	TailLogs       *executionapp.TailLogs
	Control        *executionapp.Control
	ListInputs     *executionapp.ListInputs
	AnswerInput    *executionapp.AnswerInput
	Events         *executionapp.ReadEvents
	CEL            *cel.Evaluator
	Metrics        *metrics.Metrics
	Journal        httpapi.JournalUseCases
	Scheduler      *executionapp.GetSchedulerStatus
	Supervisors    httpapi.SupervisorUseCases
	ListApprovals  *supervisorapp.ListApprovals
	DecideApproval *supervisorapp.DecideApproval
	// Agent is the agent API (/api/agent/v1) and AgentAuth checks its
	// supervisor credentials.
	Agent     httpapi.AgentUseCases
	AgentAuth *supervisorapp.AuthenticateAgent `optional:"true"`
	// Mounts are the doors served beside REST (MCP, agent API).
	Mounts []httpapi.Mount `group:"mounts"`
	// Database knows when the embedded cluster is restarting; serve
	// supplies it.
	Database *DatabaseStatus `optional:"true"`
	// StoredKeys are the stored API keys this instance holds, and Keys
	// their use cases.
	StoredKeys *accessapp.StoredKeys `optional:"true"`
	Keys       httpapi.KeyUseCases   `optional:"true"`
	Worker     httpapi.WorkerUseCases
}

var httpModule = fx.Module("http",
	fx.Provide(newHTTPServer),
	fx.Invoke(func(*httpapi.Server) {}), // construct it, or its hooks never run
)

func newHTTPServer(p httpParams) (*httpapi.Server, error) {
	keys := p.Cfg.Keys
	if p.StoredKeys != nil {
		keys.Stored = p.StoredKeys
	}
	console, err := web.New()
	if err != nil {
		return nil, fmt.Errorf("the web console's embedded bundle: %w", err)
	}
	srv, err := httpapi.New(httpapi.Config{Addr: p.Cfg.Addr, AllowedHosts: p.Cfg.AllowedHosts, AllowedOrigins: p.Cfg.AllowedOrigins, TrustedProxies: p.Cfg.TrustedProxies,
		Security: httpapi.Security{Keys: keys, KeyRate: p.Cfg.KeyRate, SourceRate: p.Cfg.SourceRate,
			AgentRate: p.Cfg.AgentRate, AuthFailures: p.Cfg.AuthFailures, Agent: agentAuth(p.AgentAuth)},
		AgentBodyLimit: int64(p.Cfg.AgentMaxBody),
		Metrics:        p.Metrics, MetricsHandler: p.Metrics.Handler(), Mounts: p.Mounts, Console: console}, httpapi.UseCases{
		ApplySession:   p.ApplySession,
		GetSession:     p.GetSession,
		ListSessions:   p.ListSessions,
		DeleteSession:  p.DeleteSession,
		GetWorkflow:    p.GetWorkflow,
		ListWorkflows:  p.ListWorkflows,
		ListPlugins:    p.ListPlugins,
		DescribePlugin: p.DescribePlugin,
		Build:          buildInfo(),
		Executions: httpapi.ExecutionUseCases{
			Start: p.Start, Webhook: p.Webhook, Get: p.GetExecution, List: p.ListExecutions, Logs: p.TailLogs,
			Control: p.Control, Inputs: p.ListInputs, Answer: p.AnswerInput, Events: p.Events,
		},
		Journal:     p.Journal,
		Scheduler:   p.Scheduler,
		Supervisors: p.Supervisors,
		Approvals:   httpapi.ApprovalUseCases{List: p.ListApprovals, Decide: p.DecideApproval},
		Agent:       p.Agent,
		Keys:        p.Keys,
		Worker:      p.Worker,
		Ready: func(ctx context.Context) error {
			err := p.Database.Err() // a restart in progress says more than a failed ping
			if err == nil {
				err = postgres.Ready(ctx, p.Pool)
			}
			if err != nil {
				p.Log.Warn("not ready", zap.Error(err))
			}
			return err
		},
	}, p.Log)
	if err != nil {
		return nil, err
	}
	p.LC.Append(fx.Hook{
		OnStart: func(context.Context) error { return srv.Listen() },
		OnStop: func(ctx context.Context) error {
			ctx, cancel := context.WithTimeout(ctx, p.Cfg.ShutdownTimeout)
			defer cancel()
			return srv.Shutdown(ctx)
		},
	})
	return srv, nil
}

// agentAuth is the agent API's credential check for the access gate: the
// source it passes is the address the gate believes (the peer, or the
// forwarded address behind a trusted proxy).
func agentAuth(uc *supervisorapp.AuthenticateAgent) func(context.Context, string, string) (access.Principal, error) {
	if uc == nil {
		return nil
	}
	return func(ctx context.Context, secret, source string) (access.Principal, error) {
		remote, _ := netip.ParseAddr(source)
		id, err := uc.Handle(ctx, supervisorapp.AuthenticateAgentInput{Token: secret, Remote: remote.Unmap()})
		if err != nil {
			return access.Principal{}, err
		}
		return access.SupervisorPrincipal(id.Supervisor.Supervisor.ID()), nil
	}
}
