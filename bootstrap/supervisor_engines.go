package bootstrap

import (
	"time"

	"go.uber.org/fx"
	"go.uber.org/zap"

	"github.com/yukta/yukta/adapters/cel"
	"github.com/yukta/yukta/adapters/egress"
	"github.com/yukta/yukta/adapters/metrics"
	"github.com/yukta/yukta/adapters/postgres"
	"github.com/yukta/yukta/adapters/process"
	"github.com/yukta/yukta/application/engines/httpengine"
	"github.com/yukta/yukta/application/engines/processengine"
	"github.com/yukta/yukta/application/engines/rulesengine"
	"github.com/yukta/yukta/application/engines/workflowengine"
	"github.com/yukta/yukta/application/executionapp"
	"github.com/yukta/yukta/application/supervisorapp"
)

// engineFactories is the runtime's Engines map: one factory per engine
// type, each engine a package of its own (application/engines/...). The
// runtime imports none of them; this is where they meet it.
type engineFactories map[string]supervisorapp.EngineFactory

// engineParams are what the engines are built from: the use cases their
// decisions go through, and the parts of the server each engine needs.
type engineParams struct {
	fx.In
	Log        *zap.Logger
	Config     Config
	Metrics    *metrics.Metrics
	Store      *postgres.SupervisorRuntime
	Conditions *cel.Conditions
	Egress     *egress.Client
	// The supervisor use cases engines send through, with their fence.
	Submit           *supervisorapp.SubmitDirective
	Answer           *supervisorapp.AnswerReview
	Delegate         *supervisorapp.Delegate
	AnswerDelegation *supervisorapp.AnswerDelegation
	Loops            *supervisorapp.LoopGuard
	// The execution use cases a workflow supervisor's runs go through.
	Start     *executionapp.StartExecution
	Await     *executionapp.Await
	Control   *executionapp.Control
	Workflows executionapp.WorkflowReader
	// Ext are a custom server's additions (its secret provider).
	Ext Extensions `optional:"true"`
}

func newEngineFactories(p engineParams) engineFactories {
	log := p.Log.Named("supervisors")
	return engineFactories{"rules": rulesEngine(p, log), "http": httpEngine(p, log), "workflow": workflowEngine(p, log), "process": processEngine(p, log)}
}

// rulesEngine matches rule documents; a rule that did not fire is logged.
func rulesEngine(p engineParams, log *zap.Logger) supervisorapp.EngineFactory {
	return rulesengine.NewFactory(rulesengine.Deps{Submit: p.Submit, Runs: p.Store, Conditions: p.Conditions, Check: p.Conditions.Check,
		Now: time.Now, Answer: p.Answer, Counter: p.Store,
		OnRuleError: func(supervisorID, ruleID string, err error) {
			log.Info("rule did not fire", zap.String("supervisor", supervisorID), zap.String("rule", ruleID), zap.Error(err))
		}})
}

// httpEngine posts signals through the egress policy of workflow nodes;
// headers read only the allowed environment variables.
func httpEngine(p engineParams, log *zap.Logger) supervisorapp.EngineFactory {
	return httpengine.NewFactory(httpengine.Deps{Poster: egress.NewSignalPoster(p.Egress),
		Getenv: p.Ext.secrets(), AllowedEnv: p.Config.SupervisorEnvAllowed, Now: time.Now,
		OnError: func(supervisorID string, err error) {
			log.Warn("http supervisor", zap.String("supervisor", supervisorID), zap.Error(err))
		}})
}

// workflowEngine runs a workflow of an internal session per signal, in the
// reserved slot pool (docs/supervisors.md).
func workflowEngine(p engineParams, log *zap.Logger) supervisorapp.EngineFactory {
	return workflowengine.NewFactory(workflowengine.Deps{Start: p.Start, Await: p.Await, Control: p.Control, Submit: p.Submit,
		Answer: p.Answer, Delegate: p.Delegate, Conditions: p.Conditions, Workflows: p.Workflows, Loops: p.Loops,
		ReservedSlots: p.Config.Slots.Reserved, Now: time.Now,
		OnError: func(supervisorID string, err error) {
			log.Warn("workflow supervisor", zap.String("supervisor", supervisorID), zap.Error(err))
		}})
}

// processEngine runs the programs of process supervisors
// (docs/supervisors.md#the-process-engine): every line the engine drops is
// counted, and summed up in the log at most once per period, so no
// program sets the size of the log.
func processEngine(p engineParams, log *zap.Logger) supervisorapp.EngineFactory {
	return processengine.NewFactory(processengine.Deps{Spawner: process.NewSpawner(process.SelfExe(), 0), Submit: p.Submit,
		Answer: p.Answer, Delegate: p.Delegate, AnswerDelegation: p.AnswerDelegation, Policy: p.Config.SupervisorPolicy, Now: time.Now,
		OnDropped: func(_, reason string, _ error) { p.Metrics.ProcessLineDropped(reason) },
		OnReport: func(supervisorID string, r processengine.DropReport) {
			log.Info(r.Message(supervisorID), zap.String("supervisor", supervisorID), zap.Int("lines", r.Lines),
				zap.Any("reasons", r.Reasons), zap.Duration("period", r.Period))
		},
		OnError: func(supervisorID string, err error) {
			log.Warn("process supervisor", zap.String("supervisor", supervisorID), zap.Error(err))
		}})
}
