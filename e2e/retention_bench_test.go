package e2e

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// BenchmarkRetention measures retention on a durable cluster:
//
//   - disk per 1,000 runs of a typical workflow (a trigger, a SPLIT of three,
//     a LOG, a RESULT): the live size of every table (VACUUM FULL before
//     each reading) before pruning, after the sweeper folds the work items,
//     and after it deletes the runs (journals kept, then journals deleted);
//   - the engine benchmark's throughput (engineLoad: "fan" and "runs") with
//     100,000 finished runs in the database, first with retention off, then
//     while the sweeper deletes them; the sweeper's deletes/s; and pgbench
//     single-row insert commits/s at 16 clients (the "runs" phase's
//     concurrency) as the reference ratio, in the same run.
//
// The 100,000 runs are fast SQL copies of the 1,000 real runs of the disk
// phase once folded (every row that names an execution, journals aside,
// under new ids, ended 40 days ago; their events are copied below the
// journal observer's position, so the observer does not journal them
// again). YUKTA_BENCH_RETENTION_RUNS
// changes the count. Run:
//
//	go test ./e2e -run '^$' -bench BenchmarkRetention -benchtime 1x
func BenchmarkRetention(b *testing.B) {
	env := durableCluster(b)
	copies := 100
	if v := os.Getenv("YUKTA_BENCH_RETENTION_RUNS"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1000 {
			b.Fatalf("YUKTA_BENCH_RETENTION_RUNS=%q must be a whole number of at least 1000", v)
		}
		copies = n / 1000
	}
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, env.dsn)
	if err != nil {
		b.Fatal(err)
	}
	defer conn.Close(ctx)
	for range b.N {
		// Disk per 1,000 runs. Retention off; folding every second once a
		// run is an hour old (the runs are made older below).
		s := benchServerWith(b, env, "YUKTA_RETENTION_INTERVAL=1s", "YUKTA_RETENTION_PAUSE=0s")
		doc := []byte(strings.Replace(retentionSession, `"25s"`, `"1s"`, 1))
		applyDoc(b, s, "tpl", doc)
		applyDoc(b, s, "old", doc)
		size0 := liveSize(b, conn)
		grown := tableSizes(b, conn)
		startManyRuns(b, s, "tpl", "w", 1000, 16)
		waitSessionDone(b, conn, "tpl")
		waitJournaled(b, conn)
		appended := sumSizes(tableSizes(b, conn)) - sumSizes(grown)
		size1 := liveSize(b, conn)
		if _, err := conn.Exec(ctx, `UPDATE executions SET ended_at = ended_at - interval '2 hours' WHERE session_id = 'tpl'`); err != nil {
			b.Fatal(err)
		}
		waitFor(b, conn, 120*time.Second, `SELECT count(*) = 0 FROM executions WHERE session_id = 'tpl' AND NOT items_pruned`)
		size2 := liveSize(b, conn)
		// The 100,000 finished runs: copies of these, folded as runs are
		// long before they are due.
		copyRuns(b, conn, "tpl", "old", copies)
		sizeA := liveSize(b, conn)
		// Then the template runs go (the session's own retention: 30 days),
		// journals kept; then their journals too.
		if _, err := conn.Exec(ctx, `UPDATE sessions SET retention_days = 30 WHERE session_id = 'tpl'`); err != nil {
			b.Fatal(err)
		}
		if _, err := conn.Exec(ctx, `UPDATE executions SET ended_at = ended_at - interval '40 days' WHERE session_id = 'tpl'`); err != nil {
			b.Fatal(err)
		}
		waitFor(b, conn, 120*time.Second, `SELECT count(*) = 0 FROM executions WHERE session_id = 'tpl'`)
		s.Stop()
		sizeB := liveSize(b, conn)
		tx, err := conn.Begin(ctx)
		if err != nil {
			b.Fatal(err)
		}
		for _, q := range []string{`SELECT set_config('yukta.retention_delete', 'on', true)`,
			`DELETE FROM journal_checkpoints WHERE execution_id IN (SELECT execution_id FROM deleted_executions WHERE session_id = 'tpl')`,
			`DELETE FROM journal_records WHERE session_id = 'tpl'`} {
			if _, err := tx.Exec(ctx, q); err != nil {
				b.Fatal(err)
			}
		}
		if err := tx.Commit(ctx); err != nil {
			b.Fatal(err)
		}
		sizeC := liveSize(b, conn)
		deletedKept := (size2 - size0) - (sizeA - sizeB)
		deletedAll := deletedKept - (sizeB - sizeC)

		// The engine benchmark with retention off, then with the sweeper
		// deleting the copies beside it.
		s = benchServer(b, env)
		fanN, fanRate, runsN, runsRate := retentionLoad(b, s, env, "off")
		s.Stop()
		on := []string{"YUKTA_RETENTION_DAYS=30", "YUKTA_RETENTION_INTERVAL=1s"}
		if p := os.Getenv("YUKTA_BENCH_RETENTION_PAUSE"); p != "" { // the sweeper's pause between batches (default 200ms)
			on = append(on, "YUKTA_RETENTION_PAUSE="+p)
		}
		s = benchServerWith(b, env, on...)
		t0, deleted0 := time.Now(), countDeleted(b, conn)
		fanN2, fanRate2, runsN2, runsRate2 := retentionLoad(b, s, env, "on")
		loadSecs := time.Since(t0).Seconds()
		during := countDeleted(b, conn) - deleted0
		if during == 0 || during >= copies*1000 {
			b.Logf("WARNING: the sweeper deleted %d of %d runs during the engine load; the overlap is not the whole load", during, copies*1000)
		}
		waitFor(b, conn, 30*time.Minute, `SELECT count(*) = 0 FROM executions WHERE session_id = 'old'`)
		allSecs := time.Since(t0).Seconds()
		s.Stop()
		raw := pgbenchInsert(b, env, 16, 5)

		mb := func(n int64) float64 { return float64(n) / (1 << 20) }
		b.Logf("disk per 1,000 runs: appended %.2f MiB; live %.2f MiB unpruned, %.2f MiB folded, %.3f MiB deleted with journals kept, %.3f MiB with journals deleted",
			mb(appended), mb(size1-size0), mb(size2-size0), mb(deletedKept), mb(deletedAll))
		b.Logf("engine with retention off: fan %d transitions %.0f/s, runs %d transitions %.0f/s", fanN, fanRate, runsN, runsRate)
		b.Logf("engine while sweeping:     fan %d transitions %.0f/s, runs %d transitions %.0f/s", fanN2, fanRate2, runsN2, runsRate2)
		b.Logf("sweeper: %d runs deleted during the %.1f s load (%.0f/s); all %d in %.1f s (%.0f/s); pgbench c16 %.0f commits/s",
			during, loadSecs, float64(during)/loadSecs, copies*1000, allSecs, float64(copies*1000)/allSecs, raw)
		b.ReportMetric(mb(appended), "MiB_appended/1000runs")
		b.ReportMetric(mb(size1-size0), "MiB_live/1000runs")
		b.ReportMetric(mb(size2-size0), "MiB_folded/1000runs")
		b.ReportMetric(mb(deletedKept), "MiB_deleted_journals_kept/1000runs")
		b.ReportMetric(mb(deletedAll), "MiB_deleted_journals_deleted/1000runs")
		b.ReportMetric(fanRate, "fan_off_transitions/s")
		b.ReportMetric(fanRate2, "fan_on_transitions/s")
		b.ReportMetric(100*(1-fanRate2/fanRate), "fan_drop_%")
		b.ReportMetric(runsRate, "runs_off_transitions/s")
		b.ReportMetric(runsRate2, "runs_on_transitions/s")
		b.ReportMetric(100*(1-runsRate2/runsRate), "runs_drop_%")
		b.ReportMetric(float64(during)/loadSecs, "deletes/s_under_load")
		b.ReportMetric(float64(copies*1000)/allSecs, "deletes/s_overall")
		b.ReportMetric(raw, "pgbench_c16_tps")
		b.ReportMetric(runsRate/raw, "runs_off_ratio_c16")
		b.ReportMetric(runsRate2/raw, "runs_on_ratio_c16")
		b.ReportMetric(float64(during)/loadSecs/raw, "deletes_ratio_c16")
	}
}

// retentionLoad is engineLoad under sessions of its own (prefix-fan,
// prefix-runs), so two loads on one database are measured apart.
func retentionLoad(b *testing.B, s *server, env benchEnv, prefix string) (fanN int64, fanRate float64, runsN int64, runsRate float64) {
	b.Helper()
	fan, runs := prefix+"-fan", prefix+"-runs"
	applyDoc(b, s, fan, fanSession())
	items := make([]int, 500)
	for range 20 {
		startRun(b, s, fan, map[string]any{"items": items})
	}
	fanN, fanRate = doneRate(b, env, fan)
	applyDoc(b, s, runs, linearSession(runs, 10))
	var wg sync.WaitGroup
	sem := make(chan struct{}, 16)
	for i := range 1000 {
		wg.Go(func() { sem <- struct{}{}; defer func() { <-sem }(); startRun(b, s, runs, map[string]any{"i": i}) })
	}
	wg.Wait()
	runsN, runsRate = doneRate(b, env, runs)
	return fanN, fanRate, runsN, runsRate
}

func startManyRuns(b *testing.B, s *server, sid, wid string, n, par int) {
	b.Helper()
	var wg sync.WaitGroup
	sem := make(chan struct{}, par)
	for i := range n {
		wg.Go(func() {
			sem <- struct{}{}
			defer func() { <-sem }()
			startRun(b, s, sid, map[string]any{"items": []any{i, "b", map[string]any{"c": i}}})
		})
	}
	wg.Wait()
}

func waitFor(b *testing.B, conn *pgx.Conn, d time.Duration, cond string) {
	b.Helper()
	deadline := time.Now().Add(d)
	for {
		var ok bool
		if err := conn.QueryRow(context.Background(), cond).Scan(&ok); err != nil {
			b.Fatal(err)
		}
		if ok {
			return
		}
		if time.Now().After(deadline) {
			b.Fatalf("not true within %v: %s", d, cond)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func waitSessionDone(b *testing.B, conn *pgx.Conn, sid string) {
	b.Helper()
	waitFor(b, conn, 5*time.Minute, fmt.Sprintf(`SELECT count(*) = 0 FROM executions WHERE session_id = '%s' AND ended_at IS NULL`, sid))
}

// waitJournaled waits for the observer to have consumed the outbox.
func waitJournaled(b *testing.B, conn *pgx.Conn) {
	b.Helper()
	waitFor(b, conn, 5*time.Minute, `SELECT NOT EXISTS (SELECT 1 FROM events e, journal_cursor c WHERE c.id = 1 AND (e.xid, e.seq) > (c.xid, c.seq))`)
}

func countDeleted(b *testing.B, conn *pgx.Conn) int {
	b.Helper()
	var n int
	if err := conn.QueryRow(context.Background(), `SELECT count(*) FROM deleted_executions`).Scan(&n); err != nil {
		b.Fatal(err)
	}
	return n
}

func tableSizes(b *testing.B, conn *pgx.Conn) map[string]int64 {
	b.Helper()
	rows, err := conn.Query(context.Background(), `
		SELECT c.relname, pg_total_relation_size(c.oid) FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
		 WHERE n.nspname = 'public' AND c.relkind = 'r' AND c.relname <> 'bench_ins'`)
	if err != nil {
		b.Fatal(err)
	}
	out := map[string]int64{}
	for rows.Next() {
		var name string
		var n int64
		if err := rows.Scan(&name, &n); err != nil {
			b.Fatal(err)
		}
		out[name] = n
	}
	if err := rows.Err(); err != nil {
		b.Fatal(err)
	}
	return out
}

func sumSizes(m map[string]int64) int64 {
	var t int64
	for _, n := range m {
		t += n
	}
	return t
}

// liveSize compacts every table (VACUUM FULL) and sums their sizes, so a
// reading counts live rows, not free space a later insert would reuse.
func liveSize(b *testing.B, conn *pgx.Conn) int64 {
	b.Helper()
	for name := range tableSizes(b, conn) {
		if _, err := conn.Exec(context.Background(), `VACUUM FULL `+pgx.Identifier{name}.Sanitize()); err != nil {
			b.Fatal(err)
		}
	}
	return sumSizes(tableSizes(b, conn))
}

// copyRuns copies every run of session from, n times, into session to:
// every row of every table that names an execution (journals aside), under
// a new id, ended 40 days earlier, events below the observer's position.
func copyRuns(b *testing.B, conn *pgx.Conn, from, to string, n int) {
	b.Helper()
	ctx := context.Background()
	began := time.Now()
	if _, err := conn.Exec(ctx, `CREATE TEMP TABLE copy_map AS
		SELECT e.execution_id AS src, gen_random_uuid() AS dst FROM executions e, generate_series(1, $2) WHERE e.session_id = $1`, from, n); err != nil {
		b.Fatal(err)
	}
	defer conn.Exec(ctx, `DROP TABLE copy_map`)
	if _, err := conn.Exec(ctx, `CREATE INDEX ON copy_map (src)`); err != nil {
		b.Fatal(err)
	}
	// Parents first: executions, then the tables that refer to them.
	tables := []string{"executions", "execution_nodes", "work_items", "execution_received", "execution_logs", "inputs", "events", "commands"}
	for _, tbl := range tables {
		rows, err := conn.Query(ctx, `SELECT column_name, is_identity = 'YES' OR is_generated = 'ALWAYS' FROM information_schema.columns
			WHERE table_schema = 'public' AND table_name = $1 ORDER BY ordinal_position`, tbl)
		if err != nil {
			b.Fatal(err)
		}
		var cols, vals []string
		for rows.Next() {
			var c string
			var generated bool
			if err := rows.Scan(&c, &generated); err != nil {
				b.Fatal(err)
			}
			if generated {
				continue
			}
			v := "t." + c
			switch {
			case c == "execution_id":
				v = "m.dst"
			case c == "session_id":
				v = "'" + to + "'"
			case tbl == "executions" && (c == "ended_at" || c == "started_at" || c == "admitted_at"):
				v = "t." + c + " - interval '40 days'"
			case tbl == "events" && c == "xid":
				v = "'1'::xid8"
			case c == "command_id" || c == "input_id":
				v = "gen_random_uuid()"
			}
			cols, vals = append(cols, c), append(vals, v)
		}
		if err := rows.Err(); err != nil {
			b.Fatal(err)
		}
		if _, err := conn.Exec(ctx, fmt.Sprintf(`INSERT INTO %s (%s) SELECT %s FROM %s t JOIN copy_map m ON m.src = t.execution_id`,
			tbl, strings.Join(cols, ", "), strings.Join(vals, ", "), tbl)); err != nil {
			b.Fatalf("copy %s: %v", tbl, err)
		}
	}
	if _, err := conn.Exec(ctx, `ANALYZE`); err != nil {
		b.Fatal(err)
	}
	var runs int
	_ = conn.QueryRow(ctx, `SELECT count(*) FROM executions WHERE session_id = $1`, to).Scan(&runs)
	b.Logf("copied %d finished runs in %v", runs, time.Since(began).Round(time.Millisecond))
}
