package postgres

import (
	"context"
	"errors"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/yukta/yukta/application/executionapp"
	"github.com/yukta/yukta/application/supervisorapp"
	"github.com/yukta/yukta/domain/supervisor"
)

var _ supervisorapp.LoopStore = (*SupervisorRuntime)(nil)

// EventOrigin returns the run an outbox event is about and what caused it.
func (s *SupervisorRuntime) EventOrigin(ctx context.Context, seq int64) (supervisorapp.RunOrigin, bool, error) {
	var r supervisorapp.RunOrigin
	err := s.pool.QueryRow(ctx, `
		SELECT x.execution_id::text, x.cause_depth, x.caused_by
		  FROM events e JOIN executions x ON x.execution_id = e.execution_id
		 WHERE e.seq = $1`, seq).Scan(&r.ExecutionID, &r.Origin.Depth, &r.Origin.Supervisor)
	if errors.Is(err, pgx.ErrNoRows) {
		return supervisorapp.RunOrigin{}, false, nil
	}
	if err != nil {
		return supervisorapp.RunOrigin{}, false, translate(err)
	}
	return r, true, nil
}

// RunOrigins returns what caused the runs of ids that exist.
func (s *SupervisorRuntime) RunOrigins(ctx context.Context, ids []string) (map[string]executionapp.Origin, error) {
	out := map[string]executionapp.Origin{}
	ids = validUUIDs(ids)
	if len(ids) == 0 {
		return out, nil
	}
	rows, err := s.pool.Query(ctx, `SELECT execution_id::text, cause_depth, caused_by FROM executions WHERE execution_id = ANY ($1::uuid[])`, ids)
	if err != nil {
		return nil, translate(err)
	}
	defer rows.Close()
	for rows.Next() {
		var id string
		var o executionapp.Origin
		if err := rows.Scan(&id, &o.Depth, &o.Supervisor); err != nil {
			return nil, translate(err)
		}
		out[id] = o
	}
	return out, translate(rows.Err())
}

// CountLoop counts one directive or one refusal for depth in the
// supervisor's budget window, in one statement on the database clock, and
// appends the notice's events in the same transaction.
func (s *SupervisorRuntime) CountLoop(ctx context.Context, supervisorID, limit string, window time.Duration,
	notice func(supervisorapp.BudgetCount) []executionapp.Event) (supervisorapp.BudgetCount, error) {
	cmd, depth := 1, 0
	if limit == supervisor.LimitDepth {
		cmd, depth = 0, 1
	}
	var n supervisorapp.BudgetCount
	err := inTx(ctx, s.pool, func(tx pgx.Tx) error {
		// A window that has ended starts again with this count alone.
		// EXCLUDED.window_start is now, read once for the statement.
		err := tx.QueryRow(ctx, `
			INSERT INTO supervisor_budgets AS b (supervisor_id, window_start, commands, depth_refusals)
			VALUES ($1, clock_timestamp(), $3, $4)
			ON CONFLICT (supervisor_id) DO UPDATE SET
			    window_start   = CASE WHEN b.window_start <= EXCLUDED.window_start - $2 * interval '1 millisecond' THEN EXCLUDED.window_start ELSE b.window_start END,
			    commands       = CASE WHEN b.window_start <= EXCLUDED.window_start - $2 * interval '1 millisecond' THEN $3 ELSE b.commands + $3 END,
			    depth_refusals = CASE WHEN b.window_start <= EXCLUDED.window_start - $2 * interval '1 millisecond' THEN $4 ELSE b.depth_refusals + $4 END
			RETURNING window_start, commands, depth_refusals`,
			supervisorID, millis(window), cmd, depth).Scan(&n.WindowStart, &n.Commands, &n.DepthRefusals)
		if err != nil {
			return translate(err)
		}
		if evs := notice(n); len(evs) > 0 {
			return (&EventStore{db: tx}).Append(ctx, evs)
		}
		return nil
	})
	return n, err
}
