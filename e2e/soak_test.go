//go:build soak

package e2e

import (
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/yukta/yukta/adapters/postgres/pgtest"
	"github.com/yukta/yukta/api/apiclient"
)

// T25, bounded: `task soak` (or go test -tags soak ./e2e -run '^TestSoak$').
// The load is spread over YUKTA_SOAK_DURATION (default 10m) and counts
// YUKTA_SOAK_RUNS runs (default 10,000) of a 10-node chain, started over
// REST by 64 concurrent starters while 50 MCP clients each poll
// get_workflow_status once a second. Then the runs drain, and the server's
// goroutines and RSS must come back to within 10% of what they were after
// a warm-up, within 60 s. Timing figures are reported, never asserted (they
// belong in docs/benchmarks.md).

const (
	soakStarters = 64
	soakPollers  = 50
	soakNodes    = 10
	// The server's database connections: its pool (YUKTA_DB_MAX_CONNS, set
	// below), the claim queue's own pool (4) and the LISTEN connection.
	soakPoolMax = 20
	soakConnMax = soakPoolMax + 4 + 1
)

func soakSetting[T any](t *testing.T, name string, def T, parse func(string) (T, error)) T {
	v := os.Getenv(name)
	if v == "" {
		return def
	}
	x, err := parse(v)
	if err != nil {
		t.Fatalf("%s=%q: %v", name, v, err)
	}
	return x
}

// soakPhase is the traffic of one phase and what the clients observed.
type soakPhase struct {
	mu       sync.Mutex
	ids      []string
	errors   int
	firstErr []string
	status   []time.Duration // get_workflow_status round trips
	starts   []time.Duration // REST start round trips
}

func (p *soakPhase) fail(format string, args ...any) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.errors++
	if len(p.firstErr) < 10 {
		p.firstErr = append(p.firstErr, fmt.Sprintf(format, args...))
	}
}

func (p *soakPhase) randomID() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(p.ids) == 0 {
		return ""
	}
	return p.ids[rand.IntN(len(p.ids))]
}

// soak drives one server. Its clients have their own transports, so that
// their connections can be closed between phases: an idle keep-alive
// connection holds a goroutine in the server.
type soak struct {
	t        *testing.T
	s        *server
	rest     *apiclient.ClientWithResponses
	restTr   *http.Transport
	mcpTr    *http.Transport
	progress func() string
}

// run starts runs at an even pace over d (64 starters take the tickets),
// with the MCP pollers polling until the last start; it returns once every
// start has answered. Keys are prefix-i, so a start is never doubled.
func (k *soak) run(prefix string, runs int, d time.Duration) *soakPhase {
	p := &soakPhase{}
	ctx, stopPollers := context.WithCancel(context.Background())
	var pollers sync.WaitGroup
	for range soakPollers {
		pollers.Go(func() { k.poll(ctx, p) })
	}
	// Ticket i is due at i/runs of d: a pacer that falls behind (a slow
	// start, a starved client) catches up instead of stretching the phase.
	tickets := make(chan int)
	go func() {
		defer close(tickets)
		began := time.Now()
		for i := range runs {
			time.Sleep(time.Until(began.Add(d * time.Duration(i) / time.Duration(runs))))
			tickets <- i
		}
	}()
	var starters sync.WaitGroup
	for range soakStarters {
		starters.Go(func() {
			for i := range tickets {
				key := fmt.Sprintf("%s-%d", prefix, i)
				began := time.Now()
				res, err := k.rest.StartExecutionWithResponse(context.Background(), "soak", "w",
					&apiclient.StartExecutionParams{IdempotencyKey: &key}, apiclient.StartRequest{Payload: map[string]any{"i": i}})
				took := time.Since(began)
				if err != nil || res.JSON201 == nil {
					p.fail("start %s: %v %v", key, err, res)
					continue
				}
				p.mu.Lock()
				p.ids = append(p.ids, res.JSON201.ExecutionId)
				p.starts = append(p.starts, took)
				p.mu.Unlock()
			}
		})
	}
	report := time.NewTicker(30 * time.Second)
	defer report.Stop()
	done := make(chan struct{})
	go func() { starters.Wait(); close(done) }()
	for waiting := true; waiting; {
		select {
		case <-done:
			waiting = false
		case <-report.C:
			p.mu.Lock()
			started, polls, errs := len(p.ids), len(p.status), p.errors
			p.mu.Unlock()
			k.t.Logf("%s: %d started, %d status polls, %d errors; %s", prefix, started, polls, errs, k.progress())
		}
	}
	stopPollers()
	pollers.Wait()
	k.restTr.CloseIdleConnections()
	k.mcpTr.CloseIdleConnections()
	return p
}

// poll is one MCP client: get_workflow_status of a random started run,
// once a second, from a random phase so the pollers spread out.
func (k *soak) poll(ctx context.Context, p *soakPhase) {
	c := mcp.NewClient(&mcp.Implementation{Name: "soak", Version: "v0"}, nil)
	cs, err := c.Connect(ctx, &mcp.StreamableClientTransport{
		Endpoint:             k.s.URL + "/mcp",
		HTTPClient:           &http.Client{Transport: k.mcpTr, Timeout: 30 * time.Second},
		DisableStandaloneSSE: true,
		MaxRetries:           -1,
	}, nil)
	if err != nil {
		p.fail("mcp connect: %v", err)
		return
	}
	defer cs.Close()
	select {
	case <-ctx.Done():
		return
	case <-time.After(rand.N(time.Second)):
	}
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	for {
		if id := p.randomID(); id != "" {
			began := time.Now()
			res, err := cs.CallTool(context.WithoutCancel(ctx), &mcp.CallToolParams{Name: "get_workflow_status",
				Arguments: map[string]any{"sessionId": "soak", "executionId": id}})
			took := time.Since(began)
			switch {
			case err != nil:
				p.fail("get_workflow_status %s: %v", id, err)
			case res.IsError:
				p.fail("get_workflow_status %s: %s", id, text(res))
			default:
				p.mu.Lock()
				p.status = append(p.status, took)
				p.mu.Unlock()
			}
		}
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
}

// soakSample is what the server holds while idle.
type soakSample struct {
	goroutines float64
	rssKB      int
	heapBytes  float64
}

func (x soakSample) String() string {
	return fmt.Sprintf("%.0f goroutines, RSS %.1f MiB, heap %.1f MiB", x.goroutines, float64(x.rssKB)/1024, x.heapBytes/(1<<20))
}

func (k *soak) sample() soakSample {
	k.t.Helper()
	rss, err := rssKB(k.s.cmd.Process.Pid)
	if err != nil {
		k.t.Fatal(err)
	}
	return soakSample{goroutines: metricSum(k.t, k.s, "go_goroutines"), rssKB: rss, heapBytes: metricSum(k.t, k.s, "go_memstats_heap_alloc_bytes")}
}

// settle waits (up to 15 s) for the goroutine count to hold still for two
// samples a second apart, and returns the last sample.
func (k *soak) settle() soakSample {
	prev := k.sample()
	for range 15 {
		time.Sleep(time.Second)
		cur := k.sample()
		if cur.goroutines == prev.goroutines {
			return cur
		}
		prev = cur
	}
	return prev
}

// rssKB reads a process's resident set size from /proc.
func rssKB(pid int) (int, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, err
	}
	for l := range strings.Lines(string(b)) {
		if v, ok := strings.CutPrefix(l, "VmRSS:"); ok {
			return strconv.Atoi(strings.TrimSuffix(strings.TrimSpace(v), " kB"))
		}
	}
	return 0, fmt.Errorf("no VmRSS in /proc/%d/status", pid)
}

// drain waits until every run has ended.
func drain(t *testing.T, conn *pgx.Conn, d time.Duration) time.Duration {
	t.Helper()
	return poll(t, d, "every run ending", func() bool {
		return queryInt(t, conn, `SELECT count(*) FROM executions WHERE ended_at IS NULL`) == 0
	})
}

// quantiles reports p50, p99 and max (percentile is bench_test.go's).
func quantiles(ds []time.Duration) string {
	if len(ds) == 0 {
		return "no samples"
	}
	r := func(p float64) time.Duration { return percentile(ds, p).Round(10 * time.Microsecond) }
	return fmt.Sprintf("p50 %s, p99 %s, max %s", r(.5), r(.99), r(1))
}

// serverSampler samples the server's database connections and RSS every
// second until stopped, keeping the highest of each.
type serverSampler struct {
	stop              context.CancelFunc
	done              chan struct{}
	maxConns, peakRSS int
}

func sampleServer(dsn string, pid int) *serverSampler {
	ctx, stop := context.WithCancel(context.Background())
	x := &serverSampler{stop: stop, done: make(chan struct{})}
	go func() {
		defer close(x.done)
		c, err := pgx.Connect(ctx, dsn)
		if err != nil {
			return
		}
		defer c.Close(context.Background())
		for ctx.Err() == nil {
			var n int
			if c.QueryRow(ctx, `SELECT count(*) FROM pg_stat_activity
				WHERE datname = current_database() AND application_name LIKE 'yukta%'`).Scan(&n) == nil {
				x.maxConns = max(x.maxConns, n)
			}
			if rss, err := rssKB(pid); err == nil {
				x.peakRSS = max(x.peakRSS, rss)
			}
			select {
			case <-ctx.Done():
			case <-time.After(time.Second):
			}
		}
	}()
	return x
}

// Stop ends the sampling; the maxima are final once it returns.
func (x *serverSampler) Stop() {
	x.stop()
	<-x.done
}

func TestSoak(t *testing.T) {
	duration := soakSetting(t, "YUKTA_SOAK_DURATION", 10*time.Minute, time.ParseDuration)
	runs := soakSetting(t, "YUKTA_SOAK_RUNS", 10_000, strconv.Atoi)
	dsn := pgtest.NewDatabase(t)
	s := startServer(t, serverOptions{DSN: dsn,
		Env: []string{"YUKTA_RATE_LIMIT_KEY=off", "YUKTA_RATE_LIMIT_SOURCE=off", "YUKTA_DB_MAX_CONNS=" + strconv.Itoa(soakPoolMax)},
		// A line per request would fill the harness's log buffer.
		Args: []string{"--log-level", "warn"}})
	conn, err := pgx.Connect(context.Background(), dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	restTr := &http.Transport{MaxIdleConnsPerHost: soakStarters}
	rest, err := apiclient.NewClientWithResponses(s.URL, apiclient.WithHTTPClient(&http.Client{Transport: restTr, Timeout: 30 * time.Second}))
	if err != nil {
		t.Fatal(err)
	}
	k := &soak{t: t, s: s, rest: rest, restTr: restTr, mcpTr: &http.Transport{MaxIdleConnsPerHost: soakPollers},
		progress: func() string {
			// The load average says how much else shared the machine.
			load, _ := os.ReadFile("/proc/loadavg")
			avg, _, _ := strings.Cut(string(load), " ")
			return fmt.Sprintf("%d runs in flight; load average %s",
				queryInt(t, conn, `SELECT count(*) FROM executions WHERE ended_at IS NULL`), avg)
		}}
	if res, err := s.Client.PutSessionWithBodyWithResponse(context.Background(), "soak", nil, jsonType, bytes.NewReader(linearSession("soak", soakNodes))); err != nil || res.StatusCode() != http.StatusCreated {
		t.Fatalf("apply: %v %v", err, res)
	}

	// Warm-up: the same traffic at the same pace for a tenth of the time,
	// so pools, caches and the heap reach their working size; the baseline
	// is the idle server after it.
	warmRuns := max(runs/10, 1)
	warm := k.run("warm", warmRuns, duration/10)
	drain(t, conn, 5*time.Minute)
	base := k.settle()
	t.Logf("baseline after a warm-up of %d runs: %s", warmRuns, base)

	sampler := sampleServer(dsn, s.cmd.Process.Pid)
	began := time.Now()
	load := k.run("soak", runs, duration)
	loaded := time.Since(began)
	drained := drain(t, conn, 10*time.Minute)
	sampler.Stop()
	t.Logf("soak: %d runs started in %s (%.1f/s), drained %s later", len(load.ids), loaded.Round(time.Second),
		float64(len(load.ids))/loaded.Seconds(), drained.Round(100*time.Millisecond))
	t.Logf("get_workflow_status over MCP: %d calls, %s", len(load.status), quantiles(load.status))
	t.Logf("REST start: %d calls, %s", len(load.starts), quantiles(load.starts))
	t.Logf("database connections: at most %d (pool %d + queue 4 + listener 1 = %d); peak RSS %.1f MiB",
		sampler.maxConns, soakPoolMax, soakConnMax, float64(sampler.peakRSS)/1024)

	// Leaks: back within 10% of the baseline within 60 s of the drain.
	var end soakSample
	back := func() bool {
		end = k.sample()
		return end.goroutines <= base.goroutines*1.1 && float64(end.rssKB) <= float64(base.rssKB)*1.1
	}
	deadline := time.Now().Add(60 * time.Second)
	for !back() && time.Now().Before(deadline) {
		time.Sleep(time.Second)
	}
	t.Logf("after the drain: %s (baseline %s)", end, base)
	if end.goroutines > base.goroutines*1.1 {
		t.Errorf("goroutines %.0f, more than 10%% above the baseline %.0f 60 s after the drain", end.goroutines, base.goroutines)
	}
	if float64(end.rssKB) > float64(base.rssKB)*1.1 {
		t.Errorf("RSS %d kB, more than 10%% above the baseline %d kB 60 s after the drain", end.rssKB, base.rssKB)
	}

	// No errors (rate limits are off, so a 429 is one too), every run
	// succeeded with every node once, and every journal verifies.
	for _, p := range []*soakPhase{warm, load} {
		if p.errors > 0 {
			t.Errorf("%d client errors, first: %s", p.errors, strings.Join(p.firstErr, "; "))
		}
	}
	total := len(warm.ids) + len(load.ids)
	if total != warmRuns+runs {
		t.Errorf("%d runs started, want %d", total, warmRuns+runs)
	}
	if n := queryInt(t, conn, `SELECT count(*) FROM executions`); n != total {
		t.Errorf("%d executions in the database, %d starts answered", n, total)
	}
	if n := queryInt(t, conn, `SELECT count(*) FROM executions WHERE status <> 'SUCCESS'`); n != 0 {
		t.Errorf("%d runs did not succeed", n)
	}
	if n := queryInt(t, conn, `SELECT count(*) FROM work_items WHERE state = 'done'`); n != total*soakNodes {
		t.Errorf("%d node transitions, want %d", n, total*soakNodes)
	}
	if sampler.maxConns > soakConnMax {
		t.Errorf("%d database connections, more than the pools allow (%d)", sampler.maxConns, soakConnMax)
	}
	checked := time.Now()
	if c := checkJournals(t, dsn, 2*time.Minute); c.settled != total {
		t.Errorf("%d settled journals, want %d", c.settled, total)
	}
	events, records := assertEveryEventJournaledOnce(t, dsn)
	t.Logf("journals: %d VALID, %d events each journaled once (%d records), checked in %s", total, events, records, time.Since(checked).Round(time.Second))
}
