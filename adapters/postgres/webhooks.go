package postgres

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/yukta/yukta/application/executionapp"
)

// DeliveryLedger remembers accepted signed webhook deliveries until they
// expire.
type DeliveryLedger struct{ db dbtx }

// NewDeliveryLedger returns a ledger that runs each call on pool.
func NewDeliveryLedger(pool *pgxpool.Pool) *DeliveryLedger { return &DeliveryLedger{db: pool} }

var _ executionapp.DeliveryLedger = (*DeliveryLedger)(nil)

// Record stores a delivery unless it is there already, and sweeps expired
// ones, a few at a time so no call pays for a backlog.
func (l *DeliveryLedger) Record(ctx context.Context, sessionID, workflowID, signature string, expires time.Time) (bool, error) {
	var fresh bool
	err := l.db.QueryRow(ctx, `
		WITH swept AS (
			DELETE FROM webhook_deliveries WHERE ctid IN (
				SELECT ctid FROM webhook_deliveries WHERE expires_at < now() ORDER BY expires_at LIMIT 100)
		), ins AS (
			INSERT INTO webhook_deliveries (session_id, workflow_id, signature, expires_at)
			VALUES ($1, $2, $3, $4)
			ON CONFLICT DO NOTHING
			RETURNING 1
		)
		SELECT EXISTS (SELECT 1 FROM ins)`, sessionID, workflowID, signature, expires).Scan(&fresh)
	if err != nil {
		return false, translate(err)
	}
	return fresh, nil
}
