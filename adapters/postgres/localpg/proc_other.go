//go:build !linux

package localpg

import (
	"errors"
	"syscall"
)

// sysProcAttr lacks Pdeathsig off Linux: there the server can outlive a killed
// owner, and the next Start reports the data dir as in use until it is stopped.
func sysProcAttr(cred *syscall.Credential) *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Credential: cred}
}

func processRunning(pid int) bool {
	err := syscall.Kill(pid, 0)
	return err == nil || errors.Is(err, syscall.EPERM)
}

// servesDir cannot see a process's working directory here, so any live PID
// counts as the server, as postgres itself assumes.
func servesDir(pid int, _ string) bool { return processRunning(pid) }

// dirProcesses cannot list a server's processes here; postgres's own check of
// its shared memory is the only guard.
func dirProcesses(string) []int { return nil }
