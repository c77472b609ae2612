//go:build linux

package process

import (
	"errors"
	"syscall"

	"golang.org/x/sys/unix"
)

// sysProcAttr puts the program in a process group of its own (its pid is
// the group's id) and kills it if the server's thread that started it dies
// (a server killed with SIGKILL does not leave its programs behind).
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
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
