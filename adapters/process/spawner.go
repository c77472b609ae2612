// Package process runs the programs of process supervisors
// (processengine.Spawner) with os/exec: the executable itself, never
// a shell; an empty environment; the working directory "/"; standard error
// to the null device. Each program runs under a guard (RunGuard: the same
// binary re-executed with GuardCommand), the leader of a process group of
// its own that the program joins. The guard kills what the program left
// when it exits or is stopped, and everything at once when the server is
// gone, kill -9 included: it holds the read end of a pipe only the server
// writes to. On Linux the guard is also a child subreaper, so a process
// that left the group (setsid, setpgid, a double fork) is still found and
// killed; elsewhere such a process is beyond reach (docs/security.md).
// Both pipes hold bounded memory: a queue of lines for standard input, one
// line buffer of the configured size for standard output.
package process

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/yukta/yukta/application/engines/processengine"
)

// Defaults of the Spawner.
const (
	// DefaultGrace is how long a program has to end after SIGTERM before
	// its group is sent SIGKILL.
	DefaultGrace = 2 * time.Second
	// drainDelay is how long the output of a program that exited is still
	// read: a process that left the group may hold the pipe open forever.
	drainDelay = time.Second
)

// Spawner starts programs under guards. It is safe for concurrent use.
type Spawner struct {
	guard string
	grace time.Duration
}

var _ processengine.Spawner = (*Spawner)(nil)

// NewSpawner returns a spawner whose guards are run from the executable
// guard (SelfExe in a binary that calls RunGuard for GuardCommand) and
// whose programs get grace to end after SIGTERM (0: DefaultGrace).
func NewSpawner(guard string, grace time.Duration) *Spawner {
	if grace <= 0 {
		grace = DefaultGrace
	}
	return &Spawner{guard: guard, grace: grace}
}

// Start starts spec's program under its guard, returns once the guard
// says the program runs (or why it does not), and starts the three
// goroutines that serve it: a writer that feeds its standard input from
// the queue, a reader that cuts its standard output into lines, and a
// waiter that notices the guard's exit (the guard exits when the program
// has and what it left is killed). The caller owns the program and must
// call Stop, which joins them.
func (s *Spawner) Start(spec processengine.Spec) (processengine.Process, error) {
	if !filepath.IsAbs(spec.Path) {
		return nil, fmt.Errorf("process: %q is not an absolute path", spec.Path)
	}
	if spec.MaxLineBytes <= 0 {
		spec.MaxLineBytes = processengine.DefaultMaxLine
	}
	if spec.QueueLines <= 0 {
		spec.QueueLines = processengine.DefaultQueue
	}
	if s.guard == "" {
		return nil, errors.New("process: no guard executable; the spawner needs the binary's own (process.SelfExe)")
	}
	var pipes []*os.File // every end, closed on a failed start
	pipe := func() (r, w *os.File, err error) {
		if r, w, err = os.Pipe(); err == nil {
			pipes = append(pipes, r, w)
		}
		return r, w, err
	}
	closeAll := func() {
		for _, f := range pipes {
			_ = f.Close()
		}
	}
	inR, inW, err := pipe()
	if err != nil {
		return nil, fmt.Errorf("process: stdin pipe: %w", err)
	}
	outR, outW, err := pipe()
	if err != nil {
		closeAll()
		return nil, fmt.Errorf("process: stdout pipe: %w", err)
	}
	// The lifeline's write end stays with the server alone (close on
	// exec): the guard reads end of file when the server is gone.
	lifeR, lifeW, err := pipe()
	if err != nil {
		closeAll()
		return nil, fmt.Errorf("process: lifeline pipe: %w", err)
	}
	statusR, statusW, err := pipe()
	if err != nil {
		closeAll()
		return nil, fmt.Errorf("process: status pipe: %w", err)
	}
	cmd := &exec.Cmd{
		Path: s.guard,
		Args: append([]string{s.guard, GuardCommand, strconv.FormatInt(s.grace.Milliseconds(), 10), spec.Path}, spec.Args...),
		// Non-nil and empty: a nil Env would hand over the server's
		// environment, secrets included. The guard passes on nothing.
		Env:    []string{},
		Dir:    "/",
		Stdin:  inR,
		Stdout: outW,
		Stderr: nil, // the null device
		// guardLifelineFD and guardStatusFD.
		ExtraFiles:  []*os.File{lifeR, statusW},
		SysProcAttr: sysProcAttr(),
	}
	err = cmd.Start()
	// The guard has its own copies of its ends; ours would keep the pipes
	// open after it exits.
	_, _, _, _ = inR.Close(), outW.Close(), lifeR.Close(), statusW.Close()
	if err != nil {
		closeAll()
		return nil, fmt.Errorf("process: start the guard of %s: %w", spec.Path, err)
	}
	if err := started(statusR, spec.Path); err != nil {
		// The guard has exited or will at once: end it and reap it.
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		_ = cmd.Wait()
		closeAll()
		return nil, err
	}
	_ = statusR.Close()
	p := &proc{
		cmd: cmd, pid: cmd.Process.Pid, grace: s.grace + sweepFor + time.Second, max: spec.MaxLineBytes,
		stdin: inW, stdout: outR, lifeline: lifeW,
		queue:    make(chan []byte, spec.QueueLines),
		lines:    make(chan processengine.OutputLine),
		gone:     make(chan struct{}),
		stopping: make(chan struct{}),
		exited:   make(chan struct{}),
		read:     make(chan struct{}),
	}
	p.wg.Add(3)
	go p.write()
	go p.readLines()
	go p.wait()
	return p, nil
}

// started reads the guard's one status line: nil once the program runs,
// else why it does not.
func started(status *os.File, path string) error {
	_ = status.SetReadDeadline(time.Now().Add(guardStartTimeout))
	b := make([]byte, 4096)
	n, err := io.ReadAtLeast(status, b, 1)
	line := strings.TrimSpace(string(b[:n]))
	switch {
	case strings.HasPrefix(line, "ok "):
		return nil
	case strings.HasPrefix(line, "error "):
		return fmt.Errorf("process: start %s: %s", path, strings.TrimPrefix(line, "error "))
	case err != nil:
		return fmt.Errorf("process: the guard of %s ended before it started the program (%v)", path, err)
	default:
		return fmt.Errorf("process: the guard of %s said %q", path, clip(line))
	}
}

// clip shortens a guard's unexpected answer for an error.
func clip(s string) string {
	if len(s) > 120 {
		return s[:120]
	}
	return s
}

// proc is one running program, seen through its guard.
type proc struct {
	cmd *exec.Cmd
	pid int // the guard's, also the process group's id
	// grace is how long Stop waits after SIGTERM: the guard's grace for
	// the program, its sweep, and a margin.
	grace time.Duration
	max   int

	stdin    *os.File // our end: the writer's
	stdout   *os.File // our end: the reader's
	lifeline *os.File // the only write end: closed once the guard is reaped

	queue chan []byte
	lines chan processengine.OutputLine

	goneOnce sync.Once
	gone     chan struct{} // closed when Send must refuse: exit, Stop, a failed write
	stopping chan struct{} // closed by Stop
	exited   chan struct{} // closed once the program is reaped and waitErr set
	read     chan struct{} // closed when the reader returned

	// mu orders signals to the group against reaping the program: while
	// reaped is false its pid, and so the group's id, cannot be reused.
	mu      sync.Mutex
	reaped  bool
	waitErr error

	stopOnce sync.Once
	wg       sync.WaitGroup
}

func (p *proc) markGone() { p.goneOnce.Do(func() { close(p.gone) }) }

// Send queues line for standard input, waiting while the queue is full.
func (p *proc) Send(ctx context.Context, line []byte) error {
	select {
	case <-p.gone:
		return processengine.ErrGone
	default:
	}
	b := make([]byte, len(line)+1)
	copy(b, line)
	b[len(line)] = '\n'
	select {
	case p.queue <- b:
		return nil
	case <-p.gone:
		return processengine.ErrGone
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Lines delivers the output lines.
func (p *proc) Lines() <-chan processengine.OutputLine { return p.lines }

// Stop ends the program and its group and joins the goroutines: SIGTERM
// to the group (the guard passes it on to what left the group, gives the
// program its grace, then kills everything), SIGKILL to the group if the
// guard has not exited after the grace, its sweep and a margin (and, once
// it has exited, to whatever is left in its group).
func (p *proc) Stop() error {
	p.stopOnce.Do(func() {
		close(p.stopping)
		p.markGone()
		_ = p.stdin.Close() // a writer stuck on a full pipe returns
		if !p.signal(syscall.SIGTERM) {
			return // already exited and reaped
		}
		t := time.NewTimer(p.grace)
		defer t.Stop()
		select {
		case <-p.exited:
		case <-t.C:
			p.signal(syscall.SIGKILL)
		}
	})
	<-p.exited
	// Output after Stop is not wanted: cut the reader off even if a
	// process outside the group holds the pipe.
	_ = p.stdout.SetReadDeadline(time.Now())
	p.wg.Wait()
	return p.waitErr
}

// signal sends sig to the guard's process group (the guard, the program
// and what stayed in the group) unless the guard is already reaped; it
// reports whether it sent it. The guard itself is signalled too, so Stop
// never waits for it forever.
func (p *proc) signal(sig syscall.Signal) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.reaped {
		return false
	}
	_ = syscall.Kill(-p.pid, sig)
	_ = p.cmd.Process.Signal(sig)
	return true
}

// wait notices the program's exit, kills what it left in its group, reaps
// it, and gives the reader drainDelay to read the rest of its output.
func (p *proc) wait() {
	defer p.wg.Done()
	// On Linux awaitExit returns once the program has exited without
	// reaping it, so the group is killed while its id cannot be reused.
	// Elsewhere the group is killed after the reap (a small window in
	// which its id could be reused).
	killed := awaitExit(p.pid) && p.signal(syscall.SIGKILL)
	err := p.cmd.Wait()
	p.mu.Lock()
	p.reaped, p.waitErr = true, err
	p.mu.Unlock()
	if !killed {
		_ = syscall.Kill(-p.pid, syscall.SIGKILL)
	}
	_ = p.lifeline.Close()
	p.markGone()
	close(p.exited)
	_ = p.stdin.Close() // a writer stuck on a full pipe returns
	t := time.NewTimer(drainDelay)
	defer t.Stop()
	select {
	case <-p.read:
	case <-p.stopping:
	case <-t.C:
		_ = p.stdout.SetReadDeadline(time.Now())
	}
}

// write feeds the queue to standard input until the program is gone.
func (p *proc) write() {
	defer p.wg.Done()
	for {
		select {
		case b := <-p.queue:
			if _, err := p.stdin.Write(b); err != nil {
				p.markGone() // the program closed its input, or exited
				return
			}
		case <-p.gone:
			return
		}
	}
}

// readLines cuts standard output into lines of at most max bytes. A longer
// line is read through and thrown away in pieces of the buffer's size, so
// memory stays at one buffer whatever the program writes. At the end of
// the output it waits up to drainDelay for the exit before closing Lines:
// the guard's end of the pipe closes a moment before its exit can be seen,
// and Send must refuse once Lines is closed after an exit.
func (p *proc) readLines() {
	defer p.wg.Done()
	defer close(p.read)
	defer close(p.lines)
	defer p.awaitExitAfterEOF()
	defer p.stdout.Close()
	r := bufio.NewReaderSize(p.stdout, p.max+1) // the line and its newline
	for {
		b, err := r.ReadSlice('\n')
		if errors.Is(err, bufio.ErrBufferFull) {
			for errors.Is(err, bufio.ErrBufferFull) {
				_, err = r.ReadSlice('\n')
			}
			if !p.deliver(processengine.OutputLine{TooLong: true}) {
				return
			}
			if err != nil {
				return
			}
			continue
		}
		if len(b) > 0 && b[len(b)-1] == '\n' {
			b = b[:len(b)-1]
		}
		if (err == nil || len(b) > 0) && !p.deliver(processengine.OutputLine{Data: append([]byte(nil), b...)}) {
			return
		}
		if err != nil { // io.EOF, or the deadline of Stop or the drain
			return
		}
	}
}

// awaitExitAfterEOF waits, after the output ended, for the program's exit
// (or Stop), at most drainDelay: a program that closed its output and
// runs on is stopped by the engine once Lines is closed.
func (p *proc) awaitExitAfterEOF() {
	t := time.NewTimer(drainDelay)
	defer t.Stop()
	select {
	case <-p.exited:
	case <-p.stopping:
	case <-t.C:
	}
}

// deliver hands one line on, unless the program is being stopped.
func (p *proc) deliver(l processengine.OutputLine) bool {
	select {
	case p.lines <- l:
		return true
	case <-p.stopping:
		return false
	}
}
