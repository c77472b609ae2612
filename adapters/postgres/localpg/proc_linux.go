//go:build linux

package localpg

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"syscall"
)

func sysProcAttr(cred *syscall.Credential) *syscall.SysProcAttr {
	return &syscall.SysProcAttr{
		Setpgid:    true,
		Pdeathsig:  syscall.SIGKILL,
		Credential: cred,
	}
}

// processRunning reports whether pid is a live, non-zombie process. kill(pid, 0)
// is not enough: it succeeds on zombies, which is exactly the state a postmaster is
// in right after its owner was killed and before init reaps it.
func processRunning(pid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	// The state follows the parenthesized command name, which may itself hold ')'.
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 || len(s) < i+3 {
		return true
	}
	state := s[i+2]
	return state != 'Z' && state != 'X'
}

// servesDir reports whether pid is a live process working in dataDir (a real
// path), which for the PID in postmaster.pid means that data dir's server is
// up. postgres itself only asks whether the PID exists, so a zombie or a PID
// reused by an unrelated process would keep it from starting forever. A cwd
// we may not read belongs to another OS user, so not to our server.
func servesDir(pid int, dataDir string) bool {
	if !processRunning(pid) {
		return false
	}
	cwd, err := os.Readlink(fmt.Sprintf("/proc/%d/cwd", pid))
	return err == nil && cwd == dataDir
}

// dirProcesses lists the live postgres processes working in dataDir (a real
// path): every process of a server on it, postmaster and backends alike.
func dirProcesses(dataDir string) []int {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	var pids []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		comm, err := os.ReadFile(fmt.Sprintf("/proc/%d/comm", pid))
		if err != nil || strings.TrimSpace(string(comm)) != "postgres" {
			continue
		}
		if servesDir(pid, dataDir) {
			pids = append(pids, pid)
		}
	}
	return pids
}
