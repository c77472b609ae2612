package bootstrap

import (
	"time"

	"go.uber.org/fx"

	"github.com/yukta/yukta/adapters/cel"
	"github.com/yukta/yukta/adapters/httpapi"
	"github.com/yukta/yukta/adapters/postgres"
	"github.com/yukta/yukta/application/supervisorapp"
)

// supervisorModule is the supervisor store (issue 13, item 2): the stores,
// the use cases REST and MCP call, and the CEL checker that compiles rule
// conditions when a supervisor is applied. It provides the one
// *cel.Conditions of the server; the supervisor runtime evaluates with the
// same one.
var supervisorModule = fx.Module("supervisors",
	fx.Provide(
		postgres.NewSupervisorStore,
		postgres.NewSupervisorTransactor,
		fx.Annotate(func(s *postgres.SupervisorStore) supervisorapp.Reader { return s }),
		fx.Annotate(func(t *postgres.SupervisorTransactor) supervisorapp.Transactor { return t }),
		func() (*cel.Conditions, error) { return cel.NewConditions() },
		// Conditions are compiled when a supervisor is applied, so a typo
		// is refused then, not when a signal first reaches the rule.
		func(tx supervisorapp.Transactor, c *cel.Conditions) *supervisorapp.ApplySupervisor {
			return supervisorapp.NewApplySupervisor(tx, c.Check, time.Now)
		},
		supervisorapp.NewGetSupervisor,
		supervisorapp.NewListSupervisors,
		func(tx supervisorapp.Transactor) *supervisorapp.DeleteSupervisor {
			return supervisorapp.NewDeleteSupervisor(tx, time.Now)
		},
		supervisorapp.NewListEngines,
		supervisorapp.NewDescribeEngine,
		func(a *supervisorapp.ApplySupervisor, g *supervisorapp.GetSupervisor, l *supervisorapp.ListSupervisors,
			d *supervisorapp.DeleteSupervisor, le *supervisorapp.ListEngines, de *supervisorapp.DescribeEngine,
			dr *supervisorapp.DryRunRules) httpapi.SupervisorUseCases {
			return httpapi.SupervisorUseCases{Apply: a, Get: g, List: l, Delete: d, Engines: le, Engine: de, DryRun: dr}
		},
	),
)
