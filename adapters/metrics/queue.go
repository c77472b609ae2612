package metrics

import (
	"context"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

var (
	queueReadyDesc = prometheus.NewDesc("yukta_queue_ready",
		"Work items due and waiting for a claim, on every instance.", nil, nil)
	queueDelayedDesc = prometheus.NewDesc("yukta_queue_delayed",
		"Work items waiting for a retry backoff or a timer to come due.", nil, nil)
	queueHeldDesc = prometheus.NewDesc("yukta_queue_held",
		"Work items held behind a closed gate (paused execution or node, step mode without credit).", nil, nil)
	queueRunningDesc = prometheus.NewDesc("yukta_queue_running",
		"Work items claimed under a lease: running, or waiting for their result to commit.", nil, nil)
	queueParkedDesc = prometheus.NewDesc("yukta_queue_parked",
		"Work items waiting for the answer to an input request.", nil, nil)
)

// queueCollector queries the queue depth when scraped. A failed or slow
// query exports no gauges (a stale or zero value would mislead) and counts
// an error instead; the collector exports that counter itself.
type queueCollector struct {
	depth   func(ctx context.Context) (QueueDepth, error)
	timeout time.Duration
	errors  prometheus.Counter
	onError func(error)
}

func newQueueCollector(depth func(context.Context) (QueueDepth, error), timeout time.Duration,
	errors prometheus.Counter, onError func(error)) *queueCollector {
	if onError == nil {
		onError = func(error) {}
	}
	return &queueCollector{depth: depth, timeout: timeout, errors: errors, onError: onError}
}

func (c *queueCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- queueReadyDesc
	ch <- queueDelayedDesc
	ch <- queueHeldDesc
	ch <- queueRunningDesc
	ch <- queueParkedDesc
	ch <- taskWaitingDesc
	ch <- taskLeasedDesc
	ch <- taskOldestDesc
	c.errors.Describe(ch)
}

func (c *queueCollector) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), c.timeout)
	defer cancel()
	// The error counter goes out after the query, so a scrape whose query
	// failed already shows the failure.
	defer c.errors.Collect(ch)
	d, err := c.depth(ctx)
	if err == nil {
		// A function that ignored the deadline still does not count.
		err = ctx.Err()
	}
	if err != nil {
		c.errors.Inc()
		c.onError(err)
		return
	}
	for _, g := range []struct {
		desc *prometheus.Desc
		v    int64
	}{
		{queueReadyDesc, d.Ready}, {queueDelayedDesc, d.Delayed}, {queueHeldDesc, d.Held},
		{queueRunningDesc, d.Running}, {queueParkedDesc, d.Parked},
	} {
		ch <- prometheus.MustNewConstMetric(g.desc, prometheus.GaugeValue, float64(g.v))
	}
	collectTaskQueues(ch, d.Tasks)
}
