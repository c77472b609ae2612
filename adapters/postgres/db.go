// Package postgres is Yukta's storage adapter: the pgx pool, schema
// migrations, the transaction helper and the stores behind the application's
// ports. pgx types and errors never leave this package; errors are translated
// to domain/fault kinds in errors.go.
package postgres

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io"
	"net"
	"strconv"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/jackc/pgx/v5/stdlib"
	"github.com/pressly/goose/v3"
	"github.com/pressly/goose/v3/lock"

	"github.com/yukta/yukta/domain/fault"
	"github.com/yukta/yukta/migrations"
)

// PoolOptions tune the connection pool.
type PoolOptions struct {
	MaxConns int32
	// IdleInTransaction ends a session that sits inside a transaction this
	// long (default 60 s). The server sets it to the work lease: an
	// instance frozen in the middle of a commit (stopped by the OS, cut off)
	// must not hold its row locks, and so every other instance's commits and
	// reaps, for longer than it would hold its claims.
	IdleInTransaction time.Duration
}

// NewPool builds a pool for dsn without dialing; Ping or Migrate dials.
func NewPool(dsn string, o PoolOptions) (*pgxpool.Pool, error) {
	cfg, err := pgxpool.ParseConfig(dsn)
	if err != nil {
		// The error text may hold the password; say only what is wrong.
		return nil, fmt.Errorf("postgres: cannot parse the database URL: %s", redactParseError(err))
	}
	if o.MaxConns > 0 {
		cfg.MaxConns = o.MaxConns
	}
	cfg.MaxConnLifetime, cfg.MaxConnLifetimeJitter = time.Hour, 5*time.Minute
	cfg.MaxConnIdleTime, cfg.HealthCheckPeriod = 15*time.Minute, 30*time.Second
	if cfg.ConnConfig.ConnectTimeout == 0 {
		cfg.ConnConfig.ConnectTimeout = 5 * time.Second
	}
	rp := cfg.ConnConfig.RuntimeParams
	rp["application_name"] = "yukta"
	rp["timezone"] = "UTC"
	rp["statement_timeout"] = "30s"
	idle := 60 * time.Second
	if o.IdleInTransaction > 0 {
		idle = o.IdleInTransaction
	}
	rp["idle_in_transaction_session_timeout"] = strconv.FormatInt(idle.Milliseconds(), 10)
	// Yukta's statements are driven by a few rows each (a batch of items,
	// one execution, one page), found by key. The work tables churn so fast
	// that their statistics lag behind, and then the planner would join or
	// scan a whole table: measured 5-10 ms instead of 0.5 ms per batch. With
	// these off it keeps to nested index lookups; a statement that has no
	// index to use still runs (these settings only make the others costly).
	for _, p := range []string{"enable_seqscan", "enable_bitmapscan", "enable_hashjoin", "enable_mergejoin"} {
		rp[p] = "off"
	}
	return pgxpool.NewWithConfig(context.Background(), cfg)
}

func redactParseError(err error) string {
	if pe, ok := err.(*pgconn.ParseConfigError); ok && pe.Unwrap() != nil {
		return pe.Unwrap().Error()
	}
	return "malformed URL (expected postgres://user:pass@host:5432/db or key=value pairs)"
}

func newMigrator(pool *pgxpool.Pool) (*goose.Provider, *sql.DB, error) {
	db := stdlib.OpenDBFromPool(pool)
	locker, err := lock.NewPostgresSessionLocker()
	if err != nil {
		db.Close()
		return nil, nil, err
	}
	p, err := goose.NewProvider(goose.DialectPostgres, db, migrations.FS,
		goose.WithSessionLocker(locker), goose.WithDisableGlobalRegistry(true))
	if err != nil {
		db.Close()
		return nil, nil, err
	}
	return p, db, nil
}

// Migrate applies every pending migration. Concurrent instances serialize on
// an advisory lock, so several servers may start at once.
func Migrate(ctx context.Context, pool *pgxpool.Pool) error {
	p, db, err := newMigrator(pool)
	if err != nil {
		return fmt.Errorf("postgres: migrations: %w", err)
	}
	defer db.Close() // closes the database/sql view, not the pool
	if _, err := p.Up(ctx); err != nil {
		return fmt.Errorf("postgres: apply migrations: %w", translate(err))
	}
	return nil
}

// readyTimeout bounds a readiness check: a database slower than this to
// answer is as good as away to whoever asks.
const readyTimeout = 3 * time.Second

// Ready reports whether the database answers and every migration this binary
// embeds has been applied. Its errors are fault.ErrUnavailable, and their
// text says why in words safe to show anyone: never the DSN, which may hold a
// password.
func Ready(ctx context.Context, pool *pgxpool.Pool) error {
	ctx, cancel := context.WithTimeout(ctx, readyTimeout)
	defer cancel()
	if err := pool.Ping(ctx); err != nil {
		return &unreachableError{reason: unreachableReason(err)}
	}
	p, db, err := newMigrator(pool)
	if err != nil {
		return &unreadyError{"the migrations cannot be read"}
	}
	defer db.Close()
	pending, err := p.HasPending(ctx)
	if err != nil {
		return &unreachableError{reason: unreachableReason(err)}
	}
	if pending {
		return &unreadyError{"migrations are pending"}
	}
	return nil
}

// unreachableError is a database that does not answer. Its text is all a
// readiness probe shows.
type unreachableError struct{ reason string }

func (e *unreachableError) Error() string { return "the database is unreachable: " + e.reason }
func (e *unreachableError) Unwrap() error { return fault.ErrUnavailable }

// unreadyError is a database that answers but cannot be used yet.
type unreadyError struct{ reason string }

func (e *unreadyError) Error() string { return e.reason }
func (e *unreadyError) Unwrap() error { return fault.ErrUnavailable }

// unreachableReason names why a connection or query failed. pgx's own texts
// name the host, user and database, so they are not shown; the server's
// message, the system's error or the kind of failure is.
func unreachableReason(err error) string {
	pgErr, isPg := errors.AsType[*pgconn.PgError](err)
	errno, isErrno := errors.AsType[syscall.Errno](err)
	netErr, isNet := errors.AsType[net.Error](err)
	_, isDNS := errors.AsType[*net.DNSError](err)
	switch {
	case isPg:
		return fmt.Sprintf("%s (SQLSTATE %s)", pgErr.Message, pgErr.Code)
	case errors.Is(err, context.DeadlineExceeded) || isNet && netErr.Timeout():
		return fmt.Sprintf("no answer within %v", readyTimeout)
	case isDNS:
		return "cannot resolve the database host"
	case isErrno:
		return "cannot connect: " + errno.Error()
	case errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF):
		return "the server closed the connection"
	}
	return "cannot connect"
}

// SynchronousCommit returns the server's synchronous_commit setting; anything
// but "on" (or stronger) can lose acknowledged work in a crash.
func SynchronousCommit(ctx context.Context, pool *pgxpool.Pool) (string, error) {
	var v string
	err := pool.QueryRow(ctx, "SHOW synchronous_commit").Scan(&v)
	return v, translate(err)
}

// dbtx is what stores run on: the pool outside a transaction, pgx.Tx inside.
type dbtx interface {
	Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error)
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
}

// EnsureDatabase creates database name on the server adminDSN points at, if
// it does not exist yet (the embedded cluster starts with only "postgres").
func EnsureDatabase(ctx context.Context, adminDSN, name string) error {
	conn, err := pgx.Connect(ctx, adminDSN)
	if err != nil {
		return translate(err)
	}
	defer conn.Close(context.WithoutCancel(ctx))
	var exists bool
	if err := conn.QueryRow(ctx, "SELECT EXISTS (SELECT 1 FROM pg_database WHERE datname = $1)", name).Scan(&exists); err != nil {
		return translate(err)
	}
	if exists {
		return nil
	}
	_, err = conn.Exec(ctx, "CREATE DATABASE "+pgx.Identifier{name}.Sanitize())
	if pgErr, ok := errors.AsType[*pgconn.PgError](err); ok && pgErr.Code == "42P04" {
		return nil // created concurrently
	}
	return translate(err)
}

// Contents counts what a database already holds, for the start-up line
// that says whether a reused data folder is the one the operator meant:
// its sessions and supervisors. A database not migrated yet holds none.
func Contents(ctx context.Context, dsn string) (sessions, supervisors int64, err error) {
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		return 0, 0, translate(err)
	}
	defer conn.Close(context.WithoutCancel(ctx))
	count := func(table string) (int64, error) {
		var exists bool
		if err := conn.QueryRow(ctx, `SELECT to_regclass($1) IS NOT NULL`, table).Scan(&exists); err != nil || !exists {
			return 0, translate(err)
		}
		var n int64
		err := conn.QueryRow(ctx, "SELECT count(*) FROM "+pgx.Identifier{table}.Sanitize()).Scan(&n)
		return n, translate(err)
	}
	if sessions, err = count("sessions"); err != nil {
		return 0, 0, err
	}
	supervisors, err = count("supervisors")
	return sessions, supervisors, err
}
