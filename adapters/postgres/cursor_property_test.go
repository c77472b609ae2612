package postgres_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/yukta/yukta/adapters/postgres"
	"github.com/yukta/yukta/adapters/postgres/pgtest"
	"github.com/yukta/yukta/application/executionapp"
	"github.com/yukta/yukta/application/supervisorapp"
	"github.com/yukta/yukta/domain/supervisor"
)

// cursorPropertySteps is how many random steps TestCursorProperty takes
// (issue 21: 10,000).
const cursorPropertySteps = 10_000

// cursorPropertyOpen caps the transactions left open at once: each holds
// every later commit out of readers' sight until it ends.
const cursorPropertyOpen = 3

// propEvent is one event of the model: where it is and what became of it.
type propEvent struct {
	pos       supervisor.Position
	committed bool
	deleted   bool
	delivered bool
}

// propWorld is the model TestCursorProperty checks the outbox against.
type propWorld struct {
	t      *testing.T
	seed   uint64
	step   int
	ctx    context.Context
	pool   *pgxpool.Pool
	reader *postgres.Reader
	store  *postgres.SupervisorRuntime
	fence  supervisorapp.Fence
	events map[int64]*propEvent // by seq
	open   []propTx
	cursor supervisor.Position // the reader's
	saved  supervisor.Position // the store's, as last read
	counts map[string]int
}

// propTx is a transaction left open, with the seqs it wrote.
type propTx struct {
	tx   pgx.Tx
	seqs []int64
}

func (w *propWorld) fail(format string, args ...any) {
	w.t.Helper()
	w.t.Fatalf("seed %d (rerun with YUKTA_CURSOR_SEED=%d), step %d: %s", w.seed, w.seed, w.step, fmt.Sprintf(format, args...))
}

// TestCursorProperty drives the outbox and a supervisor's stored cursor
// through random interleavings of appends (some in transactions left open
// and committed later, out of seq order), deletions of arbitrary events
// (as retention deletes), reads after the cursor and cursor saves, and
// checks after every step: no read after a cursor returns an event at or
// before it; no event committed and not deleted is skipped; the stored
// cursor never decreases, and a direct attempt to store a smaller one (by
// SaveCursor or by SQL) is refused and changes nothing.
func TestCursorProperty(t *testing.T) {
	t.Parallel()
	seed := uint64(time.Now().UnixNano())
	if s := os.Getenv("YUKTA_CURSOR_SEED"); s != "" {
		var err error
		if seed, err = strconv.ParseUint(s, 10, 64); err != nil {
			t.Fatalf("YUKTA_CURSOR_SEED=%q: %v", s, err)
		}
	}
	rng := rand.New(rand.NewPCG(seed, seed^0x5eed))
	pool := pgtest.NewPool(t)
	ctx := t.Context()
	store := postgres.NewSupervisorRuntime(pool)
	fence, ok, err := store.Acquire(ctx, "prop", "prop-test", time.Hour)
	if err != nil || !ok {
		t.Fatalf("acquire the lease: %v %v", ok, err)
	}
	w := &propWorld{t: t, seed: seed, ctx: ctx, pool: pool, reader: postgres.NewReader(pool), store: store, fence: fence,
		events: map[int64]*propEvent{}, counts: map[string]int{}}
	defer func() {
		for _, o := range w.open {
			_ = o.tx.Rollback(context.WithoutCancel(ctx))
		}
	}()
	if err := store.SaveCursor(ctx, fence, supervisorapp.Cursor{Generation: "g1"}); err != nil {
		t.Fatal(err)
	}
	for w.step = 0; w.step < cursorPropertySteps; w.step++ {
		switch r := rng.IntN(100); {
		case r < 25:
			w.append(rng)
		case r < 35:
			w.openTx(rng)
		case r < 47:
			w.commitOpen(rng)
		case r < 60:
			w.delete(rng)
		case r < 85:
			w.read(rng)
		case r < 93:
			w.save()
		default:
			w.saveBehind(rng)
		}
	}
	// Everything open commits; a read to the end then has every event
	// that was committed and not deleted.
	for len(w.open) > 0 {
		w.commitOpen(rng)
	}
	// Another test's transaction (the cluster is shared) may still hide
	// the last commits for a moment.
	for deadline := time.Now().Add(30 * time.Second); w.unread() > 0 && time.Now().Before(deadline); {
		if w.read(rng) == 0 {
			time.Sleep(10 * time.Millisecond)
		}
	}
	for seq, e := range w.events {
		if e.committed && !e.deleted && !e.delivered {
			w.fail("event %d (%+v) was committed, never deleted and never read", seq, e.pos)
		}
	}
	t.Logf("seed %d: %v; %d events, reader at %+v, stored cursor %+v", seed, w.counts, len(w.events), w.cursor, w.saved)
}

// insert writes n events in tx and returns their seqs.
func (w *propWorld) insert(tx pgx.Tx, n int) []int64 {
	w.t.Helper()
	var seqs []int64
	for range n {
		var seq int64
		var xid string
		err := tx.QueryRow(w.ctx, `INSERT INTO events (at, type, session_id, actor) VALUES (clock_timestamp(), 'Prop', 'prop', 'test')
			RETURNING seq, xid::text`).Scan(&seq, &xid)
		if err != nil {
			w.fail("insert: %v", err)
		}
		x, _ := strconv.ParseUint(xid, 10, 64)
		w.events[seq] = &propEvent{pos: supervisor.Position{XID: x, Seq: seq}}
		seqs = append(seqs, seq)
	}
	return seqs
}

func (w *propWorld) begin() pgx.Tx {
	tx, err := w.pool.Begin(w.ctx)
	if err != nil {
		w.fail("begin: %v", err)
	}
	return tx
}

func (w *propWorld) commit(tx pgx.Tx, seqs []int64) {
	if err := tx.Commit(w.ctx); err != nil {
		w.fail("commit: %v", err)
	}
	for _, s := range seqs {
		w.events[s].committed = true
	}
}

// append commits 1 to 3 events in one transaction.
func (w *propWorld) append(rng *rand.Rand) {
	tx := w.begin()
	w.commit(tx, w.insert(tx, 1+rng.IntN(3)))
	w.counts["append"]++
}

// openTx leaves a transaction with events open, to commit later: its xid
// is older than the commits that follow it, and its seqs may be higher or
// lower than theirs.
func (w *propWorld) openTx(rng *rand.Rand) {
	if len(w.open) >= cursorPropertyOpen {
		w.commitOpen(rng)
		return
	}
	tx := w.begin()
	if rng.IntN(2) == 0 {
		// Take an xid first and write later, so this transaction's seqs
		// come after those of transactions that began after it.
		if _, err := tx.Exec(w.ctx, `SELECT pg_current_xact_id()`); err != nil {
			w.fail("xid: %v", err)
		}
		w.open = append(w.open, propTx{tx: tx})
		w.counts["open-late-write"]++
		return
	}
	w.open = append(w.open, propTx{tx: tx, seqs: w.insert(tx, 1+rng.IntN(2))})
	w.counts["open"]++
}

// commitOpen writes into (sometimes) and commits one open transaction,
// chosen at random: commits come out of xid and seq order.
func (w *propWorld) commitOpen(rng *rand.Rand) {
	if len(w.open) == 0 {
		w.append(rng)
		return
	}
	i := rng.IntN(len(w.open))
	o := w.open[i]
	w.open = slices.Delete(w.open, i, i+1)
	if len(o.seqs) == 0 || rng.IntN(3) == 0 {
		o.seqs = append(o.seqs, w.insert(o.tx, 1+rng.IntN(2))...)
	}
	w.commit(o.tx, o.seqs)
	w.counts["commit-open"]++
}

// delete deletes one committed event: often the one under the reader's
// cursor, or the newest (as retention deletes a whole run's events, the
// cursor's included), else any.
func (w *propWorld) delete(rng *rand.Rand) {
	var live []int64
	for s, e := range w.events {
		if e.committed && !e.deleted {
			live = append(live, s)
		}
	}
	if len(live) == 0 {
		return
	}
	slices.Sort(live)
	seq := live[rng.IntN(len(live))]
	switch rng.IntN(3) {
	case 0:
		if e, ok := w.events[w.cursor.Seq]; ok && !e.deleted && e.committed {
			seq = w.cursor.Seq
		}
	case 1:
		seq = live[len(live)-1]
	}
	tag, err := w.pool.Exec(w.ctx, `DELETE FROM events WHERE seq = $1`, seq)
	if err != nil || tag.RowsAffected() != 1 {
		w.fail("delete event %d: %v (%d rows)", seq, err, tag.RowsAffected())
	}
	w.events[seq].deleted = true
	w.counts["delete"]++
}

// read reads after the reader's cursor and checks what comes back.
func (w *propWorld) read(rng *rand.Rand) int {
	limit := 1 + rng.IntN(8)
	evs, err := w.reader.Events(w.ctx, executionapp.EventQuery{SessionID: "prop", AfterXID: w.cursor.XID, AfterSeq: w.cursor.Seq, Limit: limit})
	if err != nil {
		w.fail("read: %v", err)
	}
	prev := w.cursor
	for _, e := range evs {
		p := supervisor.Position{XID: e.XID, Seq: e.Seq}
		m, ok := w.events[e.Seq]
		switch {
		case !ok:
			w.fail("read an event %+v the test never wrote", p)
		case !prev.Before(p):
			w.fail("read after %+v returned %+v, at or before it (reader cursor %+v)", prev, p, w.cursor)
		case m.pos != p:
			w.fail("event %d read at %+v, written at %+v", e.Seq, p, m.pos)
		case m.delivered:
			w.fail("event %+v delivered twice", p)
		case !m.committed:
			w.fail("event %+v read before its transaction committed", p)
		case m.deleted:
			w.fail("event %+v read after it was deleted", p)
		}
		m.delivered = true
		prev = p
	}
	w.cursor = prev
	// Nothing at or before the cursor that was committed and still exists
	// went unread: a skipped event would never come.
	for seq, e := range w.events {
		if e.committed && !e.deleted && !e.delivered && !w.cursor.Before(e.pos) {
			w.fail("event %d at %+v was skipped: the reader is at %+v", seq, e.pos, w.cursor)
		}
	}
	w.counts["read"]++
	return len(evs)
}

// stored reads the stored cursor and checks it never went down.
func (w *propWorld) stored() supervisor.Position {
	c, ok, err := w.store.Cursor(w.ctx, "prop")
	if err != nil || !ok {
		w.fail("read the stored cursor: %v %v", ok, err)
	}
	if c.Pos.Before(w.saved) {
		w.fail("the stored cursor went down from %+v to %+v", w.saved, c.Pos)
	}
	w.saved = c.Pos
	return c.Pos
}

// save stores the reader's cursor, which never moves back: accepted.
func (w *propWorld) save() {
	if err := w.store.SaveCursor(w.ctx, w.fence, supervisorapp.Cursor{Generation: "g1", Pos: w.cursor}); err != nil {
		w.fail("save the cursor at %+v (stored %+v): %v", w.cursor, w.saved, err)
	}
	if got := w.stored(); got != w.cursor {
		w.fail("saved %+v, stored %+v", w.cursor, got)
	}
	w.counts["save"]++
}

// saveBehind tries to store a position before the stored one, by
// SaveCursor and by SQL: both refused, nothing changes.
func (w *propWorld) saveBehind(rng *rand.Rand) {
	was := w.stored()
	if was.IsZero() {
		w.save()
		return
	}
	behind := supervisor.Position{XID: was.XID, Seq: was.Seq - 1 - rng.Int64N(3)}
	if rng.IntN(2) == 0 {
		behind = supervisor.Position{XID: was.XID - 1 - rng.Uint64N(min(was.XID-1, 5)+1), Seq: was.Seq + rng.Int64N(10)}
	}
	err := w.store.SaveCursor(w.ctx, w.fence, supervisorapp.Cursor{Generation: "g1", Pos: behind})
	if !errors.Is(err, supervisorapp.ErrCursorBehind) {
		w.fail("save %+v behind the stored %+v: got %v, want ErrCursorBehind", behind, was, err)
	}
	_, err = w.pool.Exec(w.ctx, `UPDATE supervisor_cursors SET xid = $2::text::xid8, seq = $3 WHERE supervisor_id = $1`,
		"prop", strconv.FormatUint(behind.XID, 10), behind.Seq)
	if err == nil {
		w.fail("an UPDATE moving the stored cursor from %+v back to %+v was let through", was, behind)
	}
	if got := w.stored(); got != was {
		w.fail("a refused move back changed the stored cursor from %+v to %+v", was, got)
	}
	w.counts["save-behind"]++
}

// unread counts the events committed, not deleted and not read yet.
func (w *propWorld) unread() int {
	n := 0
	for _, e := range w.events {
		if e.committed && !e.deleted && !e.delivered {
			n++
		}
	}
	return n
}
