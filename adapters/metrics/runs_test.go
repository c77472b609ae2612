package metrics_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/yukta/yukta/adapters/metrics"
	"github.com/yukta/yukta/domain/build"
	"github.com/yukta/yukta/domain/execution"
)

func TestRunCountersAndDurations(t *testing.T) {
	m := metrics.New(metrics.Options{})
	m.RunStarted("ops", "deploy")
	m.RunStarted("ops", "deploy")
	m.RunStarted("ops", "backup")
	m.RunEnded("ops", "deploy", execution.Success, 20*time.Millisecond)
	m.RunEnded("ops", "deploy", execution.Failure, 90*time.Second)
	m.RunEnded("ops", "backup", execution.Stopped, 2*time.Hour)
	body := scrape(t, m)

	want(t, body, `yukta_executions_started_total{session="ops",workflow="deploy"}`, 2)
	want(t, body, `yukta_executions_started_total{session="ops",workflow="backup"}`, 1)
	want(t, body, `yukta_executions_ended_total{session="ops",status="SUCCESS",workflow="deploy"}`, 1)
	want(t, body, `yukta_executions_ended_total{session="ops",status="FAILURE",workflow="deploy"}`, 1)
	want(t, body, `yukta_executions_ended_total{session="ops",status="STOPPED",workflow="backup"}`, 1)
	// The buckets run from 10 ms to an hour; a longer run counts in +Inf.
	want(t, body, `yukta_execution_duration_seconds_bucket{session="ops",status="SUCCESS",workflow="deploy",le="0.01"}`, 0)
	want(t, body, `yukta_execution_duration_seconds_bucket{session="ops",status="SUCCESS",workflow="deploy",le="0.025"}`, 1)
	want(t, body, `yukta_execution_duration_seconds_bucket{session="ops",status="FAILURE",workflow="deploy",le="60"}`, 0)
	want(t, body, `yukta_execution_duration_seconds_bucket{session="ops",status="FAILURE",workflow="deploy",le="300"}`, 1)
	want(t, body, `yukta_execution_duration_seconds_bucket{session="ops",status="STOPPED",workflow="backup",le="3600"}`, 0)
	want(t, body, `yukta_execution_duration_seconds_bucket{session="ops",status="STOPPED",workflow="backup",le="+Inf"}`, 1)
	want(t, body, `yukta_execution_duration_seconds_sum{session="ops",status="STOPPED",workflow="backup"}`, 7200)
}

func TestRunSeriesAreCapped(t *testing.T) {
	m := metrics.New(metrics.Options{RunSeriesLimit: 2})
	for _, wf := range []string{"a", "b", "c", "d"} {
		m.RunStarted("s", wf)
		m.RunEnded("s", wf, execution.Success, time.Second)
	}
	m.RunStarted("s", "a") // a pair labelled before the cap keeps its labels
	body := scrape(t, m)
	want(t, body, `yukta_executions_started_total{session="s",workflow="a"}`, 2)
	want(t, body, `yukta_executions_started_total{session="s",workflow="b"}`, 1)
	want(t, body, `yukta_executions_started_total{session="_other",workflow="_other"}`, 2)
	want(t, body, `yukta_executions_ended_total{session="_other",status="SUCCESS",workflow="_other"}`, 2)
	if n := strings.Count(grep(body, "yukta_executions_started_total"), "\n"); n != 3 {
		t.Fatalf("%d started series, want 3:\n%s", n, grep(body, "yukta_executions_started_total"))
	}
}

func TestBuildInfo(t *testing.T) {
	m := metrics.New(metrics.Options{Build: build.Info{Version: "v1.2.3", Revision: "9447398842881290bd071bcdd33020d29cfb6305",
		GoVersion: "go1.26.8", Platform: "linux/amd64"}})
	want(t, scrape(t, m), `yukta_build_info{goversion="go1.26.8",revision="9447398842881290bd071bcdd33020d29cfb6305",version="v1.2.3"}`, 1)
	absent(t, scrape(t, metrics.New(metrics.Options{})), "yukta_build_info")
}

func TestSchedulerExportsLiveExecutionsAndOldestWait(t *testing.T) {
	m := metrics.New(metrics.Options{SchedulerFunc: func(context.Context) (metrics.SchedulerDepth, error) {
		return metrics.SchedulerDepth{WaitingNormal: 3, OldestWaiting: 90 * time.Second, Pending: 3, Running: 5, Paused: 1}, nil
	}})
	body := scrape(t, m)
	want(t, body, `yukta_executions{status="PENDING"}`, 3)
	want(t, body, `yukta_executions{status="RUNNING"}`, 5)
	want(t, body, `yukta_executions{status="PAUSED"}`, 1)
	want(t, body, `yukta_scheduler_oldest_waiting_seconds`, 90)
}

// TestOpenMetricsNegotiation: a scraper that asks for OpenMetrics gets it,
// with its # EOF; one that asks for nothing in particular gets the
// Prometheus text format.
func TestOpenMetricsNegotiation(t *testing.T) {
	m := metrics.New(metrics.Options{})
	m.RunStarted("ops", "deploy")
	for _, c := range []struct {
		accept, wantType string
		eof              bool
	}{
		{"application/openmetrics-text;version=1.0.0,application/openmetrics-text;version=0.0.1;q=0.75,text/plain;version=0.0.4;q=0.5,*/*;q=0.1",
			"application/openmetrics-text", true},
		{"", "text/plain", false},
		{"text/plain;version=0.0.4", "text/plain", false},
	} {
		rec := httptest.NewRecorder()
		req := httptest.NewRequest(http.MethodGet, "/metrics", nil)
		if c.accept != "" {
			req.Header.Set("Accept", c.accept)
		}
		m.Handler().ServeHTTP(rec, req)
		b, _ := io.ReadAll(rec.Body)
		body := string(b)
		if ct := rec.Header().Get("Content-Type"); rec.Code != 200 || !strings.HasPrefix(ct, c.wantType) {
			t.Fatalf("Accept %q: %d %q, want %s", c.accept, rec.Code, ct, c.wantType)
		}
		if got := strings.HasSuffix(body, "# EOF\n"); got != c.eof {
			t.Fatalf("Accept %q: ends with # EOF: %v, want %v", c.accept, got, c.eof)
		}
		// Both formats carry the sample under its full name.
		want(t, body, `yukta_executions_started_total{session="ops",workflow="deploy"}`, 1)
	}
}
