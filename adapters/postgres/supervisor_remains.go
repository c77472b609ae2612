package postgres

import (
	"context"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/yukta/yukta/application/executionapp"
	"github.com/yukta/yukta/application/supervisorapp"
	"github.com/yukta/yukta/domain/supervisor"
)

// txHolds is the hold ledger in a supervisor transaction.
type txHolds struct{ tx pgx.Tx }

var _ supervisorapp.HoldLedger = txHolds{}

// ChangeHolds changes a run's ledger in the transaction and appends the
// events the change returns.
func (h txHolds) ChangeHolds(ctx context.Context, executionID string,
	change func(supervisor.RunHolds, supervisorapp.RunInfo) (supervisor.RunHolds, []executionapp.Event, error)) (supervisor.RunHolds, error) {
	return changeHolds(ctx, h.tx, executionID, change)
}

// HeldRuns lists the unfinished runs a supervisor holds, oldest hold first.
func (h txHolds) HeldRuns(ctx context.Context, supervisorID string, limit int) ([]supervisorapp.RunInfo, error) {
	return heldRuns(ctx, h.tx, supervisorID, limit)
}

// txRemains is what the runtime keeps under a supervisor's id, in a
// supervisor transaction.
type txRemains struct{ tx pgx.Tx }

func (r txRemains) now() time.Time { return time.Now() }

// retiredKeySuffix marks an idempotency key of a deleted supervisor: a
// suffix no ControlKey has (they end in hex), unique per deletion.
func retiredKeySuffix(at time.Time) string {
	return "~deleted-" + strconv.FormatInt(at.UnixNano(), 36)
}

var _ supervisorapp.Remains = txRemains{}

// Forget removes or settles everything kept under id (see
// supervisorapp.Remains). The hold lines left are those of finished runs
// (the delete released the others first); they go too.
func (r txRemains) Forget(ctx context.Context, id string) (supervisorapp.Forgotten, error) {
	var f supervisorapp.Forgotten
	steps := []struct {
		sql string
		n   *int
	}{
		// First, a new token, expired: a fenced write of an engine of the
		// deleted supervisor still running is refused, and the next acquire
		// (of a supervisor created again under id) takes the lease at once.
		// It goes first because it waits for a fenced write in flight (which
		// holds the lease row FOR SHARE) to commit: the deletes below then
		// see that write's rows (a cursor saved a moment before) and remove
		// them, instead of leaving them to a supervisor created again.
		{`UPDATE supervisor_leases SET token = token + 1, expires_at = clock_timestamp() WHERE supervisor_id = $1`, nil},
		{`DELETE FROM supervisor_directives WHERE supervisor_id = $1`, &f.Directives},
		{`DELETE FROM supervisor_cursors WHERE supervisor_id = $1`, &f.Cursors},
		{`DELETE FROM supervisor_holds WHERE supervisor_id = $1`, nil},
		{`DELETE FROM supervisor_delegations WHERE from_id = $1`, &f.DelegationsSent},
		{`UPDATE supervisor_delegations SET status = 'EXPIRED', answered_at = NULL WHERE to_id = $1 AND status = 'OPEN'`, &f.DelegationsExpired},
		{`UPDATE supervisor_reviews SET deadline = clock_timestamp(), updated_at = clock_timestamp() WHERE asking = $1 AND status = 'PENDING'`, &f.ReviewsDue},
	}
	// The idempotency keys its directives gave their commands, starts and
	// reviews (supervisorapp.ControlKey: "supervisor:<id>/…", an id has no
	// "/") are renamed out of the way, so the same directive key sent by a
	// supervisor created again under id applies anew. The rows stay as
	// they were otherwise (the history and the journal are untouched).
	// Open reviews keep theirs: they still apply what they hold.
	prefix := "supervisor:" + id + "/"
	for _, q := range []string{
		`UPDATE commands SET key = key || $2 WHERE key IS NOT NULL AND starts_with(key, $1)`,
		`UPDATE executions SET idempotency_key = idempotency_key || $2 WHERE idempotency_key IS NOT NULL AND starts_with(idempotency_key, $1)`,
		`UPDATE supervisor_reviews SET key = key || $2 WHERE starts_with(key, $1) AND status IN ('APPLIED', 'DENIED')`,
	} {
		tag, err := r.tx.Exec(ctx, q, prefix, retiredKeySuffix(r.now()))
		if err != nil {
			return supervisorapp.Forgotten{}, translate(err)
		}
		f.Keys += int(tag.RowsAffected())
	}
	for _, st := range steps {
		tag, err := r.tx.Exec(ctx, st.sql, id)
		if err != nil {
			return supervisorapp.Forgotten{}, translate(err)
		}
		if st.n != nil {
			*st.n = int(tag.RowsAffected())
		}
	}
	return f, nil
}
