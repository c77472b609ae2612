package bootstrap

import (
	"time"

	"go.uber.org/fx"
	"go.uber.org/zap"

	"github.com/yukta/yukta/adapters/authn"
	"github.com/yukta/yukta/adapters/cel"
	"github.com/yukta/yukta/adapters/httpapi"
	"github.com/yukta/yukta/adapters/mcpserver"
	"github.com/yukta/yukta/adapters/postgres"
	"github.com/yukta/yukta/application/accessapp"
	"github.com/yukta/yukta/application/executionapp"
	"github.com/yukta/yukta/application/journalapp"
	"github.com/yukta/yukta/application/pluginapp"
	"github.com/yukta/yukta/application/sessionapp"
	"github.com/yukta/yukta/application/supervisorapp"
)

// mcpModule provides the MCP endpoint as an httpapi.Mount in the "mounts"
// group: /mcp and its /sse alias, opened by the keys of the MCP surface.
var mcpModule = fx.Module("mcp",
	fx.Provide(
		func(s *postgres.SessionStore, r executionapp.Reader) *executionapp.SystemStatus {
			return executionapp.NewSystemStatus(s, r)
		},
		fx.Annotate(newMCPMount, fx.ResultTags(`group:"mounts"`)),
	),
)

type mcpParams struct {
	fx.In
	Log            *zap.Logger
	ApplySession   *sessionapp.ApplySession
	GetSession     *sessionapp.GetSession
	ListSessions   *sessionapp.ListSessions
	GetWorkflow    *sessionapp.GetWorkflow
	ListPlugins    *pluginapp.ListPlugins
	DescribePlugin *pluginapp.DescribePlugin
	Start          *executionapp.StartExecution
	GetExecution   *executionapp.GetExecution
	ListExecutions *executionapp.ListExecutions
	Logs           *executionapp.TailLogs
	Control        *executionapp.Control
	Status         *executionapp.SystemStatus
	ListInputs     *executionapp.ListInputs
	AnswerInput    *executionapp.AnswerInput
	ExportJournal  *journalapp.ExportJournal
	VerifyJournal  *journalapp.VerifyJournal
	CEL            *cel.Evaluator
	Scheduler      *executionapp.GetSchedulerStatus
	GetSupervisor  *supervisorapp.GetSupervisor
	Supervisors    *supervisorapp.ListSupervisors
	DescribeEngine *supervisorapp.DescribeEngine
	ListApprovals  *supervisorapp.ListApprovals
	DecideApproval *supervisorapp.DecideApproval
	IssueCred      *supervisorapp.IssueCredential
	GetCred        *supervisorapp.GetCredential
	RevokeCred     *supervisorapp.RevokeCredential
	ListHolds      *supervisorapp.ListHolds
	ReleaseHold    *supervisorapp.ReleaseHold
	CreateKey      *accessapp.CreateAPIKey    `optional:"true"`
	ListKeys       *accessapp.ListAPIKeys     `optional:"true"`
	RotateKey      *accessapp.RotateAPIKey    `optional:"true"`
	RevokeKey      *accessapp.RevokeAPIKey    `optional:"true"`
	ExpireKey      *accessapp.SetAPIKeyExpiry `optional:"true"`
}

// MCPPaths are where the MCP endpoint is served; /sse is the old name.
var MCPPaths = []string{"/mcp", "/sse"}

func newMCPMount(p mcpParams) (httpapi.Mount, error) {
	h, err := mcpserver.New(mcpserver.Deps{
		ApplySession: p.ApplySession, GetSession: p.GetSession, ListSessions: p.ListSessions, GetWorkflow: p.GetWorkflow,
		ListPlugins: p.ListPlugins, DescribePlugin: p.DescribePlugin, Start: p.Start, GetExecution: p.GetExecution,
		ListExecutions: p.ListExecutions, Logs: p.Logs, Control: p.Control, Status: p.Status,
		Inputs: p.ListInputs, Answer: p.AnswerInput, JournalExport: p.ExportJournal, JournalVerify: p.VerifyJournal,
		GetSupervisor: p.GetSupervisor, ListSupervisors: p.Supervisors, DescribeEngine: p.DescribeEngine,
		ListApprovals: p.ListApprovals, DecideApproval: p.DecideApproval,
		IssueCredential: p.IssueCred, GetCredential: p.GetCred, RevokeCredential: p.RevokeCred,
		ListHolds: p.ListHolds, ReleaseHold: p.ReleaseHold,
		Scheduler: p.Scheduler, Started: time.Now(),
		Keys: mcpKeyDeps(p),
	}, buildVersion(), p.Log)
	if err != nil {
		return httpapi.Mount{}, err
	}
	return httpapi.Mount{Paths: MCPPaths, Handler: h, Surface: authn.MCP, BodyLimit: mcpserver.MaxRequestBodyBytes}, nil
}

// mcpKeyDeps are the key tools' use cases; a nil one (a test graph without
// stored keys) leaves the interface nil, so the tools say they are off.
func mcpKeyDeps(p mcpParams) mcpserver.KeyDeps {
	if p.CreateKey == nil || p.ListKeys == nil || p.RotateKey == nil || p.RevokeKey == nil || p.ExpireKey == nil {
		return mcpserver.KeyDeps{}
	}
	return mcpserver.KeyDeps{Create: p.CreateKey, List: p.ListKeys, Rotate: p.RotateKey, Revoke: p.RevokeKey, Expire: p.ExpireKey}
}
