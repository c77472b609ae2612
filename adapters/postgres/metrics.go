package postgres

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5"
)

// QueueDepth counts the live work items of every instance.
type QueueDepth struct {
	// Ready items are due and not claimed.
	Ready int64
	// Delayed items are ready but due later (retry backoff, timers).
	Delayed int64
	// Held items wait behind a closed gate.
	Held int64
	// Running items are claimed under a lease (expired leases not yet
	// reaped included).
	Running int64
	// Parked items wait for an input's answer.
	Parked int64
	// Tasks are the worker queues with live tasks, the fullest first, at
	// most maxDepthQueues.
	Tasks []TaskQueueDepth
}

// TaskQueueDepth is one worker queue's live tasks.
type TaskQueueDepth struct {
	Queue           string
	Waiting, Leased int64
	OldestWaiting   time.Duration
}

// maxDepthQueues bounds the queues the metrics label apart.
const maxDepthQueues = 100

// depthStatementTimeout stops the depth query on the server a little before
// a 1 s scrape budget runs out, so the connection comes back to the pool
// whole instead of being cancelled and closed by the client.
const depthStatementTimeout = "800ms"

// Depth counts the live work items for the metrics gauges. It reads only the
// live part of the queue: the predicate is exactly that of the
// work_items_live partial index, and the queue's pool allows no sequential
// scan, so done and dropped rows (which stay, and grow without bound) are
// never read. The cost is one index walk over the live items, capped by a
// statement timeout.
func (q *Queue) Depth(ctx context.Context) (QueueDepth, error) {
	var d QueueDepth
	err := pgx.BeginTxFunc(ctx, q.pool, pgx.TxOptions{AccessMode: pgx.ReadOnly}, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, "SET LOCAL statement_timeout = '"+depthStatementTimeout+"'"); err != nil {
			return err
		}
		if err := tx.QueryRow(ctx, `
			SELECT count(*) FILTER (WHERE state = 'ready' AND lease_owner IS NULL AND available_at <= now()),
			       count(*) FILTER (WHERE state = 'ready' AND lease_owner IS NULL AND available_at > now()),
			       count(*) FILTER (WHERE state = 'held' AND lease_owner IS NULL),
			       count(*) FILTER (WHERE state IN ('ready', 'held') AND lease_owner IS NOT NULL),
			       count(*) FILTER (WHERE state = 'parked')
			  FROM work_items
			 WHERE state IN ('ready', 'held', 'parked')`).Scan(&d.Ready, &d.Delayed, &d.Held, &d.Running, &d.Parked); err != nil {
			return err
		}
		rows, err := tx.Query(ctx, `
			SELECT queue,
			       count(*) FILTER (WHERE state = 'ready' AND lease_owner IS NULL AND available_at <= now()) AS waiting,
			       count(*) FILTER (WHERE lease_owner IS NOT NULL),
			       coalesce(extract(epoch FROM now() - min(available_at) FILTER (WHERE state = 'ready' AND lease_owner IS NULL AND available_at <= now())), 0)
			  FROM work_items
			 WHERE state IN ('ready', 'held', 'parked') AND queue IS NOT NULL
			 GROUP BY queue ORDER BY waiting DESC, queue LIMIT $1`, maxDepthQueues)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var q TaskQueueDepth
			var oldest float64
			if err := rows.Scan(&q.Queue, &q.Waiting, &q.Leased, &oldest); err != nil {
				return err
			}
			q.OldestWaiting = time.Duration(oldest * float64(time.Second))
			d.Tasks = append(d.Tasks, q)
		}
		return rows.Err()
	})
	if err != nil {
		return QueueDepth{}, translate(err)
	}
	return d, nil
}

// LiveExecutions counts the executions that have not ended, by status.
type LiveExecutions struct {
	Pending, Running, Paused int64
}

// LiveExecutions counts the executions that have not ended, for the
// yukta_executions gauge. Like Depth it reads only the live rows: the
// predicate is that of the executions_active partial index, so the finished
// runs of the history are never read; a statement timeout caps it.
func (q *Queue) LiveExecutions(ctx context.Context) (LiveExecutions, error) {
	var l LiveExecutions
	err := pgx.BeginTxFunc(ctx, q.pool, pgx.TxOptions{AccessMode: pgx.ReadOnly}, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, "SET LOCAL statement_timeout = '"+depthStatementTimeout+"'"); err != nil {
			return err
		}
		return tx.QueryRow(ctx, `
			SELECT count(*) FILTER (WHERE status = 'PENDING'),
			       count(*) FILTER (WHERE status = 'RUNNING'),
			       count(*) FILTER (WHERE status = 'PAUSED')
			  FROM executions
			 WHERE status IN ('PENDING', 'RUNNING', 'PAUSED')`).Scan(&l.Pending, &l.Running, &l.Paused)
	})
	if err != nil {
		return LiveExecutions{}, translate(err)
	}
	return l, nil
}
