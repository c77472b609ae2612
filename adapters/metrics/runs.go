package metrics

import (
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/yukta/yukta/application/executionapp"
	"github.com/yukta/yukta/domain/execution"
)

// DefaultRunSeriesLimit caps the (session, workflow) pairs the run metrics
// label separately.
const DefaultRunSeriesLimit = 1000

// OtherLabel is the session and workflow label of the runs of every pair past
// the cap. Session and workflow ids start with a letter or digit, so it never
// names a real one.
const OtherLabel = "_other"

// runDurationBuckets suit runs from 10 ms to an hour.
var runDurationBuckets = []float64{.01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60, 300, 900, 1800, 3600}

var _ executionapp.RunMetrics = (*Metrics)(nil)

// runMetrics counts runs by session and workflow. The ids are chosen by
// whoever applies sessions, so the pairs labelled apart are capped: past
// the cap, a new pair's runs count under OtherLabel. A pair keeps its
// series until the server restarts, even when its session is deleted.
type runMetrics struct {
	started  *prometheus.CounterVec
	ended    *prometheus.CounterVec
	duration *prometheus.HistogramVec

	limit int
	mu    sync.Mutex
	pairs map[[2]string]struct{}
}

func newRunMetrics(limit int) *runMetrics {
	if limit <= 0 {
		limit = DefaultRunSeriesLimit
	}
	return &runMetrics{
		started: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "yukta_executions_started_total",
			Help: "Executions this instance stored as started, by session and workflow.",
		}, []string{"session", "workflow"}),
		ended: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "yukta_executions_ended_total",
			Help: "Executions this instance ended, by session, workflow and final status (SUCCESS, FAILURE, STOPPED).",
		}, []string{"session", "workflow", "status"}),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "yukta_execution_duration_seconds",
			Help:    "Time from an execution's start (waiting PENDING included) to its end, by session, workflow and final status.",
			Buckets: runDurationBuckets,
		}, []string{"session", "workflow", "status"}),
		limit: limit,
		pairs: map[[2]string]struct{}{},
	}
}

func (r *runMetrics) collectors() []prometheus.Collector {
	return []prometheus.Collector{r.started, r.ended, r.duration}
}

// labels returns the pair's labels, or OtherLabel twice once the cap is
// reached and the pair is new.
func (r *runMetrics) labels(sessionID, workflowID string) (string, string) {
	k := [2]string{sessionID, workflowID}
	r.mu.Lock()
	defer r.mu.Unlock()
	if _, ok := r.pairs[k]; ok {
		return sessionID, workflowID
	}
	if len(r.pairs) >= r.limit {
		return OtherLabel, OtherLabel
	}
	r.pairs[k] = struct{}{}
	return sessionID, workflowID
}

// RunStarted implements executionapp.RunMetrics.
func (m *Metrics) RunStarted(sessionID, workflowID string) {
	s, w := m.runs.labels(sessionID, workflowID)
	m.runs.started.WithLabelValues(s, w).Inc()
}

// RunEnded implements executionapp.RunMetrics.
func (m *Metrics) RunEnded(sessionID, workflowID string, status execution.Status, took time.Duration) {
	s, w := m.runs.labels(sessionID, workflowID)
	m.runs.ended.WithLabelValues(s, w, string(status)).Inc()
	m.runs.duration.WithLabelValues(s, w, string(status)).Observe(max(took, 0).Seconds())
}
