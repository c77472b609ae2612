package postgres

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/yukta/yukta/application/executionapp"
	"github.com/yukta/yukta/application/sessionapp"
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

// List returns summaries after the given id, in id order (keyset paging, so
// a page costs the same however deep it is).
func (s *SessionStore) List(ctx context.Context, after string, limit int, only []string) ([]sessionapp.Summary, error) {
	rows, err := s.db.Query(ctx, `
		SELECT s.session_id, s.name, s.description, s.updated_at, s.updated_by, s.updated_via,
		       (SELECT count(*) FROM workflows w WHERE w.session_id = s.session_id)
		  FROM sessions s
		 WHERE s.session_id > $1 AND ($3::text[] IS NULL OR s.session_id = ANY ($3))
		 ORDER BY s.session_id
		 LIMIT $2`, after, limit, only)
	if err != nil {
		return nil, translate(err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (sessionapp.Summary, error) {
		var sm sessionapp.Summary
		err := r.Scan(&sm.ID, &sm.Name, &sm.Description, &sm.UpdatedAt, &sm.UpdatedBy, &sm.UpdatedVia, &sm.WorkflowCount)
		return sm, err
	})
	return out, translate(err)
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
