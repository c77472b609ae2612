package postgres

import (
	"context"
	"errors"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/yukta/yukta/application/executionapp"
	"github.com/yukta/yukta/application/supervisorapp"
	"github.com/yukta/yukta/domain/supervisor"
)

var _ supervisorapp.DelegationStore = (*SupervisorRuntime)(nil)

const delegationColumns = `delegation_id::text, kind, from_id, to_id, key, payload, status, answer, created_at, answered_at, deadline`

func scanDelegation(row pgx.Row) (supervisor.Delegation, error) {
	var rec supervisor.DelegationRecord
	var kind, status string
	var payload, answer []byte
	var answeredAt *time.Time
	if err := row.Scan(&rec.ID, &kind, &rec.From, &rec.To, &rec.Key, &payload, &status, &answer, &rec.CreatedAt, &answeredAt, &rec.Deadline); err != nil {
		return supervisor.Delegation{}, err
	}
	rec.Kind, rec.Status, rec.Payload = supervisor.DelegationKind(kind), supervisor.DelegationStatus(status), payload
	if len(answer) > 0 && string(answer) != "null" {
		rec.Answer = answer
	}
	if answeredAt != nil {
		rec.AnsweredAt = *answeredAt
	}
	return supervisor.RestoreDelegation(rec), nil
}

// delegationEvent is the outbox event of a delegation's change: it belongs
// to no session.
func delegationEvent(typ string, d supervisor.Delegation, at time.Time, actor, channel string) executionapp.Event {
	return executionapp.Event{Type: typ, At: at, Actor: actor, Channel: channel, Data: map[string]any{
		"delegationId": d.ID(), "kind": string(d.Kind()), "from": d.From(), "to": d.To()}}
}

// OpenDelegation stores a new delegation and its DelegationRequested
// event, or returns the one the sender already has for the key.
func (s *SupervisorRuntime) OpenDelegation(ctx context.Context, d supervisor.Delegation, actor, channel string, f *supervisorapp.Fence) (supervisor.Delegation, bool, error) {
	rec := d.Record()
	var out supervisor.Delegation
	created := false
	err := inTx(ctx, s.pool, func(tx pgx.Tx) error {
		if err := fence(ctx, tx, f); err != nil {
			return err
		}
		stored, err := scanDelegation(tx.QueryRow(ctx, `
			INSERT INTO supervisor_delegations (delegation_id, kind, from_id, to_id, key, payload, status, created_at, deadline)
			VALUES ($1, $2, $3, $4, $5, $6::jsonb, $7, $8, $9)
			ON CONFLICT (from_id, key) DO NOTHING
			RETURNING `+delegationColumns,
			rec.ID, string(rec.Kind), rec.From, rec.To, rec.Key, string(rec.Payload), string(rec.Status), rec.CreatedAt, rec.Deadline))
		if errors.Is(err, pgx.ErrNoRows) {
			out, err = scanDelegation(tx.QueryRow(ctx, `SELECT `+delegationColumns+` FROM supervisor_delegations WHERE from_id = $1 AND key = $2`, rec.From, rec.Key))
			created = false
			return translate(err)
		}
		if err != nil {
			return translate(err)
		}
		out, created = stored, true
		return (&EventStore{db: tx}).Append(ctx, []executionapp.Event{delegationEvent(supervisorapp.EventDelegationRequested, stored, rec.CreatedAt, actor, channel)})
	})
	return out, created, err
}

// ChangeDelegation moves one delegation under its row lock.
func (s *SupervisorRuntime) ChangeDelegation(ctx context.Context, id, actor, channel string, f *supervisorapp.Fence,
	change func(supervisor.Delegation) (supervisor.Delegation, error)) (supervisor.Delegation, error) {
	if !supervisor.ValidDelegationID(id) {
		return supervisor.Delegation{}, delegationNotFound(id)
	}
	var out supervisor.Delegation
	err := inTx(ctx, s.pool, func(tx pgx.Tx) error {
		if err := fence(ctx, tx, f); err != nil {
			return err
		}
		cur, err := scanDelegation(tx.QueryRow(ctx, `SELECT `+delegationColumns+` FROM supervisor_delegations WHERE delegation_id = $1 FOR UPDATE`, id))
		if errors.Is(err, pgx.ErrNoRows) {
			return delegationNotFound(id)
		}
		if err != nil {
			return translate(err)
		}
		next, err := change(cur)
		if err != nil {
			return err
		}
		rec := next.Record()
		var answeredAt *time.Time
		if !rec.AnsweredAt.IsZero() {
			answeredAt = &rec.AnsweredAt
		}
		out, err = scanDelegation(tx.QueryRow(ctx, `
			UPDATE supervisor_delegations SET status = $2, answer = $3::jsonb, answered_at = $4
			 WHERE delegation_id = $1
			RETURNING `+delegationColumns, id, string(rec.Status), jsonOr(rec.Answer, "null"), answeredAt))
		if err != nil {
			return translate(err)
		}
		if cur.Status() == next.Status() || next.Status() != supervisor.DelegationAnswered {
			return nil
		}
		return (&EventStore{db: tx}).Append(ctx, []executionapp.Event{delegationEvent(supervisorapp.EventDelegationAnswered, out, rec.AnsweredAt, actor, channel)})
	})
	return out, err
}

func delegationNotFound(id string) error { return supervisor.DelegationNotFound(id) }

// Delegation reads one delegation.
func (s *SupervisorRuntime) Delegation(ctx context.Context, id string) (supervisor.Delegation, bool, error) {
	return readByID(ctx, s.pool, supervisor.ValidDelegationID, id, `SELECT `+delegationColumns+` FROM supervisor_delegations WHERE delegation_id = $1`, scanDelegation)
}

// DueDelegations finds OPEN delegations past their deadline, on the
// database clock.
func (s *SupervisorRuntime) DueDelegations(ctx context.Context, limit int) ([]string, error) {
	rows, err := s.pool.Query(ctx, `SELECT delegation_id::text FROM supervisor_delegations
		 WHERE status = 'OPEN' AND deadline <= clock_timestamp() ORDER BY deadline LIMIT $1`, limit)
	if err != nil {
		return nil, translate(err)
	}
	ids, err := pgx.CollectRows(rows, pgx.RowTo[string])
	return ids, translate(err)
}
