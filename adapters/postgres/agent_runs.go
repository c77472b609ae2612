package postgres

import (
	"context"

	"github.com/jackc/pgx/v5"

	"github.com/yukta/yukta/application/supervisorapp"
	"github.com/yukta/yukta/domain/supervisor"
)

// ActiveRunsAfter pages through the unfinished runs of units in the order
// of ActiveRuns (start time, then id), after a position; the zero position
// starts at the oldest.
func (s *SupervisorRuntime) ActiveRunsAfter(ctx context.Context, units []supervisor.Unit, after supervisorapp.RunPosition, limit int) ([]supervisorapp.RunInfo, error) {
	all, ss, ws, wf := unitFilter(units)
	var at, id any // NULL: from the oldest
	if after.ID != "" {
		at, id = after.StartedAt, after.ID
	}
	rows, err := s.pool.Query(ctx, `SELECT `+runColumns+` FROM executions
		 WHERE status IN ('PENDING', 'RUNNING', 'PAUSED') AND `+inUnits("executions")+`
		   AND ($6::timestamptz IS NULL OR (started_at, execution_id) > ($6::timestamptz, $7::uuid))
		 ORDER BY started_at, execution_id LIMIT $5`, all, ss, ws, wf, limit, at, id)
	if err != nil {
		return nil, translate(err)
	}
	out, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (supervisorapp.RunInfo, error) { return scanRun(row) })
	return out, translate(err)
}
