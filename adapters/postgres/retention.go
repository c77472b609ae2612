package postgres

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/yukta/yukta/application/executionapp"
	"github.com/yukta/yukta/application/retentionapp"
	"github.com/yukta/yukta/domain/execution"
	"github.com/yukta/yukta/domain/retention"
)

// RetentionStore is the retention sweeper's storage. Every statement finds
// its rows by index (migration 00014) and every transaction handles one
// bounded batch, skipping rows somebody else holds, so the engine never
// queues behind it.
type RetentionStore struct{ pool *pgxpool.Pool }

// NewRetentionStore returns the store.
func NewRetentionStore(pool *pgxpool.Pool) *RetentionStore { return &RetentionStore{pool: pool} }

var (
	_ retentionapp.Store      = (*RetentionStore)(nil)
	_ retentionapp.PruneStore = (*RetentionStore)(nil)
)

// retentionLock is the key of the session-level advisory lock the sweeping
// instance holds ("yukta-rt" in ASCII).
const retentionLock int64 = 0x79756b74612d7274

// retentionLockTimeout bounds how long a batch waits for a row lock it did
// not expect (a cascaded child row somebody holds): it gives up and the next
// pass tries again, instead of queueing the engine behind it.
const retentionLockTimeout = "2s"

// Lead holds the advisory lock on one pooled connection while fn runs.
func (s *RetentionStore) Lead(ctx context.Context, fn func(ctx context.Context) error) (bool, error) {
	conn, err := s.pool.Acquire(ctx)
	if err != nil {
		return false, translate(err)
	}
	defer conn.Release()
	var ok bool
	if err := conn.QueryRow(ctx, `SELECT pg_try_advisory_lock($1)`, retentionLock).Scan(&ok); err != nil || !ok {
		return false, translate(err)
	}
	defer func() {
		// A fresh context: the pass's may have ended, the lock must go.
		uctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if _, err := conn.Exec(uctx, `SELECT pg_advisory_unlock($1)`, retentionLock); err != nil {
			// Closing the connection ends its session, and the lock with it.
			_ = conn.Conn().Close(uctx)
		}
	}()
	return true, fn(ctx)
}

// Sessions lists every session with its retention columns.
func (s *RetentionStore) Sessions(ctx context.Context) ([]retentionapp.SessionRetention, error) {
	rows, err := s.pool.Query(ctx, `SELECT session_id, retention_days, retention_journals FROM sessions ORDER BY session_id`)
	if err != nil {
		return nil, translate(err)
	}
	defer rows.Close()
	var out []retentionapp.SessionRetention
	for rows.Next() {
		var id string
		var days *int
		var journals *string
		if err := rows.Scan(&id, &days, &journals); err != nil {
			return nil, translate(err)
		}
		o, err := retention.NewOverride(days, deref(journals))
		if err != nil {
			return nil, fmt.Errorf("postgres: session %s: stored retention: %w", id, err)
		}
		out = append(out, retentionapp.SessionRetention{SessionID: id, Override: o})
	}
	return out, translate(rows.Err())
}

// Due reads executions_ended; the NOT EXISTS is one probe of
// events_execution per run: a run with events the observer has not
// journaled yet waits, so its journal is complete before anything goes.
func (s *RetentionStore) Due(ctx context.Context, sessionID string, cutoff time.Time, limit int) ([]retentionapp.Run, error) {
	rows, err := s.pool.Query(ctx, `
		SELECT e.execution_id::text, e.session_id, e.workflow_id, e.status, e.started_at, e.ended_at
		  FROM executions e
		 WHERE e.session_id = $1 AND e.status IN ('SUCCESS', 'FAILURE', 'STOPPED') AND e.ended_at < $2
		   AND NOT EXISTS (SELECT 1 FROM events ev, journal_cursor c
		                    WHERE c.id = 1 AND ev.execution_id = e.execution_id AND (ev.xid, ev.seq) > (c.xid, c.seq))
		 ORDER BY e.ended_at
		 LIMIT $3`, sessionID, cutoff, limit)
	if err != nil {
		return nil, translate(err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (retentionapp.Run, error) {
		var run retentionapp.Run
		err := r.Scan(&run.ID, &run.SessionID, &run.WorkflowID, &run.Status, &run.StartedAt, &run.EndedAt)
		return run, err
	})
	return out, translate(err)
}

// Delete deletes one batch in one transaction. The executions rows go
// first, locked with SKIP LOCKED (a restart or a refused command holding
// one keeps it for now); their nodes, work items, folded items, logs,
// inputs and hold ledger rows follow by ON DELETE CASCADE through their
// primary keys; events and commands by their execution indexes.
func (s *RetentionStore) Delete(ctx context.Context, runs []retentionapp.Run, d retentionapp.Deletion) ([]string, error) {
	if len(runs) == 0 {
		return nil, nil
	}
	ids := make([]string, len(runs))
	files := make([]string, len(runs))
	for i, r := range runs {
		ids[i], files[i] = r.ID, d.Exported[r.ID]
	}
	dropJournal := d.Policy.Journals() == retention.Delete
	journal := "kept"
	if dropJournal {
		journal = "deleted"
	}
	var deleted []string
	err := inTx(ctx, s.pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `SELECT set_config('lock_timeout', $1, true)`, retentionLockTimeout); err != nil {
			return err
		}
		rows, err := tx.Query(ctx, `
			WITH victims AS (
			    SELECT execution_id FROM executions
			     WHERE execution_id = ANY($1::uuid[]) AND status IN ('SUCCESS', 'FAILURE', 'STOPPED')
			     FOR UPDATE SKIP LOCKED),
			gone AS (
			    DELETE FROM executions e USING victims v WHERE e.execution_id = v.execution_id
			    RETURNING e.execution_id, e.session_id, e.workflow_id, e.status, e.started_at, e.ended_at)
			INSERT INTO deleted_executions (execution_id, session_id, workflow_id, status, started_at, ended_at,
			                                deleted_at, retention_days, journal, exported_to)
			SELECT g.execution_id, g.session_id, g.workflow_id, g.status, g.started_at, g.ended_at, $3, $4, $5, coalesce(f.file, '')
			  FROM gone g LEFT JOIN unnest($1::uuid[], $2::text[]) AS f(id, file) ON f.id = g.execution_id
			ON CONFLICT (execution_id) DO NOTHING
			RETURNING execution_id::text`, ids, files, d.At, d.Policy.Days(), journal)
		if err != nil {
			return err
		}
		if deleted, err = pgx.CollectRows(rows, pgx.RowTo[string]); err != nil {
			return err
		}
		if len(deleted) == 0 {
			return nil
		}
		if _, err := tx.Exec(ctx, `DELETE FROM events WHERE execution_id = ANY($1::uuid[])`, deleted); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `DELETE FROM commands WHERE execution_id = ANY($1::uuid[])`, deleted); err != nil {
			return err
		}
		if dropJournal {
			// The one delete the append-only trigger lets through
			// (migration 00014); the mark ends with the transaction.
			if _, err := tx.Exec(ctx, `SELECT set_config('yukta.retention_delete', 'on', true)`); err != nil {
				return err
			}
			if _, err := tx.Exec(ctx, `DELETE FROM journal_records WHERE execution_id = ANY($1::uuid[])`, deleted); err != nil {
				return err
			}
			if _, err := tx.Exec(ctx, `DELETE FROM journal_checkpoints WHERE execution_id = ANY($1::uuid[])`, deleted); err != nil {
				return err
			}
		}
		return nil
	})
	return deleted, err
}

// ExpireTombstones deletes old tombstones by deleted_executions_expiry.
func (s *RetentionStore) ExpireTombstones(ctx context.Context, before time.Time, limit int) (int, error) {
	tag, err := s.pool.Exec(ctx, `
		DELETE FROM deleted_executions WHERE execution_id IN (
		    SELECT execution_id FROM deleted_executions WHERE deleted_at < $1 ORDER BY deleted_at LIMIT $2)`, before, limit)
	return int(tag.RowsAffected()), translate(err)
}

// Prune folds a batch of finished runs' work items in one statement: the
// insert reads the item rows from the statement's snapshot, before the
// delete beside it removes them, so ItemStore.Inputs sees either.
func (s *RetentionStore) Prune(ctx context.Context, endedBefore time.Time, limit int) (int, error) {
	var n int
	err := inTx(ctx, s.pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `SELECT set_config('lock_timeout', $1, true)`, retentionLockTimeout); err != nil {
			return err
		}
		return tx.QueryRow(ctx, `
			WITH runs AS (
			    SELECT execution_id FROM executions
			     WHERE status IN ('SUCCESS', 'FAILURE', 'STOPPED') AND NOT items_pruned AND ended_at < $1
			     ORDER BY ended_at LIMIT $2
			     FOR UPDATE SKIP LOCKED),
			folded AS (
			    INSERT INTO execution_received (execution_id, node_id, payloads)
			    SELECT w.execution_id, w.node_id, jsonb_agg(coalesce(w.payload, 'null'::jsonb) ORDER BY w.item_id)
			      FROM runs r JOIN work_items w ON w.execution_id = r.execution_id
			     GROUP BY w.execution_id, w.node_id
			    ON CONFLICT (execution_id, node_id) DO NOTHING
			    RETURNING 1),
			gone AS (
			    DELETE FROM work_items w USING runs r WHERE w.execution_id = r.execution_id RETURNING 1),
			marked AS (
			    UPDATE executions e SET items_pruned = true FROM runs r WHERE e.execution_id = r.execution_id RETURNING 1)
			SELECT (SELECT count(*) FROM marked), (SELECT count(*) FROM folded) + (SELECT count(*) FROM gone)`,
			endedBefore, limit).Scan(&n, new(int64))
	})
	return n, err
}

// Tombstone reads a deleted run's tombstone, if the session had it.
func (s *RetentionStore) Tombstone(ctx context.Context, sessionID, id string) (executionapp.Tombstone, bool, error) {
	return tombstone(ctx, s.pool, sessionID, id)
}

type queryRower interface {
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
}

func tombstone(ctx context.Context, db queryRower, sessionID, id string) (executionapp.Tombstone, bool, error) {
	var t executionapp.Tombstone
	if !execution.ValidID(id) {
		return t, false, nil
	}
	var journal string
	err := db.QueryRow(ctx, `
		SELECT execution_id::text, workflow_id, status, ended_at, deleted_at, retention_days, journal, exported_to <> ''
		  FROM deleted_executions WHERE execution_id = $1 AND session_id = $2`, id, sessionID).
		Scan(&t.ExecutionID, &t.WorkflowID, &t.Status, &t.EndedAt, &t.DeletedAt, &t.RetentionDays, &journal, &t.Exported)
	if err == pgx.ErrNoRows {
		return t, false, nil
	}
	t.JournalKept = journal == "kept"
	return t, err == nil, translate(err)
}

// notFoundOrDeleted is the not-found answer for an execution: the
// tombstone's story when the retention policy deleted it, else fallback.
func notFoundOrDeleted(ctx context.Context, db queryRower, sessionID, id string, fallback error) error {
	t, ok, err := tombstone(ctx, db, sessionID, id)
	if err != nil {
		return err
	}
	if ok {
		return executionapp.DeletedExecution(t)
	}
	return fallback
}
