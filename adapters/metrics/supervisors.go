package metrics

import (
	"slices"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/yukta/yukta/application/engines/processengine"
)

// supervisorMetrics count what the supervisor engines did on this
// instance.
type supervisorMetrics struct {
	// processDropped is by reason (processengine.DropReasons); the log
	// names the supervisor, in one summary per period.
	processDropped *prometheus.CounterVec
}

func newSupervisorMetrics() *supervisorMetrics {
	s := &supervisorMetrics{
		processDropped: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "yukta_supervisor_process_lines_dropped_total",
			Help: "Output lines of process supervisors' programs the engine did not act on, by reason: tooLong, notJson, unknownType, invalid, notBuilt, refused (the server did not take the directive or answer).",
		}, []string{"reason"}),
	}
	for _, r := range processengine.DropReasons {
		s.processDropped.WithLabelValues(r)
	}
	return s
}

func (s *supervisorMetrics) collectors() []prometheus.Collector {
	return []prometheus.Collector{s.processDropped}
}

// ProcessLineDropped counts one output line a process supervisor's
// engine dropped; reason is one of processengine.DropReasons (any other
// is counted as "other", so a label never comes from a program).
func (m *Metrics) ProcessLineDropped(reason string) {
	if !slices.Contains(processengine.DropReasons, reason) {
		reason = "other"
	}
	m.supervisors.processDropped.WithLabelValues(reason).Inc()
}
