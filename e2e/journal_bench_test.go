package e2e

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/yukta/yukta/adapters/postgres"
	"github.com/yukta/yukta/adapters/postgres/localpg"
	"github.com/yukta/yukta/domain/journal"
)

// BenchmarkJournal runs the engine benchmark's load (BenchmarkTransitions:
// "fan", 20 runs sending 500 messages through nine nodes, then "runs", 1,000
// separate runs of a 10-node chain started over REST 16 at a time) with the
// observer journaling alongside, and reports how the journal keeps up:
// outbox events/s, journal records appended/s over the same window, and the
// lag of each record (appended_at − the event's at) at p50, p99 and max.
// Every journal must verify VALID afterwards.
//
//	go test ./e2e -run '^$' -bench Journal -benchtime 1x -v
func BenchmarkJournal(b *testing.B) {
	env := journalCluster(b)
	for range b.N {
		s := benchServer(b, env)
		began := time.Now()
		_, fanRate, _, runsRate := engineLoad(b, s, env)
		st := journalStats(b, env.dsn, began)
		s.Stop()
		if i := strings.LastIndex(s.logs.String(), `"msg":"observer stopped"`); i >= 0 {
			b.Logf("%s", strings.SplitN(s.logs.String()[i:], "\n", 2)[0])
		}
		b.Logf("events %d at %.0f/s; records %d at %.0f/s; lag p50 %.1f ms, p99 %.1f ms, max %.1f ms; %d journals VALID",
			st.events, st.eventRate, st.records, st.recordRate, st.p50, st.p99, st.max, st.valid)
		b.Logf("engine meanwhile: fan %.0f transitions/s, runs %.0f transitions/s", fanRate, runsRate)
		for _, p := range st.phases {
			b.Logf("  %s: %d records, lag from the event p50 %.1f ms, p99 %.1f ms; from its commit p50 %.1f ms, p99 %.1f ms",
				p.session, p.records, p.p50, p.p99, p.commitP50, p.commitP99)
		}
		b.ReportMetric(fanRate, "fan_transitions/s")
		b.ReportMetric(runsRate, "runs_transitions/s")
		b.ReportMetric(st.eventRate, "events/s")
		b.ReportMetric(st.recordRate, "records/s")
		b.ReportMetric(st.p50, "lag_p50_ms")
		b.ReportMetric(st.p99, "lag_p99_ms")
		b.ReportMetric(st.max, "lag_max_ms")
		if st.p99 > 1000 {
			b.Errorf("journal lag p99 %.0f ms, goal ≤ 1,000 ms", st.p99)
		}
	}
}

type journalBench struct {
	events, records, valid int
	eventRate, recordRate  float64
	p50, p99, max          float64 // ms
	phases                 []journalPhase
}

// journalPhase is the lag of one scenario's records.
type journalPhase struct {
	session  string
	records  int
	p50, p99 float64 // ms from the event's at
	// ms from the commit of the event's transaction: the observer's own lag
	commitP50, commitP99 float64
}

// journalCluster is durableCluster with commit timestamps tracked, so the
// observer's own lag (event committed → record appended) can be told from
// the engine's (event made → committed).
func journalCluster(b *testing.B) benchEnv {
	b.Helper()
	root, err := os.MkdirTemp("", "yukta-bench-")
	if err != nil {
		b.Fatal(err)
	}
	_ = os.Chmod(root, 0o711)
	ctx := context.Background()
	c, err := localpg.Start(ctx, localpg.Options{Dir: filepath.Join(root, "pg"), MaxConnections: 200,
		Settings: map[string]string{"track_commit_timestamp": "on"}})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = c.Stop(context.Background()); _ = os.RemoveAll(root) })
	if err := postgres.EnsureDatabase(ctx, c.DSN("postgres"), "yukta"); err != nil {
		b.Fatal(err)
	}
	return benchEnv{cluster: c, dsn: c.DSN("yukta")}
}

// journalStats waits until the observer has consumed the outbox, verifies
// every journal, and measures the rates and lags from the database's own
// timestamps.
func journalStats(b *testing.B, dsn string, since time.Time) journalBench {
	b.Helper()
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		b.Fatal(err)
	}
	defer conn.Close(ctx)
	deadline := time.Now().Add(60 * time.Second)
	for {
		var behind int
		if err := conn.QueryRow(ctx, `SELECT count(*) FROM events e WHERE (e.xid, e.seq) > (SELECT xid, seq FROM journal_cursor WHERE id = 1)`).Scan(&behind); err != nil {
			b.Fatal(err)
		}
		if behind == 0 {
			break
		}
		if time.Now().After(deadline) {
			b.Fatalf("the observer is still %d events behind 60 s after the load", behind)
		}
		time.Sleep(20 * time.Millisecond)
	}
	var st journalBench
	var evSpan, recSpan float64
	err = conn.QueryRow(ctx, `
		SELECT count(*), extract(epoch FROM max(e.at) - min(e.at)),
		       extract(epoch FROM max(j.appended_at) - min(j.appended_at)),
		       1000 * percentile_cont(0.5) WITHIN GROUP (ORDER BY extract(epoch FROM j.appended_at - e.at)),
		       1000 * percentile_cont(0.99) WITHIN GROUP (ORDER BY extract(epoch FROM j.appended_at - e.at)),
		       1000 * max(extract(epoch FROM j.appended_at - e.at))
		  FROM journal_records j JOIN events e ON e.seq = j.source_seq
		 WHERE e.at >= $1`, since).Scan(&st.records, &evSpan, &recSpan, &st.p50, &st.p99, &st.max)
	if err != nil {
		b.Fatal(err)
	}
	if err := conn.QueryRow(ctx, `SELECT count(*) FROM events WHERE execution_id IS NOT NULL AND at >= $1`, since).Scan(&st.events); err != nil {
		b.Fatal(err)
	}
	st.eventRate, st.recordRate = float64(st.events)/evSpan, float64(st.records)/recSpan
	rows, err := conn.Query(ctx, `
		SELECT e.session_id, count(*),
		       1000 * percentile_cont(0.5) WITHIN GROUP (ORDER BY extract(epoch FROM j.appended_at - e.at)),
		       1000 * percentile_cont(0.99) WITHIN GROUP (ORDER BY extract(epoch FROM j.appended_at - e.at)),
		       1000 * percentile_cont(0.5) WITHIN GROUP (ORDER BY extract(epoch FROM j.appended_at - pg_xact_commit_timestamp(e.xmin))),
		       1000 * percentile_cont(0.99) WITHIN GROUP (ORDER BY extract(epoch FROM j.appended_at - pg_xact_commit_timestamp(e.xmin)))
		  FROM journal_records j JOIN events e ON e.seq = j.source_seq
		 WHERE e.at >= $1 GROUP BY 1 ORDER BY 1`, since)
	if err != nil {
		b.Fatal(err)
	}
	st.phases, err = pgx.CollectRows(rows, func(r pgx.CollectableRow) (journalPhase, error) {
		var p journalPhase
		return p, r.Scan(&p.session, &p.records, &p.p50, &p.p99, &p.commitP50, &p.commitP99)
	})
	if err != nil {
		b.Fatal(err)
	}
	pub := journalPublicKey(dsn)
	rows, err = conn.Query(ctx, `SELECT execution_id::text FROM executions`)
	if err != nil {
		b.Fatal(err)
	}
	ids, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		b.Fatal(err)
	}
	for _, id := range ids {
		lines, cp := storedJournal(b, conn, id)
		if res := journal.VerifyLines(lines, cp, pub); res.Result != journal.VerdictValid {
			b.Errorf("journal %s: %+v", id, res)
			continue
		}
		st.valid++
	}
	return st
}
