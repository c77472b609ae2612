package bootstrap

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
	"time"

	"go.uber.org/fx"
	"go.uber.org/zap"
	"go.uber.org/zap/zapio"

	"github.com/yukta/yukta/adapters/httpapi"
	"github.com/yukta/yukta/adapters/postgres"
	"github.com/yukta/yukta/adapters/postgres/localpg"
)

// embeddedDatabase is the database Yukta creates in its embedded cluster.
const embeddedDatabase = "yukta"

// serve runs the server until SIGINT/SIGTERM, then stops it in order: HTTP
// first (in-flight requests finish), then the pool, then the embedded
// cluster, so nothing is cut off while it still has a user. The server
// outlives database outages: work waits and resumes, /readyz says why it is
// not ready, and an embedded cluster that dies is restarted; only when those
// restarts are exhausted does the server stop.
func serve(ctx context.Context, ext Extensions, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("yukta serve", flag.ContinueOnError)
	fs.SetOutput(stderr)
	cfg, err := ParseServeConfig(args, os.Getenv, fs)
	if errors.Is(err, flag.ErrHelp) {
		return 0
	}
	if err != nil {
		fmt.Fprintf(stderr, "yukta serve: %v\n", err)
		return 2
	}
	if err := ext.check(); err != nil {
		fmt.Fprintf(stderr, "yukta serve: %v\n", err)
		return 2
	}
	log, err := newLogger(cfg, stderr)
	if err != nil {
		fmt.Fprintf(stderr, "yukta serve: %v\n", err)
		return 2
	}
	defer func() { _ = log.Sync() }()

	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()

	dsn := cfg.DatabaseURL
	status := &DatabaseStatus{}
	var lost <-chan error // yields if the embedded cluster cannot be restarted
	if dsn == "" {
		began := time.Now()
		pgLog := &zapio.Writer{Log: log.Named("postgres"), Level: zap.DebugLevel}
		defer pgLog.Close()
		cluster, err := localpg.Start(ctx, localpg.Options{Dir: cfg.DataDir, Log: pgLog})
		if err != nil {
			log.Error("embedded PostgreSQL did not start", zap.Error(err))
			fmt.Fprintf(stderr, "yukta serve: %v\n", err)
			return 1
		}
		defer func() {
			sctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			if err := cluster.Stop(sctx); err != nil {
				log.Error("embedded PostgreSQL did not stop cleanly", zap.Error(err))
			} else {
				log.Info("embedded PostgreSQL stopped")
			}
		}()
		if err := postgres.EnsureDatabase(ctx, cluster.DSN("postgres"), embeddedDatabase); err != nil {
			log.Error("embedded PostgreSQL has no usable database", zap.Error(err))
			return 1
		}
		dsn = cluster.DSN(embeddedDatabase)
		logDataFolder(ctx, log, cluster, dsn, cfg.DataDir == defaultDataDirOf(os.Getenv))
		// Deferred after cluster.Stop, so it runs before it.
		var stopSupervising func()
		lost, stopSupervising = superviseCluster(cluster, status, log)
		defer stopSupervising()
		log.Info("embedded PostgreSQL ready", zap.String("data_dir", cfg.DataDir), zap.Duration("took", time.Since(began)))
	}

	var srv *httpapi.Server
	app := fx.New(
		fx.Supply(cfg, DSN(dsn), log, status, ext),
		Module,
		fx.Populate(&srv),
		fx.StartTimeout(2*time.Minute), // first start migrates
		fx.StopTimeout(cfg.ShutdownTimeout+15*time.Second),
	)
	if err := app.Err(); err != nil {
		log.Error("server wiring is broken", zap.Error(err))
		fmt.Fprintf(stderr, "yukta serve: %v\n", err)
		return 1
	}
	if err := app.Start(ctx); err != nil {
		log.Error("server did not start", zap.Error(err))
		fmt.Fprintf(stderr, "yukta serve: %v\n", err)
		return 1
	}
	url := "http://" + srv.Addr().String()
	log.Info("serving", zap.String("url", url), zap.String("version", buildVersion()))
	fmt.Fprintf(stdout, "yukta serving on %s\n", url)

	code := 0
	select {
	case <-ctx.Done():
		log.Info("shutting down", zap.String("cause", "signal"))
	case sig := <-app.Wait():
		code = sig.ExitCode
		log.Info("shutting down", zap.String("cause", sig.Signal.String()))
	case err := <-lost:
		log.Error("embedded PostgreSQL is gone for good; stopping", zap.Error(err))
		fmt.Fprintf(stderr, "yukta serve: %v\n", err)
		code = 1
	}
	sctx, cancel := context.WithTimeout(context.Background(), cfg.ShutdownTimeout+15*time.Second)
	defer cancel()
	if err := app.Stop(sctx); err != nil {
		log.Error("unclean shutdown", zap.Error(err))
		code = 1
	}
	return code
}

// logDataFolder says, as the first thing a person reads, which folder and
// cluster the server uses and whether it made them now or reused what an
// earlier start left there (with what it holds), so a default folder
// holding another install's sessions is not reused in silence.
func logDataFolder(ctx context.Context, log *zap.Logger, c *localpg.Cluster, dsn string, isDefault bool) {
	fields := []zap.Field{zap.String("data_dir", c.Dir()), zap.String("cluster", c.DataDir()), zap.String("postgres", c.Major())}
	msg := "data folder created"
	if !c.Created() {
		msg = "data folder reused"
		if at := c.InitializedAt(); !at.IsZero() {
			fields = append(fields, zap.String("cluster_created_at", at.UTC().Format(time.RFC3339)))
		}
		if sessions, supervisors, err := postgres.Contents(ctx, dsn); err == nil {
			fields = append(fields, zap.Int64("sessions", sessions), zap.Int64("supervisors", supervisors))
		}
	}
	if isDefault {
		fields = append(fields, zap.String("hint", "the default folder for this user; --data-dir (YUKTA_DATA_DIR) picks another"))
	}
	log.Info(msg, fields...)
}
