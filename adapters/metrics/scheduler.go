package metrics

import (
	"context"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// SchedulerDepth is the scheduler limits' state at one moment, per slot
// pool ("normal" and "reserved").
type SchedulerDepth struct {
	// Waiting runs are PENDING: started over a limit, in the queue.
	WaitingNormal, WaitingReserved int64
	// Running runs hold a slot: RUNNING, or PAUSED after they started.
	RunningNormal, RunningReserved int64
	// LimitNormal is --max-running and LimitReserved
	// --reserved-supervisor-slots of this instance; 0 is no limit.
	LimitNormal, LimitReserved int64
	// OldestWaiting is how long the oldest PENDING run has waited; zero
	// when none waits.
	OldestWaiting time.Duration
	// Pending, Running and Paused count the executions that have not ended,
	// by status (yukta_executions), whether they hold a slot or not.
	Pending, Running, Paused int64
}

var (
	schedulerWaitingDesc = prometheus.NewDesc("yukta_scheduler_waiting",
		"Runs waiting (PENDING) for a slot under the scheduler limits, on every instance: the queue depth, by pool.", []string{"pool"}, nil)
	schedulerRunningDesc = prometheus.NewDesc("yukta_scheduler_running",
		"Runs holding a slot (RUNNING, or PAUSED after they started), on every instance, by pool.", []string{"pool"}, nil)
	schedulerOldestDesc = prometheus.NewDesc("yukta_scheduler_oldest_waiting_seconds",
		"How long the oldest run waiting (PENDING) for a slot has waited; 0 when none waits.", nil, nil)
	executionsDesc = prometheus.NewDesc("yukta_executions",
		"Executions that have not ended, on every instance, by status (PENDING, RUNNING, PAUSED).", []string{"status"}, nil)
	schedulerLimitDesc = prometheus.NewDesc("yukta_scheduler_limit",
		"This instance's server-wide limit of runs holding a slot, by pool (--max-running, --reserved-supervisor-slots); 0 is no limit.", []string{"pool"}, nil)
)

// schedulerCollector queries the scheduler's state when scraped. Like the
// queue collector, a failed or slow query exports no gauges and counts an
// error instead.
type schedulerCollector struct {
	depth   func(ctx context.Context) (SchedulerDepth, error)
	timeout time.Duration
	errors  prometheus.Counter
	onError func(error)
}

func newSchedulerCollector(depth func(context.Context) (SchedulerDepth, error), timeout time.Duration, onError func(error)) *schedulerCollector {
	if onError == nil {
		onError = func(error) {}
	}
	return &schedulerCollector{depth: depth, timeout: timeout, onError: onError,
		errors: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "yukta_scheduler_errors_total",
			Help: "Scrapes whose scheduler query failed or timed out; they exported no yukta_scheduler_* gauges.",
		})}
}

func (c *schedulerCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- schedulerWaitingDesc
	ch <- schedulerRunningDesc
	ch <- schedulerLimitDesc
	ch <- schedulerOldestDesc
	ch <- executionsDesc
	c.errors.Describe(ch)
}

func (c *schedulerCollector) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), c.timeout)
	defer cancel()
	defer c.errors.Collect(ch)
	d, err := c.depth(ctx)
	if err == nil {
		err = ctx.Err()
	}
	if err != nil {
		c.errors.Inc()
		c.onError(err)
		return
	}
	for _, g := range []struct {
		desc             *prometheus.Desc
		normal, reserved int64
	}{
		{schedulerWaitingDesc, d.WaitingNormal, d.WaitingReserved},
		{schedulerRunningDesc, d.RunningNormal, d.RunningReserved},
		{schedulerLimitDesc, d.LimitNormal, d.LimitReserved},
	} {
		ch <- prometheus.MustNewConstMetric(g.desc, prometheus.GaugeValue, float64(g.normal), "normal")
		ch <- prometheus.MustNewConstMetric(g.desc, prometheus.GaugeValue, float64(g.reserved), "reserved")
	}
	ch <- prometheus.MustNewConstMetric(schedulerOldestDesc, prometheus.GaugeValue, max(d.OldestWaiting, 0).Seconds())
	for _, e := range []struct {
		status string
		n      int64
	}{{"PENDING", d.Pending}, {"RUNNING", d.Running}, {"PAUSED", d.Paused}} {
		ch <- prometheus.MustNewConstMetric(executionsDesc, prometheus.GaugeValue, float64(e.n), e.status)
	}
}
