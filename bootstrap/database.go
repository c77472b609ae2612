package bootstrap

import (
	"context"
	"fmt"
	"sync"

	"go.uber.org/zap"

	"github.com/yukta/yukta/adapters/postgres/localpg"
	"github.com/yukta/yukta/domain/fault"
)

// DatabaseStatus is what the server knows about its database that a query
// cannot tell: while the embedded cluster is being restarted, why /readyz
// says no. The zero value knows of nothing wrong; a nil one too.
type DatabaseStatus struct {
	mu   sync.Mutex
	down error
}

// Err is why the database is known to be away, or nil.
func (s *DatabaseStatus) Err() error {
	if s == nil {
		return nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.down
}

func (s *DatabaseStatus) set(err error) {
	s.mu.Lock()
	s.down = err
	s.mu.Unlock()
}

// unavailable is an error for /readyz: its text is the reason, and it is of
// the kind fault.ErrUnavailable.
type unavailable struct{ reason string }

func (e *unavailable) Error() string { return e.reason }
func (e *unavailable) Unwrap() error { return fault.ErrUnavailable }

// superviseCluster keeps the embedded cluster running while the server runs:
// when its postmaster dies or is stopped behind Yukta's back, it is restarted
// (localpg.RestartPolicy's defaults: 5 attempts in a row, 0.25 s to 4 s apart)
// while the rest of the server waits for the database, as it does for any
// outage. It returns a channel that yields the error if the restarts are
// exhausted, and stop, which ends the supervision and waits for it; call stop
// before stopping the cluster.
func superviseCluster(c *localpg.Cluster, status *DatabaseStatus, log *zap.Logger) (failed <-chan error, stop func()) {
	log = log.Named("postgres")
	report := func(e localpg.RestartEvent) {
		if e.Up {
			status.set(nil)
			log.Info("embedded PostgreSQL restarted", zap.Int("attempt", e.Attempt), zap.Int("of", e.Of), zap.Duration("took", e.Took))
			return
		}
		status.set(&unavailable{fmt.Sprintf("the embedded PostgreSQL is restarting (attempt %d of %d)", e.Attempt, e.Of)})
		log.Warn("embedded PostgreSQL is down; restarting it", zap.Int("attempt", e.Attempt), zap.Int("of", e.Of),
			zap.Duration("delay", e.Delay), zap.Error(e.Cause))
	}
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := c.Supervise(ctx, localpg.RestartPolicy{}, report); err != nil {
			status.set(&unavailable{"the embedded PostgreSQL could not be restarted; the server is stopping"})
			errc <- err
		}
	}()
	return errc, func() { cancel(); <-done }
}
