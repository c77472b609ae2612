package bootstrap

import (
	"fmt"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"go.uber.org/fx"
	"go.uber.org/zap"

	"github.com/yukta/yukta/adapters/postgres"
	"github.com/yukta/yukta/application/executionapp"
	"github.com/yukta/yukta/domain/session"
)

// schedulerModule wires the scheduler limits (docs/adr/0007-scheduler-admission.md):
// the admission loop of this instance, which every commit that changes an
// execution's status nudges, the starts that obey the limits, and the
// status GET /api/scheduler, MCP and /metrics read.
var schedulerModule = fx.Module("scheduler",
	fx.Provide(
		func(pool *pgxpool.Pool) *postgres.Scheduler { return postgres.NewScheduler(pool) },
		newAdmission,
		func(s *postgres.Scheduler, cfg Config) *executionapp.GetSchedulerStatus {
			return executionapp.NewGetSchedulerStatus(s, cfg.Slots)
		},
	),
	// Before any start can happen (starts begin once the server has
	// started), make them obey the limits.
	fx.Invoke(func(s *executionapp.StartExecution, a *executionapp.Admission) { s.UseAdmission(a) }),
)

// newAdmission builds the admission loop, hooks it to the commits that
// change an execution's status (a run that ends frees its slot), and runs it
// from start to stop: its goroutine is joined on stop.
func newAdmission(lc fx.Lifecycle, cfg Config, log *zap.Logger, t *postgres.ExecutionTransactor, s *postgres.Scheduler,
	q *postgres.Queue, c session.Catalog, e *executionapp.Engine) (*executionapp.Admission, error) {
	a, err := executionapp.NewAdmission(executionapp.AdmissionDeps{
		Tx: t, Waiting: s, Sources: q, Catalog: c, Waker: e, Now: time.Now,
		OnError: func(err error) { log.Warn("scheduler admission", zap.Error(err)) },
	}, executionapp.AdmissionConfig{Slots: cfg.Slots})
	if err != nil {
		return nil, fmt.Errorf("scheduler limits: %w", err)
	}
	t.OnCommittedStatusChanges(a.Nudge)
	runInBackground(lc, "scheduler admission", a.Run, func() {
		log.Info("scheduler limits", zap.Int("maxRunning", cfg.Slots.MaxRunning), zap.Int("reservedSupervisorSlots", cfg.Slots.Reserved))
	}, nil)
	return a, nil
}
