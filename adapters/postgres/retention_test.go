package postgres_test

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/yukta/yukta/adapters/postgres"
	"github.com/yukta/yukta/adapters/postgres/pgtest"
	"github.com/yukta/yukta/application/executionapp"
	"github.com/yukta/yukta/application/journalapp"
	"github.com/yukta/yukta/application/retentionapp"
	"github.com/yukta/yukta/domain/fault"
	"github.com/yukta/yukta/domain/journal"
	"github.com/yukta/yukta/domain/retention"
)

// retentionDoc: a trigger, a SPLIT that fans one payload out to three
// messages, a LOG that receives each of them, and a RESULT.
const retentionDoc = `{"name":"r","workflows":[{"workflowId":"w","nodes":[
	{"nodeId":"start","type":"MANUAL"},
	{"nodeId":"split","type":"SPLIT","config":{"field":"items"}},
	{"nodeId":"log","type":"LOG"},
	{"nodeId":"out","type":"RESULT"}],
	"edges":[{"source":"start","target":"split"},{"source":"split","target":"log"},{"source":"log","target":"out"}]}]}`

type retentionFixture struct {
	pool  *pgxpool.Pool
	eng   *engineFixture
	obs   *journalapp.Observer
	store *postgres.RetentionStore
	key   ed25519.PrivateKey
}

func newRetentionFixture(t *testing.T, sessions ...string) *retentionFixture {
	t.Helper()
	pool := pgtest.NewPool(t)
	f := &retentionFixture{pool: pool, store: postgres.NewRetentionStore(pool)}
	for i, sid := range sessions {
		eng := newEngineFixture(t, pool, sid, retentionDoc, nil, nil, executionapp.EngineConfig{})
		if i == 0 {
			f.eng = eng
			eng.run(t)
		}
	}
	_, key, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	f.key = key
	if f.obs, err = journalapp.NewObserver(postgres.NewJournalTransactor(pool), key, time.Now, journalapp.ObserverConfig{}, nil); err != nil {
		t.Fatal(err)
	}
	registerJournalKey(t, pool, f.obs.PublicKey())
	return f
}

// runs starts n runs of session sid and waits for every run to end.
func (f *retentionFixture) runs(t *testing.T, sid string, n int) []string {
	t.Helper()
	ids := make([]string, n)
	for i := range n {
		res, err := f.eng.start.Handle(t.Context(), executionapp.StartInput{SessionID: sid, WorkflowID: "w", Trigger: executionapp.TriggerManual,
			Payload: map[string]any{"items": []any{i, "b", map[string]any{"c": i}}}, Actor: "test", Channel: "rest"})
		if err != nil {
			t.Fatal(err)
		}
		ids[i] = res.ExecutionID
	}
	deadline := time.Now().Add(60 * time.Second)
	for {
		var live int
		if err := f.pool.QueryRow(t.Context(), `SELECT count(*) FROM executions WHERE execution_id = ANY($1::uuid[]) AND ended_at IS NULL`, ids).Scan(&live); err != nil {
			t.Fatal(err)
		}
		if live == 0 {
			return ids
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d of %d runs still live after 60 s", live, n)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// drain lets the observer journal everything in the outbox.
func (f *retentionFixture) drain(t *testing.T) {
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
	t.Fatalf("observer lag %d after 60 s", f.obs.Lag())
}

func (f *retentionFixture) backdate(t *testing.T, ids []string, age time.Duration) {
	t.Helper()
	if _, err := f.pool.Exec(t.Context(), `UPDATE executions SET ended_at = now() - $2::interval WHERE execution_id = ANY($1::uuid[])`,
		ids, fmt.Sprintf("%d seconds", int(age.Seconds()))); err != nil {
		t.Fatal(err)
	}
}

// rowsOf counts each per-run table's rows that name the runs.
func (f *retentionFixture) rowsOf(t *testing.T, ids []string) map[string]int {
	t.Helper()
	out := map[string]int{}
	for _, tbl := range []string{"executions", "execution_nodes", "work_items", "execution_received", "execution_logs", "inputs",
		"events", "commands", "journal_records", "journal_checkpoints", "deleted_executions"} {
		var n int
		if err := f.pool.QueryRow(t.Context(), `SELECT count(*) FROM `+tbl+` WHERE execution_id = ANY($1::uuid[])`, ids).Scan(&n); err != nil {
			t.Fatal(err)
		}
		out[tbl] = n
	}
	return out
}

func (f *retentionFixture) sweeper(policy retention.Policy, archive retentionapp.Archive) *retentionapp.SweepRetention {
	r := postgres.NewJournalReader(f.pool)
	return retentionapp.NewSweepRetention(retentionapp.Deps{Store: f.store, Prune: retentionapp.NewPruneItems(f.store, 7, 0),
		Exporter: journalapp.NewExportJournal(r), Archive: archive},
		retentionapp.Config{Policy: policy, Batch: 7, PruneAfter: time.Hour, TombstoneDays: 30})
}

type memArchive map[string][][]byte

func (m memArchive) Write(sid, id string, lines [][]byte) (string, error) {
	m[id] = lines
	return sid + "/" + id + ".ndjson", nil
}

// TestRetentionDeletesOnlyDueRuns: finished runs past the policy go with
// every row that names them, each leaves a tombstone, and reads of them say
// they were deleted; younger runs, runs the journal has not caught up with,
// and sessions that keep runs forever stay whole.
func TestRetentionDeletesOnlyDueRuns(t *testing.T) {
	t.Parallel()
	f := newRetentionFixture(t, "old", "forever")
	ctx := t.Context()
	forever := 0
	if _, err := f.pool.Exec(ctx, `UPDATE sessions SET retention_days = $1 WHERE session_id = 'forever'`, forever); err != nil {
		t.Fatal(err)
	}
	due := f.runs(t, "old", 20)
	young := f.runs(t, "old", 3)
	f.backdate(t, due, 31*24*time.Hour)
	// The forever session's runs are as old, but its own policy keeps them.
	keptForever := f.runs(t, "forever", 3)
	f.backdate(t, keptForever, 400*24*time.Hour)

	policy, _ := retention.NewPolicy(30, "keep")
	archive := memArchive{}
	sweep := f.sweeper(policy, archive)
	// The observer has not journaled these runs yet: nothing may go.
	rep, err := sweep.Handle(ctx)
	if err != nil || !rep.Led || rep.Deleted != 0 {
		t.Fatalf("sweep before the journal caught up: %+v, %v; want nothing deleted", rep, err)
	}
	f.drain(t)
	before := f.rowsOf(t, due)
	// The first pass folded their work items already (they ended long ago).
	for _, tbl := range []string{"executions", "execution_nodes", "execution_received", "execution_logs", "events", "journal_records", "journal_checkpoints"} {
		if before[tbl] == 0 {
			t.Fatalf("fixture: no %s rows for the due runs; the test would prove nothing", tbl)
		}
	}
	keptBefore := f.rowsOf(t, append(young, keptForever...))

	rep, err = sweep.Handle(ctx)
	if err != nil || rep.Deleted != len(due) || rep.Exported != len(due) {
		t.Fatalf("sweep: %+v, %v; want %d deleted and exported", rep, err, len(due))
	}
	after := f.rowsOf(t, due)
	for tbl, n := range after {
		want := 0
		switch tbl {
		case "deleted_executions":
			want = len(due)
		case "journal_records", "journal_checkpoints":
			want = before[tbl] // the policy keeps journals
		}
		if n != want {
			t.Errorf("%s: %d rows of the deleted runs remain, want %d", tbl, n, want)
		}
	}
	if got := f.rowsOf(t, append(young, keptForever...)); !reflect.DeepEqual(got, keptBefore) {
		t.Errorf("runs the policy keeps changed:\nbefore %v\nafter  %v", keptBefore, got)
	}

	// A read of a deleted run says what happened; its kept journal still
	// exports and verifies, and so does the exported copy.
	reader := postgres.NewReader(f.pool)
	_, err = executionapp.NewGetExecution(reader, reader).Handle(ctx, "old", due[0])
	if !errors.Is(err, fault.ErrNotFound) || !strings.Contains(err.Error(), "was deleted by the retention policy on ") ||
		!strings.Contains(err.Error(), "kept 30 days") || !strings.Contains(err.Error(), "journal was kept") {
		t.Fatalf("read of a deleted run: %v", err)
	}
	if _, err := executionapp.NewGetExecution(reader, reader).Handle(ctx, "forever", due[0]); err == nil || strings.Contains(err.Error(), "retention") {
		t.Fatalf("another session's read of the deleted run: %v; want a plain not found", err)
	}
	jr := postgres.NewJournalReader(f.pool)
	v, err := journalapp.NewVerifyJournal(jr, f.obs.PublicKey(), postgres.NewJournalKeys(f.pool)).Handle(ctx, "old", due[1])
	if err != nil || v.Result.Result != journal.VerdictValid {
		t.Fatalf("verify the kept journal of a deleted run: %+v, %v", v, err)
	}
	if res := journal.VerifyExport(archive[due[1]], f.obs.PublicKey()); res.Result != journal.VerdictValid {
		t.Fatalf("exported journal: %+v", res)
	}

	// A second pass finds nothing more to do.
	if rep, err := sweep.Handle(ctx); err != nil || rep.Deleted != 0 || rep.Tombstones != 0 {
		t.Fatalf("second sweep: %+v, %v", rep, err)
	}

	// Tombstones expire after TombstoneDays (30 here), in batches (7 here):
	// 10 old ones go in one pass, the rest stay, and a read of an expired
	// one is a plain not found.
	old := due[:10]
	if _, err := f.pool.Exec(ctx, `UPDATE deleted_executions SET deleted_at = now() - interval '31 days' WHERE execution_id = ANY($1::uuid[])`, old); err != nil {
		t.Fatal(err)
	}
	if rep, err := sweep.Handle(ctx); err != nil || rep.Tombstones != len(old) {
		t.Fatalf("sweep with %d expired tombstones: %+v, %v", len(old), rep, err)
	}
	if got := f.rowsOf(t, due)["deleted_executions"]; got != len(due)-len(old) {
		t.Fatalf("%d tombstones left, want %d", got, len(due)-len(old))
	}
	_, err = executionapp.NewGetExecution(reader, reader).Handle(ctx, "old", old[0])
	if !errors.Is(err, fault.ErrNotFound) || strings.Contains(err.Error(), "retention") {
		t.Fatalf("read of a run whose tombstone expired: %v; want a plain not found", err)
	}
	if _, err = executionapp.NewGetExecution(reader, reader).Handle(ctx, "old", due[len(due)-1]); err == nil || !strings.Contains(err.Error(), "retention") {
		t.Fatalf("read of a run whose tombstone is young: %v; want the retention story", err)
	}
}

// TestRetentionDeletesJournalsWhenAsked: journals delete with their runs
// when the policy says so (the one delete the append-only trigger lets
// through), and stay append-only for everyone else.
func TestRetentionDeletesJournalsWhenAsked(t *testing.T) {
	t.Parallel()
	f := newRetentionFixture(t, "drop")
	ctx := t.Context()
	due := f.runs(t, "drop", 5)
	young := f.runs(t, "drop", 1)
	f.backdate(t, due, 8*24*time.Hour)
	f.drain(t)
	policy, _ := retention.NewPolicy(7, "delete")
	if rep, err := f.sweeper(policy, nil).Handle(ctx); err != nil || rep.Deleted != len(due) || rep.Exported != 0 {
		t.Fatalf("sweep: %+v, %v", rep, err)
	}
	got := f.rowsOf(t, due)
	if got["journal_records"] != 0 || got["journal_checkpoints"] != 0 || got["deleted_executions"] != len(due) {
		t.Fatalf("rows after a journal-deleting sweep: %v", got)
	}
	_, err := journalapp.NewExportJournal(postgres.NewJournalReader(f.pool)).Handle(ctx, "drop", due[0])
	if !errors.Is(err, fault.ErrNotFound) || !strings.Contains(err.Error(), "journal was deleted with it") {
		t.Fatalf("export of a deleted journal: %v", err)
	}
	if n := f.rowsOf(t, young)["journal_records"]; n == 0 {
		t.Fatal("the young run has no journal: the refusal below would prove nothing")
	}
	if _, err := f.pool.Exec(ctx, `DELETE FROM journal_records`); err == nil || !strings.Contains(err.Error(), "append-only") {
		t.Fatalf("a plain delete of journal records: %v; want it refused", err)
	}
}

// TestPruneKeepsWhatRestartsRead: folding a finished run's work items keeps,
// for every node, exactly the payloads it received in arrival order (what
// RESTART, RESTART_FROM_NODE and RETRY read), and removes the item rows.
func TestPruneKeepsWhatRestartsRead(t *testing.T) {
	t.Parallel()
	f := newRetentionFixture(t, "prune")
	ctx := t.Context()
	ids := f.runs(t, "prune", 10)
	tx := postgres.NewExecutionTransactor(f.pool)
	inputs := func() map[string][]any {
		out := map[string][]any{}
		err := tx.WithinTx(ctx, func(ctx context.Context, s executionapp.Stores) error {
			for _, id := range ids {
				for _, n := range []string{"start", "split", "log", "out"} {
					got, err := s.Items.Inputs(ctx, id, n)
					if err != nil {
						return err
					}
					out[id+"/"+n] = got
				}
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		return out
	}
	before := inputs()
	if len(before[ids[3]+"/log"]) != 3 || len(before[ids[3]+"/start"]) != 1 {
		t.Fatalf("fixture: log got %v", before[ids[3]+"/log"])
	}
	n, err := retentionapp.NewPruneItems(f.store, 4, 0).Handle(ctx, time.Now().Add(time.Second))
	if err != nil || n != len(ids) {
		t.Fatalf("prune: %d, %v; want %d runs", n, err, len(ids))
	}
	rows := f.rowsOf(t, ids)
	if rows["work_items"] != 0 || rows["execution_received"] != 4*len(ids) {
		t.Fatalf("rows after pruning: %v", rows)
	}
	if after := inputs(); !reflect.DeepEqual(after, before) {
		t.Fatalf("what the nodes received changed:\nbefore %v\nafter  %v", before, after)
	}
	if n, err := retentionapp.NewPruneItems(f.store, 4, 0).Handle(ctx, time.Now().Add(time.Second)); err != nil || n != 0 {
		t.Fatalf("second prune: %d, %v", n, err)
	}
}

// TestRetentionOneLeader: while one instance sweeps, another's pass does
// nothing.
func TestRetentionOneLeader(t *testing.T) {
	t.Parallel()
	pool := pgtest.NewPool(t)
	a, b := postgres.NewRetentionStore(pool), postgres.NewRetentionStore(pool)
	ok, err := a.Lead(t.Context(), func(ctx context.Context) error {
		ok, err := b.Lead(ctx, func(context.Context) error { t.Error("second leader ran"); return nil })
		if ok || err != nil {
			t.Errorf("second Lead: %v, %v; want not led", ok, err)
		}
		return nil
	})
	if !ok || err != nil {
		t.Fatalf("first Lead: %v, %v", ok, err)
	}
	if ok, err := b.Lead(t.Context(), func(context.Context) error { return nil }); !ok || err != nil {
		t.Fatalf("Lead after release: %v, %v", ok, err)
	}
}

// TestRetentionStatementsUseIndexes: every read and delete the sweeper and
// its cascades make finds its rows by index, never by a scan of a table
// (with the pool's planner settings a missing index shows as a Seq Scan).
func TestRetentionStatementsUseIndexes(t *testing.T) {
	t.Parallel()
	pool := pgtest.NewPool(t)
	ids := []string{"0193b000-0000-7000-8000-000000000001"}
	for _, q := range []string{
		`SELECT e.execution_id FROM executions e WHERE e.session_id = 's' AND e.status IN ('SUCCESS', 'FAILURE', 'STOPPED') AND e.ended_at < now()
		   AND NOT EXISTS (SELECT 1 FROM events ev, journal_cursor c WHERE c.id = 1 AND ev.execution_id = e.execution_id AND (ev.xid, ev.seq) > (c.xid, c.seq))
		 ORDER BY e.ended_at LIMIT 500`,
		`SELECT execution_id FROM executions WHERE execution_id = ANY($1::uuid[]) AND status IN ('SUCCESS', 'FAILURE', 'STOPPED') FOR UPDATE SKIP LOCKED`,
		`DELETE FROM events WHERE execution_id = ANY($1::uuid[])`,
		`DELETE FROM commands WHERE execution_id = ANY($1::uuid[])`,
		`DELETE FROM journal_records WHERE execution_id = ANY($1::uuid[])`,
		`DELETE FROM journal_checkpoints WHERE execution_id = ANY($1::uuid[])`,
		// what ON DELETE CASCADE runs per deleted execution
		`DELETE FROM execution_nodes WHERE execution_id = ANY($1::uuid[])`,
		`DELETE FROM work_items WHERE execution_id = ANY($1::uuid[])`,
		`DELETE FROM execution_received WHERE execution_id = ANY($1::uuid[])`,
		`DELETE FROM execution_logs WHERE execution_id = ANY($1::uuid[])`,
		`DELETE FROM inputs WHERE execution_id = ANY($1::uuid[])`,
		`DELETE FROM supervisor_hold_runs WHERE execution_id = ANY($1::uuid[])`,
		`SELECT execution_id FROM executions WHERE status IN ('SUCCESS', 'FAILURE', 'STOPPED') AND NOT items_pruned AND ended_at < now()
		  ORDER BY ended_at LIMIT 500 FOR UPDATE SKIP LOCKED`,
		`SELECT execution_id FROM deleted_executions WHERE deleted_at < now() ORDER BY deleted_at LIMIT 500`,
		`SELECT 1 FROM deleted_executions WHERE execution_id = $1::uuid AND session_id = 's'`,
	} {
		args := []any{ids}
		if strings.Contains(q, "$1::uuid AND") {
			args = []any{ids[0]}
		} else if !strings.Contains(q, "$1") {
			args = nil
		}
		rows, err := pool.Query(t.Context(), "EXPLAIN "+q, args...)
		if err != nil {
			t.Fatalf("EXPLAIN %s: %v", q, err)
		}
		var plan []string
		for rows.Next() {
			var line string
			if err := rows.Scan(&line); err != nil {
				t.Fatal(err)
			}
			plan = append(plan, line)
		}
		if err := rows.Err(); err != nil {
			t.Fatal(err)
		}
		p := strings.Join(plan, "\n")
		if strings.Contains(p, "Seq Scan") && !strings.Contains(p, "Seq Scan on journal_cursor") {
			t.Errorf("%s\nscans a table:\n%s", q, p)
		}
	}
}
