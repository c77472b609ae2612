//go:build linux

package process

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// SelfExe is the executable of the running binary, for the guard:
// /proc/self/exe, which stays right if the file is replaced or removed
// while the server runs.
func SelfExe() string { return "/proc/self/exe" }

// becomeSubreaper makes the guard the child subreaper of what its program
// starts: a process whose parent dies is reparented to the guard, not to
// PID 1, so a double fork or a setsid does not take it out of reach.
func becomeSubreaper() error {
	if err := unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0); err != nil {
		return fmt.Errorf("PR_SET_CHILD_SUBREAPER: %w", err)
	}
	return nil
}

// programAttr keeps the program in the guard's group and kills it if the
// guard dies (SIGKILL cannot be caught, so a guard killed that way leaves
// the rest to the server's kill of the group).
func programAttr() *syscall.SysProcAttr { return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL} }

// descendants lists the live processes the guard answers for: its
// group's members and its children (what the program started and was
// reparented to the guard), the guard itself not included. Zombies are
// dead already.
func descendants() []int {
	self, group := os.Getpid(), syscall.Getpgrp()
	entries, _ := os.ReadDir("/proc")
	var out []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == self {
			continue
		}
		b, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue // gone meanwhile
		}
		s := string(b)
		i := strings.LastIndexByte(s, ')')
		if i < 0 {
			continue
		}
		// After the name: state, ppid, pgrp.
		f := strings.Fields(s[i+1:])
		if len(f) < 3 || f[0] == "Z" || f[0] == "X" {
			continue
		}
		ppid, _ := strconv.Atoi(f[1])
		pgrp, _ := strconv.Atoi(f[2])
		if ppid == self || pgrp == group {
			out = append(out, pid)
		}
	}
	return out
}

// signalAll sends sig to every descendant.
func signalAll(sig syscall.Signal) {
	for _, pid := range descendants() {
		_ = syscall.Kill(pid, sig)
	}
}

// sweep kills every descendant, round after round (a killed process's
// children are reparented to the guard and found in the next round),
// until two rounds a pause apart find none, or sweepFor has passed. One
// empty round is not enough: a round may read a child's stat while its
// parent still lives (not yet the guard's) and the parent's once it is
// dead, and so miss the child it was about to inherit.
func sweep(bool) {
	deadline := time.Now().Add(sweepFor)
	for quiet := 0; quiet < 2 && !time.Now().After(deadline); time.Sleep(sweepPause) {
		pids := descendants()
		if len(pids) == 0 {
			quiet++
			continue
		}
		quiet = 0
		for _, pid := range pids {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
	}
}
