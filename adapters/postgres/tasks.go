package postgres

import (
	"context"
	"errors"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/yukta/yukta/application/executionapp"
)

// The worker side of the work queue (docs/workers.md): the items of TASK
// nodes, leased to remote workers on the queue's pool.

var (
	_ executionapp.TaskClaimer  = (*Queue)(nil)
	_ executionapp.TaskLeases   = (*Queue)(nil)
	_ executionapp.ExpiredTasks = (*Queue)(nil)
)

// ClaimTasks leases up to n ready items of the queues to owner. Like the
// engine's claim it re-checks the execution and node against a command that
// committed after the scan's snapshot; each item's lease and deadline come
// from its node's heartbeatTimeout and timeout, stored with the item.
func (q *Queue) ClaimTasks(ctx context.Context, owner string, queues, sessions []string, n int) ([]executionapp.TaskClaim, error) {
	rows, err := q.pool.Query(ctx, `
		WITH cand AS (
		    SELECT w.item_id FROM work_items w
		     WHERE w.state = 'ready' AND w.queue = ANY($2::text[]) AND w.available_at <= now() AND w.lease_owner IS NULL
		       AND ($4::text[] IS NULL OR (SELECT e.session_id FROM executions e WHERE e.execution_id = w.execution_id) = ANY($4::text[]))
		     ORDER BY w.available_at, w.item_id
		     LIMIT $3
		     FOR UPDATE SKIP LOCKED),
		claimed AS (
		    UPDATE work_items w
		       SET lease_owner = $1, lease_token = nextval('lease_tokens'),
		           lease_until = now() + w.task_lease_ms * interval '1 millisecond',
		           deadline = now() + w.task_timeout_ms * interval '1 millisecond',
		           attempt = w.attempt + 1, claimed_at = clock_timestamp()
		      FROM cand
		     WHERE w.item_id = cand.item_id
		       AND (SELECT e.status = 'RUNNING' FROM executions e WHERE e.execution_id = w.execution_id)
		       AND (SELECT n.phase IN ('PENDING', 'RUNNING') AND NOT n.paused FROM execution_nodes n
		             WHERE n.execution_id = w.execution_id AND n.node_id = w.node_id)
		    RETURNING w.*)
		SELECT w.item_id, w.lease_token, w.execution_id::text, w.node_id, w.payload, w.attempt, w.resumed,
		       w.answer, coalesce(w.answered_by, ''), w.bp_passed,
		       (SELECT n.skipped FROM execution_nodes n WHERE n.execution_id = w.execution_id AND n.node_id = w.node_id),
		       (SELECT n.breakpoint FROM execution_nodes n WHERE n.execution_id = w.execution_id AND n.node_id = w.node_id),
		       w.lease_owner, w.queue, e.session_id, e.workflow_id, w.claimed_at, w.lease_until, w.deadline, w.task_lease_ms, w.available_at
		  FROM claimed w JOIN executions e ON e.execution_id = w.execution_id
		 ORDER BY w.available_at, w.item_id`,
		owner, queues, n, sessions)
	if err != nil {
		return nil, translate(err)
	}
	return collectTaskClaims(rows)
}

func collectTaskClaims(rows pgx.Rows) ([]executionapp.TaskClaim, error) {
	defer rows.Close()
	var out []executionapp.TaskClaim
	for rows.Next() {
		var c executionapp.TaskClaim
		var payload, answer, bp []byte
		var leaseMs int64
		if err := rows.Scan(&c.ItemID, &c.Token, &c.ExecutionID, &c.NodeID, &payload, &c.Attempt, &c.Resumed,
			&answer, &c.AnsweredBy, &c.BPPassed, &c.Skipped, &bp,
			&c.Owner, &c.Queue, &c.SessionID, &c.WorkflowID, &c.ClaimedAt, &c.LeaseUntil, &c.Deadline, &leaseMs, &c.QueuedAt); err != nil {
			return nil, translate(err)
		}
		c.Lease = time.Duration(leaseMs) * time.Millisecond
		if err := (claimColumns{&c.Claim}).decode(payload, answer, bp); err != nil {
			return nil, err
		}
		out = append(out, c)
	}
	return out, translate(rows.Err())
}

// SeeWorker records that worker polled queues now.
func (q *Queue) SeeWorker(ctx context.Context, worker string, queues []string) error {
	_, err := q.pool.Exec(ctx, `
		INSERT INTO task_workers (queue, worker, last_seen) SELECT unnest($1::text[]), $2, now()
		    ON CONFLICT (queue, worker) DO UPDATE SET last_seen = excluded.last_seen`, queues, worker)
	return translate(err)
}

// Lease returns a task item as an answer finds it.
func (q *Queue) Lease(ctx context.Context, itemID int64) (executionapp.TaskLease, bool, error) {
	var l executionapp.TaskLease
	var owner *string
	var token *int64
	var claimed, deadline, until *time.Time
	var payload []byte
	err := q.pool.QueryRow(ctx, `
		SELECT w.item_id, w.execution_id::text, w.node_id, e.session_id, e.workflow_id, w.queue, w.state, w.attempt,
		       w.lease_owner, w.lease_token, w.resumed, w.bp_passed, w.claimed_at, w.deadline, w.lease_until,
		       coalesce(w.lease_until < now(), false),
		       coalesce((SELECT n.skipped FROM execution_nodes n WHERE n.execution_id = w.execution_id AND n.node_id = w.node_id), false),
		       w.payload
		  FROM work_items w JOIN executions e ON e.execution_id = w.execution_id
		 WHERE w.item_id = $1 AND w.queue IS NOT NULL`, itemID).Scan(
		&l.ItemID, &l.ExecutionID, &l.NodeID, &l.SessionID, &l.WorkflowID, &l.Queue, &l.State, &l.Attempt,
		&owner, &token, &l.Resumed, &l.BPPassed, &claimed, &deadline, &until, &l.Lapsed, &l.Skipped, &payload)
	if errors.Is(err, pgx.ErrNoRows) {
		return executionapp.TaskLease{}, false, nil
	}
	if err != nil {
		return executionapp.TaskLease{}, false, translate(err)
	}
	if l.Payload, err = fromJSON(payload); err != nil {
		return executionapp.TaskLease{}, false, err
	}
	if owner != nil {
		l.Owner = *owner
	}
	if token != nil {
		l.Token = *token
	}
	for _, t := range []struct {
		from *time.Time
		to   *time.Time
	}{{claimed, &l.ClaimedAt}, {deadline, &l.Deadline}, {until, &l.LeaseUntil}} {
		if t.from != nil {
			*t.to = *t.from
		}
	}
	return l, true, nil
}

// Extend renews a lease by its node's heartbeatTimeout, never past the
// attempt's deadline.
func (q *Queue) Extend(ctx context.Context, itemID, token int64, owner string) (time.Time, time.Time, bool, error) {
	var until, deadline time.Time
	err := q.pool.QueryRow(ctx, `
		UPDATE work_items SET lease_until = least(now() + task_lease_ms * interval '1 millisecond', deadline)
		 WHERE item_id = $1 AND lease_token = $2 AND lease_owner = $3 AND state IN ('ready', 'held') AND lease_until >= now()
		RETURNING lease_until, deadline`, itemID, token, owner).Scan(&until, &deadline)
	if errors.Is(err, pgx.ErrNoRows) {
		return time.Time{}, time.Time{}, false, nil
	}
	if err != nil {
		return time.Time{}, time.Time{}, false, translate(err)
	}
	return until, deadline, true, nil
}

// ExpiredTasks returns leased task items whose lease ran out. It reads
// through the live-items index, so it costs the live queue, not the table.
func (q *Queue) ExpiredTasks(ctx context.Context, n int) ([]executionapp.TaskClaim, error) {
	rows, err := q.pool.Query(ctx, `
		SELECT w.item_id, w.lease_token, w.execution_id::text, w.node_id, w.payload, w.attempt, w.resumed,
		       w.answer, coalesce(w.answered_by, ''), w.bp_passed, false, NULL::jsonb,
		       w.lease_owner, w.queue, e.session_id, e.workflow_id, w.claimed_at, w.lease_until, w.deadline, w.task_lease_ms, w.available_at
		  FROM work_items w JOIN executions e ON e.execution_id = w.execution_id
		 WHERE w.state IN ('ready', 'held') AND w.queue IS NOT NULL AND w.lease_owner IS NOT NULL AND w.lease_until < now()
		 LIMIT $1`, n)
	if err != nil {
		return nil, translate(err)
	}
	return collectTaskClaims(rows)
}
