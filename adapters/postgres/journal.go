package postgres

import (
	"context"
	"crypto/ed25519"
	"strconv"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/yukta/yukta/application/journalapp"
	"github.com/yukta/yukta/domain/execution"
	"github.com/yukta/yukta/domain/journal"
)

// JournalTransactor opens the observer's transactions.
type JournalTransactor struct{ pool *pgxpool.Pool }

// NewJournalTransactor returns a JournalTransactor on pool.
func NewJournalTransactor(pool *pgxpool.Pool) *JournalTransactor {
	return &JournalTransactor{pool: pool}
}

var _ journalapp.Transactor = (*JournalTransactor)(nil)

// WithinTx runs fn with the observer store bound to one transaction.
func (t *JournalTransactor) WithinTx(ctx context.Context, fn func(context.Context, journalapp.ObserverStore) error) error {
	return inTx(ctx, t.pool, func(tx pgx.Tx) error { return fn(ctx, &JournalStore{db: tx}) })
}

// JournalStore appends journal records in the caller's transaction. It has
// no update or delete path; the database refuses them too (a trigger).
type JournalStore struct{ db dbtx }

var _ journalapp.ObserverStore = (*JournalStore)(nil)

// LockCursor locks the observer's position row, skipping it when another
// observer holds it.
func (s *JournalStore) LockCursor(ctx context.Context) (journalapp.Position, bool, error) {
	var xid string
	var p journalapp.Position
	err := s.db.QueryRow(ctx, `SELECT xid::text, seq FROM journal_cursor WHERE id = 1 FOR UPDATE SKIP LOCKED`).Scan(&xid, &p.Seq)
	if err == pgx.ErrNoRows {
		// Locked by another observer, or gone: put a lost position back at
		// the start (a replay appends nothing) for the next round.
		_, err = s.db.Exec(ctx, `INSERT INTO journal_cursor (id, xid, seq) VALUES (1, '0', 0) ON CONFLICT (id) DO NOTHING`)
		return p, false, translate(err)
	}
	if err != nil {
		return p, false, translate(err)
	}
	if p.XID, err = strconv.ParseUint(xid, 10, 64); err != nil {
		return p, false, err
	}
	return p, true, nil
}

// eventChannel is the door an event came through: its own channel column,
// else (events written before the column existed) the one its data names,
// else, for a command's events, the command's.
const eventChannel = `coalesce(nullif(e.channel, ''), nullif(e.data->>'channel', ''), c.channel, '')`

// Pending reads committed events after a position in (xid, seq) order. Only
// transactions older than every running one are read, so an event can never
// commit behind the position once the observer has passed it.
func (s *JournalStore) Pending(ctx context.Context, after journalapp.Position, limit int) ([]journalapp.SourceEvent, error) {
	rows, err := s.db.Query(ctx, `
		SELECT e.xid::text, e.seq, e.at, e.type, e.session_id, e.workflow_id, coalesce(e.execution_id::text, ''), e.node_id,
		       e.actor, `+eventChannel+`, e.data
		  FROM events e
		  LEFT JOIN commands c ON e.type IN ('CommandAccepted', 'CommandApplied', 'CommandRejected')
		       AND c.command_id = CASE WHEN e.data->>'commandId' ~ '^[0-9a-fA-F-]{36}$' THEN (e.data->>'commandId')::uuid END
		 WHERE e.xid < pg_snapshot_xmin(pg_current_snapshot())
		   AND (e.xid, e.seq) > ($1::text::xid8, $2)
		 ORDER BY e.xid, e.seq
		 LIMIT $3`, strconv.FormatUint(after.XID, 10), after.Seq, limit)
	if err != nil {
		return nil, translate(err)
	}
	defer rows.Close()
	var out []journalapp.SourceEvent
	for rows.Next() {
		var e journalapp.SourceEvent
		var xid string
		var data []byte
		if err := rows.Scan(&xid, &e.Seq, &e.At, &e.Type, &e.SessionID, &e.WorkflowID, &e.ExecutionID, &e.NodeID,
			&e.Actor, &e.Channel, &data); err != nil {
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

// Journaled returns the source seqs among seqs that already have a record.
func (s *JournalStore) Journaled(ctx context.Context, seqs []int64) (map[int64]bool, error) {
	rows, err := s.db.Query(ctx, `SELECT source_seq FROM journal_records WHERE source_seq = ANY($1::bigint[])`, seqs)
	if err != nil {
		return nil, translate(err)
	}
	return int64Set(rows)
}

// LockTips takes a transaction-scoped advisory lock per execution, in the
// order given (callers sort), and reads each journal's tip.
func (s *JournalStore) LockTips(ctx context.Context, ids []string) (map[string]journalapp.Tip, error) {
	if _, err := s.db.Exec(ctx, `
		SELECT count(pg_advisory_xact_lock(hashtextextended('yukta.journal:' || t.id, 0)))
		  FROM unnest($1::text[]) WITH ORDINALITY AS t(id, ord)`, ids); err != nil {
		return nil, translate(err)
	}
	rows, err := s.db.Query(ctx, `
		SELECT t.id, coalesce(j.sequence, 0), coalesce(j.digest, ''),
		       EXISTS (SELECT 1 FROM journal_checkpoints c WHERE c.execution_id = t.id::uuid)
		  FROM unnest($1::text[]) AS t(id)
		  LEFT JOIN LATERAL (SELECT r.sequence, r.digest FROM journal_records r
		                      WHERE r.execution_id = t.id::uuid ORDER BY r.sequence DESC LIMIT 1) j ON true`, ids)
	if err != nil {
		return nil, translate(err)
	}
	defer rows.Close()
	out := make(map[string]journalapp.Tip, len(ids))
	for rows.Next() {
		var id string
		var t journalapp.Tip
		if err := rows.Scan(&id, &t.Sequence, &t.Digest, &t.Settled); err != nil {
			return nil, translate(err)
		}
		out[id] = t
	}
	return out, translate(rows.Err())
}

// Append inserts records in one statement.
func (s *JournalStore) Append(ctx context.Context, records []journalapp.NewRecord) error {
	n := len(records)
	ids, sids, kinds, digests, lines := make([]string, n), make([]string, n), make([]string, n), make([]string, n), make([]string, n)
	seqs, sources := make([]int64, n), make([]int64, n)
	for i, r := range records {
		ids[i], seqs[i], sids[i], kinds[i], sources[i], digests[i], lines[i] =
			r.Record.ExecutionID, r.Record.Sequence, r.SessionID, string(r.Record.Kind), r.SourceSeq, r.Record.Digest, string(r.Line)
	}
	_, err := s.db.Exec(ctx, `
		INSERT INTO journal_records (execution_id, sequence, session_id, kind, source_seq, digest, line)
		SELECT t.id, t.seq, t.sid, t.kind, nullif(t.src, 0), t.digest, t.line
		  FROM unnest($1::uuid[], $2::bigint[], $3::text[], $4::text[], $5::bigint[], $6::text[], $7::text[])
		       AS t(id, seq, sid, kind, src, digest, line)`, ids, seqs, sids, kinds, sources, digests, lines)
	return translate(err)
}

// AddCheckpoints inserts signed checkpoints.
func (s *JournalStore) AddCheckpoints(ctx context.Context, cps []journal.Checkpoint, pub ed25519.PublicKey) error {
	n := len(cps)
	ids, digests, sigs := make([]string, n), make([]string, n), make([][]byte, n)
	seqs := make([]int64, n)
	for i, c := range cps {
		ids[i], seqs[i], digests[i], sigs[i] = c.ExecutionID, c.Sequence, c.Digest, c.Signature
	}
	_, err := s.db.Exec(ctx, `
		INSERT INTO journal_checkpoints (execution_id, sequence, digest, signature, public_key)
		SELECT t.id, t.seq, t.digest, t.sig, $5 FROM unnest($1::uuid[], $2::bigint[], $3::text[], $4::bytea[]) AS t(id, seq, digest, sig)`,
		ids, seqs, digests, sigs, []byte(pub))
	return translate(err)
}

// SetCursor moves the observer's position.
func (s *JournalStore) SetCursor(ctx context.Context, p journalapp.Position) error {
	_, err := s.db.Exec(ctx, `UPDATE journal_cursor SET xid = $1::text::xid8, seq = $2 WHERE id = 1`, strconv.FormatUint(p.XID, 10), p.Seq)
	return translate(err)
}

// maxBehind caps the lag count, so a long outage costs a bounded scan.
const maxBehind = 10_000_000

// Behind counts the events after a position.
func (s *JournalStore) Behind(ctx context.Context, p journalapp.Position) (int64, error) {
	var n int64
	err := s.db.QueryRow(ctx, `SELECT count(*) FROM (SELECT 1 FROM events WHERE (xid, seq) > ($1::text::xid8, $2) LIMIT $3) s`,
		strconv.FormatUint(p.XID, 10), p.Seq, maxBehind).Scan(&n)
	return n, translate(err)
}

// JournalReader reads journals on the pool.
type JournalReader struct{ pool *pgxpool.Pool }

// NewJournalReader returns the reader.
func NewJournalReader(pool *pgxpool.Pool) *JournalReader { return &JournalReader{pool: pool} }

var _ journalapp.JournalReader = (*JournalReader)(nil)

// Journal reads an execution's records and its latest checkpoint. The
// execution must belong to the session, as the executions table, the
// outbox or (for an execution deleted with its session) its journal says.
func (r *JournalReader) Journal(ctx context.Context, sessionID, executionID string) (journalapp.StoredJournal, error) {
	var j journalapp.StoredJournal
	if !execution.ValidID(executionID) {
		return j, executionNotFound(executionID)
	}
	var known bool
	if err := r.pool.QueryRow(ctx, `
		SELECT EXISTS (SELECT 1 FROM executions WHERE execution_id = $1 AND session_id = $2)
		    OR EXISTS (SELECT 1 FROM journal_records WHERE execution_id = $1 AND session_id = $2)
		    OR EXISTS (SELECT 1 FROM events WHERE execution_id = $1 AND session_id = $2)`,
		executionID, sessionID).Scan(&known); err != nil {
		return j, translate(err)
	}
	if !known {
		return j, notFoundOrDeleted(ctx, r.pool, sessionID, executionID, executionNotFound(executionID))
	}
	rows, err := r.pool.Query(ctx, `SELECT line FROM journal_records WHERE execution_id = $1 ORDER BY sequence`, executionID)
	if err != nil {
		return j, translate(err)
	}
	lines, err := pgx.CollectRows(rows, pgx.RowTo[[]byte])
	if err != nil {
		return j, translate(err)
	}
	j.Lines = lines
	var pub []byte
	err = r.pool.QueryRow(ctx, `
		SELECT execution_id::text, sequence, digest, signature, public_key FROM journal_checkpoints
		 WHERE execution_id = $1 ORDER BY sequence DESC LIMIT 1`, executionID).
		Scan(&j.Checkpoint.ExecutionID, &j.Checkpoint.Sequence, &j.Checkpoint.Digest, &j.Checkpoint.Signature, &pub)
	if err != nil && err != pgx.ErrNoRows {
		return j, translate(err)
	}
	// The key that signed it, by id: the export line names it.
	j.Checkpoint.KeyID = journal.KeyID(pub)
	return j, nil
}

// Lag counts the execution's events after the observer's position.
func (r *JournalReader) Lag(ctx context.Context, executionID string) (int64, error) {
	var n int64
	err := r.pool.QueryRow(ctx, `
		SELECT count(*) FROM events e
		 WHERE e.execution_id = $1 AND (e.xid, e.seq) > (SELECT c.xid, c.seq FROM journal_cursor c WHERE c.id = 1)`, executionID).Scan(&n)
	return n, translate(err)
}
