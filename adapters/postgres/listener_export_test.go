package postgres

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
)

// SetIdleCheck shortens how long l waits quietly before it checks its
// connection; call it before Run.
func (l *Listener) SetIdleCheck(d time.Duration) { l.idle = d }

// CancelChannel is the channel the listener listens on.
const CancelChannel = cancelChannel

// InTx is inTx, for the external tests of its retries.
var InTx = inTx

// MigrateDownTo undoes the migrations above version, for tests that replay
// one migration on data an older schema held.
func MigrateDownTo(ctx context.Context, pool *pgxpool.Pool, version int64) error {
	p, db, err := newMigrator(pool)
	if err != nil {
		return err
	}
	defer db.Close()
	_, err = p.DownTo(ctx, version)
	return err
}
