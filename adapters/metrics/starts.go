package metrics

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/yukta/yukta/application/executionapp"
)

var _ executionapp.StartSkips = (*Metrics)(nil)

// startSkipReasons are the reason values of yukta_starts_skipped_total.
var startSkipReasons = []string{executionapp.SkipWorkflowPaused}

// newStartsSkipped is yukta_starts_skipped_total with every series of its
// closed label sets created up front (at 0), so a dashboard shows them
// before the first skip.
func newStartsSkipped() *prometheus.CounterVec {
	v := prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "yukta_starts_skipped_total",
		Help: "Starts this instance refused without starting a run, by source (schedule, webhook, manual, restart) and reason (workflow_paused: the workflow is paused).",
	}, []string{"source", "reason"})
	for _, s := range executionapp.StartSources {
		for _, r := range startSkipReasons {
			v.WithLabelValues(string(s), r)
		}
	}
	return v
}

// StartSkipped implements executionapp.StartSkips.
func (m *Metrics) StartSkipped(source executionapp.StartSource, reason string) {
	m.startsSkipped.WithLabelValues(string(source), reason).Inc()
}
