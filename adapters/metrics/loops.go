package metrics

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/yukta/yukta/application/supervisorapp"
)

// loopMetrics count the refusals of the supervisor loop bounds
// (docs/supervisors.md#loop-bounds). One series per supervisor and limit:
// supervisors are few and made by ADMINs.
type loopMetrics struct {
	refusals *prometheus.CounterVec // by supervisor and limit: depth, budget
}

func newLoopMetrics() *loopMetrics {
	return &loopMetrics{refusals: prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "yukta_supervisor_loop_refusals_total",
		Help: "Directives (and workflow supervisors' deciding runs) the loop bounds refused, by supervisor and limit: depth (the run would be deeper than --supervisor-max-depth) or budget (more than --supervisor-commands-per-minute in a window).",
	}, []string{"supervisor", "limit"})}
}

func (l *loopMetrics) collectors() []prometheus.Collector { return []prometheus.Collector{l.refusals} }

var _ supervisorapp.LoopMetrics = (*Metrics)(nil)

// LoopRefused counts one refusal of the loop bounds.
func (m *Metrics) LoopRefused(supervisorID, limit string) {
	m.loops.refusals.WithLabelValues(supervisorID, limit).Inc()
}
