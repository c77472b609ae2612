package localpg_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/yukta/yukta/adapters/postgres/localpg"
)

// supervised runs Supervise for the test and returns its events as they
// come and its result; Supervise is ended and joined when the test ends,
// before the cluster is stopped (cleanups run last-in, first-out).
func supervised(t *testing.T, c *localpg.Cluster, p localpg.RestartPolicy) (<-chan localpg.RestartEvent, <-chan error) {
	t.Helper()
	events := make(chan localpg.RestartEvent, 100)
	result := make(chan error, 1)
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() { result <- c.Supervise(ctx, p, func(e localpg.RestartEvent) { events <- e }) })
	t.Cleanup(func() { cancel(); wg.Wait() })
	return events, result
}

// nextEvent waits for Supervise's next event.
func nextEvent(t *testing.T, events <-chan localpg.RestartEvent) localpg.RestartEvent {
	t.Helper()
	select {
	case e := <-events:
		return e
	case <-time.After(30 * time.Second):
		t.Fatal("no restart event within 30 s")
		return localpg.RestartEvent{}
	}
}

// serverUser is the OS account the cluster in dir runs as: the owner of its
// data, which is us unless we are root.
func serverUser(t *testing.T, dir string) *syscall.Credential {
	t.Helper()
	fi, err := os.Stat(filepath.Join(dir, "pgdata"))
	if err != nil {
		t.Fatal(err)
	}
	st := fi.Sys().(*syscall.Stat_t)
	if int(st.Uid) == os.Geteuid() {
		return nil
	}
	return &syscall.Credential{Uid: st.Uid, Gid: st.Gid, Groups: []uint32{}}
}

// asServerUser runs a command as the cluster's OS user (pg_ctl refuses root).
func asServerUser(t *testing.T, dir, name string, args ...string) *exec.Cmd {
	t.Helper()
	cmd := exec.Command(name, args...)
	cmd.Dir = dir
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: serverUser(t, dir)}
	return cmd
}

// pgCtlStopImmediate is what an operator's `pg_ctl stop -m immediate` does:
// SIGQUIT to the postmaster, no checkpoint, crash recovery on the next start.
// -W: pg_ctl would wait for postmaster.pid to go away, but the restarted
// server writes a new one at once, so it would report a failed stop.
func pgCtlStopImmediate(t *testing.T, dir string) {
	t.Helper()
	bin, err := localpg.FindBinDir()
	if err != nil {
		t.Fatal(err)
	}
	out, err := asServerUser(t, dir, filepath.Join(bin, "pg_ctl"), "-D", filepath.Join(dir, "pgdata"), "stop", "-m", "immediate", "-W").CombinedOutput()
	if err != nil {
		t.Fatalf("pg_ctl stop -m immediate: %v\n%s", err, out)
	}
}

func TestSuperviseRestartsKilledAndStoppedServer(t *testing.T) {
	t.Parallel()
	ctx := testCtx(t)
	dir := tempDir(t)
	c, _ := mustStart(t, ctx, localpg.Options{Dir: dir})
	exec1(t, ctx, connect(t, ctx, c), `CREATE TABLE kept (v text); INSERT INTO kept VALUES ('committed before the outages')`)
	// Stable is tiny so every outage starts a new series: each is attempt 1.
	events, result := supervised(t, c, localpg.RestartPolicy{Delay: 10 * time.Millisecond, Stable: time.Millisecond})

	outages := []struct {
		name string
		stop func(t *testing.T)
	}{
		{"kill -9 of the postmaster", func(t *testing.T) {
			if err := syscall.Kill(postmasterPID(t, dir), syscall.SIGKILL); err != nil {
				t.Fatal(err)
			}
		}},
		{"pg_ctl stop -m immediate", func(t *testing.T) { pgCtlStopImmediate(t, dir) }},
		{"kill -9 again", func(t *testing.T) {
			if err := syscall.Kill(postmasterPID(t, dir), syscall.SIGKILL); err != nil {
				t.Fatal(err)
			}
		}},
	}
	for _, o := range outages {
		old := postmasterPID(t, dir)
		exited := c.Exited()
		began := time.Now()
		o.stop(t)
		<-exited
		e := nextEvent(t, events)
		if e.Up || e.Attempt != 1 || e.Of != 5 || e.Cause == nil {
			t.Fatalf("%s: first event %+v, want attempt 1 of 5 with a cause", o.name, e)
		}
		if up := nextEvent(t, events); !up.Up || up.Attempt != 1 {
			t.Fatalf("%s: second event %+v, want attempt 1 up", o.name, up)
		}
		t.Logf("%s (cause %q): up again after %v", o.name, e.Cause, time.Since(began).Round(time.Millisecond))
		if pid := postmasterPID(t, dir); pid == old {
			t.Fatalf("%s: postmaster.pid still names the old server %d", o.name, pid)
		}
		// The same DSN reaches the new server, with the data.
		if got := queryString(t, ctx, c, `SELECT v FROM kept`); got != "committed before the outages" {
			t.Fatalf("%s: got %q", o.name, got)
		}
		select {
		case <-c.Exited():
			t.Fatalf("%s: Exited is closed for the restarted server", o.name)
		default:
		}
	}
	select {
	case err := <-result:
		t.Fatalf("Supervise returned early: %v", err)
	default:
	}
	stopBegan := time.Now()
	if err := c.Stop(ctx); err != nil { // Supervise must not fight a Stop
		t.Fatalf("Stop: %v", err)
	}
	select {
	case err := <-result:
		if err != nil {
			t.Fatalf("Supervise after Stop: %v, want nil", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Supervise did not return after Stop")
	}
	select {
	case e := <-events:
		t.Fatalf("Supervise tried to restart a stopped cluster: %+v", e)
	default:
	}
	t.Logf("stop took %v", time.Since(stopBegan).Round(time.Millisecond))
}

// TestSuperviseGivesUp: a server that cannot start again (here: a broken
// setting) is retried Attempts times with growing delays, then Supervise
// returns the reason instead of retrying forever.
func TestSuperviseGivesUp(t *testing.T) {
	t.Parallel()
	ctx := testCtx(t)
	dir := tempDir(t)
	c, _ := mustStart(t, ctx, localpg.Options{Dir: dir})
	events, result := supervised(t, c, localpg.RestartPolicy{Attempts: 3, Delay: 20 * time.Millisecond})

	conf := filepath.Join(dir, "pgdata", "postgresql.auto.conf")
	f, err := os.OpenFile(conf, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	_, err = f.WriteString("shared_buffers = 'plenty'\n")
	if err := errors.Join(err, f.Close()); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Kill(postmasterPID(t, dir), syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	var err2 error
	select {
	case err2 = <-result:
	case <-time.After(45 * time.Second):
		t.Fatal("Supervise did not give up within 45 s")
	}
	if err2 == nil {
		t.Fatal("Supervise returned nil for a server that cannot start")
	}
	for _, want := range []string{"gave up after 3 restarts", "shared_buffers"} {
		if !strings.Contains(err2.Error(), want) {
			t.Errorf("error does not mention %q: %v", want, err2)
		}
	}
	var delays []time.Duration
	for len(events) > 0 {
		e := <-events
		if e.Up {
			t.Fatalf("a restart succeeded: %+v", e)
		}
		delays = append(delays, e.Delay)
	}
	want := []time.Duration{20 * time.Millisecond, 40 * time.Millisecond, 80 * time.Millisecond}
	if fmt.Sprint(delays) != fmt.Sprint(want) {
		t.Fatalf("attempt delays %v, want %v", delays, want)
	}
	t.Logf("gave up: %v", err2)
}

// TestSuperviseCountsQuickCrashesAsOneSeries: a server that goes down again
// before it was up for Stable continues the series, so a crash loop ends.
func TestSuperviseCountsQuickCrashesAsOneSeries(t *testing.T) {
	t.Parallel()
	ctx := testCtx(t)
	dir := tempDir(t)
	c, _ := mustStart(t, ctx, localpg.Options{Dir: dir, Ephemeral: true})
	events, result := supervised(t, c, localpg.RestartPolicy{Attempts: 2, Delay: 10 * time.Millisecond, Stable: time.Hour})
	for attempt := 1; attempt <= 2; attempt++ {
		if err := syscall.Kill(postmasterPID(t, dir), syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
		if e := nextEvent(t, events); e.Up || e.Attempt != attempt || e.Of != 2 {
			t.Fatalf("event %+v, want attempt %d of 2", e, attempt)
		}
		if e := nextEvent(t, events); !e.Up {
			t.Fatalf("event %+v, want up", e)
		}
	}
	if err := syscall.Kill(postmasterPID(t, dir), syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-result:
		if err == nil || !strings.Contains(err.Error(), "gave up after 2 restarts") {
			t.Fatalf("Supervise: %v, want it to give up", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("Supervise did not give up on the third crash in a row")
	}
	if len(events) > 0 {
		t.Fatalf("a third attempt was made: %+v", <-events)
	}
}

// TestStartClearsStaleLockFiles: after a crash the lock files name the dead
// postmaster, whose PID may since have become a zombie or another process of
// the same OS user. postgres alone takes either for a live server and
// refuses to start; Start must see they are not a server on this data dir.
func TestStartClearsStaleLockFiles(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name  string
		holer func(t *testing.T, dir string) int
	}{
		{"pid reused by another process", func(t *testing.T, dir string) int {
			cmd := asServerUser(t, dir, "sleep", "60")
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
			return cmd.Process.Pid
		}},
		{"zombie", func(t *testing.T, dir string) int {
			cmd := asServerUser(t, dir, "true")
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = cmd.Wait() }) // a zombie until then
			for processAlive(cmd.Process.Pid) {
				time.Sleep(5 * time.Millisecond)
			}
			return cmd.Process.Pid
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			ctx := testCtx(t)
			dir := tempDir(t)
			c, _ := mustStart(t, ctx, localpg.Options{Dir: dir})
			pidFile := filepath.Join(dir, "pgdata", "postmaster.pid")
			sockLock := filepath.Join(c.SocketDir(), ".s.PGSQL.5432.lock")
			pidText, err := os.ReadFile(pidFile)
			if err != nil {
				t.Fatal(err)
			}
			sockText, err := os.ReadFile(sockLock)
			if err != nil {
				t.Fatal(err)
			}
			stop(t, c)

			pid := tc.holer(t, dir)
			for path, text := range map[string][]byte{pidFile: pidText, sockLock: sockText} {
				_, rest, _ := strings.Cut(string(text), "\n")
				if err := os.WriteFile(path, fmt.Appendf(nil, "%d\n%s", pid, rest), 0o600); err != nil {
					t.Fatal(err)
				}
				if cred := serverUser(t, dir); cred != nil {
					if err := os.Chown(path, int(cred.Uid), int(cred.Gid)); err != nil {
						t.Fatal(err)
					}
				}
			}
			c2, took := mustStart(t, ctx, localpg.Options{Dir: dir})
			t.Logf("start over lock files naming %s %d took %v", tc.name, pid, took.Round(time.Millisecond))
			if took > 10*time.Second {
				t.Fatalf("start took %v: it waited for the stale holder instead of seeing through it", took)
			}
			if got := queryString(t, ctx, c2, `SELECT 'up'`); got != "up" {
				t.Fatal(got)
			}
			stop(t, c2)
		})
	}
}

// TestRestartWaitsForOrphans: after a kill -9 of the postmaster a process
// of the old server may linger in the data dir. A new server must not start
// beside it; Restart waits for it and, past the grace period, kills it.
func TestRestartWaitsForOrphans(t *testing.T) {
	t.Parallel()
	ctx := testCtx(t)
	dir := tempDir(t)
	c, _ := mustStart(t, ctx, localpg.Options{Dir: dir, Ephemeral: true})

	// A stand-in for a backend that ignores its postmaster's death: a process
	// named postgres whose working directory is the data dir.
	bin := filepath.Join(tempDir(t), "postgres")
	sleep, err := exec.LookPath("sleep")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(sleep, bin); err != nil {
		t.Fatal(err)
	}
	orphan := asServerUser(t, dir, bin, "120")
	orphan.Dir = filepath.Join(dir, "pgdata")
	if err := orphan.Start(); err != nil {
		t.Fatal(err)
	}
	orphanDone := make(chan error, 1)
	go func() { orphanDone <- orphan.Wait() }()
	t.Cleanup(func() { _ = orphan.Process.Kill(); <-orphanDone })

	exited := c.Exited()
	if err := syscall.Kill(postmasterPID(t, dir), syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	<-exited
	began := time.Now()
	if err := c.Restart(ctx); err != nil {
		t.Fatalf("Restart: %v", err)
	}
	took := time.Since(began)
	t.Logf("restart beside a lingering process took %v", took.Round(time.Millisecond))
	select {
	case err := <-orphanDone:
		orphanDone <- err
		if !strings.Contains(fmt.Sprint(err), "killed") {
			t.Fatalf("the lingering process ended with %v, want killed", err)
		}
	default:
		t.Fatal("Restart started a server while a process of the old one still ran in the data dir")
	}
	if took < 4*time.Second {
		t.Fatalf("Restart took %v: it killed the lingering process without giving it time to exit", took)
	}
	if got := queryString(t, ctx, c, `SELECT 'up'`); got != "up" {
		t.Fatal(got)
	}
	stop(t, c)
}

// TestConcurrentFirstStart: two starts on one empty folder at once; one
// initializes and runs the cluster, the other is told who holds it.
func TestConcurrentFirstStart(t *testing.T) {
	t.Parallel()
	ctx := testCtx(t)
	dir := filepath.Join(tempDir(t), "data")
	var wg sync.WaitGroup
	clusters := make([]*localpg.Cluster, 2)
	errs := make([]error, 2)
	gate := make(chan struct{})
	for i := range 2 {
		wg.Go(func() {
			<-gate
			clusters[i], errs[i] = localpg.Start(ctx, localpg.Options{Dir: dir})
		})
	}
	close(gate)
	wg.Wait()
	won := -1
	for i, c := range clusters {
		if c != nil {
			t.Cleanup(func() { _ = c.Stop(context.Background()) })
			won = i
		}
	}
	if (errs[0] == nil) == (errs[1] == nil) {
		t.Fatalf("errors %v and %v: want exactly one start to fail", errs[0], errs[1])
	}
	lost := errs[1-won]
	if _, ok := errors.AsType[*localpg.DirInUseError](lost); !ok || !strings.Contains(lost.Error(), "being initialized or used by another yukta") {
		t.Fatalf("loser's error: %v, want a DirInUseError", lost)
	}
	t.Logf("loser: %v", lost)
	if got := queryString(t, ctx, clusters[won], `SELECT 'winner up'`); got != "winner up" {
		t.Fatal(got)
	}
}

// TestExitedIgnoresLingeringOutput: a process the server started may outlive
// it and keep its output pipe open (here a COPY TO PROGRAM child). Exited must
// still say at once that the postmaster is gone; the restart and the
// readiness probe depend on it.
func TestExitedIgnoresLingeringOutput(t *testing.T) {
	t.Parallel()
	ctx := testCtx(t)
	dir := tempDir(t)
	c, _ := mustStart(t, ctx, localpg.Options{Dir: dir, Ephemeral: true})
	conn := connect(t, ctx, c)
	copied := make(chan error, 1)
	go func() { _, err := conn.Exec(ctx, `COPY (SELECT 1) TO PROGRAM 'sleep 6'`); copied <- err }()
	time.Sleep(300 * time.Millisecond) // the program runs
	exited := c.Exited()
	began := time.Now()
	if err := syscall.Kill(postmasterPID(t, dir), syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	select {
	case <-exited:
	case <-time.After(10 * time.Second):
		t.Fatal("Exited not closed after the postmaster was killed")
	}
	took := time.Since(began)
	t.Logf("Exited closed %v after the kill", took.Round(time.Millisecond))
	if took > 2*time.Second {
		t.Fatalf("Exited took %v: it waited for the output pipe instead of the postmaster", took)
	}
	<-copied
}
