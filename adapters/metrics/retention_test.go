package metrics_test

import (
	"testing"
	"time"

	"github.com/yukta/yukta/adapters/metrics"
	"github.com/yukta/yukta/application/retentionapp"
)

// TestRetentionPasses: passes this instance led add up by what they did; a
// pass another instance led counts nothing; a failed pass counts its work
// and a failure but does not move the last-pass time.
func TestRetentionPasses(t *testing.T) {
	m := metrics.New(metrics.Options{})
	body := scrape(t, m)
	want(t, body, `yukta_retention_runs_total{what="deleted"}`, 0)
	want(t, body, `yukta_retention_last_pass_timestamp_seconds`, 0)

	first := time.Unix(1_800_000_000, 0)
	m.RetentionPass(retentionapp.Report{Led: true, Deleted: 500, Exported: 500, Pruned: 20, Tombstones: 3}, true, first)
	m.RetentionPass(retentionapp.Report{Led: false, Deleted: 900}, true, first.Add(time.Minute))
	m.RetentionPass(retentionapp.Report{Led: true, Deleted: 7, Skipped: 2}, false, first.Add(2*time.Minute))
	m.RetentionFailed()
	body = scrape(t, m)
	want(t, body, `yukta_retention_runs_total{what="deleted"}`, 507)
	want(t, body, `yukta_retention_runs_total{what="exported"}`, 500)
	want(t, body, `yukta_retention_runs_total{what="skipped"}`, 2)
	want(t, body, `yukta_retention_runs_total{what="pruned"}`, 20)
	want(t, body, `yukta_retention_runs_total{what="tombstones_expired"}`, 3)
	want(t, body, `yukta_retention_pass_failures_total`, 1)
	want(t, body, `yukta_retention_last_pass_timestamp_seconds`, float64(first.Unix()))
}
