package bootstrap

import (
	"context"

	"go.uber.org/fx"
	"go.uber.org/zap"

	"github.com/yukta/yukta/adapters/metrics"
	"github.com/yukta/yukta/adapters/postgres"
	"github.com/yukta/yukta/application/executionapp"
)

// metricsModule provides the Prometheus metrics: *metrics.Metrics (the HTTP
// layer serves its Handler at /metrics and records requests with it) and,
// from the same value, the engine's executionapp.EngineMetrics. The queue
// gauges are queried from PostgreSQL at each scrape.
var metricsModule = fx.Module("metrics",
	fx.Provide(
		newMetrics,
		func(m *metrics.Metrics) executionapp.EngineMetrics { return m },
	),
)

func newMetrics(q *postgres.Queue, sched *executionapp.GetSchedulerStatus, log *zap.Logger) *metrics.Metrics {
	return metrics.New(metrics.Options{
		QueueDepthFunc: func(ctx context.Context) (metrics.QueueDepth, error) {
			d, err := q.Depth(ctx)
			return metrics.QueueDepth(d), err
		},
		OnQueueError: func(err error) { log.Warn("metrics: queue depth query failed", zap.Error(err)) },
		SchedulerFunc: func(ctx context.Context) (metrics.SchedulerDepth, error) {
			st, err := sched.Handle(ctx)
			return metrics.SchedulerDepth{
				WaitingNormal: int64(st.Waiting.Normal), WaitingReserved: int64(st.Waiting.Reserved),
				RunningNormal: int64(st.Running.Normal), RunningReserved: int64(st.Running.Reserved),
				LimitNormal: int64(st.Slots.MaxRunning), LimitReserved: int64(st.Slots.Reserved),
			}, err
		},
		OnSchedulerError: func(err error) { log.Warn("metrics: scheduler query failed", zap.Error(err)) },
	})
}
