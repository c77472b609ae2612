package postgres

import (
	"context"
	"math/rand/v2"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/yukta/yukta/application/executionapp"
)

// Listener receives the cancel signals SignalSender sends, on a dedicated
// connection (LISTEN state must not leak into the pool). After each
// (re)connect it also wakes the engine once, so work that arrived while it
// was away is claimed without waiting for the next poll. Signals sent while
// it is away are lost; they are hints, and their senders have already
// changed the state that the work's commit re-checks.
type Listener struct {
	cfg     *pgx.ConnConfig
	wake    chan struct{}
	cancels chan executionapp.CancelSignal
	onError func(error)
	idle    time.Duration // idleCheck; tests shorten it
}

var _ executionapp.Signals = (*Listener)(nil)

// NewListener returns a listener on the pool's database; Run starts it.
func NewListener(pool *pgxpool.Pool, onError func(error)) *Listener {
	return &Listener{cfg: pool.Config().ConnConfig.Copy(), wake: make(chan struct{}, 1),
		cancels: make(chan executionapp.CancelSignal, 1024), onError: onError, idle: idleCheck}
}

// Wakeups delivers coalesced "new work" hints.
func (l *Listener) Wakeups() <-chan struct{} { return l.wake }

// Cancels delivers requests to cancel running work.
func (l *Listener) Cancels() <-chan executionapp.CancelSignal { return l.cancels }

// idleCheck is how long the listener waits for a notification before it
// checks its connection: one that died without a word (a network partition,
// a failover) would otherwise leave it deaf until TCP keepalive notices,
// which takes many minutes.
const idleCheck = 30 * time.Second

// pingTimeout is how long that check may take before the connection is
// given up for dead.
const pingTimeout = 5 * time.Second

// Run listens until ctx ends. It outlives any database outage: each failed
// connection is reported once and retried after a growing delay (0.1 s
// doubling to 10 s, with jitter), back to 0.1 s once connected.
func (l *Listener) Run(ctx context.Context) {
	listen(ctx, l.cfg, cancelChannel, l.idle, l.onError, l.signalWake, func(n *pgconn.Notification) error {
		exec, node, _ := strings.Cut(n.Payload, " ")
		select {
		case l.cancels <- executionapp.CancelSignal{ExecutionID: exec, NodeID: node}:
			return nil
		case <-ctx.Done():
			return ctx.Err()
		}
	})
}

// listen LISTENs on channel on a connection of its own until ctx ends,
// calling connected after each (re)connect and notified for each
// notification. A failed connection is reported to onError and retried
// after a growing delay (0.1 s doubling to 10 s, with jitter), back to
// 0.1 s once connected; a connection quiet for idle is pinged.
func listen(ctx context.Context, cfg *pgx.ConnConfig, channel string, idle time.Duration, onError func(error),
	connected func(), notified func(*pgconn.Notification) error) {
	backoff := 100 * time.Millisecond
	for ctx.Err() == nil {
		err := listenOnce(ctx, cfg, channel, idle, &backoff, connected, notified)
		if ctx.Err() != nil {
			return
		}
		onError(err)
		select {
		case <-time.After(backoff + rand.N(backoff)):
		case <-ctx.Done():
			return
		}
		backoff = min(backoff*2, 10*time.Second)
	}
}

func listenOnce(ctx context.Context, cfg *pgx.ConnConfig, channel string, idle time.Duration, backoff *time.Duration,
	connected func(), notified func(*pgconn.Notification) error) error {
	conn, err := pgx.ConnectConfig(ctx, cfg)
	if err != nil {
		return err
	}
	defer conn.Close(context.WithoutCancel(ctx))
	if _, err := conn.Exec(ctx, "LISTEN "+pgx.Identifier{channel}.Sanitize()); err != nil {
		return err
	}
	*backoff = 100 * time.Millisecond
	connected()
	for {
		wctx, cancel := context.WithTimeout(ctx, idle)
		n, err := conn.WaitForNotification(wctx)
		cancel()
		if pgconn.Timeout(err) && ctx.Err() == nil {
			// Quiet for a while: make sure the server is still there.
			pctx, cancel := context.WithTimeout(ctx, pingTimeout)
			err = conn.Ping(pctx)
			cancel()
			if err != nil {
				return err
			}
			continue
		}
		if err != nil {
			return err
		}
		if err := notified(n); err != nil {
			return err
		}
	}
}

func (l *Listener) signalWake() {
	select {
	case l.wake <- struct{}{}:
	default:
	}
}
