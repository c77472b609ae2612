package postgres

import (
	"context"
	"errors"
	"strconv"

	"github.com/jackc/pgx/v5"

	"github.com/yukta/yukta/application/supervisorapp"
	"github.com/yukta/yukta/domain/supervisor"
)

// EventHead is the seq of the newest event every reader can see now (0 when
// there is none): Events after it returns what commits next.
func (r *Reader) EventHead(ctx context.Context) (int64, error) {
	var seq int64
	err := r.pool.QueryRow(ctx, `
		SELECT seq FROM events
		 WHERE xid < pg_snapshot_xmin(pg_current_snapshot())
		 ORDER BY xid DESC, seq DESC
		 LIMIT 1`).Scan(&seq)
	if errors.Is(err, pgx.ErrNoRows) {
		return 0, nil
	}
	return seq, translate(err)
}

var _ supervisorapp.OutboxPositions = (*Reader)(nil)

// Head is the outbox's head position: just before the oldest transaction
// still running (every event of an older one is visible and lies at or
// before it, every event to come after it), with the newest seq given out.
// Both parts only grow, whatever is deleted, so a cursor given never lies
// beyond a later head.
func (r *Reader) Head(ctx context.Context) (supervisor.Position, error) {
	var p supervisor.Position
	var xid string
	err := r.pool.QueryRow(ctx, `
		SELECT (pg_snapshot_xmin(pg_current_snapshot())::text::numeric - 1)::text,
		       coalesce(pg_sequence_last_value(pg_get_serial_sequence('events', 'seq')::regclass), 0)`).Scan(&xid, &p.Seq)
	if err != nil {
		return p, translate(err)
	}
	if p.XID, err = strconv.ParseUint(xid, 10, 64); err != nil {
		return p, err
	}
	return p, nil
}

// Frontier bounds every position given so far: the first transaction id
// not yet assigned (every event's xid lies below it) and the newest seq
// given out. Both only grow.
func (r *Reader) Frontier(ctx context.Context) (supervisor.Position, error) {
	var p supervisor.Position
	var xid string
	err := r.pool.QueryRow(ctx, `
		SELECT pg_snapshot_xmax(pg_current_snapshot())::text,
		       coalesce(pg_sequence_last_value(pg_get_serial_sequence('events', 'seq')::regclass), 0)`).Scan(&xid, &p.Seq)
	if err != nil {
		return p, translate(err)
	}
	if p.XID, err = strconv.ParseUint(xid, 10, 64); err != nil {
		return p, err
	}
	return p, nil
}

// PositionOf returns the position of the event with seq.
func (r *Reader) PositionOf(ctx context.Context, seq int64) (supervisor.Position, bool, error) {
	p := supervisor.Position{Seq: seq}
	var xid string
	err := r.pool.QueryRow(ctx, `SELECT xid::text FROM events WHERE seq = $1`, seq).Scan(&xid)
	if errors.Is(err, pgx.ErrNoRows) {
		return p, false, nil
	}
	if err != nil {
		return p, false, translate(err)
	}
	if p.XID, err = strconv.ParseUint(xid, 10, 64); err != nil {
		return p, false, err
	}
	return p, true, nil
}
