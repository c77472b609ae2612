package metrics

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/yukta/yukta/application/retentionapp"
)

// retentionMetrics count what the retention sweeper did. A pass this
// instance did not lead (another holds the lock) counts nothing.
type retentionMetrics struct {
	runs     *prometheus.CounterVec // by what: deleted, exported, skipped, pruned, tombstones_expired
	failures prometheus.Counter
	lastPass prometheus.Gauge
}

func newRetentionMetrics() *retentionMetrics {
	r := &retentionMetrics{
		runs: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "yukta_retention_runs_total",
			Help: "Finished executions the retention sweeper handled, by what it did: deleted, exported (its journal, before deleting), skipped (export failed; retried next pass), pruned (work items folded) and tombstones_expired.",
		}, []string{"what"}),
		failures: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "yukta_retention_pass_failures_total",
			Help: "Retention passes that failed; the next pass retries.",
		}),
		lastPass: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "yukta_retention_last_pass_timestamp_seconds",
			Help: "When this instance last finished a retention pass it led, as Unix seconds (0: none yet).",
		}),
	}
	for _, w := range []string{"deleted", "exported", "skipped", "pruned", "tombstones_expired"} {
		r.runs.WithLabelValues(w)
	}
	return r
}

func (r *retentionMetrics) collectors() []prometheus.Collector {
	return []prometheus.Collector{r.runs, r.failures, r.lastPass}
}

// RetentionPass records what a pass this instance led did; ok (no error)
// also moves the last-pass time to at. A failed pass still counts the work
// it committed before failing.
func (m *Metrics) RetentionPass(rep retentionapp.Report, ok bool, at time.Time) {
	if !rep.Led {
		return
	}
	r := m.retention
	r.runs.WithLabelValues("deleted").Add(float64(rep.Deleted))
	r.runs.WithLabelValues("exported").Add(float64(rep.Exported))
	r.runs.WithLabelValues("skipped").Add(float64(rep.Skipped))
	r.runs.WithLabelValues("pruned").Add(float64(rep.Pruned))
	r.runs.WithLabelValues("tombstones_expired").Add(float64(rep.Tombstones))
	if ok {
		r.lastPass.Set(float64(at.Unix()))
	}
}

// RetentionFailed records a failed pass.
func (m *Metrics) RetentionFailed() { m.retention.failures.Inc() }
