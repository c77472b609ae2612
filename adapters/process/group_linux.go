//go:build linux

package process

import (
	"errors"
	"syscall"

	"golang.org/x/sys/unix"
)

// sysProcAttr makes the guard the leader of a process group of its own
// (its pid is the group's id); the program joins that group. No
// Pdeathsig: it follows the death of the server's thread that started the
// guard, not of the server, and the lifeline covers the server's death.
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true}
}

// awaitExit waits until pid has exited without reaping it (WNOWAIT): until
// it is reaped, neither its pid nor its process group's id can be reused,
// so the group can be killed safely. It reports whether it could wait.
func awaitExit(pid int) bool {
	var info unix.Siginfo
	for {
		err := unix.Waitid(unix.P_PID, pid, &info, unix.WEXITED|unix.WNOWAIT, nil)
		if !errors.Is(err, unix.EINTR) {
			return err == nil
		}
	}
}
