//go:build linux

package localpg

import (
	"fmt"
	"os"
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
