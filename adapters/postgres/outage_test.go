package postgres_test

import (
	"context"
	"errors"
	"net"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/yukta/yukta/adapters/postgres"
	"github.com/yukta/yukta/adapters/postgres/pgtest"
	"github.com/yukta/yukta/domain/fault"
)

// TestReadyNamesTheReasonNotTheDSN: /readyz shows Ready's error to anyone,
// so it must say why the database is away without the URL's secrets.
func TestReadyNamesTheReasonNotTheDSN(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	if err := postgres.Ready(ctx, pgtest.NewPool(t)); err != nil {
		t.Fatalf("Ready on a live, migrated database: %v", err)
	}
	missing := strings.Replace(pgtest.Cluster().DSN("postgres"), "dbname=postgres", "dbname=no_such_db", 1)
	for _, tc := range []struct{ dsn, want string }{
		{"postgres://yukta_user:s3cret-pw@127.0.0.1:1/yukta_db?sslmode=disable", "the database is unreachable: cannot connect: connection refused"},
		{missing, `the database is unreachable: database "no_such_db" does not exist (SQLSTATE 3D000)`},
	} {
		pool, err := postgres.NewPool(tc.dsn, postgres.PoolOptions{})
		if err != nil {
			t.Fatal(err)
		}
		err = postgres.Ready(ctx, pool)
		pool.Close()
		if err == nil || err.Error() != tc.want || !errors.Is(err, fault.ErrUnavailable) {
			t.Errorf("Ready: got %v, want %q (fault.ErrUnavailable)", err, tc.want)
		}
		for _, secret := range []string{"s3cret-pw", "yukta_user", "127.0.0.1", "yukta_db"} {
			if err != nil && strings.Contains(err.Error(), secret) {
				t.Errorf("Ready's error shows %q: %v", secret, err)
			}
		}
	}
}

// TestListenerNoticesSilentConnectionLoss: a connection whose packets stop
// arriving, with no reset (a partition, a failover), must not leave the
// listener deaf: it checks a quiet connection, drops it and reconnects.
func TestListenerNoticesSilentConnectionLoss(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dsn := pgtest.NewDatabase(t)
	cfg, err := pgx.ParseConfig(dsn)
	if err != nil {
		t.Fatal(err)
	}
	px := newBlackholeProxy(t, filepath.Join(pgtest.Cluster().SocketDir(), ".s.PGSQL.5432"))
	pool, err := postgres.NewPool("host=127.0.0.1 port="+px.port()+" user=postgres sslmode=disable dbname="+cfg.Database, postgres.PoolOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	notifier, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = notifier.Close(ctx) })

	lost := make(chan error, 10)
	l := postgres.NewListener(pool, func(err error) { lost <- err })
	l.SetIdleCheck(300 * time.Millisecond)
	runCtx, stop := context.WithCancel(ctx)
	var wg sync.WaitGroup
	wg.Go(func() { l.Run(runCtx) })
	t.Cleanup(func() { stop(); wg.Wait() })

	within := func(what string, d time.Duration, ch <-chan struct{}) {
		t.Helper()
		select {
		case <-ch:
		case <-time.After(d):
			t.Fatalf("%s: nothing within %v", what, d)
		}
	}
	signal := func(payload string) {
		t.Helper()
		if _, err := notifier.Exec(ctx, `SELECT pg_notify($1, $2)`, postgres.CancelChannel, payload); err != nil {
			t.Fatal(err)
		}
		select {
		case s := <-l.Cancels():
			if s.ExecutionID+" "+s.NodeID != payload {
				t.Fatalf("cancel %+v, want %q", s, payload)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("signal %q not delivered", payload)
		}
	}

	within("first connect", 10*time.Second, l.Wakeups())
	signal("e1 n1")
	time.Sleep(time.Second) // several quiet checks pass on a healthy connection
	if len(lost) > 0 {
		t.Fatalf("a healthy, quiet connection was dropped: %v", <-lost)
	}

	frozeAt := time.Now()
	px.freeze()
	select {
	case err := <-lost:
		t.Logf("noticed the silent loss after %v: %v", time.Since(frozeAt).Round(time.Millisecond), err)
	case <-time.After(15 * time.Second):
		t.Fatal("the listener did not notice that its connection went silent")
	}
	within("reconnect", 10*time.Second, l.Wakeups())
	signal("e2 n2")
}

// blackholeProxy forwards TCP connections to a unix socket until freeze,
// after which the connections it already has drop everything, without
// closing, as a partitioned network does.
type blackholeProxy struct {
	ln     net.Listener
	wg     sync.WaitGroup
	mu     sync.Mutex
	conns  []net.Conn
	frozen []*atomic.Bool
}

func newBlackholeProxy(t *testing.T, socket string) *blackholeProxy {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &blackholeProxy{ln: ln}
	p.wg.Go(func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			s, err := net.Dial("unix", socket)
			if err != nil {
				_ = c.Close()
				continue
			}
			frozen := &atomic.Bool{}
			p.mu.Lock()
			p.conns, p.frozen = append(p.conns, c, s), append(p.frozen, frozen)
			p.mu.Unlock()
			p.wg.Go(func() { forward(s, c, frozen) })
			p.wg.Go(func() { forward(c, s, frozen) })
		}
	})
	t.Cleanup(func() {
		_ = ln.Close()
		p.mu.Lock()
		for _, c := range p.conns {
			_ = c.Close()
		}
		p.mu.Unlock()
		p.wg.Wait()
	})
	return p
}

func (p *blackholeProxy) port() string {
	return strconv.Itoa(p.ln.Addr().(*net.TCPAddr).Port)
}

func (p *blackholeProxy) freeze() {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, f := range p.frozen {
		f.Store(true)
	}
}

func forward(dst, src net.Conn, frozen *atomic.Bool) {
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		if err != nil {
			_ = dst.Close()
			return
		}
		if frozen.Load() {
			continue
		}
		if _, err := dst.Write(buf[:n]); err != nil {
			_ = src.Close()
			return
		}
	}
}
