package bootstrap

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"go.uber.org/fx"
	"go.uber.org/zap"

	"github.com/yukta/yukta/adapters/archive"
	"github.com/yukta/yukta/adapters/metrics"
	"github.com/yukta/yukta/adapters/postgres"
	"github.com/yukta/yukta/application/journalapp"
	"github.com/yukta/yukta/application/retentionapp"
	"github.com/yukta/yukta/domain/retention"
)

// retentionModule runs the retention sweeper: one goroutine per instance,
// started and joined with the server; of all instances only the one holding
// the retention advisory lock sweeps in a pass.
var retentionModule = fx.Module("retention", fx.Invoke(startRetention))

func startRetention(lc fx.Lifecycle, cfg Config, pool *pgxpool.Pool, export *journalapp.ExportJournal, m *metrics.Metrics, log *zap.Logger) error {
	rc := cfg.Retention
	l := log.Named("retention")
	store := postgres.NewRetentionStore(pool)
	deps := retentionapp.Deps{Store: store, Prune: retentionapp.NewPruneItems(store, rc.Batch, rc.Pause), Exporter: export, Now: time.Now,
		OnBatch: func(sessionID string, p retention.Policy, ids []string) {
			// Deletion is recorded: a tombstone per run in the database
			// (deleted_executions names each one), and this line.
			l.Info("deleted finished executions", zap.String("session", sessionID), zap.Int("count", len(ids)),
				zap.Int("retention_days", p.Days()), zap.String("journals", string(p.Journals())), zap.String("first", ids[0]), zap.String("last", ids[len(ids)-1]))
		}}
	if rc.ExportDir != "" {
		dir, err := archive.New(rc.ExportDir)
		if err != nil {
			return err
		}
		deps.Archive = dir
	}
	sweep := retentionapp.NewSweepRetention(deps, rc.Config)
	runInBackground(lc, "retention sweeper", func(ctx context.Context) {
		failed := false // Run calls onErr before onPass, on its one goroutine
		sweep.Run(ctx, rc.Every, func(r retentionapp.Report) {
			m.RetentionPass(r, !failed, time.Now())
			failed = false
			if r.Deleted+r.Pruned+r.Tombstones+r.Skipped > 0 {
				l.Info("retention pass", zap.Int("deleted", r.Deleted), zap.Int("exported", r.Exported), zap.Int("skipped", r.Skipped),
					zap.Int("pruned", r.Pruned), zap.Int("tombstones_expired", r.Tombstones))
			}
		}, func(err error) {
			failed = true
			m.RetentionFailed()
			l.Warn("retention pass failed; the next pass retries", zap.Error(err))
		})
	}, func() {
		if rc.Policy.Deletes() {
			l.Info("retention on: finished executions are deleted after their policy's days",
				zap.Int("retention_days", rc.Policy.Days()), zap.String("journals", string(rc.Policy.Journals())),
				zap.String("export_dir", rc.ExportDir), zap.Duration("interval", rc.Every))
		} else {
			l.Info("retention off by default (--retention-days 0): finished executions are kept unless their session sets retention.days",
				zap.Duration("interval", rc.Every), zap.Duration("prune_after", rc.PruneAfter))
		}
	}, nil)
	return nil
}
