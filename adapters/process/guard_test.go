package process_test

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/yukta/yukta/adapters/process"
)

// descendants are the pids the helper's descendants mode reports: itself,
// its child in the group and its child that left it with setsid.
type descendants struct{ Self, PID, Daemon int }

func (d descendants) all() []int { return []int{d.Self, d.PID, d.Daemon} }

// allGoneWithin polls until none of pids runs.
func allGoneWithin(t *testing.T, pids []int, d time.Duration, after string) {
	t.Helper()
	begin := time.Now()
	for _, pid := range pids {
		if _, ok := goneWithin(pid, d-time.Since(begin)); !ok {
			t.Errorf("pid %d (of program, child, setsid child %v) still runs %s %s", pid, pids, d, after)
		}
	}
	t.Logf("program, child and setsid child gone %s %s", time.Since(begin).Round(time.Millisecond), after)
	t.Cleanup(func() {
		for _, pid := range pids {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
	})
}

func startDescendants(t *testing.T) (p interface{ Stop() error }, d descendants, cut func()) {
	t.Helper()
	pr := start(t, 0, 0, 0, "descendants", filepath.Join(t.TempDir(), "pids"))
	if err := json.Unmarshal(next(t, pr).Data, &d); err != nil || d.PID == 0 || d.Daemon == 0 {
		t.Fatalf("no pids: %v", err)
	}
	for _, pid := range d.all() {
		if !running(pid) {
			t.Fatalf("%d of %v is not running before the test", pid, d.all())
		}
	}
	return pr, d, func() { process.CutLifeline(pr) }
}

// Hole 9 of issue 21: when the server is gone (its end of the lifeline
// closed), the guard kills the program and everything it started, also a
// child that left the process group (Linux: the guard is a subreaper).
func TestGuardKillsEverythingWhenTheServerIsGone(t *testing.T) {
	t.Parallel()
	_, d, cut := startDescendants(t)
	cut()
	allGoneWithin(t, d.all(), 5*time.Second, "after the lifeline was cut")
}

// Stop ends the program, its child and the child that left the group.
func TestStopLeavesNoDescendant(t *testing.T) {
	t.Parallel()
	p, d, _ := startDescendants(t)
	_ = p.Stop()
	allGoneWithin(t, d.all(), time.Second, "after Stop returned")
}

// A server killed with SIGKILL (this test binary run as a server) leaves
// nothing behind.
func TestGuardOutlivesNoKilledServer(t *testing.T) {
	t.Parallel()
	pidPath := filepath.Join(t.TempDir(), "pids")
	srv := exec.Command(process.SelfExe(), "as-server", helper, "descendants", pidPath)
	if err := srv.Start(); err != nil {
		t.Fatal(err)
	}
	var pids []int
	for deadline := time.Now().Add(10 * time.Second); len(pids) == 0; time.Sleep(10 * time.Millisecond) {
		if b, err := os.ReadFile(pidPath); err == nil {
			for _, f := range strings.Fields(string(b)) {
				n, _ := strconv.Atoi(f)
				pids = append(pids, n)
			}
		}
		if time.Now().After(deadline) {
			_ = srv.Process.Kill()
			t.Fatal("the helper did not write its pids within 10s")
		}
	}
	_ = srv.Process.Kill()
	_ = srv.Wait()
	allGoneWithin(t, pids, 5*time.Second, "after kill -9 of the server")
}

// A guard run by hand, in its caller's process group, makes a group of its
// own before anything else: killing "its group" never reaches its caller
// (this test).
func TestGuardLeadsAGroupOfItsOwn(t *testing.T) {
	t.Parallel()
	lifeR, lifeW, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	statusR, statusW, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	pidPath := filepath.Join(t.TempDir(), "pids")
	g := exec.Command(process.SelfExe(), process.GuardCommand, "100", helper, "descendants", pidPath)
	g.ExtraFiles = []*os.File{lifeR, statusW}
	if err := g.Start(); err != nil {
		t.Fatal(err)
	}
	_, _ = lifeR.Close(), statusW.Close()
	b := make([]byte, 100)
	n, _ := statusR.Read(b)
	if !strings.HasPrefix(string(b[:n]), "ok ") {
		t.Fatalf("guard status %q, want ok", b[:n])
	}
	var pids []int
	for deadline := time.Now().Add(10 * time.Second); len(pids) == 0 && time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		if b, err := os.ReadFile(pidPath); err == nil {
			for _, f := range strings.Fields(string(b)) {
				n, _ := strconv.Atoi(f)
				pids = append(pids, n)
			}
		}
	}
	if len(pids) != 3 {
		t.Fatalf("the helper wrote pids %v, want 3", pids)
	}
	if pgid, err := syscall.Getpgid(g.Process.Pid); err != nil || pgid != g.Process.Pid || pgid == syscall.Getpgrp() {
		t.Errorf("guard %d is in group %d (%v), want its own", g.Process.Pid, pgid, err)
	}
	_ = lifeW.Close() // as if this process died
	if err := g.Wait(); err == nil {
		t.Error("the guard exited with 0 after its lifeline was cut, want a failure")
	}
	allGoneWithin(t, pids, 5*time.Second, "after the hand-run guard's lifeline was cut")
}
