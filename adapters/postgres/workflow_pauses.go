package postgres

import (
	"context"
	"errors"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/yukta/yukta/application/executionapp"
	"github.com/yukta/yukta/domain/execution"
)

// WorkflowPauseStore keeps the workflows' pauses (migration 00020) inside
// a transaction.
type WorkflowPauseStore struct{ db dbtx }

var _ executionapp.WorkflowPauseStore = (*WorkflowPauseStore)(nil)

// NewWorkflowPauseReader returns the store on pool, for reads outside a
// transaction (sessionapp.PauseReader): no lock is taken.
func NewWorkflowPauseReader(pool *pgxpool.Pool) *WorkflowPauseStore {
	return &WorkflowPauseStore{db: pool}
}

// WorkflowPause reads a workflow's pause without taking its start lock.
func (s *WorkflowPauseStore) WorkflowPause(ctx context.Context, sessionID, workflowID string) (execution.WorkflowPause, bool, error) {
	return s.read(ctx, sessionID, workflowID)
}

// pauseLockClass is the first half of the advisory locks on workflow
// starts ("YkWP"); the second is the hash of session and workflow. Two
// workflows whose hashes collide share a lock: they only serialize more.
const pauseLockClass = 0x59_6B_57_50

// GuardStart takes the workflow's start lock shared and reads its pause.
func (s *WorkflowPauseStore) GuardStart(ctx context.Context, sessionID, workflowID string) (execution.WorkflowPause, bool, error) {
	if _, err := s.db.Exec(ctx, `SELECT pg_advisory_xact_lock_shared($1, hashtext($2 || '/' || $3))`, pauseLockClass, sessionID, workflowID); err != nil {
		return execution.WorkflowPause{}, false, translate(err)
	}
	return s.read(ctx, sessionID, workflowID)
}

// Lock takes the workflow's start lock exclusive and reads its pause.
func (s *WorkflowPauseStore) Lock(ctx context.Context, sessionID, workflowID string) (execution.WorkflowPause, bool, error) {
	if _, err := s.db.Exec(ctx, `SELECT pg_advisory_xact_lock($1, hashtext($2 || '/' || $3))`, pauseLockClass, sessionID, workflowID); err != nil {
		return execution.WorkflowPause{}, false, translate(err)
	}
	return s.read(ctx, sessionID, workflowID)
}

func (s *WorkflowPauseStore) read(ctx context.Context, sessionID, workflowID string) (execution.WorkflowPause, bool, error) {
	p := execution.WorkflowPause{SessionID: sessionID, WorkflowID: workflowID}
	err := s.db.QueryRow(ctx, `SELECT actor, channel, reason, paused_at, paused_runs::text[] FROM workflow_pauses
		WHERE session_id = $1 AND workflow_id = $2`, sessionID, workflowID).Scan(&p.Actor, &p.Channel, &p.Reason, &p.Since, &p.Paused)
	if errors.Is(err, pgx.ErrNoRows) {
		return execution.WorkflowPause{}, false, nil
	}
	if err != nil {
		return execution.WorkflowPause{}, false, translate(err)
	}
	return p, true, nil
}

// Put stores a pause, replacing the workflow's earlier one.
func (s *WorkflowPauseStore) Put(ctx context.Context, p execution.WorkflowPause) error {
	runs := p.Paused
	if runs == nil {
		runs = []string{}
	}
	_, err := s.db.Exec(ctx, `INSERT INTO workflow_pauses (session_id, workflow_id, actor, channel, reason, paused_at, paused_runs)
		VALUES ($1, $2, $3, $4, $5, $6, $7::uuid[])
		ON CONFLICT (session_id, workflow_id) DO UPDATE SET actor = EXCLUDED.actor, channel = EXCLUDED.channel,
			reason = EXCLUDED.reason, paused_at = EXCLUDED.paused_at, paused_runs = EXCLUDED.paused_runs`,
		p.SessionID, p.WorkflowID, p.Actor, p.Channel, p.Reason, p.Since, runs)
	return translate(err)
}

// Delete lifts a workflow's pause.
func (s *WorkflowPauseStore) Delete(ctx context.Context, sessionID, workflowID string) error {
	_, err := s.db.Exec(ctx, `DELETE FROM workflow_pauses WHERE session_id = $1 AND workflow_id = $2`, sessionID, workflowID)
	return translate(err)
}
