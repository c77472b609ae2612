package localpg

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// ErrStopped is returned by Restart once Stop has been called.
var ErrStopped = errors.New("localpg: the cluster is stopped")

const (
	defaultRestartAttempts = 5
	defaultRestartDelay    = 250 * time.Millisecond
	defaultRestartStable   = 5 * time.Second
	maxRestartDelay        = 30 * time.Second
)

// RestartPolicy bounds how Supervise brings back a server that went away.
// The zero value restarts up to 5 times in a row, waiting 0.25, 0.5, 1, 2 and
// 4 s before the attempts.
type RestartPolicy struct {
	// Attempts is how many restarts in a row Supervise makes before it gives
	// up. A restart belongs to the series unless the server it brought back
	// stayed up for Stable. 0 means 5.
	Attempts int
	// Delay is the wait before the first attempt of a series; each further
	// attempt waits twice as long (at most 30 s). 0 means 250 ms.
	Delay time.Duration
	// Stable is how long a server must stay up for its next exit to start a
	// new series. It is what tells a server that keeps crashing, which
	// restarts cannot help, from one killed now and then. 0 means 5 s.
	Stable time.Duration
}

func (p RestartPolicy) withDefaults() RestartPolicy {
	if p.Attempts <= 0 {
		p.Attempts = defaultRestartAttempts
	}
	if p.Delay <= 0 {
		p.Delay = defaultRestartDelay
	}
	if p.Stable <= 0 {
		p.Stable = defaultRestartStable
	}
	return p
}

// delay is the wait before attempt n (from 1) of a series.
func (p RestartPolicy) delay(n int) time.Duration {
	d := p.Delay
	for range n - 1 {
		d = min(2*d, maxRestartDelay)
	}
	return d
}

// RestartEvent tells Supervise's owner what it is doing, so it can log it and
// tell its own users (a readiness probe) why the database is away.
type RestartEvent struct {
	// Attempt numbers the attempt within its series, from 1 to Of.
	Attempt, Of int
	// Up is false when the attempt is about to be made, after Delay, and
	// true once it brought the server back, which took Took.
	Up          bool
	Delay, Took time.Duration
	// Cause is why the attempt is needed: how the server exited, or why the
	// previous attempt failed. Set when Up is false.
	Cause error
}

// Supervise restarts the server each time it exits on its own (a crash, a
// kill, an operator's pg_ctl stop), following p, until ctx ends or Stop is
// called (it then returns nil) or the policy gives up (it then returns why,
// and the server stays down). report, if not nil, hears of every attempt
// before it is made and of every success, from Supervise's goroutine. Run at
// most one Supervise per Cluster, and end it before calling Stop.
func (c *Cluster) Supervise(ctx context.Context, p RestartPolicy, report func(RestartEvent)) error {
	p = p.withDefaults()
	if report == nil {
		report = func(RestartEvent) {}
	}
	attempt := 0
	upSince := time.Now()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-c.Exited():
		}
		if c.stopping.Load() {
			return nil
		}
		if time.Since(upSince) >= p.Stable {
			attempt = 0 // it stayed up: this exit starts a new series
		}
		cause := c.exitCause()
		for {
			if attempt == p.Attempts {
				return fmt.Errorf("localpg: PostgreSQL keeps going down: gave up after %d restarts in a row; last: %w", p.Attempts, cause)
			}
			attempt++
			delay := p.delay(attempt)
			report(RestartEvent{Attempt: attempt, Of: p.Attempts, Delay: delay, Cause: cause})
			t := time.NewTimer(delay)
			select {
			case <-ctx.Done():
				t.Stop()
				return nil
			case <-t.C:
			}
			began := time.Now()
			err := c.Restart(ctx)
			if ctx.Err() != nil || errors.Is(err, ErrStopped) {
				return nil
			}
			if err == nil {
				upSince = time.Now()
				report(RestartEvent{Attempt: attempt, Of: p.Attempts, Up: true, Took: time.Since(began)})
				break
			}
			cause = err
		}
	}
}

// exitCause says how the current server process ended; call it only after
// Exited is closed.
func (c *Cluster) exitCause() error {
	p := c.proc.Load()
	if p.err == nil {
		return fmt.Errorf("postgres (PID %d) exited with status 0", p.cmd.Process.Pid)
	}
	return fmt.Errorf("postgres (PID %d) exited: %w", p.cmd.Process.Pid, p.err)
}

// Restart starts the server again after it exited on its own, with the same
// settings and on the same socket, so the DSN stays valid and clients' pools
// just reconnect. PostgreSQL first runs crash recovery when the old server
// did not shut down cleanly. ctx bounds the restart. It fails if the server is
// still running, and with ErrStopped after Stop.
func (c *Cluster) Restart(ctx context.Context) error {
	c.stopMu.Lock()
	defer c.stopMu.Unlock()
	if c.stopped {
		return ErrStopped
	}
	old := c.proc.Load()
	select {
	case <-old.exited:
	default:
		return errors.New("localpg: Restart: the server is still running")
	}
	if err := c.settle(ctx); err != nil {
		return err
	}
	old.release() // its backends are gone, so its output has ended
	return c.run(ctx, c.args)
}

// settle clears what a server that died without shutting down leaves on the
// data dir, so the next start does not trip on it: its backends, which must
// be gone before a new server may use the same files, and its lock files
// (postmaster.pid and the socket's), which postgres would take for a live
// server if their PID now names a zombie or an unrelated process (PIDs are
// reused quickly where pid_max is small). A live server on the data dir is
// left alone: postgres then refuses to start next to it, and says so.
func (c *Cluster) settle(ctx context.Context) error {
	dataDir, err := filepath.EvalSymlinks(c.dataDir) // /proc shows real paths
	if err != nil {
		return fmt.Errorf("localpg: %w", err)
	}
	locks := []string{filepath.Join(c.dataDir, "postmaster.pid"), filepath.Join(c.socketDir, socketFile+".lock")}
	stale := false
	for _, l := range locks {
		if pid := lockPID(l); pid > 0 {
			if servesDir(pid, dataDir) {
				return nil
			}
			stale = true
		}
	}
	if err := c.awaitOrphans(ctx, dataDir); err != nil {
		return err
	}
	if !stale {
		return nil
	}
	// Only now: postgres reads the old shared memory key from postmaster.pid
	// to check that no backend still uses that memory.
	for _, l := range locks {
		pid := lockPID(l)
		if pid == 0 {
			continue
		}
		if err := os.Remove(l); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("localpg: removing a stale lock file: %w", err)
		}
		_, _ = fmt.Fprintf(c.log, "localpg: removed the stale %s (PID %d is no server on this data directory)\n", l, pid)
	}
	return nil
}

// lockPID is the PID on the first line of a postgres lock file, 0 if none.
func lockPID(path string) int {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0
	}
	first, _, _ := strings.Cut(string(b), "\n")
	pid, _ := strconv.Atoi(strings.TrimSpace(first))
	return pid
}

// awaitOrphans waits until no process of a dead server works in dataDir.
// Backends notice their postmaster's death and exit at once as a rule; one
// still there after orphanGrace is killed, as its postmaster would have done
// on a crash, because a new server must not share the files with it.
func (c *Cluster) awaitOrphans(ctx context.Context, dataDir string) error {
	deadline := time.Now().Add(orphanGrace)
	killed := false
	for {
		left := dirProcesses(dataDir)
		if len(left) == 0 {
			return nil
		}
		if time.Now().After(deadline) {
			if killed {
				return fmt.Errorf("%w: processes %v of the old server survive SIGKILL", errPredecessorExiting, left)
			}
			_, _ = fmt.Fprintf(c.log, "localpg: killing processes %v left behind by the previous server after %v\n", left, orphanGrace)
			for _, pid := range left {
				_ = syscall.Kill(pid, syscall.SIGKILL)
			}
			killed, deadline = true, time.Now().Add(orphanGrace)
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("localpg: waiting for processes %v of the previous server to exit: %w", left, ctx.Err())
		case <-time.After(pollInterval):
		}
	}
}
