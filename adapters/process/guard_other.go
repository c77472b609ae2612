//go:build !linux

package process

import (
	"os"
	"syscall"
)

// SelfExe is the executable of the running binary, for the guard.
func SelfExe() string {
	exe, err := os.Executable()
	if err != nil {
		return os.Args[0]
	}
	return exe
}

// becomeSubreaper has no equivalent here: what leaves the group is out of
// reach.
func becomeSubreaper() error { return nil }

// programAttr keeps the program in the guard's group.
func programAttr() *syscall.SysProcAttr { return &syscall.SysProcAttr{} }

// signalAll sends sig to the guard's group (the guard handles SIGTERM).
func signalAll(sig syscall.Signal) { _ = syscall.Kill(-syscall.Getpgrp(), sig) }

// sweep kills the guard's group, the guard with it, when all is set; a
// program that exited by itself has its group killed by the server once
// the guard has exited.
func sweep(all bool) {
	if all {
		_ = syscall.Kill(-syscall.Getpgrp(), syscall.SIGKILL)
	}
}
