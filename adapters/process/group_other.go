//go:build !linux

package process

import "syscall"

// sysProcAttr makes the guard the leader of a process group of its own
// (its pid is the group's id); the program joins that group.
func sysProcAttr() *syscall.SysProcAttr { return &syscall.SysProcAttr{Setpgid: true} }

// awaitExit cannot wait without reaping here; the group is killed after
// the program is reaped.
func awaitExit(int) bool { return false }
