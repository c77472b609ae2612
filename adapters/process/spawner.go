// Package process runs the programs of process supervisors
// (supervisorapp.ProcessSpawner) with os/exec: the executable itself, never
// a shell; an empty environment; the working directory "/"; a process group
// of its own, killed whole when the program stops or exits, so nothing it
// started outlives it (a program that leaves its group with setsid or
// setpgid is beyond reach); standard error to the null device. Both pipes
// hold bounded memory: a queue of lines for standard input, one line
// buffer of the configured size for standard output.
package process

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"syscall"
	"time"

	"github.com/yukta/yukta/application/supervisorapp"
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

// Spawner starts programs. It is safe for concurrent use.
type Spawner struct {
	grace time.Duration
}

var _ supervisorapp.ProcessSpawner = (*Spawner)(nil)

// NewSpawner returns a spawner whose programs get grace to end after
// SIGTERM (0: DefaultGrace).
func NewSpawner(grace time.Duration) *Spawner {
	if grace <= 0 {
		grace = DefaultGrace
	}
	return &Spawner{grace: grace}
}

// Start starts spec's program and the three goroutines that serve it: a
// writer that feeds its standard input from the queue, a reader that cuts
// its standard output into lines, and a waiter that notices its exit. The
// caller owns the program and must call Stop, which joins them.
func (s *Spawner) Start(spec supervisorapp.ProcessSpec) (supervisorapp.Process, error) {
	if !filepath.IsAbs(spec.Path) {
		return nil, fmt.Errorf("process: %q is not an absolute path", spec.Path)
	}
	if spec.MaxLineBytes <= 0 {
		spec.MaxLineBytes = supervisorapp.DefaultProcessMaxLine
	}
	if spec.QueueLines <= 0 {
		spec.QueueLines = supervisorapp.DefaultProcessQueue
	}
	inR, inW, err := os.Pipe()
	if err != nil {
		return nil, fmt.Errorf("process: stdin pipe: %w", err)
	}
	outR, outW, err := os.Pipe()
	if err != nil {
		_, _ = inR.Close(), inW.Close()
		return nil, fmt.Errorf("process: stdout pipe: %w", err)
	}
	cmd := &exec.Cmd{
		Path: spec.Path,
		Args: append([]string{spec.Path}, spec.Args...),
		// Non-nil and empty: a nil Env would hand over the server's
		// environment, secrets included.
		Env:         []string{},
		Dir:         "/",
		Stdin:       inR,
		Stdout:      outW,
		Stderr:      nil, // the null device
		SysProcAttr: sysProcAttr(),
	}
	err = cmd.Start()
	// The child has its own copies of its ends; ours would keep the pipes
	// open after it exits.
	_, _ = inR.Close(), outW.Close()
	if err != nil {
		_, _ = inW.Close(), outR.Close()
		return nil, fmt.Errorf("process: start %s: %w", spec.Path, err)
	}
	p := &proc{
		cmd: cmd, pid: cmd.Process.Pid, grace: s.grace, max: spec.MaxLineBytes,
		stdin: inW, stdout: outR,
		queue:    make(chan []byte, spec.QueueLines),
		lines:    make(chan supervisorapp.ProcessLine),
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

// proc is one running program.
type proc struct {
	cmd   *exec.Cmd
	pid   int // also the process group's id
	grace time.Duration
	max   int

	stdin  *os.File // our end: the writer's
	stdout *os.File // our end: the reader's

	queue chan []byte
	lines chan supervisorapp.ProcessLine

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
		return supervisorapp.ErrProcessGone
	default:
	}
	b := make([]byte, len(line)+1)
	copy(b, line)
	b[len(line)] = '\n'
	select {
	case p.queue <- b:
		return nil
	case <-p.gone:
		return supervisorapp.ErrProcessGone
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Lines delivers the output lines.
func (p *proc) Lines() <-chan supervisorapp.ProcessLine { return p.lines }

// Stop ends the program and its group and joins the goroutines: SIGTERM
// to the group, SIGKILL after the grace period (and, once the program has
// exited, to whatever is left in its group).
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

// signal sends sig to the program's process group unless the program is
// already reaped; it reports whether it sent it. The program itself is
// signalled too: one that moved itself into another group is still
// stopped, so Stop cannot wait for it forever.
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
// memory stays at one buffer whatever the program writes.
func (p *proc) readLines() {
	defer p.wg.Done()
	defer close(p.read)
	defer close(p.lines)
	defer p.stdout.Close()
	r := bufio.NewReaderSize(p.stdout, p.max+1) // the line and its newline
	for {
		b, err := r.ReadSlice('\n')
		if errors.Is(err, bufio.ErrBufferFull) {
			for errors.Is(err, bufio.ErrBufferFull) {
				_, err = r.ReadSlice('\n')
			}
			if !p.deliver(supervisorapp.ProcessLine{TooLong: true}) {
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
		if (err == nil || len(b) > 0) && !p.deliver(supervisorapp.ProcessLine{Data: append([]byte(nil), b...)}) {
			return
		}
		if err != nil { // io.EOF, or the deadline of Stop or the drain
			return
		}
	}
}

// deliver hands one line on, unless the program is being stopped.
func (p *proc) deliver(l supervisorapp.ProcessLine) bool {
	select {
	case p.lines <- l:
		return true
	case <-p.stopping:
		return false
	}
}
