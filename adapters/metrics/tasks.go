package metrics

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/yukta/yukta/application/executionapp"
)

// TaskQueueDepth is one worker queue at one moment, from the queue depth
// query of a scrape.
type TaskQueueDepth struct {
	Queue string
	// Waiting tasks are due and not leased; Leased ones are with a worker.
	Waiting, Leased int64
	// OldestWaiting is how long the oldest waiting task has been due.
	OldestWaiting time.Duration
}

var (
	taskWaitingDesc = prometheus.NewDesc("yukta_task_queue_waiting",
		"Tasks of TASK nodes due and waiting for a worker, by queue (at most 100 queues, the fullest).", []string{"queue"}, nil)
	taskLeasedDesc = prometheus.NewDesc("yukta_task_queue_leased",
		"Tasks a worker holds under a lease, by queue.", []string{"queue"}, nil)
	taskOldestDesc = prometheus.NewDesc("yukta_task_queue_oldest_waiting_seconds",
		"How long the oldest waiting task of a queue has been due.", []string{"queue"}, nil)
)

// taskMetrics are the worker API's latencies.
type taskMetrics struct {
	wait    prometheus.Histogram
	attempt *prometheus.HistogramVec
}

// taskBuckets run from 1 ms to 10 minutes: a task may wait for a worker, or
// run, for minutes.
var taskBuckets = []float64{.001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60, 300, 600}

func newTaskMetrics() *taskMetrics {
	t := &taskMetrics{
		wait: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "yukta_task_wait_seconds",
			Help:    "Time from a task coming due to its delivery to a worker.",
			Buckets: taskBuckets,
		}),
		attempt: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "yukta_task_attempt_seconds",
			Help:    "Time from a task's delivery to its answer, by outcome (completed, retrying, failed; lapsed: the lease ran out).",
			Buckets: taskBuckets,
		}, []string{"outcome"}),
	}
	for _, o := range []string{"completed", "retrying", "failed", "lapsed"} {
		t.attempt.WithLabelValues(o)
	}
	return t
}

func (t *taskMetrics) collectors() []prometheus.Collector {
	return []prometheus.Collector{t.wait, t.attempt}
}

var _ executionapp.TaskMetrics = (*Metrics)(nil)

// TaskDelivered implements executionapp.TaskMetrics.
func (m *Metrics) TaskDelivered(waited time.Duration) { m.tasks.wait.Observe(max(waited, 0).Seconds()) }

// TaskAnswered implements executionapp.TaskMetrics.
func (m *Metrics) TaskAnswered(outcome string, took time.Duration) {
	m.tasks.attempt.WithLabelValues(outcome).Observe(max(took, 0).Seconds())
}

func collectTaskQueues(ch chan<- prometheus.Metric, qs []TaskQueueDepth) {
	for _, q := range qs {
		ch <- prometheus.MustNewConstMetric(taskWaitingDesc, prometheus.GaugeValue, float64(q.Waiting), q.Queue)
		ch <- prometheus.MustNewConstMetric(taskLeasedDesc, prometheus.GaugeValue, float64(q.Leased), q.Queue)
		ch <- prometheus.MustNewConstMetric(taskOldestDesc, prometheus.GaugeValue, q.OldestWaiting.Seconds(), q.Queue)
	}
}
