package bootstrap

import (
	"crypto/rand"
	"time"

	"go.uber.org/fx"

	"github.com/yukta/yukta/adapters/cel"
	"github.com/yukta/yukta/adapters/httpapi"
	"github.com/yukta/yukta/adapters/postgres"
	"github.com/yukta/yukta/application/engines/rulesengine"
	"github.com/yukta/yukta/application/executionapp"
	"github.com/yukta/yukta/application/supervisorapp"
)

// supervisorModule is the supervisor store (issue 13, item 2): the stores,
// the use cases REST and MCP call, and the CEL checker that compiles rule
// conditions when a supervisor is applied. It provides the one
// *cel.Conditions of the server; the supervisor runtime evaluates with the
// same one. It also provides supervisor credentials (issue 14, item 1):
// issuing, reading and revoking them, and *supervisorapp.AuthenticateAgent,
// the agent API's check of a presented credential.
var supervisorModule = fx.Module("supervisors",
	fx.Provide(
		postgres.NewSupervisorStore,
		postgres.NewSupervisorTransactor,
		fx.Annotate(func(s *postgres.SupervisorStore) supervisorapp.Reader { return s }),
		fx.Annotate(func(t *postgres.SupervisorTransactor) supervisorapp.Transactor { return t }),
		func() (*cel.Conditions, error) { return cel.NewConditions() },
		// Conditions are compiled when a supervisor is applied, so a typo
		// is refused then, not when a signal first reaches the rule.
		// So is a command or an environment variable the server's
		// SupervisorPolicy does not allow, a workflow supervisor whose
		// session or workflow does not exist, or whose maxConcurrent is
		// more than the reserved slot pool.
		func(tx supervisorapp.Transactor, c *cel.Conditions, cfg Config, w executionapp.WorkflowReader, ss *postgres.SessionStore) *supervisorapp.ApplySupervisor {
			a := supervisorapp.NewApplySupervisor(tx, c.Check, time.Now)
			a.UsePolicy(cfg.SupervisorPolicy)
			a.UseEngineChecks(supervisorapp.EngineChecks{Workflows: w, ReservedSlots: cfg.Slots.Reserved, Sessions: ss})
			return a
		},
		// Applies and reads warn of owned sessions that do not exist.
		func(r supervisorapp.Reader, ss *postgres.SessionStore) *supervisorapp.GetSupervisor {
			g := supervisorapp.NewGetSupervisor(r)
			g.UseSessions(ss)
			return g
		},
		supervisorapp.NewListSupervisors,
		// Deleting a holder releases its holds and resumes, through
		// Control, the runs whose last hold it was; so does an ADMIN's
		// release of one hold.
		func(tx supervisorapp.Transactor, c *executionapp.Control) *supervisorapp.DeleteSupervisor {
			return supervisorapp.NewDeleteSupervisor(tx, c, time.Now)
		},
		func(tx supervisorapp.Transactor, c *executionapp.Control) *supervisorapp.ReleaseHold {
			return supervisorapp.NewReleaseHold(tx, c, time.Now)
		},
		func(st *postgres.SupervisorRuntime) *supervisorapp.ListHolds {
			return supervisorapp.NewListHolds(st, st)
		},
		supervisorapp.NewListEngines,
		supervisorapp.NewDescribeEngine,
		postgres.NewCredentialStore,
		postgres.NewCredentialTransactor,
		fx.Annotate(func(s *postgres.CredentialStore) supervisorapp.CredentialReader { return s }),
		fx.Annotate(func(t *postgres.CredentialTransactor) supervisorapp.CredentialTransactor { return t }),
		// Tokens draw their bits from the operating system's CSPRNG.
		func(tx supervisorapp.CredentialTransactor) *supervisorapp.IssueCredential {
			return supervisorapp.NewIssueCredential(tx, rand.Reader, time.Now)
		},
		supervisorapp.NewGetCredential,
		func(tx supervisorapp.CredentialTransactor) *supervisorapp.RevokeCredential {
			return supervisorapp.NewRevokeCredential(tx, time.Now)
		},
		func(c supervisorapp.CredentialReader, r supervisorapp.Reader) *supervisorapp.AuthenticateAgent {
			return supervisorapp.NewAuthenticateAgent(c, r, time.Now)
		},
		func(a *supervisorapp.ApplySupervisor, g *supervisorapp.GetSupervisor, l *supervisorapp.ListSupervisors,
			d *supervisorapp.DeleteSupervisor, le *supervisorapp.ListEngines, de *supervisorapp.DescribeEngine,
			dr *rulesengine.DryRun, ic *supervisorapp.IssueCredential, gc *supervisorapp.GetCredential,
			rc *supervisorapp.RevokeCredential, lh *supervisorapp.ListHolds, rh *supervisorapp.ReleaseHold, lr *supervisorapp.ListRefusals,
			gs *supervisorapp.GetStatus) httpapi.SupervisorUseCases {
			return httpapi.SupervisorUseCases{Apply: a, Get: g, List: l, Delete: d, Engines: le, Engine: de, DryRun: dr, ListHolds: lh, ReleaseHold: rh,
				Credentials: httpapi.CredentialUseCases{Issue: ic, Get: gc, Revoke: rc}, Refusals: lr, Status: gs}
		},
	),
)
