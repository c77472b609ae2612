package e2e

import (
	"encoding/json"
	"net/http"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/yukta/yukta/adapters/postgres/pgtest"
)

// dashboardPath is the sample Grafana dashboard (docs/operations.md).
const dashboardPath = "../docs/grafana/yukta-dashboard.json"

// metricName finds the series names in a PromQL expression: Yukta's and
// those of the Go and process collectors.
var metricName = regexp.MustCompile(`\b(?:yukta|go|process)_[a-z0-9_]+\b`)

// dashboardExprs returns every PromQL expression of the dashboard: panel
// targets (rows included) and template variable queries.
func dashboardExprs(t *testing.T) []string {
	t.Helper()
	b, err := os.ReadFile(dashboardPath)
	if err != nil {
		t.Fatal(err)
	}
	type target struct{ RefID, Expr string }
	type panel struct {
		ID      int
		Type    string
		Title   string
		Targets []target
		Panels  []panel
	}
	var d struct {
		UID        string
		Title      string
		Panels     []panel
		Templating struct {
			List []struct {
				Name, Type string
				Query      any
			}
		}
	}
	if err := json.Unmarshal(b, &d); err != nil {
		t.Fatalf("%s: %v", dashboardPath, err)
	}
	if d.UID == "" || d.Title == "" || len(d.Panels) == 0 {
		t.Fatalf("%s: no uid, title or panels", dashboardPath)
	}
	var exprs []string
	ids := map[int]bool{}
	var walk func([]panel)
	walk = func(ps []panel) {
		for _, p := range ps {
			if ids[p.ID] {
				t.Errorf("panel id %d used twice", p.ID)
			}
			ids[p.ID] = true
			if p.Type != "row" && len(p.Targets) == 0 {
				t.Errorf("panel %q has no query", p.Title)
			}
			for _, tg := range p.Targets {
				if tg.RefID == "" || strings.TrimSpace(tg.Expr) == "" {
					t.Errorf("panel %q has a target without refId or expr", p.Title)
				}
				exprs = append(exprs, tg.Expr)
			}
			walk(p.Panels)
		}
	}
	walk(d.Panels)
	for _, v := range d.Templating.List {
		if q, ok := v.Query.(map[string]any); ok && v.Type == "query" {
			s, _ := q["query"].(string)
			exprs = append(exprs, s)
		}
	}
	return exprs
}

// TestGrafanaDashboardMatchesMetrics: every metric the sample dashboard
// queries is in the /metrics of a running server that has run a few
// executions, so the dashboard cannot drift from the names the server
// exports; and it charts the run metrics, the queue and the build.
func TestGrafanaDashboardMatchesMetrics(t *testing.T) {
	t.Parallel()
	used := map[string]bool{}
	for _, e := range dashboardExprs(t) {
		for _, n := range metricName.FindAllString(e, -1) {
			used[n] = true
		}
	}
	for _, n := range []string{"yukta_executions_started_total", "yukta_executions_ended_total",
		"yukta_execution_duration_seconds_bucket", "yukta_executions", "yukta_scheduler_waiting",
		"yukta_scheduler_oldest_waiting_seconds", "yukta_build_info", "yukta_http_requests_total",
		"yukta_http_request_duration_seconds_bucket"} {
		if !used[n] {
			t.Errorf("the dashboard does not chart %s", n)
		}
	}

	s := startServer(t, serverOptions{DSN: pgtest.NewDatabase(t)})
	if st, b, _ := call(t, s, "PUT", "/api/sessions/m", "", []byte(metricsSession)); st != http.StatusCreated {
		t.Fatalf("apply: %d %s", st, b)
	}
	for _, wf := range []string{"ok", "bad"} {
		if st, b, _ := call(t, s, "POST", "/api/sessions/m/workflows/"+wf+"/executions?wait=10", "", []byte(`{"payload":{}}`)); st != http.StatusCreated {
			t.Fatalf("start %s: %d %s", wf, st, b)
		}
	}
	var body string
	var missing []string
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		body = scrapeMetrics(t, s)
		missing = missing[:0]
		for n := range used {
			if !strings.Contains(body, "\n"+n+"{") && !strings.Contains(body, "\n"+n+" ") {
				missing = append(missing, n)
			}
		}
		if len(missing) == 0 || time.Now().After(deadline) {
			break
		}
	}
	slices.Sort(missing)
	if len(missing) > 0 {
		t.Fatalf("the dashboard queries metrics the server does not export: %s", strings.Join(missing, ", "))
	}
	t.Logf("%d metrics the dashboard uses, all exported", len(used))
}
