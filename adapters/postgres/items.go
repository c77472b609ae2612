package postgres

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/yukta/yukta/application/executionapp"
	"github.com/yukta/yukta/domain/plugin"
)

// ItemStore is the work queue inside a transaction.
type ItemStore struct{ db dbtx }

var _ executionapp.ItemStore = (*ItemStore)(nil)

// Insert queues messages.
func (s *ItemStore) Insert(ctx context.Context, items []executionapp.NewItem) error {
	execs := make([]string, len(items))
	nodes := make([]string, len(items))
	payloads := make([]string, len(items))
	states := make([]string, len(items))
	avail := make([]time.Time, len(items))
	queues := make([]*string, len(items))
	leaseMs, timeoutMs := make([]*int64, len(items)), make([]*int64, len(items))
	for i, it := range items {
		if t := it.Task; t != nil {
			q, l, d := t.Queue, max(t.Lease.Milliseconds(), 1), max(t.Timeout.Milliseconds(), 1)
			queues[i], leaseMs[i], timeoutMs[i] = &q, &l, &d
		}
		p, err := toJSON(it.Payload)
		if err != nil {
			return err
		}
		execs[i], nodes[i], payloads[i], avail[i], states[i] = it.ExecutionID, it.NodeID, p, it.AvailableAt, executionapp.ItemReady
		if it.Held {
			states[i] = executionapp.ItemHeld
		}
	}
	_, err := s.db.Exec(ctx, `
		INSERT INTO work_items (execution_id, node_id, payload, state, available_at, created_at, queue, task_lease_ms, task_timeout_ms)
		SELECT t.e, t.n, t.p::jsonb, t.s, t.a, now(), t.q, t.l, t.d
		  FROM unnest($1::uuid[], $2::text[], $3::text[], $4::timestamptz[], $5::text[], $6::text[], $7::int[], $8::int[]) AS t(e, n, p, a, s, q, l, d)`,
		execs, nodes, payloads, avail, states, queues, leaseMs, timeoutMs)
	return translate(err)
}

// Finish applies updates to items still held under their lease token.
func (s *ItemStore) Finish(ctx context.Context, owner string, us []executionapp.ItemUpdate) (map[int64]bool, error) {
	n := len(us)
	ids, tokens := make([]int64, n), make([]int64, n)
	states := make([]string, n)
	avail := make([]*time.Time, n)
	resumed, bp, uncount := make([]bool, n), make([]bool, n), make([]bool, n)
	for i, u := range us {
		ids[i], tokens[i], states[i], resumed[i], bp[i], uncount[i] = u.ItemID, u.Token, u.State, u.Resumed, u.BPPassed, u.Uncount
		avail[i] = nullTime(u.AvailableAt)
	}
	// The rows are found by primary key (item_id = ANY) and each one's new
	// values picked from the arrays by position: joining the arrays instead
	// let the planner re-read them once per claimed row (measured 7 ms per
	// batch of 128) whenever the statistics said "one claimed row".
	rows, err := s.db.Query(ctx, `
		UPDATE work_items w
		   SET state = ($3::text[])[i.pos], available_at = coalesce(($4::timestamptz[])[i.pos], w.available_at),
		       resumed = ($5::bool[])[i.pos], bp_passed = ($6::bool[])[i.pos],
		       attempt = w.attempt - CASE WHEN ($7::bool[])[i.pos] THEN 1 ELSE 0 END,
		       lease_owner = NULL, lease_token = NULL, lease_until = NULL, done_by = $8
		  FROM (SELECT array_position($1::bigint[], w2.item_id) AS pos, w2.item_id
		          FROM work_items w2 WHERE w2.item_id = ANY($1::bigint[])) i
		 WHERE w.item_id = i.item_id AND w.lease_token = ($2::bigint[])[i.pos]
		   AND w.lease_owner = $8
		RETURNING w.item_id`, ids, tokens, states, avail, resumed, bp, uncount, owner)
	if err != nil {
		return nil, translate(err)
	}
	return int64Set(rows)
}

// int64Set collects a one-column bigint result as a set.
func int64Set(rows pgx.Rows) (map[int64]bool, error) {
	ids, err := pgx.CollectRows(rows, pgx.RowTo[int64])
	if err != nil {
		return nil, translate(err)
	}
	out := make(map[int64]bool, len(ids))
	for _, id := range ids {
		out[id] = true
	}
	return out, nil
}

// LiveCounts counts ready (leased or not), held and parked items per node.
func (s *ItemStore) LiveCounts(ctx context.Context, ids []string) (map[string]map[string]int, error) {
	rows, err := s.db.Query(ctx, `
		SELECT execution_id::text, node_id, count(*) FROM work_items
		 WHERE execution_id = ANY($1::uuid[]) AND state IN ('ready', 'held', 'parked')
		 GROUP BY 1, 2`, ids)
	if err != nil {
		return nil, translate(err)
	}
	defer rows.Close()
	out := map[string]map[string]int{}
	for rows.Next() {
		var e, n string
		var c int
		if err := rows.Scan(&e, &n, &c); err != nil {
			return nil, translate(err)
		}
		if out[e] == nil {
			out[e] = map[string]int{}
		}
		out[e][n] = c
	}
	return out, translate(rows.Err())
}

// Drop drops the live items of an execution (or of one of its nodes).
func (s *ItemStore) Drop(ctx context.Context, executionID, nodeID string) (int, error) {
	tag, err := s.db.Exec(ctx, `
		UPDATE work_items SET state = 'dropped', lease_owner = NULL, lease_token = NULL, lease_until = NULL
		 WHERE execution_id = $1 AND ($2 = '' OR node_id = $2) AND state IN ('ready', 'held', 'parked')`,
		executionID, nodeID)
	return int(tag.RowsAffected()), translate(err)
}

// DropParked drops the items of an execution that wait for input.
func (s *ItemStore) DropParked(ctx context.Context, executionID string) (int, error) {
	tag, err := s.db.Exec(ctx, `UPDATE work_items SET state = 'dropped' WHERE execution_id = $1 AND state = 'parked'`, executionID)
	return int(tag.RowsAffected()), translate(err)
}

// Inputs returns the payloads a node received, in arrival order.
func (s *ItemStore) Inputs(ctx context.Context, executionID, nodeID string) ([]any, error) {
	// A finished run's items may have been folded into execution_received
	// (RetentionStore.Prune) in one transaction: one statement sees either
	// every row here or the folded array, never half of each.
	rows, err := s.db.Query(ctx, `
		SELECT payload FROM (
		    SELECT payload, item_id AS ord FROM work_items WHERE execution_id = $1 AND node_id = $2
		    UNION ALL
		    SELECT p.payload, p.ord FROM execution_received r, jsonb_array_elements(r.payloads) WITH ORDINALITY AS p(payload, ord)
		     WHERE r.execution_id = $1 AND r.node_id = $2) i
		 ORDER BY ord`,
		executionID, nodeID)
	if err != nil {
		return nil, translate(err)
	}
	raw, err := pgx.CollectRows(rows, pgx.RowTo[[]byte])
	if err != nil {
		return nil, translate(err)
	}
	out := make([]any, len(raw))
	for i, b := range raw {
		if out[i], err = fromJSON(b); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// Resume makes a parked item ready (or held) with its answer.
func (s *ItemStore) Resume(ctx context.Context, itemID int64, answer any, answeredBy string, held bool) error {
	a, err := toJSON(answer)
	if err != nil {
		return err
	}
	state := executionapp.ItemReady
	if held {
		state = executionapp.ItemHeld
	}
	tag, err := s.db.Exec(ctx, `UPDATE work_items SET state = $4, available_at = now(), answer = $2::jsonb, answered_by = $3
		WHERE item_id = $1 AND state = 'parked'`, itemID, a, answeredBy, state)
	if err != nil {
		return translate(err)
	}
	if tag.RowsAffected() == 0 {
		return fmt.Errorf("work item %d is not parked", itemID)
	}
	return nil
}

// Hold moves ready items behind a closed gate.
func (s *ItemStore) Hold(ctx context.Context, ids []int64) error {
	_, err := s.db.Exec(ctx, `UPDATE work_items SET state = 'held' WHERE item_id = ANY($1) AND state = 'ready' AND lease_owner IS NULL`, ids)
	return translate(err)
}

// Gate sets waiting items ready for the open nodes and held for the closed.
func (s *ItemStore) Gate(ctx context.Context, executionID string, open, closed []string) error {
	_, err := s.db.Exec(ctx, `
		UPDATE work_items SET state = CASE WHEN node_id = ANY($2) THEN 'ready' ELSE 'held' END
		 WHERE execution_id = $1 AND state IN ('ready', 'held') AND lease_owner IS NULL
		   AND (state = 'ready' AND node_id = ANY($3) OR state = 'held' AND node_id = ANY($2))`,
		executionID, nonNil(open), nonNil(closed))
	return translate(err)
}

// ReleaseHeld makes up to n held items of a node ready, oldest first.
func (s *ItemStore) ReleaseHeld(ctx context.Context, executionID, nodeID string, n int) (int, error) {
	tag, err := s.db.Exec(ctx, `
		UPDATE work_items SET state = 'ready'
		 WHERE item_id IN (SELECT item_id FROM work_items
		                    WHERE execution_id = $1 AND node_id = $2 AND state = 'held'
		                    ORDER BY item_id LIMIT $3)`, executionID, nodeID, n)
	return int(tag.RowsAffected()), translate(err)
}

// Requeue moves a node's waiting, unleased items into task's queue, or out
// of every queue when task is nil.
func (s *ItemStore) Requeue(ctx context.Context, executionID, nodeID string, task *plugin.Task) error {
	var queue *string
	var leaseMs, timeoutMs *int64
	if task != nil {
		q, l, d := task.Queue, max(task.Lease.Milliseconds(), 1), max(task.Timeout.Milliseconds(), 1)
		queue, leaseMs, timeoutMs = &q, &l, &d
	}
	_, err := s.db.Exec(ctx, `
		UPDATE work_items SET queue = $3, task_lease_ms = $4, task_timeout_ms = $5
		 WHERE execution_id = $1 AND node_id = $2 AND state IN ('ready', 'held') AND lease_owner IS NULL`,
		executionID, nodeID, queue, leaseMs, timeoutMs)
	return translate(err)
}

// Queue is the claim side of the work queue, on its own small pool. Claims
// commit synchronously, like everything else: an instance survives its
// database restarting, and a claim lost in that crash would hand the item to
// a second claim while the first run's plugin call is already made, running
// it twice. One WAL flush per claimed batch is the price (docs/benchmarks.md).
type Queue struct{ pool *pgxpool.Pool }

// NewQueue returns the queue, with a pool derived from main's settings.
func NewQueue(main *pgxpool.Pool) (*Queue, error) {
	cfg := main.Config().Copy()
	cfg.MaxConns, cfg.MinConns = 4, 1
	// The claim must walk the ready index in order, stop after a batch and
	// find each claimed row by its key. Right after a burst the table's
	// statistics lag, and the planner would rather scan, sort or merge the
	// whole queue: 10 ms+ per claim with 10,000 queued. Every query on this
	// pool is driven by a handful of rows, so only nested index lookups are
	// wanted here.
	for _, p := range []string{"enable_bitmapscan", "enable_seqscan", "enable_sort", "enable_mergejoin", "enable_hashjoin"} {
		cfg.ConnConfig.RuntimeParams[p] = "off"
	}
	// Those switches make a plan that must sort (a poll over several worker
	// queues) cost 10^10, far past jit_above_cost: PostgreSQL would then
	// spend about a second compiling a query that runs in microseconds
	// (measured: 680 ms mean per worker poll). Nothing on this pool is
	// worth compiling.
	cfg.ConnConfig.RuntimeParams["jit"] = "off"
	cfg.ConnConfig.RuntimeParams["application_name"] = "yukta-queue"
	pool, err := pgxpool.NewWithConfig(context.Background(), cfg)
	if err != nil {
		return nil, err
	}
	return &Queue{pool: pool}, nil
}

// Close closes the queue's pool.
func (q *Queue) Close() { q.pool.Close() }

var _ executionapp.Queue = (*Queue)(nil)

// Claim takes up to n ready items, oldest first. Held items never appear
// here (gates keep them out of the ready index), so this is an index scan
// that stops after n rows however long the queue is. The join re-checks the
// execution and node, guarding against a command that committed after the
// scan's snapshot.
func (q *Queue) Claim(ctx context.Context, owner string, n int, lease time.Duration) ([]executionapp.Claim, error) {
	// Each step is driven by the batch (cand): the checks are scalar
	// subqueries, which the planner cannot turn into joins, so each is one
	// primary-key lookup per claimed row however stale the statistics are.
	rows, err := q.pool.Query(ctx, `
		WITH cand AS (
		    SELECT item_id FROM work_items
		     WHERE state = 'ready' AND queue IS NULL AND available_at <= now() AND lease_owner IS NULL
		     ORDER BY available_at, item_id
		     LIMIT $2
		     FOR UPDATE SKIP LOCKED),
		claimed AS (
		    UPDATE work_items w
		       SET lease_owner = $1, lease_token = nextval('lease_tokens'),
		           lease_until = now() + $3::interval, attempt = w.attempt + 1, claimed_at = clock_timestamp()
		      FROM cand
		     WHERE w.item_id = cand.item_id
		       AND (SELECT e.status = 'RUNNING' FROM executions e WHERE e.execution_id = w.execution_id)
		       AND (SELECT n.phase IN ('PENDING', 'RUNNING') AND NOT n.paused FROM execution_nodes n
		             WHERE n.execution_id = w.execution_id AND n.node_id = w.node_id)
		    RETURNING w.*)
		SELECT w.item_id, w.lease_token, w.execution_id::text, w.node_id, w.payload, w.attempt, w.resumed,
		       w.answer, coalesce(w.answered_by, ''), w.bp_passed,
		       (SELECT n.skipped FROM execution_nodes n WHERE n.execution_id = w.execution_id AND n.node_id = w.node_id),
		       (SELECT n.breakpoint FROM execution_nodes n WHERE n.execution_id = w.execution_id AND n.node_id = w.node_id)
		  FROM claimed w`,
		owner, n, lease)
	if err != nil {
		return nil, translate(err)
	}
	return collectClaims(rows)
}

func collectClaims(rows pgx.Rows) ([]executionapp.Claim, error) {
	defer rows.Close()
	var out []executionapp.Claim
	for rows.Next() {
		var c executionapp.Claim
		var payload, answer, bp []byte
		if err := rows.Scan(&c.ItemID, &c.Token, &c.ExecutionID, &c.NodeID, &payload, &c.Attempt, &c.Resumed,
			&answer, &c.AnsweredBy, &c.BPPassed, &c.Skipped, &bp); err != nil {
			return nil, translate(err)
		}
		var err error
		if c.Payload, err = fromJSON(payload); err != nil {
			return nil, err
		}
		if c.Answer, err = fromJSON(answer); err != nil {
			return nil, err
		}
		if bp != nil {
			if c.Breakpoint, err = parseBreakpoint(bp); err != nil {
				return nil, err
			}
		}
		out = append(out, c)
	}
	return out, translate(rows.Err())
}

// Heartbeat extends the leases of the given items the owner still holds.
func (q *Queue) Heartbeat(ctx context.Context, owner string, ids []int64, lease time.Duration) error {
	_, err := q.pool.Exec(ctx, `UPDATE work_items SET lease_until = now() + $3::interval
		WHERE item_id = ANY($2) AND lease_owner = $1`, owner, ids, lease)
	return translate(err)
}

// Reap puts items whose lease expired back in the queue: ready, or held when
// their node's gate closed meanwhile (the item was released once, so a step
// gate does not hold it again).
func (q *Queue) Reap(ctx context.Context) (int, error) {
	// SKIP LOCKED: an expired item whose row is locked (its owner froze in
	// the middle of a commit) must not hold back the reaping of all others;
	// it is reaped on a later round, once that transaction ends.
	tag, err := q.pool.Exec(ctx, `
		UPDATE work_items w
		   SET state = CASE WHEN e.status = 'RUNNING' AND NOT n.paused THEN 'ready' ELSE 'held' END,
		       lease_owner = NULL, lease_token = NULL, lease_until = NULL
		  FROM (SELECT item_id FROM work_items
		         WHERE state IN ('ready', 'held') AND lease_owner IS NOT NULL AND lease_until < now() AND queue IS NULL
		         FOR UPDATE SKIP LOCKED) x,
		       executions e, execution_nodes n
		 WHERE w.item_id = x.item_id
		   AND e.execution_id = w.execution_id AND n.execution_id = w.execution_id AND n.node_id = w.node_id`)
	return int(tag.RowsAffected()), translate(err)
}

// Source loads an execution's definition for the engine.
func (q *Queue) Source(ctx context.Context, id string) (executionapp.RunSource, error) {
	return loadSource(ctx, q.pool, id)
}
