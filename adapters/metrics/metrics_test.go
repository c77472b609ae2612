package metrics_test

import (
	"context"
	"errors"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/yukta/yukta/adapters/metrics"
	"github.com/yukta/yukta/application/executionapp"
)

// scrape fetches the handler's output as Prometheus would.
func scrape(t *testing.T, m *metrics.Metrics) string {
	t.Helper()
	rec := httptest.NewRecorder()
	m.Handler().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/metrics", nil))
	if rec.Code != http.StatusOK {
		t.Fatalf("scrape: status %d: %s", rec.Code, rec.Body.String())
	}
	if ct := rec.Header().Get("Content-Type"); !strings.HasPrefix(ct, "text/plain") {
		t.Fatalf("scrape: content type %q, want the text format", ct)
	}
	b, err := io.ReadAll(rec.Body)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// sample returns the value of one series (name with its labels, sorted by
// name as the text format writes them), and whether it is exported.
func sample(body, series string) (float64, bool) {
	for line := range strings.Lines(body) {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), series+" "); ok {
			f, err := strconv.ParseFloat(v, 64)
			return f, err == nil
		}
	}
	return 0, false
}

func want(t *testing.T, body, series string, value float64) {
	t.Helper()
	got, ok := sample(body, series)
	if !ok {
		t.Fatalf("series %s is not exported; scrape:\n%s", series, grep(body, strings.SplitN(series, "{", 2)[0]))
	}
	if math.Abs(got-value) > 1e-9 {
		t.Fatalf("%s = %v, want %v", series, got, value)
	}
}

func absent(t *testing.T, body, name string) {
	t.Helper()
	if g := grep(body, name); g != "" {
		t.Fatalf("%s should not be exported, got:\n%s", name, g)
	}
}

// grep returns the sample lines of one metric family.
func grep(body, name string) string {
	var b strings.Builder
	for line := range strings.Lines(body) {
		if strings.HasPrefix(line, name+"{") || strings.HasPrefix(line, name+" ") || strings.HasPrefix(line, name+"_") {
			b.WriteString(line)
		}
	}
	return b.String()
}

func TestObserveRequestCountsByRouteTemplate(t *testing.T) {
	m := metrics.New(metrics.Options{})
	m.ObserveRequest("rest", "GET", "/api/sessions/:sessionId", 200, 20*time.Millisecond)
	m.ObserveRequest("rest", "GET", "/api/sessions/:sessionId", 200, 40*time.Millisecond)
	m.ObserveRequest("rest", "GET", "/api/sessions/:sessionId", 404, time.Millisecond)
	m.ObserveRequest("rest", "BREW", "", 404, time.Millisecond)
	m.ObserveRequest("mcp", "POST", "/mcp", 200, 3*time.Second)
	body := scrape(t, m)

	want(t, body, `yukta_http_requests_total{method="GET",route="/api/sessions/:sessionId",status="200",surface="rest"}`, 2)
	want(t, body, `yukta_http_requests_total{method="GET",route="/api/sessions/:sessionId",status="404",surface="rest"}`, 1)
	// A method outside the standard set and a request no route matched
	// stay two fixed label values, whatever a client sends.
	want(t, body, `yukta_http_requests_total{method="OTHER",route="unmatched",status="404",surface="rest"}`, 1)
	want(t, body, `yukta_http_requests_total{method="POST",route="/mcp",status="200",surface="mcp"}`, 1)
	if n := strings.Count(grep(body, "yukta_http_requests_total"), "\n"); n != 4 {
		t.Fatalf("%d request series, want 4:\n%s", n, grep(body, "yukta_http_requests_total"))
	}

	// The histogram has no method or status: only surface and route.
	want(t, body, `yukta_http_request_duration_seconds_count{route="/api/sessions/:sessionId",surface="rest"}`, 3)
	want(t, body, `yukta_http_request_duration_seconds_bucket{route="/api/sessions/:sessionId",surface="rest",le="0.01"}`, 1)
	want(t, body, `yukta_http_request_duration_seconds_bucket{route="/api/sessions/:sessionId",surface="rest",le="0.025"}`, 2)
	want(t, body, `yukta_http_request_duration_seconds_bucket{route="/api/sessions/:sessionId",surface="rest",le="0.05"}`, 3)
	want(t, body, `yukta_http_request_duration_seconds_sum{route="/api/sessions/:sessionId",surface="rest"}`, 0.061)
	want(t, body, `yukta_http_request_duration_seconds_bucket{route="/mcp",surface="mcp",le="2.5"}`, 0)
	want(t, body, `yukta_http_request_duration_seconds_bucket{route="/mcp",surface="mcp",le="5"}`, 1)
	want(t, body, `yukta_http_request_duration_seconds_count{route="unmatched",surface="rest"}`, 1)
}

func TestAuthFailuresAndRateLimits(t *testing.T) {
	m := metrics.New(metrics.Options{})
	body := scrape(t, m)
	absent(t, body, "yukta_auth_failures_total")
	m.AuthFailure("rest", "invalid")
	m.AuthFailure("rest", "invalid")
	m.AuthFailure("mcp", "missing")
	m.RateLimited("rest", "source")
	body = scrape(t, m)
	want(t, body, `yukta_auth_failures_total{reason="invalid",surface="rest"}`, 2)
	want(t, body, `yukta_auth_failures_total{reason="missing",surface="mcp"}`, 1)
	want(t, body, `yukta_rate_limited_total{scope="source",surface="rest"}`, 1)
}

func TestKeyFileReloads(t *testing.T) {
	m := metrics.New(metrics.Options{})
	absent(t, scrape(t, m), "yukta_key_file_reloads_total")
	m.KeyFileReload("applied")
	m.KeyFileReload("refused")
	m.KeyFileReload("refused")
	body := scrape(t, m)
	want(t, body, `yukta_key_file_reloads_total{result="applied"}`, 1)
	want(t, body, `yukta_key_file_reloads_total{result="refused"}`, 2)
}

func TestEngineCounters(t *testing.T) {
	m := metrics.New(metrics.Options{})
	body := scrape(t, m)
	// Every outcome and every error op is exported from the start, so a
	// rate() over them has a zero to start from.
	for _, o := range executionapp.NodeOutcomes() {
		want(t, body, `yukta_node_results_total{outcome="`+o.String()+`"}`, 0)
	}
	for _, op := range []string{"claim", "heartbeat", "reap", "commit"} {
		want(t, body, `yukta_engine_errors_total{op="`+op+`"}`, 0)
	}

	m.Claimed(0) // an empty poll is not a batch
	m.Claimed(3)
	m.Claimed(5)
	m.Committed(6, 20*time.Millisecond)
	m.Committed(2, 2*time.Millisecond)
	m.NodeResults(executionapp.OutcomeSucceeded, 5)
	m.NodeResults(executionapp.OutcomeRetried, 2)
	m.NodeResults(executionapp.OutcomeLost, 1)
	m.EngineError("commit")
	body = scrape(t, m)

	want(t, body, "yukta_engine_claimed_total", 8)
	want(t, body, "yukta_engine_claim_batch_size_count", 2)
	want(t, body, `yukta_engine_claim_batch_size_bucket{le="2"}`, 0)
	want(t, body, `yukta_engine_claim_batch_size_bucket{le="4"}`, 1)
	want(t, body, `yukta_engine_claim_batch_size_bucket{le="8"}`, 2)
	want(t, body, "yukta_engine_commits_total", 2)
	want(t, body, "yukta_engine_committed_results_total", 8)
	want(t, body, "yukta_engine_commit_duration_seconds_count", 2)
	want(t, body, `yukta_engine_commit_duration_seconds_bucket{le="0.0025"}`, 1)
	want(t, body, `yukta_engine_commit_duration_seconds_bucket{le="0.025"}`, 2)
	want(t, body, `yukta_node_results_total{outcome="succeeded"}`, 5)
	want(t, body, `yukta_node_results_total{outcome="retried"}`, 2)
	want(t, body, `yukta_node_results_total{outcome="lost"}`, 1)
	want(t, body, `yukta_node_results_total{outcome="failed"}`, 0)
	want(t, body, `yukta_engine_errors_total{op="commit"}`, 1)
}

// TestEngineHotPathDoesNotAllocate: the engine calls these per claim and
// per commit; they must stay atomic adds on existing series.
func TestEngineHotPathDoesNotAllocate(t *testing.T) {
	m := metrics.New(metrics.Options{})
	var em executionapp.EngineMetrics = m
	allocs := testing.AllocsPerRun(1000, func() {
		em.Claimed(4)
		em.Committed(4, time.Millisecond)
		em.NodeResults(executionapp.OutcomeSucceeded, 4)
	})
	if allocs != 0 {
		t.Fatalf("%v allocations per claim and commit, want 0", allocs)
	}
}

func TestQueueDepthIsQueriedAtScrape(t *testing.T) {
	var calls atomic.Int64
	depth := metrics.QueueDepth{Ready: 7, Delayed: 2, Held: 3, Running: 4, Parked: 1}
	m := metrics.New(metrics.Options{QueueDepthFunc: func(ctx context.Context) (metrics.QueueDepth, error) {
		if _, ok := ctx.Deadline(); !ok {
			t.Error("queue depth queried without a deadline")
		}
		calls.Add(1)
		d := depth
		d.Ready += calls.Load() - 1 // a second scrape sees a new value
		return d, nil
	}})
	body := scrape(t, m)
	want(t, body, "yukta_queue_ready", 7)
	want(t, body, "yukta_queue_delayed", 2)
	want(t, body, "yukta_queue_held", 3)
	want(t, body, "yukta_queue_running", 4)
	want(t, body, "yukta_queue_parked", 1)
	want(t, body, "yukta_queue_depth_errors_total", 0)
	body = scrape(t, m)
	want(t, body, "yukta_queue_ready", 8)
	if calls.Load() != 2 {
		t.Fatalf("%d queries for 2 scrapes, want one each", calls.Load())
	}
}

func TestQueueDepthFailureExportsNothingAndCounts(t *testing.T) {
	var seen []error
	fail := true
	m := metrics.New(metrics.Options{
		QueueTimeout: 50 * time.Millisecond,
		QueueDepthFunc: func(ctx context.Context) (metrics.QueueDepth, error) {
			if fail {
				return metrics.QueueDepth{Ready: 99}, errors.New("database is down")
			}
			<-ctx.Done() // a query slower than the budget
			return metrics.QueueDepth{Ready: 99}, ctx.Err()
		},
		OnQueueError: func(err error) { seen = append(seen, err) },
	})
	body := scrape(t, m)
	for _, g := range []string{"yukta_queue_ready", "yukta_queue_delayed", "yukta_queue_held", "yukta_queue_running", "yukta_queue_parked"} {
		absent(t, body, g)
	}
	want(t, body, "yukta_queue_depth_errors_total", 1)
	// The rest of the scrape is served.
	if _, ok := sample(body, "go_goroutines"); !ok {
		t.Fatal("a failed queue query broke the whole scrape")
	}

	fail = false
	began := time.Now()
	body = scrape(t, m)
	if d := time.Since(began); d > 2*time.Second {
		t.Fatalf("scrape took %s; the queue timeout of 50ms did not hold", d)
	}
	absent(t, body, "yukta_queue_ready")
	want(t, body, "yukta_queue_depth_errors_total", 2)
	if len(seen) != 2 || seen[0].Error() != "database is down" || !errors.Is(seen[1], context.DeadlineExceeded) {
		t.Fatalf("errors reported = %v, want the failure then a deadline", seen)
	}
}

func TestNoQueueFuncNoQueueGauges(t *testing.T) {
	body := scrape(t, metrics.New(metrics.Options{}))
	absent(t, body, "yukta_queue_ready")
	absent(t, body, "yukta_queue_depth_errors_total")
}

func TestJournalLagHook(t *testing.T) {
	m := metrics.New(metrics.Options{})
	absent(t, scrape(t, m), "yukta_journal_lag_events")
	var lag atomic.Int64
	lag.Store(42)
	m.SetLagFunc(lag.Load)
	want(t, scrape(t, m), "yukta_journal_lag_events", 42)
	lag.Store(0)
	want(t, scrape(t, m), "yukta_journal_lag_events", 0)
	m.SetLagFunc(nil)
	absent(t, scrape(t, m), "yukta_journal_lag_events")
}

func TestRuntimeCollectorsAndPrivateRegistry(t *testing.T) {
	a, b := metrics.New(metrics.Options{}), metrics.New(metrics.Options{}) // a shared registry would panic here
	a.AuthFailure("rest", "missing")
	body := scrape(t, a)
	for _, s := range []string{"go_goroutines", "go_memstats_heap_alloc_bytes", "process_resident_memory_bytes", "process_start_time_seconds"} {
		if _, ok := sample(body, s); !ok {
			t.Errorf("%s is not exported", s)
		}
	}
	absent(t, scrape(t, b), "yukta_auth_failures_total")
	families, err := prometheus.DefaultGatherer.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range families {
		if strings.HasPrefix(f.GetName(), "yukta_") {
			t.Fatalf("%s is in the global default registry", f.GetName())
		}
	}
}
