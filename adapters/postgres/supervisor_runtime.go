package postgres

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/yukta/yukta/application/executionapp"
	"github.com/yukta/yukta/application/supervisorapp"
	"github.com/yukta/yukta/domain/execution"
	"github.com/yukta/yukta/domain/supervisor"
)

// SupervisorRuntime keeps what the supervisor runtime writes (leases,
// cursors, the directive ledger, the hold ledger) and answers what it reads
// about runs and inputs across sessions. Every time it compares with is the
// database's clock, so instances with skewed clocks agree on expiries.
type SupervisorRuntime struct{ pool *pgxpool.Pool }

// NewSupervisorRuntime returns the store on pool.
func NewSupervisorRuntime(pool *pgxpool.Pool) *SupervisorRuntime {
	return &SupervisorRuntime{pool: pool}
}

var (
	_ supervisorapp.LeaseStore      = (*SupervisorRuntime)(nil)
	_ supervisorapp.CursorStore     = (*SupervisorRuntime)(nil)
	_ supervisorapp.DirectiveLedger = (*SupervisorRuntime)(nil)
	_ supervisorapp.RunDirectory    = (*SupervisorRuntime)(nil)
	_ supervisorapp.HoldStore       = (*SupervisorRuntime)(nil)
)

func millis(d time.Duration) int64 { return max(d.Milliseconds(), 1) }

// Acquire takes a supervisor's lease when it is free, expired or the
// owner's own, with the next token.
func (s *SupervisorRuntime) Acquire(ctx context.Context, supervisorID, owner string, ttl time.Duration) (supervisorapp.Fence, bool, error) {
	var token int64
	err := s.pool.QueryRow(ctx, `
		INSERT INTO supervisor_leases AS l (supervisor_id, owner, token, expires_at)
		VALUES ($1, $2, 1, clock_timestamp() + $3 * interval '1 millisecond')
		ON CONFLICT (supervisor_id) DO UPDATE
		   SET owner = EXCLUDED.owner, token = l.token + 1, expires_at = EXCLUDED.expires_at
		 WHERE l.expires_at <= clock_timestamp() OR l.owner = EXCLUDED.owner
		RETURNING token`, supervisorID, owner, millis(ttl)).Scan(&token)
	if errors.Is(err, pgx.ErrNoRows) {
		return supervisorapp.Fence{}, false, nil
	}
	if err != nil {
		return supervisorapp.Fence{}, false, translate(err)
	}
	return supervisorapp.Fence{SupervisorID: supervisorID, Owner: owner, Token: token}, true, nil
}

// Renew extends f's tenure. A tenure that expired is renewed as long as
// nobody took the lease since: the token says so.
func (s *SupervisorRuntime) Renew(ctx context.Context, f supervisorapp.Fence, ttl time.Duration) (bool, error) {
	tag, err := s.pool.Exec(ctx, `
		UPDATE supervisor_leases SET expires_at = clock_timestamp() + $4 * interval '1 millisecond'
		 WHERE supervisor_id = $1 AND owner = $2 AND token = $3`, f.SupervisorID, f.Owner, f.Token, millis(ttl))
	if err != nil {
		return false, translate(err)
	}
	return tag.RowsAffected() == 1, nil
}

// Release expires f's tenure now.
func (s *SupervisorRuntime) Release(ctx context.Context, f supervisorapp.Fence) error {
	_, err := s.pool.Exec(ctx, `
		UPDATE supervisor_leases SET expires_at = clock_timestamp() - interval '1 millisecond'
		 WHERE supervisor_id = $1 AND owner = $2 AND token = $3`, f.SupervisorID, f.Owner, f.Token)
	return translate(err)
}

// fence holds the supervisor's lease row (FOR SHARE, until the transaction
// ends) and checks that f is its tenure: a takeover waits for this
// transaction, and a stale token writes nothing.
func fence(ctx context.Context, tx pgx.Tx, f *supervisorapp.Fence) error {
	if f == nil {
		return nil
	}
	var ok bool
	err := tx.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM supervisor_leases
		WHERE supervisor_id = $1 AND owner = $2 AND token = $3 FOR SHARE)`, f.SupervisorID, f.Owner, f.Token).Scan(&ok)
	if err != nil {
		return translate(err)
	}
	if !ok {
		return supervisorapp.ErrLeaseLost
	}
	return nil
}

// Cursor reads a supervisor's cursor.
func (s *SupervisorRuntime) Cursor(ctx context.Context, supervisorID string) (supervisorapp.Cursor, bool, error) {
	var c supervisorapp.Cursor
	var xid string
	err := s.pool.QueryRow(ctx, `SELECT generation, xid::text, seq, state FROM supervisor_cursors WHERE supervisor_id = $1`, supervisorID).
		Scan(&c.Generation, &xid, &c.Pos.Seq, &c.State)
	if errors.Is(err, pgx.ErrNoRows) {
		return c, false, nil
	}
	if err != nil {
		return c, false, translate(err)
	}
	if c.Pos.XID, err = strconv.ParseUint(xid, 10, 64); err != nil {
		return c, false, err
	}
	return c, true, nil
}

// CreatedAt finds the event that created the supervisor.
func (s *SupervisorRuntime) CreatedAt(ctx context.Context, supervisorID string) (supervisor.Position, bool, error) {
	var p supervisor.Position
	var xid string
	err := s.pool.QueryRow(ctx, `
		SELECT xid::text, seq FROM events
		 WHERE type = 'SupervisorApplied' AND session_id = '' AND data->>'supervisorId' = $1 AND data->>'created' = 'true'
		 ORDER BY xid DESC, seq DESC LIMIT 1`, supervisorID).Scan(&xid, &p.Seq)
	if errors.Is(err, pgx.ErrNoRows) {
		return p, false, nil
	}
	if err != nil {
		return p, false, translate(err)
	}
	if p.XID, err = strconv.ParseUint(xid, 10, 64); err != nil {
		return p, false, err
	}
	return p, true, nil
}

// SaveCursor moves the cursor under f. Within a generation it only moves
// forward: a save before the stored position changes nothing and is
// refused with ErrCursorBehind (and a trigger refuses any other write that
// would move it back, migration 00016).
func (s *SupervisorRuntime) SaveCursor(ctx context.Context, f supervisorapp.Fence, c supervisorapp.Cursor) error {
	var state *string
	if len(c.State) > 0 {
		st := string(c.State)
		state = &st
	}
	return inTx(ctx, s.pool, func(tx pgx.Tx) error {
		if err := fence(ctx, tx, &f); err != nil {
			return err
		}
		tag, err := tx.Exec(ctx, `
			INSERT INTO supervisor_cursors AS c (supervisor_id, generation, xid, seq, state, updated_at)
			VALUES ($1, $2, $3::text::xid8, $4, $5::jsonb, clock_timestamp())
			ON CONFLICT (supervisor_id) DO UPDATE
			   SET generation = EXCLUDED.generation, xid = EXCLUDED.xid, seq = EXCLUDED.seq, state = EXCLUDED.state,
			       updated_at = EXCLUDED.updated_at
			 WHERE c.generation <> EXCLUDED.generation OR (c.xid, c.seq) <= (EXCLUDED.xid, EXCLUDED.seq)`,
			f.SupervisorID, c.Generation, strconv.FormatUint(c.Pos.XID, 10), c.Pos.Seq, state)
		if err != nil {
			return translate(err)
		}
		if tag.RowsAffected() == 0 {
			return fmt.Errorf("supervisor %s: save the cursor at %d.%d: %w", f.SupervisorID, c.Pos.XID, c.Pos.Seq, supervisorapp.ErrCursorBehind)
		}
		return nil
	})
}

const ledgerColumns = `supervisor_id, key, fingerprint, directive, status, plan, coalesce(result, 'null'::jsonb), channel`

func scanLedger(row pgx.Row) (supervisorapp.LedgerEntry, error) {
	var e supervisorapp.LedgerEntry
	err := row.Scan(&e.SupervisorID, &e.Key, &e.Fingerprint, &e.Directive, &e.Status, &e.Plan, &e.Result, &e.Channel)
	return e, err
}

// Directive reads one ledger entry.
func (s *SupervisorRuntime) Directive(ctx context.Context, supervisorID, key string) (supervisorapp.LedgerEntry, bool, error) {
	e, err := scanLedger(s.pool.QueryRow(ctx, `SELECT `+ledgerColumns+` FROM supervisor_directives WHERE supervisor_id = $1 AND key = $2`,
		supervisorID, key))
	if errors.Is(err, pgx.ErrNoRows) {
		return e, false, nil
	}
	return e, err == nil, translate(err)
}

func jsonOr(b []byte, empty string) string {
	if len(b) == 0 {
		return empty
	}
	return string(b)
}

// Claim inserts a pending entry, or takes over a pending one whose claim
// expired, or returns the stored entry.
func (s *SupervisorRuntime) Claim(ctx context.Context, f *supervisorapp.Fence, e supervisorapp.LedgerEntry, claim string,
	ttl time.Duration) (supervisorapp.LedgerEntry, bool, error) {
	var out supervisorapp.LedgerEntry
	var claimed bool
	err := inTx(ctx, s.pool, func(tx pgx.Tx) error {
		if err := fence(ctx, tx, f); err != nil {
			return err
		}
		stored, err := scanLedger(tx.QueryRow(ctx, `
			INSERT INTO supervisor_directives AS d (supervisor_id, key, fingerprint, directive, status, plan, claim, claim_until, channel)
			VALUES ($1, $2, $3, $4::jsonb, 'pending', $5::jsonb, $6, clock_timestamp() + $7 * interval '1 millisecond', $8)
			ON CONFLICT (supervisor_id, key) DO UPDATE
			   SET claim = EXCLUDED.claim, claim_until = EXCLUDED.claim_until
			 WHERE d.status = 'pending' AND d.fingerprint = EXCLUDED.fingerprint AND d.claim_until <= clock_timestamp()
			RETURNING `+ledgerColumns,
			e.SupervisorID, e.Key, e.Fingerprint, jsonOr(e.Directive, "{}"), jsonOr(e.Plan, "[]"), claim, millis(ttl), e.Channel))
		if err == nil {
			out, claimed = stored, true
			return nil
		}
		if !errors.Is(err, pgx.ErrNoRows) {
			return translate(err)
		}
		out, err = scanLedger(tx.QueryRow(ctx, `SELECT `+ledgerColumns+` FROM supervisor_directives WHERE supervisor_id = $1 AND key = $2`,
			e.SupervisorID, e.Key))
		claimed = false
		return translate(err)
	})
	return out, claimed, err
}

// ExtendClaim keeps a claim on a pending entry.
func (s *SupervisorRuntime) ExtendClaim(ctx context.Context, f *supervisorapp.Fence, supervisorID, key, claim string, ttl time.Duration) (bool, error) {
	var ok bool
	err := inTx(ctx, s.pool, func(tx pgx.Tx) error {
		if err := fence(ctx, tx, f); err != nil {
			return err
		}
		tag, err := tx.Exec(ctx, `
			UPDATE supervisor_directives SET claim_until = clock_timestamp() + $4 * interval '1 millisecond'
			 WHERE supervisor_id = $1 AND key = $2 AND claim = $3 AND status = 'pending'`, supervisorID, key, claim, millis(ttl))
		ok = err == nil && tag.RowsAffected() == 1
		return translate(err)
	})
	return ok, err
}

// Settle stores a settled entry and its events once. A rejection is only
// ever a new key's (the intake refuses before it claims), so it never
// settles a pending entry another sender is applying; an acceptance settles
// the pending entry of its fingerprint. A settled entry is never changed.
func (s *SupervisorRuntime) Settle(ctx context.Context, f *supervisorapp.Fence, e supervisorapp.LedgerEntry,
	events []executionapp.Event) (supervisorapp.LedgerEntry, bool, error) {
	var out supervisorapp.LedgerEntry
	var settled bool
	err := inTx(ctx, s.pool, func(tx pgx.Tx) error {
		if err := fence(ctx, tx, f); err != nil {
			return err
		}
		stored, err := scanLedger(tx.QueryRow(ctx, `
			INSERT INTO supervisor_directives AS d (supervisor_id, key, fingerprint, directive, status, plan, result, settled_at, channel)
			VALUES ($1, $2, $3, $4::jsonb, $5, $6::jsonb, $7::jsonb, clock_timestamp(), $8)
			ON CONFLICT (supervisor_id, key) DO UPDATE
			   SET status = EXCLUDED.status, result = EXCLUDED.result, settled_at = EXCLUDED.settled_at, claim = '', claim_until = NULL
			 WHERE d.status = 'pending' AND d.fingerprint = EXCLUDED.fingerprint AND EXCLUDED.status = 'accepted'
			RETURNING `+ledgerColumns,
			e.SupervisorID, e.Key, e.Fingerprint, jsonOr(e.Directive, "{}"), e.Status, jsonOr(e.Plan, "[]"), jsonOr(e.Result, "null"), e.Channel))
		if errors.Is(err, pgx.ErrNoRows) {
			settled = false
			out, err = scanLedger(tx.QueryRow(ctx, `SELECT `+ledgerColumns+` FROM supervisor_directives WHERE supervisor_id = $1 AND key = $2`,
				e.SupervisorID, e.Key))
			return translate(err)
		}
		if err != nil {
			return translate(err)
		}
		out, settled = stored, true
		if len(events) == 0 {
			return nil
		}
		return (&EventStore{db: tx}).Append(ctx, events)
	})
	return out, settled, err
}

// Refusals reads a supervisor's refused directives (its rejected ledger
// entries), newest first, those before the position before (0: from the
// newest), at most limit.
func (s *SupervisorRuntime) Refusals(ctx context.Context, supervisorID string, before int64, limit int) ([]supervisorapp.StoredRefusal, error) {
	if before <= 0 {
		before = math.MaxInt64
	}
	rows, err := s.pool.Query(ctx, `SELECT seq, coalesce(settled_at, created_at), `+ledgerColumns+` FROM supervisor_directives
		 WHERE supervisor_id = $1 AND status = 'rejected' AND seq < $2 ORDER BY seq DESC LIMIT $3`, supervisorID, before, limit)
	if err != nil {
		return nil, translate(err)
	}
	out, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (supervisorapp.StoredRefusal, error) {
		var r supervisorapp.StoredRefusal
		e := &r.Entry
		err := row.Scan(&r.Seq, &r.At, &e.SupervisorID, &e.Key, &e.Fingerprint, &e.Directive, &e.Status, &e.Plan, &e.Result, &e.Channel)
		return r, err
	})
	return out, translate(err)
}

const runColumns = `execution_id::text, session_id, workflow_id, status, started_at`

func scanRun(row pgx.Row) (supervisorapp.RunInfo, error) {
	var r supervisorapp.RunInfo
	var status string
	err := row.Scan(&r.ID, &r.SessionID, &r.WorkflowID, &status, &r.StartedAt)
	r.Status = execution.Status(status)
	return r, err
}

func validUUIDs(ids []string) []string {
	out := make([]string, 0, len(ids))
	for _, id := range ids {
		if execution.ValidID(id) {
			out = append(out, id)
		}
	}
	return out
}

// Runs looks runs up by id.
func (s *SupervisorRuntime) Runs(ctx context.Context, ids []string) (map[string]supervisorapp.RunInfo, error) {
	out := map[string]supervisorapp.RunInfo{}
	ids = validUUIDs(ids)
	if len(ids) == 0 {
		return out, nil
	}
	rows, err := s.pool.Query(ctx, `SELECT `+runColumns+` FROM executions WHERE execution_id = ANY ($1::uuid[])`, ids)
	if err != nil {
		return nil, translate(err)
	}
	defer rows.Close()
	for rows.Next() {
		r, err := scanRun(rows)
		if err != nil {
			return nil, translate(err)
		}
		out[r.ID] = r
	}
	return out, translate(rows.Err())
}

// unitFilter spells units as query arguments: all, sessions, and the
// (session, workflow) pairs.
func unitFilter(units []supervisor.Unit) (all bool, sessions, wfSessions, wfIDs []string) {
	sessions, wfSessions, wfIDs = []string{}, []string{}, []string{}
	for _, u := range units {
		switch u.Kind() {
		case supervisor.UnitServer:
			all = true
		case supervisor.UnitSession:
			sessions = append(sessions, u.SessionID())
		case supervisor.UnitWorkflow:
			wfSessions, wfIDs = append(wfSessions, u.SessionID()), append(wfIDs, u.WorkflowID())
		}
	}
	return all, sessions, wfSessions, wfIDs
}

// inUnits is the filter unitFilter's arguments ($1 to $4) make, on the
// session_id and workflow_id columns of table t.
func inUnits(t string) string {
	return `($1 OR ` + t + `.session_id = ANY ($2::text[])
		OR EXISTS (SELECT 1 FROM unnest($3::text[], $4::text[]) AS u(s, w) WHERE u.s = ` + t + `.session_id AND u.w = ` + t + `.workflow_id))`
}

// ActiveRuns lists unfinished runs of units, oldest first.
func (s *SupervisorRuntime) ActiveRuns(ctx context.Context, units []supervisor.Unit, limit int) ([]supervisorapp.RunInfo, error) {
	all, ss, ws, wf := unitFilter(units)
	rows, err := s.pool.Query(ctx, `SELECT `+runColumns+` FROM executions
		 WHERE status IN ('PENDING', 'RUNNING', 'PAUSED') AND `+inUnits("executions")+`
		 ORDER BY started_at, execution_id LIMIT $5`, all, ss, ws, wf, limit)
	if err != nil {
		return nil, translate(err)
	}
	out, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (supervisorapp.RunInfo, error) { return scanRun(row) })
	return out, translate(err)
}

// Facts reads what conditions see of a run (FactsMany of one id).
func (s *SupervisorRuntime) Facts(ctx context.Context, id string) (supervisorapp.RunFacts, bool, error) {
	m, err := s.FactsMany(ctx, []string{id})
	f, ok := m[id]
	return f, ok, err
}

// FactsMany reads what conditions see of runs, in one round trip and one
// snapshot: each run's row, the statuses and times of its nodes, and how
// many runs of its workflow are unfinished (counted once per workflow:
// c is MATERIALIZED, or the planner counts again for every run).
// lastProgressAt is the newest of its start and its nodes' starts, ends
// and finished attempts (each attempt is one message).
func (s *SupervisorRuntime) FactsMany(ctx context.Context, ids []string) (map[string]supervisorapp.RunFacts, error) {
	out := map[string]supervisorapp.RunFacts{}
	ids = validUUIDs(ids)
	if len(ids) == 0 {
		return out, nil
	}
	batch := &pgx.Batch{}
	batch.Queue(`BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY`)
	batch.Queue(`
		WITH r AS (SELECT execution_id, session_id, workflow_id, status, started_at
		             FROM executions WHERE execution_id = ANY ($1::uuid[])),
		     w AS (SELECT DISTINCT session_id, workflow_id FROM r),
		     c AS MATERIALIZED (SELECT w.session_id, w.workflow_id,
		                  (SELECT count(*) FROM executions a WHERE a.session_id = w.session_id AND a.workflow_id = w.workflow_id
		                      AND a.status IN ('PENDING', 'RUNNING', 'PAUSED')) AS active
		             FROM w)
		SELECT r.execution_id::text, r.session_id, r.workflow_id, r.status, r.started_at,
		       greatest(r.started_at, (SELECT greatest(max(n.started_at), max(n.ended_at), max(n.attempt_ended_at))
		                                 FROM execution_nodes n WHERE n.execution_id = r.execution_id)),
		       c.active
		  FROM r JOIN c ON c.session_id = r.session_id AND c.workflow_id = r.workflow_id`, ids)
	batch.Queue(`SELECT execution_id::text, node_id, status FROM execution_nodes WHERE execution_id = ANY ($1::uuid[])`, ids)
	batch.Queue(`COMMIT`)
	br := s.pool.SendBatch(ctx, batch)
	defer br.Close()
	if _, err := br.Exec(); err != nil {
		return nil, translate(err)
	}
	rows, err := br.Query()
	if err != nil {
		return nil, translate(err)
	}
	for rows.Next() {
		var f supervisorapp.RunFacts
		var status string
		if err := rows.Scan(&f.ID, &f.SessionID, &f.WorkflowID, &status, &f.StartedAt, &f.LastProgressAt, &f.ActiveCount); err != nil {
			rows.Close()
			return nil, translate(err)
		}
		f.Status = execution.Status(status)
		f.Nodes = map[string]execution.NodeStatus{}
		out[f.ID] = f
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, translate(err)
	}
	if rows, err = br.Query(); err != nil {
		return nil, translate(err)
	}
	defer rows.Close()
	for rows.Next() {
		var id, nid, ns string
		if err := rows.Scan(&id, &nid, &ns); err != nil {
			return nil, translate(err)
		}
		if f, ok := out[id]; ok {
			f.Nodes[nid] = execution.NodeStatus(ns)
		}
	}
	return out, translate(rows.Err())
}

const inputInfoColumns = `i.input_id::text, i.session_id, e.workflow_id, i.execution_id::text, i.node_id, i.prompt, i.status,
	coalesce(i.answered_by, ''), i.created_at`

func scanInputInfo(row pgx.Row) (supervisorapp.InputInfo, error) {
	var in supervisorapp.InputInfo
	err := row.Scan(&in.ID, &in.SessionID, &in.WorkflowID, &in.ExecutionID, &in.NodeID, &in.Prompt, &in.Status, &in.AnsweredBy, &in.CreatedAt)
	return in, err
}

// Input looks an input up by id.
func (s *SupervisorRuntime) Input(ctx context.Context, id string) (supervisorapp.InputInfo, bool, error) {
	if !execution.ValidID(id) {
		return supervisorapp.InputInfo{}, false, nil
	}
	in, err := scanInputInfo(s.pool.QueryRow(ctx, `SELECT `+inputInfoColumns+`
		FROM inputs i JOIN executions e ON e.execution_id = i.execution_id WHERE i.input_id = $1`, id))
	if errors.Is(err, pgx.ErrNoRows) {
		return in, false, nil
	}
	return in, err == nil, translate(err)
}

// OpenInputs lists the open inputs of units, oldest first.
func (s *SupervisorRuntime) OpenInputs(ctx context.Context, units []supervisor.Unit, limit int) ([]supervisorapp.InputInfo, error) {
	all, ss, ws, wf := unitFilter(units)
	rows, err := s.pool.Query(ctx, `SELECT `+inputInfoColumns+`
		FROM inputs i JOIN executions e ON e.execution_id = i.execution_id
		WHERE i.status = 'open' AND `+inUnits("e")+`
		ORDER BY i.created_at, i.input_id LIMIT $5`, all, ss, ws, wf, limit)
	if err != nil {
		return nil, translate(err)
	}
	out, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (supervisorapp.InputInfo, error) { return scanInputInfo(row) })
	return out, translate(err)
}

// ChangeHolds changes a run's hold ledger under a lock.
func (s *SupervisorRuntime) ChangeHolds(ctx context.Context, executionID string,
	change func(h supervisor.RunHolds, status execution.Status) (supervisor.RunHolds, error)) (supervisor.RunHolds, error) {
	var out supervisor.RunHolds
	if !execution.ValidID(executionID) {
		return out, executionNotFound(executionID)
	}
	err := inTx(ctx, s.pool, func(tx pgx.Tx) error {
		var err error
		out, err = changeHolds(ctx, tx, executionID, func(h supervisor.RunHolds, run supervisorapp.RunInfo) (supervisor.RunHolds, []executionapp.Event, error) {
			next, err := change(h, run.Status)
			return next, nil, err
		})
		return err
	})
	return out, err
}

// changeHolds is the one change of a run's hold ledger, in tx: lock the
// run's ledger, call change with it and the run, store what it returns and
// append its events.
func changeHolds(ctx context.Context, tx pgx.Tx, executionID string,
	change func(h supervisor.RunHolds, run supervisorapp.RunInfo) (supervisor.RunHolds, []executionapp.Event, error)) (supervisor.RunHolds, error) {
	if !execution.ValidID(executionID) {
		return supervisor.RunHolds{}, executionNotFound(executionID)
	}
	run, err := scanRun(tx.QueryRow(ctx, `SELECT `+runColumns+` FROM executions WHERE execution_id = $1`, executionID))
	if err != nil {
		return supervisor.RunHolds{}, notFound(err, executionNotFound(executionID))
	}
	if _, err := tx.Exec(ctx, `INSERT INTO supervisor_hold_runs (execution_id) VALUES ($1) ON CONFLICT DO NOTHING`, executionID); err != nil {
		return supervisor.RunHolds{}, translate(err)
	}
	var paused bool
	if err := tx.QueryRow(ctx, `SELECT paused_by_hold FROM supervisor_hold_runs WHERE execution_id = $1 FOR UPDATE`, executionID).Scan(&paused); err != nil {
		return supervisor.RunHolds{}, translate(err)
	}
	entries, err := holdEntries(ctx, tx, executionID)
	if err != nil {
		return supervisor.RunHolds{}, err
	}
	h := supervisor.RestoreRunHolds(executionID, entries, paused)
	if run.Status.Terminal() {
		h = h.End() // a finished run's holds ended with it
	}
	next, events, err := change(h, run)
	if err != nil {
		return supervisor.RunHolds{}, err
	}
	if _, err := tx.Exec(ctx, `DELETE FROM supervisor_holds WHERE execution_id = $1`, executionID); err != nil {
		return supervisor.RunHolds{}, translate(err)
	}
	for _, e := range next.Entries() {
		if _, err := tx.Exec(ctx, `INSERT INTO supervisor_holds (execution_id, supervisor_id, since, reason) VALUES ($1, $2, $3, $4)`,
			executionID, e.SupervisorID(), e.Since(), e.Reason()); err != nil {
			return supervisor.RunHolds{}, translate(err)
		}
	}
	if _, err := tx.Exec(ctx, `UPDATE supervisor_hold_runs SET paused_by_hold = $2 WHERE execution_id = $1`, executionID, next.PausedByHold()); err != nil {
		return supervisor.RunHolds{}, translate(err)
	}
	if len(events) > 0 {
		if err := (&EventStore{db: tx}).Append(ctx, events); err != nil {
			return supervisor.RunHolds{}, err
		}
	}
	return next, nil
}

func holdEntries(ctx context.Context, db dbtx, executionID string) ([]supervisor.HoldEntry, error) {
	rows, err := db.Query(ctx, `SELECT supervisor_id, since, reason FROM supervisor_holds WHERE execution_id = $1 ORDER BY since, supervisor_id`, executionID)
	if err != nil {
		return nil, translate(err)
	}
	out, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (supervisor.HoldEntry, error) {
		var id, reason string
		var since time.Time
		err := row.Scan(&id, &since, &reason)
		return supervisor.RestoreHoldEntry(id, since, reason), err
	})
	return out, translate(err)
}

// Holds returns the hold ledgers of unfinished runs that have holds.
func (s *SupervisorRuntime) Holds(ctx context.Context, executionIDs []string) ([]supervisor.RunHolds, error) {
	var ids []string
	if executionIDs != nil {
		if ids = validUUIDs(executionIDs); len(ids) == 0 {
			return nil, nil
		}
	}
	rows, err := s.pool.Query(ctx, `
		SELECT h.execution_id::text, h.supervisor_id, h.since, h.reason, r.paused_by_hold
		  FROM supervisor_holds h
		  JOIN supervisor_hold_runs r ON r.execution_id = h.execution_id
		  JOIN executions e ON e.execution_id = h.execution_id
		 WHERE e.status IN ('PENDING', 'RUNNING', 'PAUSED') AND ($1::uuid[] IS NULL OR h.execution_id = ANY ($1))
		 ORDER BY h.execution_id, h.since, h.supervisor_id`, ids)
	if err != nil {
		return nil, translate(err)
	}
	defer rows.Close()
	var out []supervisor.RunHolds
	var cur string
	var entries []supervisor.HoldEntry
	var paused bool
	flush := func() {
		if cur != "" {
			out = append(out, supervisor.RestoreRunHolds(cur, entries, paused))
		}
	}
	for rows.Next() {
		var id, sid, reason string
		var since time.Time
		var p bool
		if err := rows.Scan(&id, &sid, &since, &reason, &p); err != nil {
			return nil, translate(err)
		}
		if id != cur {
			flush()
			cur, entries, paused = id, nil, p
		}
		entries = append(entries, supervisor.RestoreHoldEntry(sid, since, reason))
	}
	flush()
	return out, translate(rows.Err())
}

// HeldRuns lists the unfinished runs a supervisor holds, oldest hold first.
func (s *SupervisorRuntime) HeldRuns(ctx context.Context, supervisorID string, limit int) ([]supervisorapp.RunInfo, error) {
	return heldRuns(ctx, s.pool, supervisorID, limit)
}

func heldRuns(ctx context.Context, db dbtx, supervisorID string, limit int) ([]supervisorapp.RunInfo, error) {
	rows, err := db.Query(ctx, `SELECT e.execution_id::text, e.session_id, e.workflow_id, e.status, e.started_at
		  FROM supervisor_holds h JOIN executions e ON e.execution_id = h.execution_id
		 WHERE h.supervisor_id = $1 AND e.status IN ('PENDING', 'RUNNING', 'PAUSED')
		 ORDER BY h.since, e.execution_id LIMIT $2`, supervisorID, limit)
	if err != nil {
		return nil, translate(err)
	}
	out, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (supervisorapp.RunInfo, error) { return scanRun(row) })
	return out, translate(err)
}

// SweepHolds deletes the hold ledgers of finished runs (their holds ended
// with them) and returns how many runs it cleared.
func (s *SupervisorRuntime) SweepHolds(ctx context.Context) (int64, error) {
	tag, err := s.pool.Exec(ctx, `DELETE FROM supervisor_hold_runs r USING executions e
		WHERE e.execution_id = r.execution_id AND e.status NOT IN ('PENDING', 'RUNNING', 'PAUSED')`)
	if err != nil {
		return 0, translate(err)
	}
	return tag.RowsAffected(), nil
}

// CheckResume refuses to resume a run a supervisor holds
// (supervisor.RunHolds.CheckResume, supervisor.ErrRunHeld): the holders
// must release it first. It is for the control use case's RESUME.
func (s *SupervisorRuntime) CheckResume(ctx context.Context, executionID string) error {
	hs, err := s.Holds(ctx, []string{executionID})
	if err != nil {
		return err
	}
	for _, h := range hs {
		if err := h.CheckResume(); err != nil {
			return err
		}
	}
	return nil
}
