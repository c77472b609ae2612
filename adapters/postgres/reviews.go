package postgres

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/yukta/yukta/application/executionapp"
	"github.com/yukta/yukta/application/supervisorapp"
	"github.com/yukta/yukta/domain/supervisor"
)

var (
	_ supervisorapp.ReviewStore     = (*SupervisorRuntime)(nil)
	_ supervisorapp.WorkflowCounter = (*SupervisorRuntime)(nil)
)

const reviewColumns = `review_id::text, key, session_id, workflow_id, execution_id, node_id, command, request, actor, channel, reason,
	reviewers, next_reviewer, asking, timeout_ms, default_decision, deadline, status, steps, outcome, created_at`

func scanReview(row pgx.Row) (supervisor.Review, error) {
	var rec supervisor.ReviewRecord
	var cmd, req, steps, outcome []byte
	var timeoutMs int64
	var def, status string
	err := row.Scan(&rec.ID, &rec.Key, &rec.SessionID, &rec.WorkflowID, &rec.ExecutionID, &rec.NodeID, &cmd, &req, &rec.Actor,
		&rec.Channel, &rec.Reason, &rec.Reviewers, &rec.Next, &rec.Asking, &timeoutMs, &def, &rec.Deadline, &status, &steps, &outcome, &rec.CreatedAt)
	if err != nil {
		return supervisor.Review{}, err
	}
	c, err := supervisor.ParseCommand(cmd)
	if err != nil {
		return supervisor.Review{}, fmt.Errorf("stored command of review %s: %w", rec.ID, err)
	}
	if err := json.Unmarshal(steps, &rec.Steps); err != nil {
		return supervisor.Review{}, fmt.Errorf("stored steps of review %s: %w", rec.ID, err)
	}
	if string(outcome) != "null" {
		rec.Outcome = outcome
	}
	rec.Command, rec.Request, rec.Timeout = c, req, time.Duration(timeoutMs)*time.Millisecond
	rec.Default, rec.Status = supervisor.Decision(def), supervisor.ReviewStatus(status)
	return supervisor.RestoreReview(rec), nil
}

// OpenReview stores a new review and its events, or returns the review the
// session already has for its key.
func (s *SupervisorRuntime) OpenReview(ctx context.Context, r supervisor.Review, events []executionapp.Event) (supervisor.Review, bool, error) {
	rec := r.Record()
	cmd, err := json.Marshal(rec.Command)
	if err != nil {
		return supervisor.Review{}, false, err
	}
	steps, err := json.Marshal(rec.Steps)
	if err != nil {
		return supervisor.Review{}, false, err
	}
	var out supervisor.Review
	created := false
	err = inTx(ctx, s.pool, func(tx pgx.Tx) error {
		stored, err := scanReview(tx.QueryRow(ctx, `
			INSERT INTO supervisor_reviews (review_id, key, session_id, workflow_id, execution_id, node_id, command, request, actor, channel,
				reason, reviewers, next_reviewer, asking, timeout_ms, default_decision, deadline, status, steps, created_at)
			VALUES ($1, $2, $3, $4, $5, $6, $7::jsonb, $8::jsonb, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18, $19::jsonb, $20)
			ON CONFLICT (session_id, key) WHERE key <> '' DO NOTHING
			RETURNING `+reviewColumns,
			rec.ID, rec.Key, rec.SessionID, rec.WorkflowID, rec.ExecutionID, rec.NodeID, cmd, jsonOr(rec.Request, "{}"), rec.Actor, rec.Channel,
			rec.Reason, rec.Reviewers, rec.Next, rec.Asking, millis(rec.Timeout), string(rec.Default), rec.Deadline, string(rec.Status), steps, rec.CreatedAt))
		if errors.Is(err, pgx.ErrNoRows) {
			out, err = scanReview(tx.QueryRow(ctx, `SELECT `+reviewColumns+` FROM supervisor_reviews WHERE session_id = $1 AND key = $2`, rec.SessionID, rec.Key))
			created = false
			return translate(err)
		}
		if err != nil {
			return translate(err)
		}
		out, created = stored, true
		return (&EventStore{db: tx}).Append(ctx, events)
	})
	return out, created, err
}

// ChangeReview moves one review under its row lock.
func (s *SupervisorRuntime) ChangeReview(ctx context.Context, id string, f *supervisorapp.Fence,
	change func(supervisor.Review) (supervisor.Review, []executionapp.Event, error)) (supervisor.Review, error) {
	if !supervisor.ValidReviewID(id) {
		return supervisor.Review{}, reviewNotFound(id)
	}
	var out supervisor.Review
	err := inTx(ctx, s.pool, func(tx pgx.Tx) error {
		if err := fence(ctx, tx, f); err != nil {
			return err
		}
		cur, err := scanReview(tx.QueryRow(ctx, `SELECT `+reviewColumns+` FROM supervisor_reviews WHERE review_id = $1 FOR UPDATE`, id))
		if errors.Is(err, pgx.ErrNoRows) {
			return reviewNotFound(id)
		}
		if err != nil {
			return translate(err)
		}
		next, events, err := change(cur)
		if err != nil {
			return err
		}
		rec := next.Record()
		steps, err := json.Marshal(rec.Steps)
		if err != nil {
			return err
		}
		out, err = scanReview(tx.QueryRow(ctx, `
			UPDATE supervisor_reviews
			   SET next_reviewer = $2, asking = $3, deadline = $4, status = $5, steps = $6::jsonb, outcome = $7::jsonb, updated_at = clock_timestamp()
			 WHERE review_id = $1
			RETURNING `+reviewColumns, id, rec.Next, rec.Asking, rec.Deadline, string(rec.Status), steps, jsonOr(rec.Outcome, "null")))
		if err != nil {
			return translate(err)
		}
		if len(events) == 0 {
			return nil
		}
		return (&EventStore{db: tx}).Append(ctx, events)
	})
	return out, err
}

func reviewNotFound(id string) error { return supervisor.ReviewNotFound(id) }

// Review reads one review.
func (s *SupervisorRuntime) Review(ctx context.Context, id string) (supervisor.Review, bool, error) {
	return readByID(ctx, s.pool, supervisor.ValidReviewID, id, `SELECT `+reviewColumns+` FROM supervisor_reviews WHERE review_id = $1`, scanReview)
}

// readByID reads the one row an id names; an id valid refuses or no row
// is found=false, never an error.
func readByID[T any](ctx context.Context, db queryRower, valid func(string) bool, id, sql string, scan func(pgx.Row) (T, error)) (T, bool, error) {
	var zero T
	if !valid(id) {
		return zero, false, nil
	}
	v, err := scan(db.QueryRow(ctx, sql, id))
	if errors.Is(err, pgx.ErrNoRows) {
		return zero, false, nil
	}
	if err != nil {
		return zero, false, translate(err)
	}
	return v, true, nil
}

// Reviews lists reviews, newest first.
func (s *SupervisorRuntime) Reviews(ctx context.Context, q supervisorapp.ReviewQuery) ([]supervisor.Review, error) {
	sts := make([]string, len(q.Statuses))
	for i, st := range q.Statuses {
		sts[i] = string(st)
	}
	limit := q.Limit
	if limit <= 0 {
		limit = 100
	}
	rows, err := s.pool.Query(ctx, `SELECT `+reviewColumns+` FROM supervisor_reviews
		 WHERE (cardinality($1::text[]) = 0 OR status = ANY($1))
		   AND ($2::text[] IS NULL OR session_id = ANY($2))
		 ORDER BY created_at DESC, review_id DESC LIMIT $3`, sts, q.Sessions, limit)
	if err != nil {
		return nil, translate(err)
	}
	out, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (supervisor.Review, error) { return scanReview(row) })
	return out, translate(err)
}

// DueReviews finds PENDING reviews past their deadline and ALLOWED ones
// whose applier seems gone, on the database clock.
func (s *SupervisorRuntime) DueReviews(ctx context.Context, stale time.Duration, limit int) ([]string, error) {
	rows, err := s.pool.Query(ctx, `SELECT review_id::text FROM supervisor_reviews
		 WHERE (status = 'PENDING' AND deadline <= clock_timestamp())
		    OR (status = 'ALLOWED' AND updated_at <= clock_timestamp() - $1 * interval '1 millisecond')
		 ORDER BY deadline LIMIT $2`, stale.Milliseconds(), limit)
	if err != nil {
		return nil, translate(err)
	}
	ids, err := pgx.CollectRows(rows, pgx.RowTo[string])
	return ids, translate(err)
}

// ActiveCount counts a workflow's unfinished runs.
func (s *SupervisorRuntime) ActiveCount(ctx context.Context, sessionID, workflowID string) (int, error) {
	var n int
	err := s.pool.QueryRow(ctx, `SELECT count(*) FROM executions
		 WHERE session_id = $1 AND workflow_id = $2 AND status IN ('PENDING', 'RUNNING', 'PAUSED')`, sessionID, workflowID).Scan(&n)
	return n, translate(err)
}
