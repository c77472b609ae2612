package process

import (
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// GuardCommand is the hidden subcommand that runs a guard: a binary that
// uses a Spawner calls RunGuard when its first argument is GuardCommand
// (the yukta binary in bootstrap.Main, this package's tests in TestMain).
const GuardCommand = "process-guard"

// The file descriptors a guard gets beside its standard ones.
const (
	// guardLifelineFD is the read end of a pipe whose only writer is the
	// server: it reads end of file when the server is gone, however it
	// died (kill -9 included).
	guardLifelineFD = 3
	// guardStatusFD is the write end of a pipe the server reads once: the
	// guard writes "ok <pid>" when the program runs, or "error <why>".
	guardStatusFD = 4
)

// Bounds of the guard.
const (
	// guardStartTimeout caps how long Start waits for the guard to say
	// that the program runs.
	guardStartTimeout = 10 * time.Second
	// sweepFor caps how long a guard goes on killing what its program
	// left (a program that forks faster than it is killed) before it exits
	// anyway; the server then kills the group once more.
	sweepFor = 2 * time.Second
	// sweepPause is the pause between two rounds of the sweep.
	sweepPause = 5 * time.Millisecond
)

// RunGuard is the guard, args being what follows GuardCommand: the grace
// in milliseconds, the program's absolute path and its arguments. The
// server starts it as the leader of a new process group (Setpgid), with
// an empty environment, the program's pipes as standard input and output
// and the two pipes above. The guard starts the program in its group (no
// shell, an empty environment, the working directory "/") and then:
//
//   - when the program exits, it kills what the program left (Linux:
//     everything descended from it, also what left the group, since the
//     guard is a child subreaper) and exits with the program's status;
//   - on SIGTERM (the server stopping the program) it passes SIGTERM on,
//     gives the program the grace to exit, then kills everything;
//   - when the server is gone (its lifeline reads end of file) it kills
//     everything at once and exits.
//
// It writes nothing to standard output, which is the program's.
func RunGuard(args []string) int {
	status := os.NewFile(guardStatusFD, "status")
	lifeline := os.NewFile(guardLifelineFD, "lifeline")
	if status == nil || lifeline == nil {
		return 2
	}
	// The program must not hold either pipe.
	syscall.CloseOnExec(guardStatusFD)
	syscall.CloseOnExec(guardLifelineFD)
	fail := func(code int, err error) int {
		_, _ = fmt.Fprintf(status, "error %s\n", strings.ReplaceAll(err.Error(), "\n", " "))
		_ = status.Close()
		return code
	}
	if len(args) < 2 {
		return fail(2, errors.New("process guard: want the grace in milliseconds, the program and its arguments"))
	}
	ms, err := strconv.Atoi(args[0])
	if err != nil || ms < 0 {
		return fail(2, fmt.Errorf("process guard: grace %q is not a number of milliseconds", args[0]))
	}
	grace := time.Duration(ms) * time.Millisecond
	// The guard kills its group: it must be the group's leader, never a
	// member of its caller's (the server makes it one; a guard run by
	// hand makes itself one).
	if syscall.Getpgrp() != os.Getpid() {
		if err := syscall.Setpgid(0, 0); err != nil {
			return fail(1, fmt.Errorf("process guard: lead a process group of its own: %w", err))
		}
	}
	if err := becomeSubreaper(); err != nil {
		return fail(1, fmt.Errorf("process guard: %w", err))
	}
	terms := make(chan os.Signal, 1)
	signal.Notify(terms, syscall.SIGTERM)
	null, err := os.OpenFile(os.DevNull, os.O_WRONLY, 0)
	if err != nil {
		return fail(1, fmt.Errorf("process guard: %w", err))
	}
	path := args[1]
	prog, err := os.StartProcess(path, append([]string{path}, args[2:]...), &os.ProcAttr{
		Dir: "/",
		// Non-nil and empty: the guard's own is empty too, but say so.
		Env:   []string{},
		Files: []*os.File{os.Stdin, os.Stdout, null},
		Sys:   programAttr(),
	})
	_ = null.Close()
	if err != nil {
		return fail(127, err)
	}
	pid := prog.Pid
	_, _ = fmt.Fprintf(status, "ok %d\n", pid)
	_ = status.Close()

	// The reaper reaps every child (the program, and on Linux what is
	// reparented to the guard) and hands on the program's status.
	exited := make(chan syscall.WaitStatus, 1)
	go reap(pid, exited)
	gone := make(chan struct{})
	go func() {
		_, _ = io.Copy(io.Discard, lifeline)
		close(gone)
	}()

	select {
	case ws := <-exited:
		sweep(false)
		return exitLike(ws)
	case <-gone:
		sweep(true)
		return 137
	case <-terms:
	}
	signalAll(syscall.SIGTERM)
	t := time.NewTimer(grace)
	defer t.Stop()
	select {
	case ws := <-exited:
		sweep(false)
		return exitLike(ws)
	case <-t.C:
	case <-gone:
	}
	// The program outlived the grace: it is killed with the rest, and the
	// guard ends as it did.
	sweep(true)
	return exitLike(syscall.WaitStatus(syscall.SIGKILL))
}

// reap reaps children until none is left; the program's status goes to
// exited.
func reap(pid int, exited chan<- syscall.WaitStatus) {
	for {
		var ws syscall.WaitStatus
		got, err := syscall.Wait4(-1, &ws, 0, nil)
		if errors.Is(err, syscall.EINTR) {
			continue
		}
		if err != nil {
			return
		}
		if got == pid {
			exited <- ws
		}
	}
}

// exitLike ends the guard as the program ended: its exit status, or its
// signal (raised on the guard itself, so the server reads the same
// status).
func exitLike(ws syscall.WaitStatus) int {
	if ws.Signaled() {
		sig := ws.Signal()
		signal.Reset(sig)
		_ = syscall.Kill(os.Getpid(), sig)
		time.Sleep(time.Second) // the signal is on its way
		return 128 + int(sig)
	}
	return ws.ExitStatus()
}
