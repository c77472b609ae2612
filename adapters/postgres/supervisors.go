package postgres

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/yukta/yukta/application/supervisorapp"
	"github.com/yukta/yukta/domain/supervisor"
)

// SupervisorStore keeps supervisors: each one's whole document (secret
// settings included) as jsonb, and who changed it last, when and how. Built
// on a pool it is also the supervisorapp.Reader.
type SupervisorStore struct{ db dbtx }

// NewSupervisorStore returns a store that runs each call on pool.
func NewSupervisorStore(pool *pgxpool.Pool) *SupervisorStore { return &SupervisorStore{db: pool} }

var (
	_ supervisorapp.SupervisorStore = (*SupervisorStore)(nil)
	_ supervisorapp.Reader          = (*SupervisorStore)(nil)
)

const supervisorColumns = `spec, created_at, updated_at, updated_by, updated_via`

// Get loads one supervisor.
func (s *SupervisorStore) Get(ctx context.Context, id string) (supervisorapp.Summary, error) {
	return s.get(ctx, id, "")
}

// GetForUpdate is Get holding the supervisor's row lock until the
// transaction ends.
func (s *SupervisorStore) GetForUpdate(ctx context.Context, id string) (supervisorapp.Summary, error) {
	return s.get(ctx, id, " FOR UPDATE")
}

func (s *SupervisorStore) get(ctx context.Context, id, lock string) (supervisorapp.Summary, error) {
	sm, err := scanSupervisor(s.db.QueryRow(ctx, `SELECT `+supervisorColumns+` FROM supervisors WHERE id = $1`+lock, id))
	if err != nil {
		return supervisorapp.Summary{}, notFound(err, supervisorNotFound(id))
	}
	return sm, nil
}

// Put creates or replaces a supervisor and reports whether it was created.
// Callers run it inside a transaction.
func (s *SupervisorStore) Put(ctx context.Context, sup supervisor.Supervisor, ch supervisorapp.Change) (bool, error) {
	doc, err := sup.MarshalJSON()
	if err != nil {
		return false, fmt.Errorf("encode supervisor %q: %w", sup.ID(), err)
	}
	var created bool
	// xmax = 0 only on a freshly inserted row: created or replaced, told
	// in the same statement.
	err = s.db.QueryRow(ctx, `
		INSERT INTO supervisors (id, spec, enabled, created_at, updated_at, updated_by, updated_via)
		VALUES ($1, $2::jsonb, $3, $4, $4, $5, $6)
		ON CONFLICT (id) DO UPDATE SET
		    spec = EXCLUDED.spec, enabled = EXCLUDED.enabled, updated_at = EXCLUDED.updated_at,
		    updated_by = EXCLUDED.updated_by, updated_via = EXCLUDED.updated_via
		RETURNING (xmax = 0)`,
		sup.ID(), string(doc), sup.Enabled(), ch.At, ch.Actor, ch.Channel).Scan(&created)
	return created, translate(err)
}

// Delete removes a supervisor.
func (s *SupervisorStore) Delete(ctx context.Context, id string) error {
	tag, err := s.db.Exec(ctx, `DELETE FROM supervisors WHERE id = $1`, id)
	if err != nil {
		return translate(err)
	}
	if tag.RowsAffected() == 0 {
		return supervisorNotFound(id)
	}
	return nil
}

// List returns every supervisor in id order.
func (s *SupervisorStore) List(ctx context.Context) ([]supervisorapp.Summary, error) {
	rows, err := s.db.Query(ctx, `SELECT `+supervisorColumns+` FROM supervisors ORDER BY id`)
	if err != nil {
		return nil, translate(err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (supervisorapp.Summary, error) { return scanSupervisor(r) })
	if err != nil {
		return nil, translate(err)
	}
	if out == nil {
		out = []supervisorapp.Summary{}
	}
	return out, nil
}

// Supervisor is Get, for the runtime's reads outside a transaction.
func (s *SupervisorStore) Supervisor(ctx context.Context, id string) (supervisorapp.Summary, error) {
	return s.Get(ctx, id)
}

// Supervisors is List, for the runtime's reads outside a transaction.
func (s *SupervisorStore) Supervisors(ctx context.Context) ([]supervisorapp.Summary, error) {
	return s.List(ctx)
}

// storedSupervisor is the jsonb document of a supervisor row, in the form
// supervisor.MarshalJSON writes.
type storedSupervisor struct {
	ID     string `json:"id"`
	Name   string `json:"name"`
	Engine struct {
		Type     string         `json:"type"`
		Settings map[string]any `json:"settings"`
	} `json:"engine"`
	Owns            []string                 `json:"owns"`
	ParentID        string                   `json:"parentId"`
	AllowedCommands []supervisor.CommandType `json:"allowedCommands"`
	Reviews         []supervisor.CommandType `json:"reviews"`
	TickSeconds     int                      `json:"tickSeconds"`
	Enabled         bool                     `json:"enabled"`
}

func scanSupervisor(row pgx.Row) (supervisorapp.Summary, error) {
	var sm supervisorapp.Summary
	var spec []byte
	if err := row.Scan(&spec, &sm.CreatedAt, &sm.UpdatedAt, &sm.UpdatedBy, &sm.UpdatedVia); err != nil {
		return supervisorapp.Summary{}, err
	}
	// Numbers keep their exact text (json.Number), as Parse gave them.
	dec := json.NewDecoder(bytes.NewReader(spec))
	dec.UseNumber()
	var d storedSupervisor
	if err := dec.Decode(&d); err != nil {
		return supervisorapp.Summary{}, fmt.Errorf("decode stored supervisor: %w", err)
	}
	sm.Supervisor = supervisor.Restore(supervisor.Spec{ID: d.ID, Name: d.Name, EngineType: d.Engine.Type, Settings: d.Engine.Settings,
		Owns: d.Owns, ParentID: d.ParentID, AllowedCommands: d.AllowedCommands, Reviews: d.Reviews, TickSeconds: d.TickSeconds, Enabled: d.Enabled})
	sm.CreatedAt, sm.UpdatedAt = sm.CreatedAt.UTC(), sm.UpdatedAt.UTC()
	return sm, nil
}

func supervisorNotFound(id string) error { return supervisorapp.NotFound(id) }

// SupervisorAudit writes supervisor changes to the event outbox. A
// supervisor belongs to no session, so its events have an empty session:
// the event stream shows them to keys of every session only.
type SupervisorAudit struct{ db dbtx }

var _ supervisorapp.Audit = (*SupervisorAudit)(nil)

// SupervisorChanged appends one supervisor event in the caller's
// transaction; data gets the supervisor's id as supervisorId.
func (a *SupervisorAudit) SupervisorChanged(ctx context.Context, typ, supervisorID string, ch supervisorapp.Change, data map[string]any) error {
	return appendServerEvent(ctx, a.db, typ, ch.At, ch.Actor, ch.Channel, data, "supervisorId", supervisorID)
}

// appendServerEvent appends one event of no session (a supervisor's, a
// key's) in the caller's transaction: data with the subject's id added as
// idKey.
func appendServerEvent(ctx context.Context, db dbtx, typ string, at time.Time, actor, channel string, data map[string]any, idKey, id string) error {
	m := make(map[string]any, len(data)+1)
	for k, v := range data {
		m[k] = v
	}
	m[idKey] = id
	d, err := toJSON(m)
	if err != nil {
		return err
	}
	_, err = db.Exec(ctx, `
		INSERT INTO events (type, at, session_id, actor, channel, data) VALUES ($1, $2, '', $3, $4, $5::jsonb)`,
		typ, at, actor, channel, d)
	return translate(err)
}

// SupervisorTransactor opens transactions for the supervisor use cases.
// Every transaction first takes one advisory lock, so supervisor changes
// run one at a time: a parent chain checked inside one still holds when it
// commits, and two changes cannot close a cycle between them. Changes are
// rare (a person applies a document), so the lock costs nothing that
// matters.
type SupervisorTransactor struct{ pool *pgxpool.Pool }

// NewSupervisorTransactor returns a SupervisorTransactor on pool.
func NewSupervisorTransactor(pool *pgxpool.Pool) *SupervisorTransactor {
	return &SupervisorTransactor{pool: pool}
}

var _ supervisorapp.Transactor = (*SupervisorTransactor)(nil)

// supervisorLockClass is the first half of the advisory lock on supervisor
// changes (the second is 0), apart from every other advisory lock.
const supervisorLockClass = 0x59_6B_53_56 // "YkSV"

// WithinTx runs fn with the supervisor stores bound to one transaction,
// holding the supervisor lock.
func (t *SupervisorTransactor) WithinTx(ctx context.Context, fn func(context.Context, supervisorapp.Stores) error) error {
	return inTx(ctx, t.pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock($1, 0)`, supervisorLockClass); err != nil {
			return err
		}
		return fn(ctx, supervisorapp.Stores{Supervisors: &SupervisorStore{db: tx}, Audit: &SupervisorAudit{db: tx},
			Holds: txHolds{tx}, Remains: txRemains{tx}})
	})
}
