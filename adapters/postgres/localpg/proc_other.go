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
