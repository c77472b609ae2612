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

func newMetrics(q *postgres.Queue, log *zap.Logger) *metrics.Metrics {
	return metrics.New(metrics.Options{
		QueueDepthFunc: func(ctx context.Context) (metrics.QueueDepth, error) {
			d, err := q.Depth(ctx)
			return metrics.QueueDepth(d), err
		},
		OnQueueError: func(err error) { log.Warn("metrics: queue depth query failed", zap.Error(err)) },
	})
}
