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
		                        idempotency_key, restart_of, from_node_id, started_at)
		VALUES ($1, $2, $3, $4, $5::jsonb, $6::jsonb, $7, $8, $9, $10, $11, $12)
		ON CONFLICT (session_id, idempotency_key) DO NOTHING
		RETURNING execution_id::text`,
		e.ID, e.SessionID, e.WorkflowID, string(e.Status), string(e.Definition), payload, e.Actor, e.Channel,
		key, restartOf, from, e.StartedAt).Scan(&id)
	if err == nil {
		return id, true, nil
	}
	if !errors.Is(err, pgx.ErrNoRows) {
		return "", false, translate(err)
	}
	// The key is taken: answer with the execution that holds it.
	err = s.db.QueryRow(ctx, `SELECT execution_id::text FROM executions WHERE session_id = $1 AND idempotency_key = $2`,
		e.SessionID, e.IdempotencyKey).Scan(&id)
	return id, false, translate(err)
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
		                 parked, breakpoint, received, emitted, error, started_at, ended_at)
		         VALUES ($1, $2, $17, $3, $4, $5, $6, $7, $8, $9, $10, $11::jsonb, $12, $13, $14, $15, $16)`,
			executionID, st.ID, st.Type, string(st.Phase), string(n.Status()), st.Paused, st.StepMode, st.Credits, st.Skipped,
			st.Parked, bp, st.Received, st.Emitted, st.Error, nullTime(st.StartedAt), nullTime(st.EndedAt), i)
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
	if !validUUID(id) {
		return nil, executionNotFound(id)
	}
	e, err := scanExecution(s.db.QueryRow(ctx, `SELECT `+executionColumns+` FROM executions
		WHERE execution_id = $1 AND session_id = $2 FOR UPDATE`, id, sessionID))
	if err != nil {
		return nil, notFound(err, executionNotFound(id))
	}
	return e, nil
}

// Save writes an execution's status fields.
func (s *ExecutionStore) Save(ctx context.Context, e *execution.Execution) error {
	st := e.State()
	_, err := s.db.Exec(ctx, `UPDATE executions SET status = $2, draining = $3, ended_at = $4, error = $5 WHERE execution_id = $1`,
		st.ID, string(st.Status), st.Draining, nullTime(st.EndedAt), st.Error)
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
	received, emitted, error, started_at, ended_at`

func scanNode(row pgx.Row) (string, *execution.Node, error) {
	var exID, phase string
	var st execution.NodeState
	var bp []byte
	var started, ended *time.Time
	if err := row.Scan(&exID, &st.ID, &st.Type, &phase, &st.Paused, &st.StepMode, &st.Credits, &st.Skipped, &st.Parked,
		&bp, &st.Received, &st.Emitted, &st.Error, &started, &ended); err != nil {
		return "", nil, err
	}
	st.Phase = execution.NodeStatus(phase)
	if started != nil {
		st.StartedAt = *started
	}
	if ended != nil {
		st.EndedAt = *ended
	}
	if bp != nil {
		b, err := parseBreakpoint(bp)
		if err != nil {
			return "", nil, err
		}
		st.Breakpoint = b
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

// SaveNodes writes changed nodes.
func (s *ExecutionStore) SaveNodes(ctx context.Context, executionID string, nodes []*execution.Node) error {
	b := &pgx.Batch{}
	for _, n := range nodes {
		st := n.State()
		bp, err := breakpointJSON(st.Breakpoint)
		if err != nil {
			return err
		}
		b.Queue(`UPDATE execution_nodes SET phase = $3, status = $4, paused = $5, step_mode = $6, credits = $7, skipped = $8,
		                parked = $9, breakpoint = $10::jsonb, received = $11, emitted = $12, error = $13, started_at = $14, ended_at = $15
		          WHERE execution_id = $1 AND node_id = $2`,
			executionID, st.ID, string(st.Phase), string(n.Status()), st.Paused, st.StepMode, st.Credits, st.Skipped,
			st.Parked, bp, st.Received, st.Emitted, st.Error, nullTime(st.StartedAt), nullTime(st.EndedAt))
	}
	return sendBatch(ctx, s.db, b)
}

// NextLogSeqs reserves n log sequence numbers.
func (s *ExecutionStore) NextLogSeqs(ctx context.Context, executionID string, n int) (int64, error) {
	var last int64
	err := s.db.QueryRow(ctx, `UPDATE executions SET log_seq = log_seq + $2 WHERE execution_id = $1 RETURNING log_seq`,
		executionID, n).Scan(&last)
	return last - int64(n) + 1, translate(err)
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
	return fault.Newf(executionapp.ErrExecutionNotFound, "Execution not found: %s. Use get_workflow_history (GET /api/sessions/{sessionId}/executions) to list executions.", id)
}

func validUUID(s string) bool {
	if len(s) != 36 {
		return false
	}
	for i, c := range s {
		switch i {
		case 8, 13, 18, 23:
			if c != '-' {
				return false
			}
		default:
			if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F') {
				return false
			}
		}
	}
	return true
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
