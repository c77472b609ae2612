package postgres

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/yukta/yukta/application/executionapp"
	"github.com/yukta/yukta/application/sessionapp"
	"github.com/yukta/yukta/domain/execution"
	"github.com/yukta/yukta/domain/fault"
	"github.com/yukta/yukta/domain/retention"
	"github.com/yukta/yukta/domain/session"
)

// SessionStore keeps sessions and their workflows.
type SessionStore struct{ db dbtx }

// NewSessionStore returns a store that runs each call on pool.
func NewSessionStore(pool *pgxpool.Pool) *SessionStore { return &SessionStore{db: pool} }

var _ sessionapp.SessionStore = (*SessionStore)(nil)

// Get loads a session with its workflows in document order.
func (s *SessionStore) Get(ctx context.Context, id string) (session.Session, error) {
	return s.get(ctx, id, "")
}

// GetForUpdate is Get holding the session row lock until the transaction ends.
func (s *SessionStore) GetForUpdate(ctx context.Context, id string) (session.Session, error) {
	return s.get(ctx, id, " FOR UPDATE")
}

func (s *SessionStore) get(ctx context.Context, id, lock string) (session.Session, error) {
	var name, description, initiator, projectPath string
	var tags []string
	var maxRunning int
	var retentionDays *int
	var retentionJournals *string
	err := s.db.QueryRow(ctx, `
		SELECT name, description, initiator, tags, project_path, max_running, retention_days, retention_journals
		  FROM sessions WHERE session_id = $1`+lock, id).
		Scan(&name, &description, &initiator, &tags, &projectPath, &maxRunning, &retentionDays, &retentionJournals)
	if err != nil {
		return session.Session{}, notFound(err, sessionNotFound(id))
	}
	rows, err := s.db.Query(ctx, `
		SELECT workflow_id, description, definition, max_running
		  FROM workflows WHERE session_id = $1 ORDER BY position`, id)
	if err != nil {
		return session.Session{}, translate(err)
	}
	var wfs []session.Workflow
	for rows.Next() {
		var wid, wdesc string
		var def []byte
		var wmax int
		if err := rows.Scan(&wid, &wdesc, &def, &wmax); err != nil {
			return session.Session{}, translate(err)
		}
		w, err := session.RestoreWorkflow(wid, wdesc, def)
		if err != nil {
			return session.Session{}, err
		}
		wfs = append(wfs, w.WithLimits(session.Limits{MaxRunning: wmax}))
	}
	if err := rows.Err(); err != nil {
		return session.Session{}, translate(err)
	}
	keep, err := retention.NewOverride(retentionDays, deref(retentionJournals))
	if err != nil {
		return session.Session{}, fmt.Errorf("postgres: session %s: stored retention: %w", id, err)
	}
	return session.RestoreSession(id, name, description, initiator, tags, projectPath, wfs).
		WithLimits(session.Limits{MaxRunning: maxRunning}).WithRetention(keep), nil
}

// Put upserts the session row, upserts each workflow and deletes the ones the
// new document dropped. Callers run it inside a transaction.
func (s *SessionStore) Put(ctx context.Context, ss session.Session, ch sessionapp.Change) (bool, []string, error) {
	tags := ss.Tags()
	if tags == nil {
		tags = []string{}
	}
	var days *int
	if d, set := ss.Retention().Days(); set {
		days = &d
	}
	var journals *string
	if j := ss.Retention().Journals(); j != "" {
		js := string(j)
		journals = &js
	}
	var created bool
	// xmax = 0 only on a freshly inserted row: it tells created from replaced
	// in the same statement, even when two applies race.
	err := s.db.QueryRow(ctx, `
		INSERT INTO sessions (session_id, name, description, initiator, tags, project_path, created_at, updated_at, updated_by, updated_via,
		                      max_running, retention_days, retention_journals)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $7, $8, $9, $10, $11, $12)
		ON CONFLICT (session_id) DO UPDATE SET
		    name = EXCLUDED.name, description = EXCLUDED.description, initiator = EXCLUDED.initiator,
		    tags = EXCLUDED.tags, project_path = EXCLUDED.project_path, max_running = EXCLUDED.max_running,
		    retention_days = EXCLUDED.retention_days, retention_journals = EXCLUDED.retention_journals,
		    updated_at = EXCLUDED.updated_at, updated_by = EXCLUDED.updated_by, updated_via = EXCLUDED.updated_via,
		    version = sessions.version + 1
		RETURNING (xmax = 0)`,
		ss.ID(), ss.Name(), ss.Description(), ss.Initiator(), tags, ss.ProjectPath(), ch.At, ch.Actor, ch.Channel,
		ss.Limits().MaxRunning, days, journals).Scan(&created)
	if err != nil {
		return false, nil, translate(err)
	}
	ids := ss.WorkflowIDs()
	var removed []string
	rows, err := s.db.Query(ctx, `
		DELETE FROM workflows WHERE session_id = $1 AND NOT (workflow_id = ANY($2))
		RETURNING workflow_id`, ss.ID(), ids)
	if err != nil {
		return false, nil, translate(err)
	}
	removed, err = pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return false, nil, translate(err)
	}
	batch := &pgx.Batch{}
	for i, w := range ss.Workflows() {
		def, err := session.MarshalDefinition(w)
		if err != nil {
			return false, nil, fmt.Errorf("encode workflow %q: %w", w.ID(), err)
		}
		batch.Queue(`
			INSERT INTO workflows (session_id, workflow_id, position, description, definition, updated_at, max_running)
			VALUES ($1, $2, $3, $4, $5, $6, $7)
			ON CONFLICT (session_id, workflow_id) DO UPDATE SET
			    position = EXCLUDED.position, description = EXCLUDED.description,
			    definition = EXCLUDED.definition, updated_at = EXCLUDED.updated_at, max_running = EXCLUDED.max_running`,
			ss.ID(), w.ID(), i, w.Description(), def, ch.At, w.Limits().MaxRunning)
	}
	if err := sendBatch(ctx, s.db, batch); err != nil {
		return false, nil, err
	}
	return created, removed, nil
}

// Delete removes a session; its workflows and finished executions go with it
// (ON DELETE CASCADE). A session with unfinished executions is refused: their
// work would vanish under the engine.
func (s *SessionStore) Delete(ctx context.Context, id string) error {
	var active int
	if err := s.db.QueryRow(ctx, `SELECT count(*) FROM executions
		WHERE session_id = $1 AND status IN ('PENDING', 'RUNNING', 'PAUSED')`, id).Scan(&active); err != nil {
		return translate(err)
	}
	if active > 0 {
		return fault.Newf(fault.ErrConflict, "session %q has %d unfinished execution(s); stop them first (POST /api/sessions/%s/workflows/{workflowId}/stop), then delete the session", id, active, id)
	}
	tag, err := s.db.Exec(ctx, `DELETE FROM sessions WHERE session_id = $1`, id)
	if err != nil {
		return translate(err)
	}
	if tag.RowsAffected() == 0 {
		return sessionNotFound(id)
	}
	return nil
}

// List reads a page of sessions and their workflows' summaries in one
// query: a row per workflow of each session of the page.
func (s *SessionStore) List(ctx context.Context, q sessionapp.ListQuery) ([]sessionapp.Summary, error) {
	return s.summaries(ctx, `
		SELECT session_id, name, description, updated_at, updated_by, updated_via FROM sessions
		 WHERE session_id > $1 AND ($3::text[] IS NULL OR session_id = ANY ($3))
		   AND ($4 = '' OR strpos(lower(session_id), lower($4)) > 0 OR strpos(lower(name), lower($4)) > 0
		        OR strpos(lower(description), lower($4)) > 0)
		 ORDER BY session_id
		 LIMIT $2`, q.After, q.Limit, q.Only, q.Text)
}

// WorkflowSummaries reads one session's workflows with their pauses and
// newest runs, as List does for a page.
func (s *SessionStore) WorkflowSummaries(ctx context.Context, sessionID string) ([]sessionapp.WorkflowSummary, error) {
	out, err := s.summaries(ctx, `
		SELECT session_id, name, description, updated_at, updated_by, updated_via FROM sessions WHERE session_id = $1`, sessionID)
	if err != nil {
		return nil, err
	}
	if len(out) == 0 {
		return nil, sessionNotFound(sessionID)
	}
	return out[0].Workflows, nil
}

// summaries joins the sessions that page selects to their workflows, each
// workflow's pause and its newest run (execution ids are UUIDv7: the
// greatest is the newest), ordered by session id and document order.
func (s *SessionStore) summaries(ctx context.Context, page string, args ...any) ([]sessionapp.Summary, error) {
	rows, err := s.db.Query(ctx, `
		WITH page AS (`+page+`)
		SELECT p.session_id, p.name, p.description, p.updated_at, p.updated_by, p.updated_via,
		       w.workflow_id, coalesce(jsonb_array_length(w.definition -> 'nodes'), 0),
		       wp.actor, wp.channel, wp.reason, wp.paused_at,
		       le.execution_id::text, le.status, le.started_at, le.ended_at
		  FROM page p
		  LEFT JOIN workflows w ON w.session_id = p.session_id
		  LEFT JOIN workflow_pauses wp ON wp.session_id = w.session_id AND wp.workflow_id = w.workflow_id
		  LEFT JOIN LATERAL (
		        SELECT e.execution_id, e.status, e.started_at, e.ended_at FROM executions e
		         WHERE e.session_id = w.session_id AND e.workflow_id = w.workflow_id
		         ORDER BY e.execution_id DESC LIMIT 1) le ON true
		 ORDER BY p.session_id, w.position`, args...)
	if err != nil {
		return nil, translate(err)
	}
	defer rows.Close()
	var out []sessionapp.Summary
	for rows.Next() {
		var sm sessionapp.Summary
		var wid, pauseActor, pauseChannel, pauseReason, execID, status *string
		var nodes int
		var pausedAt, started, ended *time.Time
		if err := rows.Scan(&sm.ID, &sm.Name, &sm.Description, &sm.UpdatedAt, &sm.UpdatedBy, &sm.UpdatedVia,
			&wid, &nodes, &pauseActor, &pauseChannel, &pauseReason, &pausedAt, &execID, &status, &started, &ended); err != nil {
			return nil, translate(err)
		}
		if n := len(out); n == 0 || out[n-1].ID != sm.ID {
			out = append(out, sm)
		}
		if wid == nil {
			continue
		}
		ws := sessionapp.WorkflowSummary{ID: *wid, NodeCount: nodes}
		if pausedAt != nil {
			ws.Pause = &execution.WorkflowPause{SessionID: sm.ID, WorkflowID: *wid, Actor: *pauseActor, Channel: *pauseChannel,
				Reason: *pauseReason, Since: *pausedAt}
		}
		if execID != nil {
			ws.Last = &sessionapp.LastExecution{ID: *execID, Status: execution.Status(*status), StartedAt: *started}
			if ended != nil {
				ws.Last.EndedAt = *ended
			}
		}
		last := &out[len(out)-1]
		last.Workflows = append(last.Workflows, ws)
		last.WorkflowCount = len(last.Workflows)
	}
	return out, translate(rows.Err())
}

// Workflow loads one workflow of a session.
func (s *SessionStore) Workflow(ctx context.Context, sessionID, workflowID string) (session.Workflow, error) {
	var desc string
	var def []byte
	var maxRunning int
	err := s.db.QueryRow(ctx, `
		SELECT description, definition, max_running FROM workflows
		 WHERE session_id = $1 AND workflow_id = $2`, sessionID, workflowID).Scan(&desc, &def, &maxRunning)
	if err != nil {
		if errors.Is(err, pgx.ErrNoRows) {
			// Say which of the two is missing: the next call differs.
			var exists bool
			if qerr := s.db.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM sessions WHERE session_id = $1)`, sessionID).Scan(&exists); qerr != nil {
				return session.Workflow{}, translate(qerr)
			}
			if !exists {
				return session.Workflow{}, sessionNotFound(sessionID)
			}
			return session.Workflow{}, fault.Newf(session.ErrWorkflowNotFound, "workflow %q does not exist in session %q; call GET /api/sessions/%s (MCP: get_session_details) to see its workflows",
				workflowID, sessionID, sessionID)
		}
		return session.Workflow{}, translate(err)
	}
	w, err := session.RestoreWorkflow(workflowID, desc, def)
	return w.WithLimits(session.Limits{MaxRunning: maxRunning}), err
}

func sessionNotFound(id string) error { return session.NotFound(id) }

// sendBatch runs every queued statement and reports the first failure.
func sendBatch(ctx context.Context, db dbtx, b *pgx.Batch) error {
	if b.Len() == 0 {
		return nil
	}
	sender, ok := db.(interface {
		SendBatch(context.Context, *pgx.Batch) pgx.BatchResults
	})
	if !ok {
		return fmt.Errorf("postgres: %T cannot send batches", db)
	}
	return translate(sender.SendBatch(ctx, b).Close())
}

// Schedules lists the SCHEDULE nodes of every stored workflow.
func (s *SessionStore) Schedules(ctx context.Context) ([]executionapp.Schedule, error) {
	rows, err := s.db.Query(ctx, `
		SELECT w.session_id, w.workflow_id, n->>'nodeId', coalesce(n->'config'->>'cron', ''), coalesce(n->'config'->>'timezone', 'UTC')
		  FROM workflows w, jsonb_array_elements(w.definition->'nodes') n
		 WHERE n->>'type' = 'SCHEDULE'
		 ORDER BY 1, 2, 3`)
	if err != nil {
		return nil, translate(err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (executionapp.Schedule, error) {
		var sc executionapp.Schedule
		return sc, r.Scan(&sc.SessionID, &sc.WorkflowID, &sc.NodeID, &sc.Cron, &sc.Timezone)
	})
	return out, translate(err)
}

// SessionAudit writes session changes to the event outbox.
type SessionAudit struct{ db dbtx }

// SessionChanged appends one session event in the caller's transaction.
func (a *SessionAudit) SessionChanged(ctx context.Context, typ, sessionID string, ch sessionapp.Change, data map[string]any) error {
	d, err := toJSON(data)
	if err != nil {
		return err
	}
	if data == nil {
		d = "{}"
	}
	_, err = a.db.Exec(ctx, `
		INSERT INTO events (type, at, session_id, actor, channel, data) VALUES ($1, $2, $3, $4, $5, $6::jsonb)`,
		typ, ch.At, sessionID, ch.Actor, ch.Channel, d)
	return translate(err)
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}
