package bootstrap

import (
	"context"
	"time"

	"go.uber.org/fx"
	"go.uber.org/zap"

	"github.com/yukta/yukta/adapters/metrics"
	"github.com/yukta/yukta/adapters/postgres"
	"github.com/yukta/yukta/application/executionapp"
)

// metricsModule provides the Prometheus metrics: *metrics.Metrics (the HTTP
// layer serves its Handler at /metrics and records requests with it) and,
// from the same value, the engine's executionapp.EngineMetrics; the
// execution transactor tells it of every run a commit started or ended. The
// queue and scheduler gauges are queried from PostgreSQL at each scrape.
var metricsModule = fx.Module("metrics",
	fx.Provide(
		newMetrics,
		func(m *metrics.Metrics) executionapp.EngineMetrics { return m },
	),
)

func newMetrics(q *postgres.Queue, sched *executionapp.GetSchedulerStatus, tx *postgres.ExecutionTransactor, log *zap.Logger) *metrics.Metrics {
	m := metrics.New(metrics.Options{
		Build: buildInfo(),
		QueueDepthFunc: func(ctx context.Context) (metrics.QueueDepth, error) {
			d, err := q.Depth(ctx)
			out := metrics.QueueDepth{Ready: d.Ready, Delayed: d.Delayed, Held: d.Held, Running: d.Running, Parked: d.Parked}
			for _, t := range d.Tasks {
				out.Tasks = append(out.Tasks, metrics.TaskQueueDepth(t))
			}
			return out, err
		},
		OnQueueError: func(err error) { log.Warn("metrics: queue depth query failed", zap.Error(err)) },
		SchedulerFunc: func(ctx context.Context) (metrics.SchedulerDepth, error) {
			st, err := sched.Handle(ctx)
			if err != nil {
				return metrics.SchedulerDepth{}, err
			}
			live, err := q.LiveExecutions(ctx)
			d := metrics.SchedulerDepth{
				WaitingNormal: int64(st.Waiting.Normal), WaitingReserved: int64(st.Waiting.Reserved),
				RunningNormal: int64(st.Running.Normal), RunningReserved: int64(st.Running.Reserved),
				LimitNormal: int64(st.Slots.MaxRunning), LimitReserved: int64(st.Slots.Reserved),
				Pending: live.Pending, Running: live.Running, Paused: live.Paused,
			}
			if !st.OldestWaiting.IsZero() {
				d.OldestWaiting = time.Since(st.OldestWaiting)
			}
			return d, err
		},
		OnSchedulerError: func(err error) { log.Warn("metrics: scheduler query failed", zap.Error(err)) },
	})
	tx.OnCommittedRuns(m)
	return m
}
