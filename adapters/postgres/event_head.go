package postgres

import (
	"context"
	"errors"

	"github.com/jackc/pgx/v5"
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
