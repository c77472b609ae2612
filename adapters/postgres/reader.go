package postgres

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/yukta/yukta/application/executionapp"
	"github.com/yukta/yukta/domain/execution"
)

// Reader answers read-side queries about executions on the pool.
type Reader struct{ pool *pgxpool.Pool }

// NewReader returns the reader.
func NewReader(pool *pgxpool.Pool) *Reader { return &Reader{pool: pool} }

var _ executionapp.Reader = (*Reader)(nil)

// Execution reads one execution of a session with its nodes.
func (r *Reader) Execution(ctx context.Context, sessionID, id string) (executionapp.ExecutionView, error) {
	var v executionapp.ExecutionView
	if !execution.ValidID(id) {
		return v, executionNotFound(id)
	}
	var status string
	var ended *time.Time
	var result, edges []byte
	// The execution row and its nodes come from one snapshot, so a status
	// never shows a node's counters from one commit and the result from
	// another. The batch is one round trip.
	batch := &pgx.Batch{}
	batch.Queue(`BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY`)
	batch.Queue(`
		SELECT execution_id::text, session_id, workflow_id, status, draining, started_at, ended_at, result, error,
		       coalesce(restart_of::text, ''), coalesce(from_node_id, ''), actor, channel,
		       coalesce(definition->'edges', '[]'::jsonb)
		  FROM executions WHERE execution_id = $1 AND session_id = $2`, id, sessionID)
	batch.Queue(`SELECT `+nodeColumns+`, status FROM execution_nodes WHERE execution_id = $1 ORDER BY position`, id)
	// What each node holds and has not finished: a message not taken yet,
	// a DELAY's timer, a retry, an input, one behind a closed gate.
	batch.Queue(`
		SELECT node_id, count(*), min(available_at) FILTER (WHERE state = 'ready' AND available_at > now())
		  FROM work_items WHERE execution_id = $1 AND state IN ('ready', 'held', 'parked')
		 GROUP BY node_id`, id)
	// How many times each node's plugin was started: the claims of its
	// messages (done rows stay until retention prunes a finished run's).
	batch.Queue(`
		SELECT w.node_id, sum(w.attempt)::bigint
		  FROM work_items w WHERE w.execution_id = $1
		   AND NOT (SELECT items_pruned FROM executions WHERE execution_id = $1)
		 GROUP BY w.node_id`, id)
	batch.Queue(`SELECT items_pruned FROM executions WHERE execution_id = $1`, id)
	batch.Queue(`COMMIT`)
	br := r.pool.SendBatch(ctx, batch)
	defer br.Close()
	if _, err := br.Exec(); err != nil {
		return v, translate(err)
	}
	err := br.QueryRow().Scan(&v.ID, &v.SessionID, &v.WorkflowID, &status, &v.Draining, &v.StartedAt, &ended, &result, &v.Error,
		&v.RestartOf, &v.FromNodeID, &v.Actor, &v.Channel, &edges)
	if err != nil {
		if err = notFound(err, executionNotFound(id)); errors.Is(err, executionapp.ErrExecutionNotFound) {
			br.Close()
			return v, notFoundOrDeleted(ctx, r.pool, sessionID, id, err)
		}
		return v, err
	}
	v.Status = execution.Status(status)
	if ended != nil {
		v.EndedAt = *ended
	}
	if v.Edges, err = definitionEdges(edges); err != nil {
		return v, err
	}
	if result != nil {
		v.HasResult = true
		if v.Result, err = fromJSON(result); err != nil {
			return v, err
		}
	}
	rows, err := br.Query()
	if err != nil {
		return v, translate(err)
	}
	defer rows.Close()
	for rows.Next() {
		var shown string
		_, st, err := scanNodeState(rows, &shown)
		if err != nil {
			return v, translate(err)
		}
		v.Nodes = append(v.Nodes, executionapp.NodeView{NodeID: st.ID, Type: st.Type, Status: execution.NodeStatus(shown),
			Received: st.Received, Emitted: st.Emitted, Paused: st.Paused, StepMode: st.StepMode, Credits: st.Credits,
			Skipped: st.Skipped, Breakpoint: st.Breakpoint, Error: st.Error, StartedAt: st.StartedAt, EndedAt: st.EndedAt,
			RunTime: st.RunTime})
	}
	if err := rows.Err(); err != nil {
		return v, translate(err)
	}
	rows.Close()
	held, err := br.Query()
	if err != nil {
		return v, translate(err)
	}
	defer held.Close()
	index := make(map[string]int, len(v.Nodes))
	for i, n := range v.Nodes {
		index[n.NodeID] = i
	}
	for held.Next() {
		var node string
		var n int64
		var due *time.Time
		if err := held.Scan(&node, &n, &due); err != nil {
			return v, translate(err)
		}
		if i, ok := index[node]; ok {
			v.Nodes[i].Waiting = n
			if due != nil {
				v.Nodes[i].DueAt = *due
			}
		}
	}
	if err := held.Err(); err != nil {
		return v, translate(err)
	}
	held.Close()
	attempts, err := br.Query()
	if err != nil {
		return v, translate(err)
	}
	defer attempts.Close()
	counts := map[string]int64{}
	for attempts.Next() {
		var node string
		var n int64
		if err := attempts.Scan(&node, &n); err != nil {
			return v, translate(err)
		}
		counts[node] = n
	}
	if err := attempts.Err(); err != nil {
		return v, translate(err)
	}
	attempts.Close()
	var pruned bool
	if err := br.QueryRow().Scan(&pruned); err != nil {
		return v, translate(err)
	}
	for i := range v.Nodes {
		v.Nodes[i].Attempts, v.Nodes[i].AttemptsKnown = counts[v.Nodes[i].NodeID], !pruned
	}
	return v, nil
}

// History lists a session's executions, newest first (ids are UUIDv7, so id
// order is start order).
func (r *Reader) History(ctx context.Context, q executionapp.HistoryQuery) ([]executionapp.ExecutionSummary, error) {
	rows, err := r.pool.Query(ctx, `
		SELECT execution_id::text, workflow_id, status, started_at, ended_at, coalesce(restart_of::text, ''), actor, channel
		  FROM executions
		 WHERE session_id = $1 AND ($2 = '' OR workflow_id = $2) AND ($3 = '' OR status = $3)
		   AND ($4 = '' OR execution_id < nullif($4, '')::uuid)
		 ORDER BY execution_id DESC
		 LIMIT $5`, q.SessionID, q.WorkflowID, string(q.Status), q.After, q.Limit)
	if err != nil {
		return nil, translate(err)
	}
	out, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (executionapp.ExecutionSummary, error) {
		var s executionapp.ExecutionSummary
		var status string
		var ended *time.Time
		err := row.Scan(&s.ID, &s.WorkflowID, &status, &s.StartedAt, &ended, &s.RestartOf, &s.Actor, &s.Channel)
		s.Status = execution.Status(status)
		if ended != nil {
			s.EndedAt = *ended
		}
		return s, err
	})
	return out, translate(err)
}

// LogsBefore walks the log backwards from before (0 = the end).
func (r *Reader) LogsBefore(ctx context.Context, executionID string, before int64, limit int) ([]executionapp.LogEntry, int64, error) {
	var total int64
	if err := r.pool.QueryRow(ctx, `SELECT log_seq FROM executions WHERE execution_id = $1`, executionID).Scan(&total); err != nil {
		return nil, 0, notFound(err, executionNotFound(executionID))
	}
	rows, err := r.pool.Query(ctx, `
		SELECT seq, at, level, node_id, message FROM execution_logs
		 WHERE execution_id = $1 AND ($2 = 0 OR seq < $2)
		 ORDER BY seq DESC LIMIT $3`, executionID, before, limit)
	if err != nil {
		return nil, 0, translate(err)
	}
	out, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (executionapp.LogEntry, error) {
		l := executionapp.LogEntry{ExecutionID: executionID}
		return l, row.Scan(&l.Seq, &l.At, &l.Level, &l.NodeID, &l.Message)
	})
	return out, total, translate(err)
}

// Inputs lists inputs, newest last. The session list filters in the query,
// before the cap, so other sessions' inputs never take a limited caller's
// places.
func (r *Reader) Inputs(ctx context.Context, q executionapp.InputQuery) ([]executionapp.Input, error) {
	limit := q.Limit
	if limit <= 0 {
		limit = executionapp.MaxInputPage
	}
	if q.AfterID != "" && !execution.ValidID(q.AfterID) {
		return nil, nil // no input has this id, so none comes after it
	}
	rows, err := r.pool.Query(ctx, `SELECT `+inputColumns+` FROM inputs
		 WHERE ($1 = '' OR session_id = $1) AND ($2 = '' OR execution_id = nullif($2, '')::uuid)
		   AND (NOT $3 OR status = 'open')
		   AND ($4::text[] IS NULL OR session_id = ANY ($4))
		   AND ($6 = '' OR (created_at, input_id) > ($5::timestamptz, nullif($6, '')::uuid))
		 ORDER BY created_at, input_id LIMIT $7`, q.SessionID, q.ExecutionID, q.OnlyOpen, q.Sessions, q.AfterAt, q.AfterID, limit)
	if err != nil {
		return nil, translate(err)
	}
	defer rows.Close()
	var out []executionapp.Input
	for rows.Next() {
		in, err := scanInput(rows)
		if err != nil {
			return nil, translate(err)
		}
		out = append(out, in)
	}
	return out, translate(rows.Err())
}

// eventsFilter is the condition of an outbox read after a position, but
// for the session; pos is the position's xid.
const eventsFilter = `e.xid < pg_snapshot_xmin(pg_current_snapshot())
		   AND ($2 = '' OR e.execution_id = nullif($2, '')::uuid)
		   AND (e.xid, e.seq) > (pos.xid, $3)
		   AND ($5::text[] IS NULL OR e.session_id = ANY ($5))`

// eventsPos is the position of a read: ($6, $3) itself when $6 (AfterXID)
// is given, else the xid of the event with seq $3, looked up among $5's
// sessions.
const eventsPos = `WITH pos AS (SELECT CASE WHEN $6::text <> '0' THEN $6::text::xid8
		                        ELSE coalesce((SELECT xid FROM events WHERE seq = $3 AND ($5::text[] IS NULL OR session_id = ANY ($5))),
		                                      '0'::xid8) END AS xid)`

const eventsColumns = `e.xid::text AS xid_text, e.seq, e.type, e.at, e.session_id, e.workflow_id, coalesce(e.execution_id::text, '') AS execution_id, e.node_id, e.actor, e.channel, e.data`

var (
	eventsSQL = eventsPos + `
		SELECT ` + eventsColumns + `
		  FROM events e, pos
		 WHERE ($1 = '' OR e.session_id = $1) AND ` + eventsFilter + `
		 ORDER BY e.xid, e.seq
		 LIMIT $4`
	// eventsWithSessionlessSQL reads one session's events and those of no
	// session (delegations, supervisor changes): two ordered index reads
	// merged, so a reader of one session does not scan every session's
	// events.
	eventsWithSessionlessSQL = eventsPos + `
		SELECT xid_text, seq, type, at, session_id, workflow_id, execution_id, node_id, actor, channel, data FROM (
		  (SELECT e.xid, ` + eventsColumns + ` FROM events e, pos
		    WHERE e.session_id = $1 AND ` + eventsFilter + ` ORDER BY e.xid, e.seq LIMIT $4)
		  UNION ALL
		  (SELECT e.xid, ` + eventsColumns + ` FROM events e, pos
		    WHERE e.session_id = '' AND ` + eventsFilter + ` ORDER BY e.xid, e.seq LIMIT $4)
		) u ORDER BY xid, seq LIMIT $4`
)

// Events returns committed events after a position in commit order. Only
// transactions older than every running one are read, so an event can never
// appear behind a position a reader has passed. The position is looked up
// among the events of q.Sessions only, so another session's seq reads from
// the start exactly as a seq of no event does.
func (r *Reader) Events(ctx context.Context, q executionapp.EventQuery) ([]executionapp.StoredEvent, error) {
	sql := eventsSQL
	if q.AlsoSessionless && q.SessionID != "" {
		sql = eventsWithSessionlessSQL
	}
	rows, err := r.pool.Query(ctx, sql, q.SessionID, q.ExecutionID, q.AfterSeq, q.Limit, q.Sessions, strconv.FormatUint(q.AfterXID, 10))
	if err != nil {
		return nil, translate(err)
	}
	defer rows.Close()
	var out []executionapp.StoredEvent
	for rows.Next() {
		var e executionapp.StoredEvent
		var xid string
		var data []byte
		if err := rows.Scan(&xid, &e.Seq, &e.Type, &e.At, &e.SessionID, &e.WorkflowID, &e.ExecutionID, &e.NodeID, &e.Actor, &e.Channel, &data); err != nil {
			return nil, translate(err)
		}
		if e.XID, err = strconv.ParseUint(xid, 10, 64); err != nil {
			return nil, err
		}
		v, err := fromJSON(data)
		if err != nil {
			return nil, err
		}
		e.Data, _ = v.(map[string]any)
		out = append(out, e)
	}
	return out, translate(rows.Err())
}

// EventExists reports whether an event with this seq exists in one of
// sessions (in any session when sessions is nil).
func (r *Reader) EventExists(ctx context.Context, seq int64, sessions []string) (bool, error) {
	var ok bool
	err := r.pool.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM events WHERE seq = $1 AND ($2::text[] IS NULL OR session_id = ANY ($2)))`,
		seq, sessions).Scan(&ok)
	return ok, translate(err)
}

var _ executionapp.SpendReader = (*Reader)(nil)

// TaskSpend reads the usage and cost of each TaskCompleted event of the
// execution, in commit order (events_execution's order). Only those two
// members of each event's data cross the wire. The events stay as long as
// their execution: retention deletes them with the run.
func (r *Reader) TaskSpend(ctx context.Context, executionID string) ([]execution.SpendReport, error) {
	if !execution.ValidID(executionID) {
		return nil, nil
	}
	rows, err := r.pool.Query(ctx, `
		SELECT node_id, data->'usage', data->'cost'
		  FROM events
		 WHERE execution_id = $1 AND type = $2 AND node_id <> ''
		 ORDER BY xid, seq`, executionID, execution.EventTaskCompleted)
	if err != nil {
		return nil, translate(err)
	}
	defer rows.Close()
	var out []execution.SpendReport
	for rows.Next() {
		var node string
		var usage, cost []byte
		if err := rows.Scan(&node, &usage, &cost); err != nil {
			return nil, translate(err)
		}
		data := map[string]any{}
		for name, raw := range map[string][]byte{"usage": usage, "cost": cost} {
			v, err := fromJSON(raw)
			if err != nil {
				return nil, err
			}
			if v != nil {
				data[name] = v
			}
		}
		out = append(out, execution.SpendReportFromEventData(node, data))
	}
	return out, translate(rows.Err())
}

// definitionEdges decodes the edges of a stored definition (the form
// session.MarshalDefinition writes: source, target, sourcePort).
func definitionEdges(raw []byte) ([]executionapp.EdgeView, error) {
	var doc []struct {
		Source     string `json:"source"`
		Target     string `json:"target"`
		SourcePort string `json:"sourcePort"`
	}
	if err := json.Unmarshal(raw, &doc); err != nil {
		return nil, fmt.Errorf("postgres: an execution's stored edges: %w", err)
	}
	out := make([]executionapp.EdgeView, len(doc))
	for i, e := range doc {
		port := e.SourcePort
		if port == "" {
			port = "default"
		}
		out[i] = executionapp.EdgeView{Source: e.Source, Target: e.Target, SourcePort: port}
	}
	return out, nil
}
