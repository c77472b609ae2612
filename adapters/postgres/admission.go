package postgres

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/yukta/yukta/application/executionapp"
	"github.com/yukta/yukta/domain/execution"
)

// admissionLock is the key of the transaction-scoped advisory lock that
// serializes admissions across every instance on the database ("yukta
// admission" in ASCII, cut to 63 bits). Goose's migration lock uses another.
const admissionLock int64 = 0x79756b74_61646d

// holding is the SQL condition of a run that holds a slot: RUNNING, or
// PAUSED after it was admitted (admitted_at is stamped by the trigger of
// migration 00008 on every way into RUNNING).
const holding = `(status = 'RUNNING' OR status = 'PAUSED' AND admitted_at IS NOT NULL)`

// AdmissionStore is the scheduler limits' view of the runs, inside a
// transaction.
type AdmissionStore struct{ db dbtx }

var _ executionapp.AdmissionStore = (*AdmissionStore)(nil)

// Bounds reads the session's and the workflow's maxRunning and, when any
// bound applies, takes the admission lock in the same statement (CASE
// evaluates the lock only on the branch taken), saving a round trip for
// every start no limit applies to.
func (s *AdmissionStore) Bounds(ctx context.Context, sessionID, workflowID string, serverLimited bool) (int, int, error) {
	var sm, wm int
	err := s.db.QueryRow(ctx, `
		SELECT b.sm, b.wm,
		       CASE WHEN $3 OR b.sm > 0 OR b.wm > 0 THEN pg_advisory_xact_lock($4)::text END
		  FROM (SELECT coalesce((SELECT max_running FROM sessions WHERE session_id = $1), 0) AS sm,
		               coalesce((SELECT max_running FROM workflows WHERE session_id = $1 AND workflow_id = $2), 0) AS wm) b`,
		sessionID, workflowID, serverLimited, admissionLock).Scan(&sm, &wm, nil)
	return sm, wm, translate(err)
}

// Lock takes the admission lock until the transaction ends.
func (s *AdmissionStore) Lock(ctx context.Context) error {
	_, err := s.db.Exec(ctx, `SELECT pg_advisory_xact_lock($1)`, admissionLock)
	return translate(err)
}

// Counts counts the runs holding a slot and the waiting runs, of one
// session or of all.
func (s *AdmissionStore) Counts(ctx context.Context, sessionID string, all bool) (held, waiting execution.Tally, err error) {
	q := `SELECT session_id, workflow_id, reserved, status = 'PENDING', count(*) FROM executions
		WHERE status IN ('PENDING', 'RUNNING', 'PAUSED') AND (status = 'PENDING' OR ` + holding + `)`
	args := []any{}
	if !all {
		q += ` AND session_id = $1`
		args = append(args, sessionID)
	}
	rows, err := s.db.Query(ctx, q+` GROUP BY 1, 2, 3, 4`, args...)
	if err != nil {
		return held, waiting, translate(err)
	}
	held, waiting = execution.NewTally(), execution.NewTally()
	err = scanTallies(rows, func(sid, wid string, p execution.Pool, pending bool, n int) {
		if pending {
			waiting.Add(sid, wid, p, n)
		} else {
			held.Add(sid, wid, p, n)
		}
	})
	return held, waiting, err
}

// Held counts the runs holding a slot on the whole server.
func (s *AdmissionStore) Held(ctx context.Context) (execution.Tally, error) {
	rows, err := s.db.Query(ctx, `SELECT session_id, workflow_id, reserved, false, count(*) FROM executions
		WHERE status IN ('RUNNING', 'PAUSED') AND `+holding+` GROUP BY 1, 2, 3`)
	if err != nil {
		return execution.Tally{}, translate(err)
	}
	held := execution.NewTally()
	err = scanTallies(rows, func(sid, wid string, p execution.Pool, _ bool, n int) { held.Add(sid, wid, p, n) })
	return held, err
}

func scanTallies(rows pgx.Rows, add func(sid, wid string, p execution.Pool, pending bool, n int)) error {
	defer rows.Close()
	for rows.Next() {
		var sid, wid string
		var reserved, pending bool
		var n int
		if err := rows.Scan(&sid, &wid, &reserved, &pending, &n); err != nil {
			return translate(err)
		}
		add(sid, wid, poolOf(reserved), pending, n)
	}
	return translate(rows.Err())
}

func poolOf(reserved bool) execution.Pool {
	if reserved {
		return execution.PoolReserved
	}
	return execution.PoolNormal
}

// Waiting lists waiting runs in start order, with their bounds as they are
// now (a workflow the session no longer has reads no bound).
func (s *AdmissionStore) Waiting(ctx context.Context, after int64, n int) ([]executionapp.WaitingRun, error) {
	rows, err := s.db.Query(ctx, `
		SELECT e.queue_seq, e.execution_id::text, e.session_id, e.workflow_id, e.reserved,
		       coalesce((SELECT max_running FROM sessions s WHERE s.session_id = e.session_id), 0),
		       coalesce((SELECT max_running FROM workflows w WHERE w.session_id = e.session_id AND w.workflow_id = e.workflow_id), 0)
		  FROM executions e
		 WHERE e.status = 'PENDING' AND e.queue_seq > $1
		 ORDER BY e.queue_seq
		 LIMIT $2`, after, n)
	if err != nil {
		return nil, translate(err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (executionapp.WaitingRun, error) {
		var w executionapp.WaitingRun
		var reserved bool
		err := r.Scan(&w.Seq, &w.ID, &w.SessionID, &w.WorkflowID, &reserved, &w.SessionMax, &w.WorkflowMax)
		w.Pool = poolOf(reserved)
		return w, err
	})
	return out, translate(err)
}

// MarkReserved records that a run asks for the reserved pool.
func (s *AdmissionStore) MarkReserved(ctx context.Context, executionID string) error {
	_, err := s.db.Exec(ctx, `UPDATE executions SET reserved = true WHERE execution_id = $1`, executionID)
	return translate(err)
}

// Admitted reports whether a run has been RUNNING at any time.
func (s *AdmissionStore) Admitted(ctx context.Context, executionID string) (bool, error) {
	var ok bool
	err := s.db.QueryRow(ctx, `SELECT admitted_at IS NOT NULL FROM executions WHERE execution_id = $1`, executionID).Scan(&ok)
	return ok, notFound(err, executionNotFound(executionID))
}

// Scheduler reads the scheduler's state outside any transaction: whether
// runs wait (the admission loop's cheap first check) and the counts the
// status and the metrics show.
type Scheduler struct{ pool *pgxpool.Pool }

// NewScheduler returns the reader on pool.
func NewScheduler(pool *pgxpool.Pool) *Scheduler { return &Scheduler{pool: pool} }

var (
	_ executionapp.WaitingReader   = (*Scheduler)(nil)
	_ executionapp.SchedulerReader = (*Scheduler)(nil)
)

// AnyWaiting reports whether a run is PENDING: one probe of the queue index.
func (s *Scheduler) AnyWaiting(ctx context.Context) (bool, error) {
	var ok bool
	err := s.pool.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM executions WHERE status = 'PENDING')`).Scan(&ok)
	return ok, translate(err)
}

// SchedulerCounts counts the runs holding a slot and the waiting runs of
// the whole server, with the bounds of every session and workflow that has
// one, in one snapshot.
func (s *Scheduler) SchedulerCounts(ctx context.Context) (executionapp.SchedulerCounts, error) {
	var out executionapp.SchedulerCounts
	err := pgx.BeginTxFunc(ctx, s.pool, pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly}, func(tx pgx.Tx) error {
		st := &AdmissionStore{db: tx}
		var err error
		if out.Held, out.Waiting, err = st.Counts(ctx, "", true); err != nil {
			return err
		}
		var oldest *time.Time
		if err := tx.QueryRow(ctx, `SELECT min(started_at) FROM executions WHERE status = 'PENDING'`).Scan(&oldest); err != nil {
			return translate(err)
		}
		if oldest != nil {
			out.OldestWaiting = *oldest
		}
		out.SessionMax, out.WorkflowMax = map[string]int{}, map[execution.WorkflowRef]int{}
		rows, err := tx.Query(ctx, `SELECT session_id, '', max_running FROM sessions WHERE max_running > 0
			UNION ALL SELECT session_id, workflow_id, max_running FROM workflows WHERE max_running > 0`)
		if err != nil {
			return translate(err)
		}
		defer rows.Close()
		for rows.Next() {
			var sid, wid string
			var n int
			if err := rows.Scan(&sid, &wid, &n); err != nil {
				return translate(err)
			}
			if wid == "" {
				out.SessionMax[sid] = n
			} else {
				out.WorkflowMax[execution.WorkflowRef{SessionID: sid, WorkflowID: wid}] = n
			}
		}
		if err := rows.Err(); err != nil {
			return translate(err)
		}
		out.Queues, err = taskQueues(ctx, tx)
		return err
	})
	return out, translate(err)
}

// taskQueues reads the worker queues with live tasks or seen workers: the
// live part of work_items (its partial index) and task_workers.
func taskQueues(ctx context.Context, tx pgx.Tx) ([]executionapp.TaskQueueStatus, error) {
	rows, err := tx.Query(ctx, `
		WITH live AS (
		    SELECT queue,
		           count(*) FILTER (WHERE state = 'ready' AND lease_owner IS NULL AND available_at <= now()) AS waiting,
		           count(*) FILTER (WHERE lease_owner IS NOT NULL) AS leased,
		           min(available_at) FILTER (WHERE state = 'ready' AND lease_owner IS NULL AND available_at <= now()) AS oldest
		      FROM work_items WHERE state IN ('ready', 'held', 'parked') AND queue IS NOT NULL GROUP BY queue),
		names AS (SELECT queue FROM live UNION SELECT DISTINCT queue FROM task_workers)
		SELECT n.queue, coalesce(l.waiting, 0), coalesce(l.leased, 0), l.oldest,
		       coalesce((SELECT jsonb_agg(jsonb_build_object('worker', w.worker, 'lastSeen', w.last_seen) ORDER BY w.last_seen DESC)
		                   FROM (SELECT * FROM task_workers w WHERE w.queue = n.queue ORDER BY w.last_seen DESC LIMIT $2) w), '[]')
		  FROM names n LEFT JOIN live l ON l.queue = n.queue
		 ORDER BY n.queue LIMIT $1`, executionapp.SchedulerStatusMaxQueues, executionapp.SchedulerStatusMaxWorkers)
	if err != nil {
		return nil, translate(err)
	}
	defer rows.Close()
	out := []executionapp.TaskQueueStatus{}
	for rows.Next() {
		var q executionapp.TaskQueueStatus
		var oldest *time.Time
		var workers []struct {
			Worker   string    `json:"worker"`
			LastSeen time.Time `json:"lastSeen"`
		}
		if err := rows.Scan(&q.Queue, &q.Waiting, &q.Leased, &oldest, &workers); err != nil {
			return nil, translate(err)
		}
		if oldest != nil {
			q.OldestWaiting = *oldest
		}
		q.Workers = make([]executionapp.WorkerSeen, len(workers))
		for i, w := range workers {
			q.Workers[i] = executionapp.WorkerSeen{Worker: w.Worker, LastSeen: w.LastSeen}
		}
		out = append(out, q)
	}
	return out, translate(rows.Err())
}
