package postgres

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/yukta/yukta/application/executionapp"
)

// ItemStore is the work queue inside a transaction.
type ItemStore struct{ db dbtx }

var _ executionapp.ItemStore = (*ItemStore)(nil)

// Insert queues messages.
func (s *ItemStore) Insert(ctx context.Context, items []executionapp.NewItem) error {
	execs := make([]string, len(items))
	nodes := make([]string, len(items))
	payloads := make([]string, len(items))
	avail := make([]time.Time, len(items))
	for i, it := range items {
		p, err := toJSON(it.Payload)
		if err != nil {
			return err
		}
		execs[i], nodes[i], payloads[i], avail[i] = it.ExecutionID, it.NodeID, p, it.AvailableAt
	}
	_, err := s.db.Exec(ctx, `
		INSERT INTO work_items (execution_id, node_id, payload, state, available_at, created_at)
		SELECT t.e, t.n, t.p::jsonb, 'ready', t.a, now()
		  FROM unnest($1::uuid[], $2::text[], $3::text[], $4::timestamptz[]) AS t(e, n, p, a)`,
		execs, nodes, payloads, avail)
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
	rows, err := s.db.Query(ctx, `
		UPDATE work_items w
		   SET state = u.state, available_at = coalesce(u.available_at, w.available_at), resumed = u.resumed,
		       bp_passed = u.bp_passed, attempt = w.attempt - CASE WHEN u.uncount THEN 1 ELSE 0 END,
		       lease_owner = NULL, lease_token = NULL, lease_until = NULL, done_by = $8
		  FROM unnest($1::bigint[], $2::bigint[], $3::text[], $4::timestamptz[], $5::bool[], $6::bool[], $7::bool[])
		       AS u(id, token, state, available_at, resumed, bp_passed, uncount)
		 WHERE w.item_id = u.id AND w.lease_token = u.token AND w.state = 'claimed' AND w.lease_owner = $8
		RETURNING w.item_id`, ids, tokens, states, avail, resumed, bp, uncount, owner)
	if err != nil {
		return nil, translate(err)
	}
	done, err := pgx.CollectRows(rows, pgx.RowTo[int64])
	if err != nil {
		return nil, translate(err)
	}
	out := make(map[int64]bool, len(done))
	for _, id := range done {
		out[id] = true
	}
	return out, nil
}

// LiveCounts counts ready, claimed and parked items per node.
func (s *ItemStore) LiveCounts(ctx context.Context, ids []string) (map[string]map[string]int, error) {
	rows, err := s.db.Query(ctx, `
		SELECT execution_id::text, node_id, count(*) FROM work_items
		 WHERE execution_id = ANY($1::uuid[]) AND state IN ('ready', 'claimed', 'parked')
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
		 WHERE execution_id = $1 AND ($2 = '' OR node_id = $2) AND state IN ('ready', 'claimed', 'parked')`,
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
	rows, err := s.db.Query(ctx, `SELECT payload FROM work_items WHERE execution_id = $1 AND node_id = $2 ORDER BY item_id`,
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

// Resume makes a parked item ready with its answer.
func (s *ItemStore) Resume(ctx context.Context, itemID int64, answer any, answeredBy string) error {
	a, err := toJSON(answer)
	if err != nil {
		return err
	}
	tag, err := s.db.Exec(ctx, `UPDATE work_items SET state = 'ready', available_at = now(), answer = $2::jsonb, answered_by = $3
		WHERE item_id = $1 AND state = 'parked'`, itemID, a, answeredBy)
	if err != nil {
		return translate(err)
	}
	if tag.RowsAffected() == 0 {
		return fmt.Errorf("work item %d is not parked", itemID)
	}
	return nil
}

// Release puts a claimed item back untouched.
func (s *ItemStore) Release(ctx context.Context, owner string, itemID, token int64) error {
	_, err := s.db.Exec(ctx, `UPDATE work_items SET state = 'ready', attempt = attempt - 1, lease_owner = NULL, lease_token = NULL, lease_until = NULL
		WHERE item_id = $1 AND lease_token = $2 AND lease_owner = $3 AND state = 'claimed'`, itemID, token, owner)
	return translate(err)
}

// Queue is the claim side of the work queue, on the pool.
type Queue struct{ pool *pgxpool.Pool }

// NewQueue returns the queue.
func NewQueue(pool *pgxpool.Pool) *Queue { return &Queue{pool: pool} }

var _ executionapp.Queue = (*Queue)(nil)

const claimReturning = `RETURNING w.item_id, w.lease_token, w.execution_id::text, w.node_id, w.payload, w.attempt, w.resumed,
	w.answer, coalesce(w.answered_by, ''), w.bp_passed, n.skipped, n.breakpoint`

// Claim takes up to n runnable items. Free-running nodes go through one
// statement; nodes in step mode get one item per credit, never two at once.
func (q *Queue) Claim(ctx context.Context, owner string, n int, lease time.Duration) ([]executionapp.Claim, error) {
	rows, err := q.pool.Query(ctx, `
		WITH cand AS (
		    SELECT w.item_id
		      FROM work_items w
		      JOIN executions e ON e.execution_id = w.execution_id
		      JOIN execution_nodes n ON n.execution_id = w.execution_id AND n.node_id = w.node_id
		     WHERE w.state = 'ready' AND w.available_at <= now()
		       AND e.status = 'RUNNING'
		       AND n.phase IN ('PENDING', 'RUNNING') AND NOT n.paused
		       AND (NOT n.step_mode OR n.skipped)
		     ORDER BY w.available_at, w.item_id
		     LIMIT $2
		     FOR UPDATE OF w SKIP LOCKED)
		UPDATE work_items w
		   SET state = 'claimed', lease_owner = $1, lease_token = nextval('lease_tokens'),
		       lease_until = now() + $3::interval, attempt = w.attempt + 1
		  FROM cand, execution_nodes n
		 WHERE w.item_id = cand.item_id AND n.execution_id = w.execution_id AND n.node_id = w.node_id
		`+claimReturning, owner, n, lease)
	if err != nil {
		return nil, translate(err)
	}
	claims, err := collectClaims(rows)
	if err != nil || len(claims) >= n {
		return claims, err
	}
	stepped, err := q.claimStepped(ctx, owner, n-len(claims), lease)
	return append(claims, stepped...), err
}

func (q *Queue) claimStepped(ctx context.Context, owner string, n int, lease time.Duration) ([]executionapp.Claim, error) {
	var out []executionapp.Claim
	err := pgx.BeginTxFunc(ctx, q.pool, pgx.TxOptions{}, func(tx pgx.Tx) error {
		rows, err := tx.Query(ctx, `
			SELECT n.execution_id::text, n.node_id
			  FROM execution_nodes n JOIN executions e ON e.execution_id = n.execution_id
			 WHERE n.step_mode AND n.credits > 0 AND NOT n.skipped AND NOT n.paused
			   AND n.phase IN ('PENDING', 'RUNNING') AND e.status = 'RUNNING'
			   AND NOT EXISTS (SELECT 1 FROM work_items c
			                    WHERE c.execution_id = n.execution_id AND c.node_id = n.node_id AND c.state = 'claimed')
			 LIMIT $1
			 FOR UPDATE OF n SKIP LOCKED`, n)
		if err != nil {
			return err
		}
		type key struct{ e, n string }
		keys, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (key, error) {
			var k key
			return k, r.Scan(&k.e, &k.n)
		})
		if err != nil {
			return err
		}
		for _, k := range keys {
			rows, err := tx.Query(ctx, `
				UPDATE work_items w
				   SET state = 'claimed', lease_owner = $1, lease_token = nextval('lease_tokens'),
				       lease_until = now() + $4::interval, attempt = w.attempt + 1
				  FROM execution_nodes n
				 WHERE w.item_id = (SELECT item_id FROM work_items
				                     WHERE execution_id = $2 AND node_id = $3 AND state = 'ready' AND available_at <= now()
				                     ORDER BY item_id LIMIT 1 FOR UPDATE SKIP LOCKED)
				   AND n.execution_id = w.execution_id AND n.node_id = w.node_id
				`+claimReturning, owner, k.e, k.n, lease)
			if err != nil {
				return err
			}
			c, err := collectClaims(rows)
			if err != nil {
				return err
			}
			out = append(out, c...)
		}
		return nil
	})
	return out, translate(err)
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

// Heartbeat extends the leases of the owner's claimed items.
func (q *Queue) Heartbeat(ctx context.Context, owner string, lease time.Duration) error {
	_, err := q.pool.Exec(ctx, `UPDATE work_items SET lease_until = now() + $2::interval WHERE state = 'claimed' AND lease_owner = $1`, owner, lease)
	return translate(err)
}

// Reap makes items whose lease expired ready again.
func (q *Queue) Reap(ctx context.Context) (int, error) {
	tag, err := q.pool.Exec(ctx, `UPDATE work_items SET state = 'ready', lease_owner = NULL, lease_token = NULL, lease_until = NULL
		WHERE state = 'claimed' AND lease_until < now()`)
	return int(tag.RowsAffected()), translate(err)
}

// Source loads an execution's definition for the engine.
func (q *Queue) Source(ctx context.Context, id string) (executionapp.RunSource, error) {
	return loadSource(ctx, q.pool, id)
}
