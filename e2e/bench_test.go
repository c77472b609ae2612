package e2e

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/yukta/yukta/adapters/postgres"
	"github.com/yukta/yukta/adapters/postgres/localpg"
	"github.com/yukta/yukta/api/apiclient"
)

// The benchmarks run against a durable cluster (fsync and synchronous_commit
// on, as `yukta serve` runs it), and measure raw PostgreSQL (pgbench) on that
// same cluster in the same run, so the ratios compare like with like. Run:
//
//	go test ./e2e -run '^$' -bench . -benchtime 1x
//
// Each benchmark runs its scenario once per iteration; use -benchtime 1x.

type benchEnv struct {
	cluster *localpg.Cluster
	dsn     string
}

func durableCluster(b *testing.B) benchEnv {
	b.Helper()
	root, err := os.MkdirTemp("", "yukta-bench-")
	if err != nil {
		b.Fatal(err)
	}
	_ = os.Chmod(root, 0o711)
	ctx := context.Background()
	opts := localpg.Options{Dir: filepath.Join(root, "pg"), MaxConnections: 200}
	if os.Getenv("YUKTA_BENCH_PGSS") != "" { // query statistics for diagnosis
		opts.Settings = map[string]string{"shared_preload_libraries": "pg_stat_statements,auto_explain", "pg_stat_statements.track": "all",
			"auto_explain.log_min_duration": "6ms", "auto_explain.log_analyze": "on", "auto_explain.log_buffers": "on", "auto_explain.log_nested_statements": "on"}
		if f, err := os.Create(filepath.Join(os.TempDir(), "yukta-bench-pg.log")); err == nil {
			opts.Log = f
			b.Cleanup(func() { f.Close() })
		}
	}
	c, err := localpg.Start(ctx, opts)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = c.Stop(context.Background()); _ = os.RemoveAll(root) })
	if err := postgres.EnsureDatabase(ctx, c.DSN("postgres"), "yukta"); err != nil {
		b.Fatal(err)
	}
	if os.Getenv("YUKTA_BENCH_PGSS") != "" {
		conn, err := pgx.Connect(ctx, c.DSN("yukta"))
		if err != nil {
			b.Fatal(err)
		}
		if _, err := conn.Exec(ctx, "CREATE EXTENSION pg_stat_statements"); err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() {
			rows, _ := conn.Query(context.Background(), `SELECT calls, round(total_exec_time::numeric, 1), round(mean_exec_time::numeric, 3),
				left(regexp_replace(query, '\s+', ' ', 'g'), 110) FROM pg_stat_statements ORDER BY total_exec_time DESC LIMIT 15`)
			for rows.Next() {
				var calls int64
				var total, mean float64
				var q string
				_ = rows.Scan(&calls, &total, &mean, &q)
				b.Logf("%8d calls %9.1f ms total %8.3f ms mean  %s", calls, total, mean, q)
			}
			conn.Close(context.Background())
		})
	}
	return benchEnv{cluster: c, dsn: c.DSN("yukta")}
}

var tpsRE = regexp.MustCompile(`tps = ([0-9.]+) \(without initial connection time\)`)

// pgbenchInsert measures single-row insert commits/s at a client count.
func pgbenchInsert(b *testing.B, env benchEnv, clients int, secs int) float64 {
	b.Helper()
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, env.dsn)
	if err != nil {
		b.Fatal(err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, `CREATE TABLE IF NOT EXISTS bench_ins (id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
		created_at timestamptz DEFAULT now(), payload jsonb)`); err != nil {
		b.Fatal(err)
	}
	script := filepath.Join(b.TempDir(), "insert1.sql")
	if err := os.WriteFile(script, []byte(`INSERT INTO bench_ins(payload) VALUES ('{"k":"0123456789012345678901234567890123456789"}'::jsonb);`+"\n"), 0o644); err != nil {
		b.Fatal(err)
	}
	path, err := exec.LookPath("pgbench")
	if err != nil {
		b.Fatal("pgbench is not installed (Debian: apt-get install postgresql-client); the ratios need it")
	}
	out, err := exec.Command(path, "-n", "-M", "prepared", "-f", script, "-c", strconv.Itoa(clients), "-j", strconv.Itoa(min(clients, 2)),
		"-T", strconv.Itoa(secs), "-h", env.cluster.SocketDir(), "-p", "5432", "-U", "postgres", "yukta").CombinedOutput()
	if err != nil {
		b.Fatalf("pgbench: %v\n%s", err, out)
	}
	m := tpsRE.FindSubmatch(out)
	if m == nil {
		b.Fatalf("pgbench printed no tps:\n%s", out)
	}
	tps, _ := strconv.ParseFloat(string(m[1]), 64)
	return tps
}

func benchServer(b *testing.B, env benchEnv) *server {
	b.Helper()
	return benchServerWith(b, env)
}

// benchServerWith starts a benchmark server with extra YUKTA_* settings.
func benchServerWith(b *testing.B, env benchEnv, extra ...string) *server {
	b.Helper()
	// The benchmarks measure the engine, not the request limits or the
	// supervisors' command budget.
	o := serverOptions{DSN: env.dsn, Args: []string{"--log-level", "info"}, Env: []string{"YUKTA_RATE_LIMIT_SOURCE=off", "YUKTA_RATE_LIMIT_KEY=off",
		"YUKTA_SUPERVISOR_COMMANDS_PER_MINUTE=10000"}}
	if w := os.Getenv("YUKTA_BENCH_WORKERS"); w != "" {
		o.Env = append(o.Env, "YUKTA_WORKERS="+w)
	}
	if a := os.Getenv("YUKTA_BENCH_DEBUG_ADDR"); a != "" { // profile the server under load
		o.Env = append(o.Env, "YUKTA_DEBUG_ADDR="+a)
	}
	o.Env = append(o.Env, extra...)
	return startServer(b, o)
}

// linearSession is a chain of n no-op nodes (MANUAL then TRANSFORM "payload").
func linearSession(id string, n int) []byte {
	var nodes, edges []string
	nodes = append(nodes, `{"nodeId":"n0","type":"MANUAL"}`)
	for i := 1; i < n; i++ {
		nodes = append(nodes, fmt.Sprintf(`{"nodeId":"n%d","type":"TRANSFORM","config":{"expression":"payload"}}`, i))
		edges = append(edges, fmt.Sprintf(`{"source":"n%d","target":"n%d"}`, i-1, i))
	}
	return fmt.Appendf(nil, `{"name":%q,"workflows":[{"workflowId":"w","nodes":[%s],"edges":[%s]}]}`, id, strings.Join(nodes, ","), strings.Join(edges, ","))
}

func applyDoc(b *testing.B, s *server, id string, doc []byte) {
	b.Helper()
	res, err := s.Client.PutSessionWithBodyWithResponse(context.Background(), id, nil, jsonType, bytes.NewReader(doc))
	if err != nil || res.StatusCode() >= 300 {
		b.Fatalf("apply %s: %v %s", id, err, res.Body)
	}
}

func startRun(b *testing.B, s *server, sid string, payload any) string {
	res, err := s.Client.StartExecutionWithResponse(context.Background(), sid, "w", nil, apiclient.StartExecutionJSONRequestBody{Payload: payload})
	if err != nil || res.JSON201 == nil {
		b.Fatalf("start: %v %v", err, res)
	}
	return res.JSON201.ExecutionId
}

func percentile(ds []time.Duration, p float64) time.Duration {
	s := slices.Clone(ds)
	slices.Sort(s)
	i := int(float64(len(s)-1) * p)
	return s[i]
}

// fanSession is a 10-node no-op DAG: MANUAL -> SPLIT -> 7 TRANSFORM -> RESULT.
// One start sends every element of payload.items through nine nodes.
func fanSession() []byte {
	nodes := []string{`{"nodeId":"start","type":"MANUAL"}`, `{"nodeId":"split","type":"SPLIT","config":{"field":"items"}}`}
	edges := []string{`{"source":"start","target":"split"}`}
	prev := "split"
	for i := 1; i <= 7; i++ {
		id := fmt.Sprintf("t%d", i)
		nodes = append(nodes, fmt.Sprintf(`{"nodeId":%q,"type":"TRANSFORM","config":{"expression":"payload"}}`, id))
		edges = append(edges, fmt.Sprintf(`{"source":%q,"target":%q}`, prev, id))
		prev = id
	}
	nodes = append(nodes, `{"nodeId":"out","type":"RESULT"}`)
	edges = append(edges, fmt.Sprintf(`{"source":%q,"target":"out"}`, prev))
	return fmt.Appendf(nil, `{"name":"fan","workflows":[{"workflowId":"w","nodes":[%s],"edges":[%s]}]}`, strings.Join(nodes, ","), strings.Join(edges, ","))
}

// doneRate waits until every execution of a session ended and returns the
// node transitions (messages a node took and finished) per second between
// the first start and the last end, from the database's own timestamps.
func doneRate(b *testing.B, env benchEnv, sid string) (transitions int64, perSec float64) {
	b.Helper()
	conn, err := pgx.Connect(context.Background(), env.dsn)
	if err != nil {
		b.Fatal(err)
	}
	defer conn.Close(context.Background())
	for {
		var left int
		_ = conn.QueryRow(context.Background(), `SELECT count(*) FROM executions WHERE session_id = $1 AND status <> 'SUCCESS'`, sid).Scan(&left)
		if left == 0 {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	var elapsed float64
	_ = conn.QueryRow(context.Background(), `SELECT extract(epoch FROM max(ended_at) - min(started_at)) FROM executions WHERE session_id = $1`, sid).Scan(&elapsed)
	_ = conn.QueryRow(context.Background(), `SELECT count(*) FROM work_items w JOIN executions e USING (execution_id) WHERE e.session_id = $1 AND w.state = 'done'`, sid).Scan(&transitions)
	return transitions, float64(transitions) / elapsed
}

// BenchmarkTransitions measures durable node transitions/s on 10-node no-op
// DAGs and divides by pgbench single-row insert commits/s on the same
// cluster. "fan": 20 runs each sending 500 messages through nine nodes (the
// engine's own throughput); "runs": 1,000 separate runs of a 10-node chain
// started over REST 16 at a time (starts included).
func BenchmarkTransitions(b *testing.B) {
	env := durableCluster(b)
	for range b.N {
		s := benchServer(b, env)
		fanN, fanRate, runsN, runsRate := engineLoad(b, s, env)
		s.Stop()
		if i := strings.LastIndex(s.logs.String(), `"msg":"engine stopped"`); i >= 0 {
			b.Logf("%s", s.logs.String()[i:])
		}
		b.Logf("fan: %d transitions, %.0f/s; runs: %d transitions, %.0f/s", fanN, fanRate, runsN, runsRate)
		b.ReportMetric(fanRate, "fan_transitions/s")
		b.ReportMetric(runsRate, "runs_transitions/s")
		for _, c := range []int{1, 2, 4, 8} {
			raw := pgbenchInsert(b, env, c, 5)
			b.ReportMetric(raw, fmt.Sprintf("pgbench_c%d_tps", c))
			b.ReportMetric(fanRate/raw, fmt.Sprintf("fan_ratio_c%d", c))
			b.ReportMetric(runsRate/raw, fmt.Sprintf("runs_ratio_c%d", c))
		}
	}
}

// engineLoad runs the engine benchmark's two phases on s and returns each
// one's done transitions and their rate: "fan", 20 runs of 500 messages
// through nine nodes, then "runs", 1,000 runs of a 10-node chain started
// over REST 16 at a time.
func engineLoad(b *testing.B, s *server, env benchEnv) (fanN int64, fanRate float64, runsN int64, runsRate float64) {
	b.Helper()
	applyDoc(b, s, "fan", fanSession())
	items := make([]int, 500)
	for range 20 {
		startRun(b, s, "fan", map[string]any{"items": items})
	}
	fanN, fanRate = doneRate(b, env, "fan")
	applyDoc(b, s, "runs", linearSession("runs", 10))
	var wg sync.WaitGroup
	sem := make(chan struct{}, 16)
	for i := range 1000 {
		wg.Go(func() { sem <- struct{}{}; defer func() { <-sem }(); startRun(b, s, "runs", map[string]any{"i": i}) })
	}
	wg.Wait()
	runsN, runsRate = doneRate(b, env, "runs")
	return fanN, fanRate, runsN, runsRate
}

// BenchmarkLatency measures start -> SUCCESS of a 10-node linear DAG on an
// idle system, from the execution's own timestamps.
func BenchmarkLatency(b *testing.B) {
	env := durableCluster(b)
	for range b.N {
		s := benchServer(b, env)
		applyDoc(b, s, "lat", linearSession("lat", 10))
		conn, err := pgx.Connect(context.Background(), env.dsn)
		if err != nil {
			b.Fatal(err)
		}
		var lat []time.Duration
		for i := range 200 {
			id := startRun(b, s, "lat", map[string]any{"i": i})
			for {
				var d *float64
				_ = conn.QueryRow(context.Background(), `SELECT extract(epoch FROM ended_at - started_at) FROM executions WHERE execution_id = $1`, id).Scan(&d)
				if d != nil {
					lat = append(lat, time.Duration(*d*float64(time.Second)))
					break
				}
				time.Sleep(2 * time.Millisecond)
			}
		}
		conn.Close(context.Background())
		s.Stop()
		b.ReportMetric(float64(percentile(lat, 0.5).Microseconds())/1000, "p50_ms")
		b.ReportMetric(float64(percentile(lat, 0.99).Microseconds())/1000, "p99_ms")
	}
}

// BenchmarkPauseToNoClaim measures, for a node fed a stream of messages, the
// time from a node PAUSE being accepted to the last claim of that node.
func BenchmarkPauseToNoClaim(b *testing.B) {
	env := durableCluster(b)
	for range b.N {
		s := benchServer(b, env)
		applyDoc(b, s, "pause", []byte(`{"name":"pause","workflows":[{"workflowId":"w","nodes":[
			{"nodeId":"start","type":"MANUAL"},
			{"nodeId":"split","type":"SPLIT","config":{"field":"items"}},
			{"nodeId":"work","type":"TRANSFORM","config":{"expression":"payload"}},
			{"nodeId":"out","type":"RESULT"}],
			"edges":[{"source":"start","target":"split"},{"source":"split","target":"work"},{"source":"work","target":"out"}]}]}`))
		conn, err := pgx.Connect(context.Background(), env.dsn)
		if err != nil {
			b.Fatal(err)
		}
		items := make([]int, 2000)
		var lat []time.Duration
		for range 30 {
			id := startRun(b, s, "pause", map[string]any{"items": items})
			for { // wait until the node is busy
				var n int
				_ = conn.QueryRow(context.Background(), `SELECT received FROM execution_nodes WHERE execution_id = $1 AND node_id = 'work'`, id).Scan(&n)
				if n >= 50 {
					break
				}
				time.Sleep(time.Millisecond)
			}
			res, err := s.Client.ControlNodeWithResponse(context.Background(), "pause", id, "work", nil,
				apiclient.ControlNodeJSONRequestBody{Action: apiclient.NodeCommandActionPAUSE})
			accepted := time.Now()
			if err != nil || res.JSON200 == nil {
				b.Fatalf("pause: %v %v", err, res)
			}
			time.Sleep(300 * time.Millisecond)
			var last time.Time
			_ = conn.QueryRow(context.Background(), `SELECT max(claimed_at) FROM work_items WHERE execution_id = $1 AND node_id = 'work'`, id).Scan(&last)
			d := last.Sub(accepted)
			if d < 0 {
				d = 0
			}
			lat = append(lat, d)
			_, _ = s.Client.ControlExecutionWithResponse(context.Background(), "pause", id, nil,
				apiclient.ControlExecutionJSONRequestBody{Action: apiclient.ExecutionCommandActionSTOP})
		}
		conn.Close(context.Background())
		s.Stop()
		b.ReportMetric(float64(percentile(lat, 0.5).Microseconds())/1000, "p50_ms")
		b.ReportMetric(float64(percentile(lat, 0.99).Microseconds())/1000, "p99_ms")
	}
}

// BenchmarkLogTail compares a 50-line tail of a 1,000,000-line log with the
// same call on a 1,000-line log.
func BenchmarkLogTail(b *testing.B) {
	env := durableCluster(b)
	for range b.N {
		s := benchServer(b, env)
		applyDoc(b, s, "logs", linearSession("logs", 2))
		conn, err := pgx.Connect(context.Background(), env.dsn)
		if err != nil {
			b.Fatal(err)
		}
		tail := func(lines int) time.Duration {
			id := startRun(b, s, "logs", nil)
			_, err := conn.Exec(context.Background(), `
				INSERT INTO execution_logs (execution_id, seq, at, level, node_id, message)
				SELECT $1, g, now(), 'info', 'n1', 'line ' || g || ' of a long log: some realistic text about what happened'
				  FROM generate_series(1000000, 1000000 + $2 - 1) g`, id, lines)
			if err != nil {
				b.Fatal(err)
			}
			if _, err := conn.Exec(context.Background(), `UPDATE executions SET log_seq = 1000000 + $2 WHERE execution_id = $1`, id, lines); err != nil {
				b.Fatal(err)
			}
			_, _ = conn.Exec(context.Background(), `VACUUM ANALYZE execution_logs`)
			n := 50
			var ds []time.Duration
			for range 30 {
				began := time.Now()
				res, err := s.Client.GetExecutionLogsWithResponse(context.Background(), "logs", id, &apiclient.GetExecutionLogsParams{TailLines: &n})
				ds = append(ds, time.Since(began))
				if err != nil || res.JSON200 == nil || res.JSON200.ReturnedLines != 50 {
					b.Fatalf("tail: %v %v", err, res)
				}
			}
			return percentile(ds, 0.5)
		}
		small := tail(1000)
		big := tail(1_000_000)
		conn.Close(context.Background())
		s.Stop()
		b.ReportMetric(float64(small.Microseconds())/1000, "tail_1k_ms")
		b.ReportMetric(float64(big.Microseconds())/1000, "tail_1M_ms")
		b.ReportMetric(float64(big)/float64(small), "ratio_1M_vs_1k")
	}
}

// BenchmarkRSS1000Running measures the server's resident memory with 1,000
// executions running (each parked on a DELAY).
func BenchmarkRSS1000Running(b *testing.B) {
	env := durableCluster(b)
	for range b.N {
		s := benchServer(b, env)
		applyDoc(b, s, "rss", []byte(`{"name":"rss","workflows":[{"workflowId":"w","nodes":[
			{"nodeId":"start","type":"MANUAL"},{"nodeId":"wait","type":"DELAY","config":{"duration":"10m"}},{"nodeId":"out","type":"RESULT"}],
			"edges":[{"source":"start","target":"wait"},{"source":"wait","target":"out"}]}]}`))
		var wg sync.WaitGroup
		sem := make(chan struct{}, 16)
		for i := range 1000 {
			wg.Go(func() { sem <- struct{}{}; defer func() { <-sem }(); startRun(b, s, "rss", map[string]any{"i": i}) })
		}
		wg.Wait()
		time.Sleep(3 * time.Second) // every run reached its DELAY
		conn, err := pgx.Connect(context.Background(), env.dsn)
		if err != nil {
			b.Fatal(err)
		}
		var running int
		_ = conn.QueryRow(context.Background(), `SELECT count(*) FROM executions WHERE session_id = 'rss' AND status = 'RUNNING'`).Scan(&running)
		conn.Close(context.Background())
		if running != 1000 {
			b.Fatalf("%d runs running, want 1000", running)
		}
		status, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", s.cmd.Process.Pid))
		if err != nil {
			b.Fatal(err)
		}
		m := regexp.MustCompile(`VmRSS:\s+(\d+) kB`).FindSubmatch(status)
		kb, _ := strconv.Atoi(string(m[1]))
		s.Stop()
		b.ReportMetric(float64(kb)/1024, "rss_MB")
	}
}
