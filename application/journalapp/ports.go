package journalapp

import (
	"context"
	"crypto/ed25519"
	"time"

	"github.com/yukta/yukta/domain/journal"
)

// Position is a place in the outbox: events are consumed in (XID, Seq) order,
// the order the outbox readers share (only transactions older than every
// running one are read, so no event can appear behind a position).
type Position struct {
	XID uint64
	Seq int64
}

// SourceEvent is one outbox event as the observer reads it.
type SourceEvent struct {
	Position
	At          time.Time
	Type        string
	SessionID   string
	WorkflowID  string
	ExecutionID string // empty: not about one execution, not journaled
	NodeID      string
	Actor       string
	// Channel is the door a command came through (rest, cli, mcp), when the
	// event records one.
	Channel string
	Data    map[string]any
}

// NewRecord is a record to append, with where it came from.
type NewRecord struct {
	Record    journal.Record
	SessionID string
	SourceSeq int64
	// Line is the record's canonical JSON, as stored and exported.
	Line []byte
}

// AuditSink hears every journal record the observer appends: a copy of the
// journal kept outside Yukta (a SIEM, a WORM bucket, a file). Audit is
// called inside the observer's round, after the records are stored and
// before the round commits, with the round's records in journal order
// (per execution, by sequence). An error rolls the whole round back and
// the observer retries it with its backoff, so the journal never runs
// ahead of what the sink took: every record reaches the sink at least once,
// and a record heard again after a failed round is the same record (same
// execution, sequence and digest), which is how a sink drops repeats. A
// slow sink slows the journal (its lag shows in yukta_journal_lag_events),
// and the round holds its transaction meanwhile: keep Audit short and
// honour ctx.
type AuditSink interface {
	Audit(ctx context.Context, records []AuditRecord) error
}

// AuditRecord is one journal record as an AuditSink hears it.
type AuditRecord struct {
	SessionID   string
	ExecutionID string
	Sequence    int64
	// Kind is "event" or "decision".
	Kind   string
	Digest string
	// Line is the record's canonical JSON, byte for byte the line the
	// journal export has, so `yukta journal verify` checks a copy.
	Line []byte
}

// Tip is the end of one execution's journal.
type Tip struct {
	Sequence int64  // 0 when the journal is empty
	Digest   string // "" when the journal is empty
	// Settled: a checkpoint has been signed, so every later append is
	// signed again.
	Settled bool
}

// ObserverStore is what the observer does inside one transaction.
type ObserverStore interface {
	// LockCursor locks the observer's position and returns it; ok is false
	// when another observer holds it (another instance is journaling).
	LockCursor(ctx context.Context) (pos Position, ok bool, err error)
	// Pending returns up to limit committed events after pos, in order.
	Pending(ctx context.Context, after Position, limit int) ([]SourceEvent, error)
	// Journaled returns which of these source event seqs already have a
	// record.
	Journaled(ctx context.Context, sourceSeqs []int64) (map[int64]bool, error)
	// LockTips serializes appends per execution (held until the transaction
	// ends) and returns each journal's tip.
	LockTips(ctx context.Context, executionIDs []string) (map[string]Tip, error)
	// Append stores records; a sequence or source seq already stored fails.
	Append(ctx context.Context, records []NewRecord) error
	// AddCheckpoints stores signed checkpoints with the key that signed them.
	AddCheckpoints(ctx context.Context, cps []journal.Checkpoint, publicKey ed25519.PublicKey) error
	// KeyStatus is the registry's status of a signing key, read under a
	// share lock held until the transaction ends (so a rotation waits for a
	// round that signs with the key it retires); "" when it is not
	// registered.
	KeyStatus(ctx context.Context, keyID string) (KeyStatus, error)
	// SetCursor moves the observer's position.
	SetCursor(ctx context.Context, pos Position) error
	// Behind counts the events after pos (committed or not yet visible).
	Behind(ctx context.Context, pos Position) (int64, error)
}

// Transactor runs fn in one transaction: everything fn appends commits
// with the cursor move, or nothing does.
type Transactor interface {
	WithinTx(ctx context.Context, fn func(ctx context.Context, s ObserverStore) error) error
}

// StoredJournal is one execution's journal as stored.
type StoredJournal struct {
	// Lines are the records' canonical JSON, in sequence order.
	Lines [][]byte
	// Checkpoint is the latest signed checkpoint; zero when none.
	Checkpoint journal.Checkpoint
}

// JournalReader reads journals outside transactions.
type JournalReader interface {
	// Journal returns the journal of an execution of a session. An execution
	// the session never had (and no journal names) is fault.ErrNotFound; a
	// known execution the observer has not reached yet has an empty journal.
	Journal(ctx context.Context, sessionID, executionID string) (StoredJournal, error)
	// Lag counts the execution's events the observer has not consumed yet.
	Lag(ctx context.Context, executionID string) (int64, error)
}

// KeyStatus says whether a registered key signs: one key is current, the
// ones before it retired.
type KeyStatus string

// The key statuses.
const (
	KeyCurrent KeyStatus = "current"
	KeyRetired KeyStatus = "retired"
)

// RegisteredKey is a checkpoint signing key of the registry the instances on
// one database share (public keys only).
type RegisteredKey struct {
	KeyID        string
	PublicKey    ed25519.PublicKey
	Status       KeyStatus
	RegisteredAt time.Time
	RetiredAt    time.Time // zero while current
}

// KeyRegistry is the signing key registry.
type KeyRegistry interface {
	// Keys lists every registered key: the current one first, then the
	// retired ones, latest retired first.
	Keys(ctx context.Context) ([]RegisteredKey, error)
	// WithinKeyLock runs fn in one transaction holding the registry's
	// lock, so registrations on several instances take turns.
	WithinKeyLock(ctx context.Context, fn func(ctx context.Context, tx KeyRegistryTx) error) error
}

// KeyRegistryTx changes the registry inside WithinKeyLock.
type KeyRegistryTx interface {
	Keys(ctx context.Context) ([]RegisteredKey, error)
	// Add registers a key (as current or retired).
	Add(ctx context.Context, k RegisteredKey) error
	// Retire marks the current key keyID retired at at.
	Retire(ctx context.Context, keyID string, at time.Time) error
}
