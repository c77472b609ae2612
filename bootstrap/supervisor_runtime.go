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
	"github.com/yukta/yukta/adapters/httpapi"
	"github.com/yukta/yukta/adapters/mcpserver"
	"github.com/yukta/yukta/adapters/metrics"
	"github.com/yukta/yukta/adapters/postgres"
	"github.com/yukta/yukta/application/engines/rulesengine"
	"github.com/yukta/yukta/application/executionapp"
	"github.com/yukta/yukta/application/sessionapp"
	"github.com/yukta/yukta/application/supervisorapp"
	"github.com/yukta/yukta/domain/session"
)

// supervisorRuntimeModule is the supervisor runtime (issue 13, items 3, 4
// and 6; docs/supervisor-runtime.md): the stores of leases, cursors, the
// directive ledger and holds; the directive intake every engine calls; the
// engines (supervisor_engines.go) and the rules engine's dry run; and the
// runtime that runs every enabled supervisor's engine as a fenced
// singleton, started and joined with the server.
var supervisorRuntimeModule = fx.Module("supervisor-runtime",
	fx.Provide(
		func(pool *pgxpool.Pool) *postgres.SupervisorRuntime { return postgres.NewSupervisorRuntime(pool) },
		func(q *postgres.Queue, c session.Catalog) *supervisorapp.Redactor {
			return supervisorapp.NewRedactor(q, c)
		},
		newLoopGuard,
		newSubmitDirective,
		func(r *postgres.Reader, st *postgres.SupervisorRuntime, red *supervisorapp.Redactor, c *cel.Conditions) *rulesengine.DryRun {
			return rulesengine.NewDryRun(r, st, red, c, c.Check)
		},
		func(sups supervisorapp.Reader, st *postgres.SupervisorRuntime) *supervisorapp.ListRefusals {
			return supervisorapp.NewListRefusals(sups, st)
		},
		func(sups supervisorapp.Reader, st *postgres.SupervisorRuntime) *supervisorapp.GetStatus {
			return supervisorapp.NewGetStatus(sups, st)
		},
		func(sups supervisorapp.Reader, st *postgres.SupervisorRuntime, cfg Config) *supervisorapp.Gate {
			return supervisorapp.NewGate(sups, st, st, cfg.Reviews, time.Now)
		},
		newApplierDeps,
		supervisorapp.NewAnswerReview,
		supervisorapp.NewDecideApproval,
		func(st *postgres.SupervisorRuntime) *supervisorapp.ListApprovals {
			return supervisorapp.NewListApprovals(st)
		},
		func(sups supervisorapp.Reader, st *postgres.SupervisorRuntime) supervisorapp.DelegationDeps {
			return supervisorapp.DelegationDeps{Store: st, Supervisors: sups, Now: time.Now}
		},
		supervisorapp.NewDelegate,
		supervisorapp.NewAnswerDelegation,
		newEngineFactories,
		newSupervisorRuntime,
		func(sups supervisorapp.Reader, r *postgres.Reader, st *postgres.SupervisorRuntime, red *supervisorapp.Redactor) *supervisorapp.ReadSignals {
			return supervisorapp.NewReadSignals(supervisorapp.ReadSignalsDeps{Supervisors: sups, Events: r, Positions: r, Cursors: st, Redactor: red, Reviews: st,
				Delegations: st})
		},
		newAgentUseCases,
	),
	// Manual starts go through the review gate too; Control takes it as a
	// dependency.
	fx.Invoke(func(s *executionapp.StartExecution, g *supervisorapp.Gate) { s.UseReviews(g) }),
	fx.Invoke(func(*supervisorapp.Runtime) {}), // construct it, or its hooks never run
)

func newApplierDeps(st *postgres.SupervisorRuntime, control *executionapp.Control, start *executionapp.StartExecution,
	sups supervisorapp.Reader) supervisorapp.ApplierDeps {
	return supervisorapp.ApplierDeps{Store: st, Control: control, Start: start, Supervisors: sups, Now: time.Now}
}

// Reviews are swept every second: a timed-out review's default applies
// within a second of its deadline. An allowed review untouched for
// reviewStale lost its applier and is applied by the sweeper. Delegations
// past their deadline are expired every ten seconds.
const (
	sweepReviewsEvery     = time.Second
	sweepDelegationsEvery = 10 * time.Second
	reviewStale           = 10 * time.Second
)

func newSubmitDirective(sups supervisorapp.Reader, st *postgres.SupervisorRuntime, control *executionapp.Control,
	start *executionapp.StartExecution, answer *executionapp.AnswerInput, loops *supervisorapp.LoopGuard) *supervisorapp.SubmitDirective {
	return supervisorapp.NewSubmitDirective(supervisorapp.SubmitDeps{Supervisors: sups, Ledger: st, Runs: st, Holds: st,
		Control: control, Start: start, Answer: answer, Loops: loops, Now: time.Now})
}

// newLoopGuard applies the loop bounds (docs/supervisors.md#loop-bounds):
// every refusal is counted in the metric, the first of each limit and
// budget window is logged (once on all instances together).
func newLoopGuard(st *postgres.SupervisorRuntime, m *metrics.Metrics, log *zap.Logger, cfg Config) *supervisorapp.LoopGuard {
	llog := log.Named("supervisors")
	return supervisorapp.NewLoopGuard(supervisorapp.LoopGuardDeps{Store: st, Bounds: cfg.Loops, Metrics: m, Now: time.Now,
		OnLimit: func(supervisorID, limit string, err error) {
			llog.Warn("supervisor loop bound reached; further refusals in this window are counted in yukta_supervisor_loop_refusals_total, not logged",
				zap.String("supervisor", supervisorID), zap.String("limit", limit), zap.Error(err))
		}})
}

// sweepHoldsEvery is how often the hold ledgers of finished runs are
// cleared (they are ignored meanwhile).
const sweepHoldsEvery = 5 * time.Minute

// runtimeParams are what the supervisor runtime is built from: the stores
// it reads and writes, and the engines it runs.
type runtimeParams struct {
	fx.In
	Lifecycle   fx.Lifecycle
	Log         *zap.Logger
	Supervisors supervisorapp.Reader
	Store       *postgres.SupervisorRuntime
	Events      *postgres.Reader
	Redactor    *supervisorapp.Redactor
	Engines     engineFactories
	// Applier settles due reviews (the sweeper next to the runtime).
	Applier supervisorapp.ApplierDeps
}

func newSupervisorRuntime(p runtimeParams) *supervisorapp.Runtime {
	host, _ := os.Hostname()
	owner := fmt.Sprintf("%s/%d/%s", host, os.Getpid(), rand.Text()[:8])
	lc, st, r, sups, ad := p.Lifecycle, p.Store, p.Events, p.Supervisors, p.Applier
	rlog := p.Log.Named("supervisors")
	rt := supervisorapp.NewRuntime(supervisorapp.RuntimeDeps{
		Supervisors: sups, Leases: st, Cursors: st, Events: r, Positions: r, Runs: st, Holds: st, Redactor: p.Redactor, Reviews: st, Delegations: st,
		Engines: p.Engines, Owner: owner, Now: time.Now,
		OnError: func(supervisorID string, err error) {
			rlog.Warn("supervisor runtime", zap.String("supervisor", supervisorID), zap.Error(err))
		},
	}, supervisorapp.RuntimeConfig{})
	runInBackground(lc, "supervisor runtime", func(ctx context.Context) {
		sweepDone := make(chan struct{})
		go func() {
			defer close(sweepDone)
			t := time.NewTicker(sweepHoldsEvery)
			defer t.Stop()
			for {
				select {
				case <-ctx.Done():
					return
				case <-t.C:
					if _, err := st.SweepHolds(ctx); err != nil && ctx.Err() == nil {
						rlog.Warn("sweep hold ledgers", zap.Error(err))
					}
				}
			}
		}()
		expire := supervisorapp.NewExpireReviews(ad, reviewStale)
		expireDone := make(chan struct{})
		go func() {
			defer close(expireDone)
			expire.Run(ctx, sweepReviewsEvery, func(err error) { rlog.Warn("settle due reviews", zap.Error(err)) })
		}()
		expireDelegations := supervisorapp.NewExpireDelegations(supervisorapp.DelegationDeps{Store: st, Supervisors: sups, Now: time.Now})
		delegationsDone := make(chan struct{})
		go func() {
			defer close(delegationsDone)
			expireDelegations.Run(ctx, sweepDelegationsEvery, func(err error) { rlog.Warn("expire due delegations", zap.Error(err)) })
		}()
		rt.Run(ctx)
		<-sweepDone
		<-expireDone
		<-delegationsDone
	}, func() { rlog.Info("supervisor runtime started", zap.String("owner", owner)) }, nil)
	return rt
}

// newAgentUseCases are the calls of the agent API (/api/agent/v1).
func newAgentUseCases(sups supervisorapp.Reader, signals *supervisorapp.ReadSignals, submit *supervisorapp.SubmitDirective,
	answer *supervisorapp.AnswerReview, st *postgres.SupervisorRuntime, r *postgres.Reader, get *executionapp.GetExecution,
	logs *executionapp.TailLogs, wf *sessionapp.GetWorkflow, sched *executionapp.GetSchedulerStatus, log *zap.Logger,
	delegate *supervisorapp.Delegate, answerDelegation *supervisorapp.AnswerDelegation, refusals *supervisorapp.ListRefusals,
	auth *supervisorapp.AuthenticateAgent, sessions *postgres.SessionStore) httpapi.AgentUseCases {
	// One set of use cases for both doors (the REST routes and the MCP
	// tools are made from one operation table, httpapi.AgentOperations).
	watched := supervisorapp.NewReadAgentSignals(auth, signals)
	self := supervisorapp.NewReadAgentSelf(sups)
	self.UseSessions(sessions)
	uc := httpapi.AgentUseCases{Caller: supervisorapp.NewAgentCaller(sups), Signals: signals, Watched: watched,
		Self: self, Snapshot: supervisorapp.NewReadAgentSnapshot(st, st, r),
		Executions: supervisorapp.NewListAgentExecutions(st), Execution: supervisorapp.NewGetAgentExecution(st, get),
		Logs: supervisorapp.NewReadAgentLogs(st, logs), Workflow: supervisorapp.NewReadAgentWorkflow(wf),
		Scheduler: supervisorapp.NewReadAgentScheduler(sched), Inputs: supervisorapp.NewListAgentInputs(st), Refusals: refusals,
		Directives: submit, Reviews: answer, Delegate: delegate, AnswerDelegation: answerDelegation}
	uc.MCP = mcpserver.NewAgent(uc, buildVersion(), log.Named("agent-mcp"))
	return uc
}
