package postgres

import (
	"context"
	"encoding/json"
	"errors"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/yukta/yukta/application/executionapp"
	"github.com/yukta/yukta/domain/execution"
	"github.com/yukta/yukta/domain/fault"
)

// ExecutionStore keeps executions and their nodes.
type ExecutionStore struct{ db dbtx }

var _ executionapp.ExecutionStore = (*ExecutionStore)(nil)

// Insert stores a new execution, or finds the one holding its idempotency key.
func (s *ExecutionStore) Insert(ctx context.Context, e executionapp.NewExecution) (string, bool, error) {
	payload, err := toJSON(e.Payload)
	if err != nil {
		return "", false, err
	}
	var key *string
	if e.IdempotencyKey != "" {
		key = &e.IdempotencyKey
	}
	var restartOf, from *string
	if e.RestartOf != "" {
		restartOf = &e.RestartOf
	}
	if e.FromNodeID != "" {
		from = &e.FromNodeID
	}
	var id string
	err = s.db.QueryRow(ctx, `
		INSERT INTO executions (execution_id, session_id, workflow_id, status, definition, payload, actor, channel,
		                        idempotency_key, restart_of, from_node_id, started_at, cause_depth, caused_by)
		VALUES ($1, $2, $3, $4, $5::jsonb, $6::jsonb, $7, $8, $9, $10, $11, $12, $13, $14)
		ON CONFLICT (session_id, workflow_id, idempotency_key) DO NOTHING
		RETURNING execution_id::text`,
		e.ID, e.SessionID, e.WorkflowID, string(e.Status), string(e.Definition), payload, e.Actor, e.Channel,
		key, restartOf, from, e.StartedAt, e.Origin.Depth, e.Origin.Supervisor).Scan(&id)
	if err == nil {
		return id, true, nil
	}
	if !errors.Is(err, pgx.ErrNoRows) {
		return "", false, translate(err)
	}
	// The key is taken: answer with the execution that holds it, if it was
	// started with the same payload (jsonb compares values, not text).
	var same bool
	err = s.db.QueryRow(ctx, `SELECT execution_id::text, payload IS NOT DISTINCT FROM $4::jsonb
		FROM executions WHERE session_id = $1 AND workflow_id = $2 AND idempotency_key = $3`,
		e.SessionID, e.WorkflowID, e.IdempotencyKey, payload).Scan(&id, &same)
	if err != nil {
		return "", false, translate(err)
	}
	if !same {
		return id, false, executionapp.ErrKeyReused
	}
	return id, false, nil
}

// InsertNodes stores the node rows of a new execution.
func (s *ExecutionStore) InsertNodes(ctx context.Context, executionID string, nodes []*execution.Node) error {
	b := &pgx.Batch{}
	for i, n := range nodes {
		st := n.State()
		bp, err := breakpointJSON(st.Breakpoint)
		if err != nil {
			return err
		}
		b.Queue(`INSERT INTO execution_nodes (execution_id, node_id, position, type, phase, status, paused, step_mode, credits, skipped,
		                 parked, breakpoint, received, emitted, error, started_at, ended_at, run_us, attempt_started_at, attempt_ended_at)
		         VALUES ($1, $2, $17, $3, $4, $5, $6, $7, $8, $9, $10, $11::jsonb, $12, $13, $14, $15, $16, $18, $19, $20)`,
			executionID, st.ID, st.Type, string(st.Phase), string(n.Status()), st.Paused, st.StepMode, st.Credits, st.Skipped,
			st.Parked, bp, st.Received, st.Emitted, st.Error, nullTime(st.StartedAt), nullTime(st.EndedAt), i,
			st.RunTime.Microseconds(), nullTime(st.AttemptStartedAt), nullTime(st.AttemptEndedAt))
	}
	return sendBatch(ctx, s.db, b)
}

const executionColumns = `execution_id::text, session_id, workflow_id, status, draining, coalesce(restart_of::text, ''),
	coalesce(from_node_id, ''), started_at, ended_at, error`

func scanExecution(row pgx.Row) (*execution.Execution, error) {
	var st execution.State
	var status string
	var ended *time.Time
	if err := row.Scan(&st.ID, &st.SessionID, &st.WorkflowID, &status, &st.Draining, &st.RestartOf, &st.FromNodeID,
		&st.StartedAt, &ended, &st.Error); err != nil {
		return nil, err
	}
	st.Status = execution.Status(status)
	if ended != nil {
		st.EndedAt = *ended
	}
	return execution.Restore(st)
}

// Lock loads and locks executions in id order.
func (s *ExecutionStore) Lock(ctx context.Context, ids []string) (map[string]*execution.Execution, error) {
	rows, err := s.db.Query(ctx, `SELECT `+executionColumns+` FROM executions
		WHERE execution_id = ANY($1::uuid[]) ORDER BY execution_id FOR UPDATE`, ids)
	if err != nil {
		return nil, translate(err)
	}
	defer rows.Close()
	out := make(map[string]*execution.Execution, len(ids))
	for rows.Next() {
		e, err := scanExecution(rows)
		if err != nil {
			return nil, translate(err)
		}
		out[e.ID()] = e
	}
	return out, translate(rows.Err())
}

// LockOne loads and locks one execution of a session.
func (s *ExecutionStore) LockOne(ctx context.Context, sessionID, id string) (*execution.Execution, error) {
	if !execution.ValidID(id) {
		return nil, executionNotFound(id)
	}
	e, err := scanExecution(s.db.QueryRow(ctx, `SELECT `+executionColumns+` FROM executions
		WHERE execution_id = $1 AND session_id = $2 FOR UPDATE`, id, sessionID))
	if err = notFound(err, executionNotFound(id)); errors.Is(err, executionapp.ErrExecutionNotFound) {
		// A command to a run retention deleted says so.
		return nil, notFoundOrDeleted(ctx, s.db, sessionID, id, err)
	}
	if err != nil {
		return nil, err
	}
	return e, nil
}

// Save writes executions' status fields in one statement.
func (s *ExecutionStore) Save(ctx context.Context, es []*execution.Execution) error {
	n := len(es)
	ids, statuses, errs := make([]string, n), make([]string, n), make([]string, n)
	draining := make([]bool, n)
	ended := make([]*time.Time, n)
	for i, e := range es {
		st := e.State()
		ids[i], statuses[i], draining[i], ended[i], errs[i] = st.ID, string(st.Status), st.Draining, nullTime(st.EndedAt), st.Error
	}
	_, err := s.db.Exec(ctx, `
		UPDATE executions e SET status = u.status, draining = u.draining, ended_at = u.ended_at, error = u.error
		  FROM unnest($1::uuid[], $2::text[], $3::bool[], $4::timestamptz[], $5::text[]) AS u(id, status, draining, ended_at, error)
		 WHERE e.execution_id = u.id`, ids, statuses, draining, ended, errs)
	return translate(err)
}

// SetResult stores the execution's result.
func (s *ExecutionStore) SetResult(ctx context.Context, id string, result any) error {
	v, err := toJSON(result)
	if err != nil {
		return err
	}
	_, err = s.db.Exec(ctx, `UPDATE executions SET result = $2::jsonb WHERE execution_id = $1`, id, v)
	return translate(err)
}

const nodeColumns = `execution_id::text, node_id, type, phase, paused, step_mode, credits, skipped, parked, breakpoint,
	received, emitted, error, started_at, ended_at, run_us, attempt_started_at, attempt_ended_at`

// scanNodeState reads nodeColumns, then extra.
func scanNodeState(row pgx.Row, extra ...any) (string, execution.NodeState, error) {
	var exID, phase string
	var st execution.NodeState
	var bp []byte
	var started, ended, attemptStarted, attemptEnded *time.Time
	var runUs int64
	dest := append([]any{&exID, &st.ID, &st.Type, &phase, &st.Paused, &st.StepMode, &st.Credits, &st.Skipped, &st.Parked,
		&bp, &st.Received, &st.Emitted, &st.Error, &started, &ended, &runUs, &attemptStarted, &attemptEnded}, extra...)
	if err := row.Scan(dest...); err != nil {
		return "", st, err
	}
	st.Phase = execution.NodeStatus(phase)
	st.RunTime = time.Duration(runUs) * time.Microsecond
	for _, t := range []struct {
		from *time.Time
		to   *time.Time
	}{{started, &st.StartedAt}, {ended, &st.EndedAt}, {attemptStarted, &st.AttemptStartedAt}, {attemptEnded, &st.AttemptEndedAt}} {
		if t.from != nil {
			*t.to = *t.from
		}
	}
	if bp != nil {
		b, err := parseBreakpoint(bp)
		if err != nil {
			return "", st, err
		}
		st.Breakpoint = b
	}
	return exID, st, nil
}

func scanNode(row pgx.Row) (string, *execution.Node, error) {
	exID, st, err := scanNodeState(row)
	if err != nil {
		return "", nil, err
	}
	n, err := execution.RestoreNode(st)
	return exID, n, err
}

// Nodes loads the nodes of executions.
func (s *ExecutionStore) Nodes(ctx context.Context, ids []string) (map[string]map[string]*execution.Node, error) {
	rows, err := s.db.Query(ctx, `SELECT `+nodeColumns+` FROM execution_nodes WHERE execution_id = ANY($1::uuid[])`, ids)
	if err != nil {
		return nil, translate(err)
	}
	defer rows.Close()
	out := make(map[string]map[string]*execution.Node, len(ids))
	for rows.Next() {
		exID, n, err := scanNode(rows)
		if err != nil {
			return nil, translate(err)
		}
		if out[exID] == nil {
			out[exID] = map[string]*execution.Node{}
		}
		out[exID][n.ID()] = n
	}
	return out, translate(rows.Err())
}

// SaveNodes writes changed nodes of many executions in one statement.
func (s *ExecutionStore) SaveNodes(ctx context.Context, nodes map[string][]*execution.Node) error {
	var (
		exIDs, ids, phases, statuses, errs, bps []string
		paused, step, skipped, hasBP            []bool
		credits, parked                         []int32
		received, emitted, runUs                []int64
		started, ended, aStarted, aEnded        []*time.Time
	)
	for exID, ns := range nodes {
		for _, n := range ns {
			st := n.State()
			bp, err := breakpointJSON(st.Breakpoint)
			if err != nil {
				return err
			}
			b := ""
			if bp != nil {
				b = *bp
			}
			exIDs, ids, phases, statuses = append(exIDs, exID), append(ids, st.ID), append(phases, string(st.Phase)), append(statuses, string(n.Status()))
			paused, step, skipped = append(paused, st.Paused), append(step, st.StepMode), append(skipped, st.Skipped)
			credits, parked = append(credits, int32(st.Credits)), append(parked, int32(st.Parked))
			bps, hasBP = append(bps, b), append(hasBP, bp != nil)
			received, emitted, errs = append(received, st.Received), append(emitted, st.Emitted), append(errs, st.Error)
			started, ended = append(started, nullTime(st.StartedAt)), append(ended, nullTime(st.EndedAt))
			runUs = append(runUs, st.RunTime.Microseconds())
			aStarted, aEnded = append(aStarted, nullTime(st.AttemptStartedAt)), append(aEnded, nullTime(st.AttemptEndedAt))
		}
	}
	_, err := s.db.Exec(ctx, `
		UPDATE execution_nodes n
		   SET phase = u.phase, status = u.status, paused = u.paused, step_mode = u.step, credits = u.credits,
		       skipped = u.skipped, parked = u.parked,
		       breakpoint = CASE WHEN u.has_bp THEN u.bp::jsonb END,
		       received = u.received, emitted = u.emitted, error = u.error, started_at = u.started_at, ended_at = u.ended_at,
		       run_us = u.run_us, attempt_started_at = u.attempt_started_at, attempt_ended_at = u.attempt_ended_at
		  FROM unnest($1::uuid[], $2::text[], $3::text[], $4::text[], $5::bool[], $6::bool[], $7::int[], $8::bool[], $9::int[],
		              $10::text[], $11::bool[], $12::bigint[], $13::bigint[], $14::text[], $15::timestamptz[], $16::timestamptz[],
		              $17::bigint[], $18::timestamptz[], $19::timestamptz[])
		       AS u(ex, id, phase, status, paused, step, credits, skipped, parked, bp, has_bp, received, emitted, error, started_at, ended_at,
		            run_us, attempt_started_at, attempt_ended_at)
		 WHERE n.execution_id = u.ex AND n.node_id = u.id`,
		exIDs, ids, phases, statuses, paused, step, credits, skipped, parked, bps, hasBP, received, emitted, errs, started, ended,
		runUs, aStarted, aEnded)
	return translate(err)
}

// NextLogSeqs reserves log sequence numbers for several executions.
func (s *ExecutionStore) NextLogSeqs(ctx context.Context, counts map[string]int) (map[string]int64, error) {
	ids := make([]string, 0, len(counts))
	ns := make([]int64, 0, len(counts))
	for id, n := range counts {
		ids, ns = append(ids, id), append(ns, int64(n))
	}
	rows, err := s.db.Query(ctx, `
		UPDATE executions e SET log_seq = e.log_seq + u.n
		  FROM unnest($1::uuid[], $2::bigint[]) AS u(id, n)
		 WHERE e.execution_id = u.id
		RETURNING e.execution_id::text, e.log_seq - u.n + 1`, ids, ns)
	if err != nil {
		return nil, translate(err)
	}
	defer rows.Close()
	out := make(map[string]int64, len(counts))
	for rows.Next() {
		var id string
		var first int64
		if err := rows.Scan(&id, &first); err != nil {
			return nil, translate(err)
		}
		out[id] = first
	}
	return out, translate(rows.Err())
}

// Active lists the unfinished executions of a workflow.
func (s *ExecutionStore) Active(ctx context.Context, sessionID, workflowID string) ([]string, error) {
	rows, err := s.db.Query(ctx, `SELECT execution_id::text FROM executions
		WHERE session_id = $1 AND workflow_id = $2 AND status IN ('PENDING', 'RUNNING', 'PAUSED') ORDER BY execution_id`,
		sessionID, workflowID)
	if err != nil {
		return nil, translate(err)
	}
	ids, err := pgx.CollectRows(rows, pgx.RowTo[string])
	return ids, translate(err)
}

// Source returns an execution's definition and trigger payload.
func (s *ExecutionStore) Source(ctx context.Context, id string) (executionapp.RunSource, error) {
	return loadSource(ctx, s.db, id)
}

func loadSource(ctx context.Context, db dbtx, id string) (executionapp.RunSource, error) {
	var src executionapp.RunSource
	var payload []byte
	err := db.QueryRow(ctx, `SELECT execution_id::text, session_id, workflow_id, definition, payload, started_at
		FROM executions WHERE execution_id = $1`, id).
		Scan(&src.ExecutionID, &src.SessionID, &src.WorkflowID, &src.Definition, &payload, &src.StartedAt)
	if err != nil {
		return src, notFound(err, executionNotFound(id))
	}
	src.Payload, err = fromJSON(payload)
	return src, err
}

func executionNotFound(id string) error {
	return fault.Newf(executionapp.ErrExecutionNotFound, "Execution not found: %s.", id)
}

type breakpointDoc struct {
	Field     string `json:"field,omitempty"`
	Equals    any    `json:"equals,omitempty"`
	Condition string `json:"condition,omitempty"`
}

func breakpointJSON(bp *execution.Breakpoint) (*string, error) {
	if bp == nil {
		return nil, nil
	}
	b, err := json.Marshal(breakpointDoc{Field: bp.Field, Equals: bp.Equals, Condition: bp.Condition})
	s := string(b)
	return &s, err
}

func parseBreakpoint(b []byte) (*execution.Breakpoint, error) {
	v, err := fromJSON(b)
	if err != nil {
		return nil, err
	}
	m, _ := v.(map[string]any)
	bp := &execution.Breakpoint{Equals: m["equals"]}
	bp.Field, _ = m["field"].(string)
	bp.Condition, _ = m["condition"].(string)
	return bp, nil
}

func nullTime(t time.Time) *time.Time {
	if t.IsZero() {
		return nil
	}
	return &t
}
