package metrics_test

import (
	"testing"

	"github.com/yukta/yukta/adapters/metrics"
	"github.com/yukta/yukta/application/engines/processengine"
)

// TestProcessLinesDropped: every reason is exported from the start, each
// dropped line counts one, and a reason outside the list counts as other.
func TestProcessLinesDropped(t *testing.T) {
	m := metrics.New(metrics.Options{})
	body := scrape(t, m)
	for _, r := range processengine.DropReasons {
		want(t, body, `yukta_supervisor_process_lines_dropped_total{reason="`+r+`"}`, 0)
	}
	for range 3 {
		m.ProcessLineDropped(processengine.DropNotJSON)
	}
	m.ProcessLineDropped(processengine.DropRefused)
	m.ProcessLineDropped("a program's own words")
	body = scrape(t, m)
	want(t, body, `yukta_supervisor_process_lines_dropped_total{reason="notJson"}`, 3)
	want(t, body, `yukta_supervisor_process_lines_dropped_total{reason="refused"}`, 1)
	want(t, body, `yukta_supervisor_process_lines_dropped_total{reason="other"}`, 1)
}
