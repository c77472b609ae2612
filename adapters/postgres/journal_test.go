package postgres_test

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	mrand "math/rand/v2"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/yukta/yukta/adapters/postgres"
	"github.com/yukta/yukta/adapters/postgres/pgtest"
	"github.com/yukta/yukta/application/executionapp"
	"github.com/yukta/yukta/application/journalapp"
	"github.com/yukta/yukta/domain/fault"
	"github.com/yukta/yukta/domain/journal"
)

// journalFixture is a database with an observer and the journal read use
// cases on it.
type journalFixture struct {
	pool    *pgxpool.Pool
	obs     *journalapp.Observer
	key     ed25519.PrivateKey
	verify  *journalapp.VerifyJournal
	export  *journalapp.ExportJournal
	project *journalapp.ProjectJournal
	events  executionapp.Transactor
}

func newJournalFixture(t *testing.T, batch int) *journalFixture {
	t.Helper()
	pool := pgtest.NewPool(t)
	_, key, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	obs, err := journalapp.NewObserver(postgres.NewJournalTransactor(pool), key, time.Now, journalapp.ObserverConfig{Batch: batch}, nil)
	if err != nil {
		t.Fatal(err)
	}
	keys := registerJournalKey(t, pool, obs.PublicKey())
	r := postgres.NewJournalReader(pool)
	return &journalFixture{pool: pool, obs: obs, key: key, verify: journalapp.NewVerifyJournal(r, obs.PublicKey(), keys),
		export: journalapp.NewExportJournal(r), project: journalapp.NewProjectJournal(r),
		events: postgres.NewExecutionTransactor(pool)}
}

// registerJournalKey registers an observer's key as the database's current
// one, as an instance does when it starts (an observer signs only with the
// current key).
func registerJournalKey(t testing.TB, pool *pgxpool.Pool, pub ed25519.PublicKey) *postgres.JournalKeys {
	t.Helper()
	keys := postgres.NewJournalKeys(pool)
	if _, err := journalapp.NewRegisterKey(keys, journalapp.KeyHint{}, time.Now).Handle(context.Background(), pub, false); err != nil {
		t.Fatal(err)
	}
	return keys
}

// emit writes events to the outbox in one transaction, as the engine does.
func (f *journalFixture) emit(t testing.TB, evs []executionapp.Event) {
	t.Helper()
	err := f.events.WithinTx(context.Background(), func(ctx context.Context, s executionapp.Stores) error {
		return s.Events.Append(ctx, evs)
	})
	if err != nil {
		t.Fatal(err)
	}
}

// drain steps the observer until no event is left behind it. Other tests
// share the cluster, and their open transactions hold the outbox horizon
// back for a moment, so a round may find nothing yet to read.
func (f *journalFixture) drain(t testing.TB) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for time.Now().Before(deadline) {
		res, err := f.obs.Step(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		if res.Events == 0 && !res.Busy && f.obs.Lag() == 0 {
			return
		}
		if res.Events == 0 {
			time.Sleep(5 * time.Millisecond)
		}
	}
	t.Fatalf("the observer did not catch up within 60 s (lag %d)", f.obs.Lag())
}

const journalSession = "jsession"

// runEvents is the outbox history of one settled execution: started, three
// nodes running and succeeding, an operator PAUSE and RESUME with their
// answers (decisions), and the end. Bodies carry unicode and numbers of
// several forms so the canonical encoding is exercised.
func runEvents(execID string, i int) []executionapp.Event {
	at := time.Date(2026, 11, 29, 10, 0, 0, 0, time.UTC).Add(time.Duration(i) * time.Millisecond)
	ev := func(typ, node string, data map[string]any) executionapp.Event {
		at = at.Add(1234567 * time.Nanosecond)
		return executionapp.Event{Type: typ, At: at, SessionID: journalSession, WorkflowID: "w", ExecutionID: execID,
			NodeID: node, Actor: "anonymous", Data: data}
	}
	out := []executionapp.Event{ev("ExecutionStarted", "", map[string]any{"trigger": "manual", "payload": map[string]any{"n": i, "note": "héllo ✓ \u2028", "f": 0.1}})}
	for _, n := range []string{"start", "mid", "out"} {
		out = append(out, ev("NodeStatusChanged", n, map[string]any{"from": "PENDING", "to": "RUNNING", "received": 1, "emitted": 0}))
		if n == "mid" {
			cmd := fmt.Sprintf("0193a000-0000-7000-8000-%012d", i)
			out = append(out,
				ev("CommandAccepted", "", map[string]any{"commandId": cmd, "scope": "execution", "action": "PAUSE", "channel": "cli", "reason": "look at it"}),
				ev("CommandApplied", "", map[string]any{"commandId": cmd, "message": "execution paused"}))
		}
		out = append(out, ev("NodeStatusChanged", n, map[string]any{"from": "RUNNING", "to": "SUCCESS", "received": 1, "emitted": 1}))
	}
	return append(out, ev("ExecutionStatusChanged", "", map[string]any{"from": "RUNNING", "to": "SUCCESS"}))
}

func newExecID(i int) string { return fmt.Sprintf("0193b000-0000-7000-8000-%012d", i) }

// emitRuns writes n executions' histories, interleaved across transactions
// the way concurrent runs commit, and returns their ids.
func (f *journalFixture) emitRuns(t testing.TB, first, n int) []string {
	t.Helper()
	ids := make([]string, n)
	hist := make([][]executionapp.Event, n)
	for i := range n {
		ids[i] = newExecID(first + i)
		hist[i] = runEvents(ids[i], first+i)
	}
	for step := 0; ; step++ {
		var batch []executionapp.Event
		for i := range hist {
			lo, hi := 3*step, min(3*step+3, len(hist[i]))
			if lo < hi {
				batch = append(batch, hist[i][lo:hi]...)
			}
		}
		if len(batch) == 0 {
			return ids
		}
		for len(batch) > 0 {
			k := min(len(batch), 500)
			f.emit(t, batch[:k])
			batch = batch[k:]
		}
	}
}

func (f *journalFixture) verifyOne(t testing.TB, id string) journalapp.Verification {
	t.Helper()
	v, err := f.verify.Handle(context.Background(), journalSession, id)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// TestObserverJournalsTheOutbox: every event of every execution becomes one
// record, in order, gapless, as an event or a decision with actor, channel
// and cause; each settled journal is VALID under a signed checkpoint.
func TestObserverJournalsTheOutbox(t *testing.T) {
	t.Parallel()
	f := newJournalFixture(t, 7) // a small batch: executions span many rounds
	ids := f.emitRuns(t, 0, 20)
	if v := f.verifyOne(t, ids[0]); v.Result.Result != journal.VerdictUnanchored || v.LagEvents != 10 || v.Sequence != 0 {
		t.Fatalf("before the observer ran: %+v, want UNANCHORED with 10 events of lag", v)
	}
	f.drain(t)
	if lag := f.obs.Lag(); lag != 0 {
		t.Fatalf("Lag() = %d after catching up, want 0", lag)
	}
	for _, id := range ids {
		v := f.verifyOne(t, id)
		if v.Result.Result != journal.VerdictValid || v.Sequence != 10 || v.LagEvents != 0 {
			t.Fatalf("%s: %+v, want VALID at 10", id, v)
		}
	}
	lines, err := f.export.Handle(context.Background(), journalSession, ids[3])
	if err != nil {
		t.Fatal(err)
	}
	if len(lines) != 11 || !journal.IsCheckpointLine(lines[10]) {
		t.Fatalf("export has %d lines, want 10 records and a checkpoint", len(lines))
	}
	var records []journal.Record
	for _, l := range lines[:10] {
		r, err := journal.ParseRecord(l)
		if err != nil {
			t.Fatal(err)
		}
		records = append(records, r)
	}
	want := runEvents(ids[3], 3)
	for i, r := range records {
		body := r.Event
		if r.Kind == journal.KindDecision {
			body = r.Decision
		}
		if body["type"] != want[i].Type || r.Sequence != int64(i+1) {
			t.Fatalf("record %d is %s %v, want %s", r.Sequence, r.Kind, body["type"], want[i].Type)
		}
		isDecision := strings.HasPrefix(want[i].Type, "Command")
		if isDecision != (r.Kind == journal.KindDecision) {
			t.Fatalf("record %d (%s) has kind %s", r.Sequence, want[i].Type, r.Kind)
		}
		if isDecision {
			cause, _ := body["cause"].(map[string]any)
			if body["actor"] != "anonymous" || cause["commandId"] == nil || cause["reason"] == nil {
				t.Fatalf("decision %d lacks actor or cause: %v", r.Sequence, body)
			}
			if want[i].Type == "CommandAccepted" && body["channel"] != "cli" {
				t.Fatalf("decision %d channel = %v, want cli", r.Sequence, body["channel"])
			}
		}
	}
	res := journal.VerifyExport(lines, f.obs.PublicKey())
	if res.Result != journal.VerdictValid {
		t.Fatalf("offline verification of the export: %+v", res)
	}
	p, err := f.project.Handle(context.Background(), journalSession, ids[3])
	if err != nil {
		t.Fatal(err)
	}
	if p.Run.Status != journal.StatusDone || len(p.Nodes) != 3 || p.Run.Decisions.Total != 2 || p.ChainTip != records[9].Digest {
		t.Fatalf("projection: %+v", p)
	}
	if _, err := f.verify.Handle(context.Background(), "other-session", ids[3]); !errors.Is(err, fault.ErrNotFound) {
		t.Fatalf("another session's journal: got %v, want not found", err)
	}
}

// TestObserverReplayIsNoOp: rewinding the position re-reads the outbox and
// appends nothing; the journals stay VALID.
func TestObserverReplayIsNoOp(t *testing.T) {
	t.Parallel()
	f := newJournalFixture(t, 50)
	ids := f.emitRuns(t, 0, 10)
	f.drain(t)
	before := countRecords(t, f.pool)
	if _, err := f.pool.Exec(context.Background(), `UPDATE journal_cursor SET xid = '0', seq = 0`); err != nil {
		t.Fatal(err)
	}
	f.drain(t)
	if after := countRecords(t, f.pool); after != before {
		t.Fatalf("replay appended: %d records, then %d", before, after)
	}
	var checkpoints int
	_ = f.pool.QueryRow(context.Background(), `SELECT count(*) FROM journal_checkpoints`).Scan(&checkpoints)
	if checkpoints != len(ids) {
		t.Fatalf("%d checkpoints after a replay, want one per execution (%d)", checkpoints, len(ids))
	}
	for _, id := range ids {
		if v := f.verifyOne(t, id); v.Result.Result != journal.VerdictValid {
			t.Fatalf("%s after replay: %+v", id, v)
		}
	}
}

func countRecords(t testing.TB, pool *pgxpool.Pool) int {
	t.Helper()
	var n int
	if err := pool.QueryRow(context.Background(), `SELECT count(*) FROM journal_records`).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// TestJournalIsAppendOnly: the database refuses to change or remove a record
// or a checkpoint, whatever the statement.
func TestJournalIsAppendOnly(t *testing.T) {
	t.Parallel()
	f := newJournalFixture(t, 100)
	ids := f.emitRuns(t, 0, 1)
	f.drain(t)
	for _, stmt := range []string{
		`UPDATE journal_records SET line = line || ' ' WHERE sequence = 2`,
		`DELETE FROM journal_records WHERE sequence = 10`,
		`TRUNCATE journal_records`,
		`UPDATE journal_checkpoints SET sequence = 10`,
		`DELETE FROM journal_checkpoints`,
		`TRUNCATE journal_checkpoints`,
	} {
		_, err := f.pool.Exec(context.Background(), stmt)
		if err == nil || !strings.Contains(err.Error(), "append-only") {
			t.Errorf("%s: got %v, want refused as append-only", stmt, err)
		}
	}
	if v := f.verifyOne(t, ids[0]); v.Result.Result != journal.VerdictValid {
		t.Fatalf("after refused changes: %+v", v)
	}
}

// TestSettledJournalIsResigned: an event after the end (a command refused
// on a finished execution) grows the journal, and a new checkpoint covers it.
func TestSettledJournalIsResigned(t *testing.T) {
	t.Parallel()
	f := newJournalFixture(t, 100)
	ids := f.emitRuns(t, 0, 1)
	f.drain(t)
	cmd := "0193a000-0000-7000-8000-999999999999"
	f.emit(t, []executionapp.Event{
		{Type: "CommandAccepted", At: time.Now(), SessionID: journalSession, ExecutionID: ids[0], Actor: "ops", Data: map[string]any{"commandId": cmd, "action": "PAUSE", "channel": "rest"}},
		{Type: "CommandRejected", At: time.Now(), SessionID: journalSession, ExecutionID: ids[0], Actor: "ops", Data: map[string]any{"commandId": cmd, "message": "the execution has ended"}},
	})
	f.drain(t)
	v := f.verifyOne(t, ids[0])
	if v.Result.Result != journal.VerdictValid || v.Sequence != 12 {
		t.Fatalf("after a late command: %+v, want VALID at 12", v)
	}
}

// TestConcurrentObserversOneChain: four observers race while executions
// commit events; every journal is one gapless chain with no fork.
func TestConcurrentObserversOneChain(t *testing.T) {
	t.Parallel()
	f := newJournalFixture(t, 25)
	others := make([]*journalapp.Observer, 3)
	for i := range others {
		o, err := journalapp.NewObserver(postgres.NewJournalTransactor(f.pool), f.key, time.Now, journalapp.ObserverConfig{Batch: 13}, nil)
		if err != nil {
			t.Fatal(err)
		}
		others[i] = o
	}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	for _, o := range append(others, f.obs) {
		wg.Go(func() {
			for ctx.Err() == nil {
				if _, err := o.Step(ctx); err != nil && ctx.Err() == nil {
					t.Errorf("step: %v", err)
					return
				}
			}
		})
	}
	var ids []string
	var mu sync.Mutex
	var writers sync.WaitGroup
	for w := range 4 {
		writers.Go(func() {
			got := f.emitRuns(t, 1000*w, 25)
			mu.Lock()
			ids = append(ids, got...)
			mu.Unlock()
		})
	}
	writers.Wait()
	f.drain(t)
	cancel()
	wg.Wait()
	var forks int
	if err := f.pool.QueryRow(context.Background(), `
		SELECT count(*) FROM (SELECT execution_id FROM journal_records GROUP BY execution_id
		                       HAVING max(sequence) <> count(*) OR min(sequence) <> 1) s`).Scan(&forks); err != nil {
		t.Fatal(err)
	}
	if forks != 0 {
		t.Fatalf("%d journals with a gap or a fork", forks)
	}
	for _, id := range ids {
		if v := f.verifyOne(t, id); v.Result.Result != journal.VerdictValid || v.Sequence != 10 {
			t.Fatalf("%s: %+v", id, v)
		}
	}
}

// TestTamperingInTheDatabase applies each attack of the reliability plan
// (T22) to its own executions, directly in PostgreSQL with the append-only
// triggers switched off (an attacker who owns the database): a flipped
// byte, two records swapped, a middle record deleted, a forged record
// inserted (linked or not) are INVALID at the right sequence every time;
// a cut tail and a chain recomputed from a record on are never VALID. 1,000
// untouched journals all verify VALID.
func TestTamperingInTheDatabase(t *testing.T) {
	t.Parallel()
	f := newJournalFixture(t, 1000)
	const perAttack, clean = 60, 1000
	attacks := []string{"flip", "swap", "delete", "insert-linked", "insert-unlinked", "truncate", "truncate-and-drop-checkpoints", "recompute", "recompute-and-resign"}
	ids := f.emitRuns(t, 0, clean+perAttack*len(attacks))
	f.drain(t)

	falsePositives := 0
	for _, id := range ids[:clean] {
		if v := f.verifyOne(t, id); v.Result.Result != journal.VerdictValid {
			falsePositives++
			t.Errorf("clean journal %s: %+v", id, v)
		}
	}
	t.Logf("%d clean journals, %d false positives", clean, falsePositives)

	conn, err := pgx.Connect(context.Background(), f.pool.Config().ConnConfig.ConnString())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	if _, err := conn.Exec(context.Background(), `SET session_replication_role = replica`); err != nil { // triggers off
		t.Fatal(err)
	}
	_, attacker, _ := ed25519.GenerateKey(rand.Reader)
	rng := mrand.New(mrand.NewPCG(5, 22))
	const n = 10 // records per journal
	detected := map[string]int{}
	for a, attack := range attacks {
		for j := range perAttack {
			id := ids[clean+a*perAttack+j]
			exec := func(sql string, args ...any) {
				t.Helper()
				if _, err := conn.Exec(context.Background(), sql, args...); err != nil {
					t.Fatalf("%s on %s: %s: %v", attack, id, sql, err)
				}
			}
			var wantSeq int64 // 0: any INVALID or UNANCHORED will do, never VALID
			switch attack {
			case "flip":
				k := 1 + rng.IntN(n)
				var line string
				_ = conn.QueryRow(context.Background(), `SELECT line FROM journal_records WHERE execution_id = $1 AND sequence = $2`, id, k).Scan(&line)
				b := []byte(line)
				p := rng.IntN(len(b))
				for b[p] >= 0x80 { // keep the text valid UTF-8, as the column demands
					p = rng.IntN(len(b))
				}
				b[p] ^= 1 << rng.IntN(7)
				if b[p] == 0 {
					b[p] = ' '
				}
				exec(`UPDATE journal_records SET line = $3 WHERE execution_id = $1 AND sequence = $2`, id, k, string(b))
				wantSeq = int64(k)
			case "swap":
				x := 1 + rng.IntN(n-1)
				y := x + 1 + rng.IntN(n-x)
				exec(`UPDATE journal_records SET sequence = sequence + 1000000 WHERE execution_id = $1 AND sequence IN ($2, $3)`, id, x, y)
				exec(`UPDATE journal_records SET sequence = CASE WHEN sequence = $2::bigint + 1000000 THEN $3::bigint ELSE $2::bigint END
				       WHERE execution_id = $1 AND sequence > 1000000`, id, x, y)
				wantSeq = int64(x)
			case "delete":
				k := 2 + rng.IntN(n-2) // a middle record
				exec(`DELETE FROM journal_records WHERE execution_id = $1 AND sequence = $2`, id, k)
				wantSeq = int64(k)
			case "insert-linked", "insert-unlinked":
				k := 1 + rng.IntN(n)
				var prev *journal.Record
				if k > 1 {
					r := readRecord(t, conn, id, k-1)
					prev = &r
				}
				forged, err := journal.Next(prev, id, journal.KindDecision, time.Now(),
					map[string]any{"type": "CommandAccepted", "actor": "mallory", "decision": "operator_command", "cause": map[string]any{}})
				if err != nil {
					t.Fatal(err)
				}
				wantSeq = int64(k + 1)
				if attack == "insert-unlinked" {
					forged.PreviousDigest = "sha256:" + strings.Repeat("ab", 32)
					forged.Digest, _ = forged.ComputeDigest()
					wantSeq = int64(k)
				}
				line, _ := forged.MarshalJSON()
				exec(`UPDATE journal_records SET sequence = sequence + 1000000 WHERE execution_id = $1 AND sequence >= $2`, id, k)
				exec(`UPDATE journal_records SET sequence = sequence - 999999 WHERE execution_id = $1 AND sequence > 1000000`, id)
				exec(`INSERT INTO journal_records (execution_id, sequence, session_id, kind, digest, line) VALUES ($1, $2, $3, 'decision', $4, $5)`,
					id, k, journalSession, forged.Digest, string(line))
			case "truncate", "truncate-and-drop-checkpoints":
				keep := 1 + rng.IntN(n-1) // 1..n-1 records stay
				exec(`DELETE FROM journal_records WHERE execution_id = $1 AND sequence > $2`, id, keep)
				if attack == "truncate-and-drop-checkpoints" {
					exec(`DELETE FROM journal_checkpoints WHERE execution_id = $1`, id)
				}
			case "recompute", "recompute-and-resign":
				k := 1 + rng.IntN(n)
				recs := make([]journal.Record, 0, n)
				for s := 1; s <= n; s++ {
					recs = append(recs, readRecord(t, conn, id, s))
				}
				var prev *journal.Record
				if k > 1 {
					prev = &recs[k-2]
				}
				exec(`DELETE FROM journal_records WHERE execution_id = $1 AND sequence >= $2`, id, k)
				for s := k; s <= n; s++ {
					r := recs[s-1]
					body := r.Event
					if r.Kind == journal.KindDecision {
						body = r.Decision
					}
					if s == k {
						body["actor"] = "mallory"
					}
					nr, err := journal.Next(prev, id, r.Kind, r.ObservedAt, body)
					if err != nil {
						t.Fatal(err)
					}
					line, _ := nr.MarshalJSON()
					exec(`INSERT INTO journal_records (execution_id, sequence, session_id, kind, digest, line) VALUES ($1, $2, $3, $4, $5, $6)`,
						id, s, journalSession, string(nr.Kind), nr.Digest, string(line))
					prev = &nr
				}
				if attack == "recompute-and-resign" {
					cp, err := journal.SignCheckpoint(attacker, id, prev.Sequence, prev.Digest)
					if err != nil {
						t.Fatal(err)
					}
					exec(`INSERT INTO journal_checkpoints (execution_id, sequence, digest, signature, public_key) VALUES ($1, $2, $3, $4, $5)
					      ON CONFLICT (execution_id, sequence) DO UPDATE SET digest = excluded.digest, signature = excluded.signature`,
						id, cp.Sequence, cp.Digest, cp.Signature, []byte(attacker.Public().(ed25519.PublicKey)))
				}
			}
			v := f.verifyOne(t, id)
			switch {
			case v.Result.Result == journal.VerdictValid:
				t.Errorf("%s on %s: VALID (%+v)", attack, id, v)
			case wantSeq != 0 && (v.Result.Result != journal.VerdictInvalid || v.FirstBadSequence != wantSeq):
				t.Errorf("%s on %s: %s at %d (%s: %s), want INVALID at %d", attack, id, v.Result.Result, v.FirstBadSequence, v.Reason, v.Detail, wantSeq)
			default:
				detected[attack]++
			}
		}
	}
	// A broken chain has no projection: it would look trustworthy.
	if _, err := f.project.Handle(context.Background(), journalSession, ids[clean]); !errors.Is(err, fault.ErrConflict) || !errors.Is(err, journalapp.ErrJournalBroken) {
		t.Errorf("projection of a tampered journal: got %v, want a conflict", err)
	}
	for _, a := range attacks {
		t.Logf("%-30s detected %d/%d", a, detected[a], perAttack)
		if detected[a] != perAttack {
			t.Errorf("%s: detected %d of %d", a, detected[a], perAttack)
		}
	}
}

func readRecord(t *testing.T, conn *pgx.Conn, id string, seq int) journal.Record {
	t.Helper()
	var line string
	if err := conn.QueryRow(context.Background(), `SELECT line FROM journal_records WHERE execution_id = $1 AND sequence = $2`, id, seq).Scan(&line); err != nil {
		t.Fatalf("read %s/%d: %v", id, seq, err)
	}
	r, err := journal.ParseRecord([]byte(line))
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// TestObserverNeverStalls: an event whose data has no canonical form (a
// fraction beyond float64; integers that large are written exactly) is journaled with its data as JSON text, and a lost
// position is put back at the start; the events behind both are journaled.
func TestObserverNeverStalls(t *testing.T) {
	t.Parallel()
	f := newJournalFixture(t, 100)
	ids := f.emitRuns(t, 0, 1)
	f.emit(t, []executionapp.Event{{Type: "BreakpointHit", At: time.Now(), SessionID: journalSession, ExecutionID: ids[0], NodeID: "mid",
		Actor: "engine", Data: map[string]any{"breakpoint": map[string]any{"field": "n", "equals": json.Number("1" + strings.Repeat("0", 400) + ".5")}}}})
	later := f.emitRuns(t, 1, 1)
	f.drain(t)
	if v := f.verifyOne(t, ids[0]); v.Result.Result != journal.VerdictValid || v.Sequence != 11 {
		t.Fatalf("journal with an uncanonical event: %+v, want VALID at 11", v)
	}
	lines, err := f.export.Handle(context.Background(), journalSession, ids[0])
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(lines[10]), `"notCanonical":"{\"breakpoint\":{\"equals\":10000000000`) {
		t.Fatalf("record 11 = %s", lines[10])
	}
	if v := f.verifyOne(t, later[0]); v.Result.Result != journal.VerdictValid {
		t.Fatalf("the journal behind it: %+v", v)
	}

	if _, err := f.pool.Exec(context.Background(), `DELETE FROM journal_cursor`); err != nil {
		t.Fatal(err)
	}
	before := countRecords(t, f.pool)
	more := f.emitRuns(t, 2, 1)
	f.drain(t)
	if after := countRecords(t, f.pool); after != before+10 {
		t.Fatalf("after losing the position: %d records, then %d; want the 10 new ones only", before, after)
	}
	if v := f.verifyOne(t, more[0]); v.Result.Result != journal.VerdictValid {
		t.Fatalf("after losing the position: %+v", v)
	}
}

// TestFiftyObserversOneExecution (T22): fifty observers race on one
// execution's stream of events, committed in many small transactions while
// they run: one gapless chain, no fork, every event once.
func TestFiftyObserversOneExecution(t *testing.T) {
	t.Parallel()
	f := newJournalFixture(t, 7)
	id := newExecID(777)
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	for range 50 {
		o, err := journalapp.NewObserver(postgres.NewJournalTransactor(f.pool), f.key, time.Now, journalapp.ObserverConfig{Batch: 5}, nil)
		if err != nil {
			t.Fatal(err)
		}
		wg.Go(func() {
			for ctx.Err() == nil {
				if _, err := o.Step(ctx); err != nil && ctx.Err() == nil {
					t.Errorf("step: %v", err)
					return
				}
			}
		})
	}
	for i := range 100 {
		f.emit(t, []executionapp.Event{
			{Type: "NodeStatusChanged", At: time.Now(), SessionID: journalSession, ExecutionID: id, NodeID: fmt.Sprintf("n%d", i), Actor: "engine", Data: map[string]any{"from": "PENDING", "to": "RUNNING"}},
			{Type: "NodeStatusChanged", At: time.Now(), SessionID: journalSession, ExecutionID: id, NodeID: fmt.Sprintf("n%d", i), Actor: "engine", Data: map[string]any{"from": "RUNNING", "to": "SUCCESS"}},
		})
	}
	f.emit(t, []executionapp.Event{{Type: "ExecutionStatusChanged", At: time.Now(), SessionID: journalSession, ExecutionID: id, Actor: "engine", Data: map[string]any{"from": "RUNNING", "to": "SUCCESS"}}})
	f.drain(t)
	cancel()
	wg.Wait()
	var n, maxSeq, distinct int
	if err := f.pool.QueryRow(context.Background(), `SELECT count(*), max(sequence), count(DISTINCT source_seq) FROM journal_records WHERE execution_id = $1`, id).Scan(&n, &maxSeq, &distinct); err != nil {
		t.Fatal(err)
	}
	if n != 201 || maxSeq != 201 || distinct != 201 {
		t.Fatalf("%d records, last sequence %d, %d distinct events; want 201 of each", n, maxSeq, distinct)
	}
	if v := f.verifyOne(t, id); v.Result.Result != journal.VerdictValid || v.Sequence != 201 {
		t.Fatalf("%+v", v)
	}
}
