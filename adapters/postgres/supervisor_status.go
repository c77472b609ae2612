package postgres

import (
	"context"
	"errors"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/yukta/yukta/application/supervisorapp"
)

var _ supervisorapp.RuntimeStatusStore = (*SupervisorRuntime)(nil)

// LeaseStatus reads a supervisor's lease, live by the database's clock.
func (s *SupervisorRuntime) LeaseStatus(ctx context.Context, supervisorID string) (supervisorapp.LeaseInfo, bool, error) {
	var l supervisorapp.LeaseInfo
	err := s.pool.QueryRow(ctx, `SELECT owner, expires_at, expires_at > clock_timestamp() FROM supervisor_leases WHERE supervisor_id = $1`,
		supervisorID).Scan(&l.Owner, &l.ExpiresAt, &l.Live)
	if errors.Is(err, pgx.ErrNoRows) {
		return supervisorapp.LeaseInfo{}, false, nil
	}
	if err != nil {
		return supervisorapp.LeaseInfo{}, false, translate(err)
	}
	return l, true, nil
}

// CursorLag reads a supervisor's cursor and counts, up to limit, the committed
// events after it in the outbox's order (xid, seq), as the engine reads them.
func (s *SupervisorRuntime) CursorLag(ctx context.Context, supervisorID string, limit int64) (supervisorapp.CursorInfo, bool, error) {
	var c supervisorapp.CursorInfo
	err := s.pool.QueryRow(ctx, `
		SELECT c.updated_at,
		       (SELECT count(*) FROM (SELECT 1 FROM events e
		                              WHERE e.xid < pg_snapshot_xmin(pg_current_snapshot())
		                                AND (e.xid, e.seq) > (c.xid, c.seq)
		                              LIMIT $2) behind)
		  FROM supervisor_cursors c WHERE c.supervisor_id = $1`, supervisorID, limit).Scan(&c.UpdatedAt, &c.Lag)
	if errors.Is(err, pgx.ErrNoRows) {
		return supervisorapp.CursorInfo{}, false, nil
	}
	if err != nil {
		return supervisorapp.CursorInfo{}, false, translate(err)
	}
	return c, true, nil
}

// RecentDirectives reads a supervisor's newest ledger entries, newest first.
func (s *SupervisorRuntime) RecentDirectives(ctx context.Context, supervisorID string, limit int) ([]supervisorapp.StoredDirective, error) {
	rows, err := s.pool.Query(ctx, `SELECT created_at, settled_at, `+ledgerColumns+` FROM supervisor_directives
		 WHERE supervisor_id = $1 ORDER BY seq DESC LIMIT $2`, supervisorID, limit)
	if err != nil {
		return nil, translate(err)
	}
	out, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (supervisorapp.StoredDirective, error) {
		var d supervisorapp.StoredDirective
		var settled *time.Time
		e := &d.Entry
		err := row.Scan(&d.At, &settled, &e.SupervisorID, &e.Key, &e.Fingerprint, &e.Directive, &e.Status, &e.Plan, &e.Result, &e.Channel)
		if settled != nil {
			d.SettledAt = *settled
		}
		return d, err
	})
	return out, translate(err)
}
