// Package pgtest gives tests a real PostgreSQL: one throwaway cluster per test
// binary (from the installed server binaries, via localpg), a template
// database migrated once, and a fresh clone of it per test. Cloning a template
// is a file copy, far faster than migrating each time. A missing PostgreSQL
// fails the tests loudly; it never skips them.
package pgtest

import (
	"context"
	"fmt"
	"os"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/yukta/yukta/adapters/postgres"
	"github.com/yukta/yukta/adapters/postgres/localpg"
)

const template = "yukta_template"

var (
	cluster *localpg.Cluster
	mu      sync.Mutex // CREATE DATABASE … TEMPLATE must not race a connection to the template
	counter atomic.Int64
)

// Main starts the cluster, migrates the template, runs the tests and stops
// the cluster. Call it from TestMain: func TestMain(m *testing.M) { pgtest.Main(m) }.
func Main(m *testing.M) {
	os.Exit(run(m))
}

func run(m *testing.M) int {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	c, err := localpg.StartEphemeral(ctx)
	if err != nil {
		cancel()
		fmt.Fprintf(os.Stderr, "pgtest: cannot start a throwaway PostgreSQL: %v\n", err)
		return 1
	}
	cluster = c
	defer func() { _ = c.Stop(context.Background()) }()
	err = prepareTemplate(ctx)
	cancel()
	if err != nil {
		fmt.Fprintf(os.Stderr, "pgtest: %v\n", err)
		return 1
	}
	return m.Run()
}

func prepareTemplate(ctx context.Context) error {
	if err := postgres.EnsureDatabase(ctx, cluster.DSN("postgres"), template); err != nil {
		return fmt.Errorf("create template: %w", err)
	}
	pool, err := postgres.NewPool(cluster.DSN(template), postgres.PoolOptions{MaxConns: 2})
	if err != nil {
		return err
	}
	defer pool.Close()
	if err := postgres.Migrate(ctx, pool); err != nil {
		return fmt.Errorf("migrate template: %w", err)
	}
	return nil
}

// Cluster returns the cluster Main started.
func Cluster() *localpg.Cluster {
	if cluster == nil {
		panic("pgtest: call pgtest.Main from TestMain first")
	}
	return cluster
}

// NewDatabase creates a migrated database for t and drops it when t ends.
// It returns the database's DSN.
func NewDatabase(t testing.TB) string {
	t.Helper()
	name := fmt.Sprintf("t_%d_%d", os.Getpid(), counter.Add(1))
	admin := Cluster().DSN("postgres")
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, admin)
	if err != nil {
		t.Fatalf("pgtest: connect: %v", err)
	}
	defer conn.Close(ctx)
	mu.Lock()
	_, err = conn.Exec(ctx, "CREATE DATABASE "+name+" TEMPLATE "+template)
	mu.Unlock()
	if err != nil {
		t.Fatalf("pgtest: create database: %v", err)
	}
	t.Cleanup(func() {
		c, err := pgx.Connect(ctx, admin)
		if err != nil {
			t.Errorf("pgtest: connect to drop %s: %v", name, err)
			return
		}
		defer c.Close(ctx)
		if _, err := c.Exec(ctx, "DROP DATABASE "+name+" WITH (FORCE)"); err != nil {
			t.Errorf("pgtest: drop %s: %v", name, err)
		}
	})
	return Cluster().DSN(name)
}

// NewPool returns a pool on a fresh database, closed when t ends (before the
// database is dropped).
func NewPool(t testing.TB) *pgxpool.Pool {
	t.Helper()
	pool, err := postgres.NewPool(NewDatabase(t), postgres.PoolOptions{MaxConns: 8})
	if err != nil {
		t.Fatalf("pgtest: pool: %v", err)
	}
	t.Cleanup(pool.Close)
	return pool
}
