package processengine

import (
	"context"
	"errors"
)

// Spawner starts the program of a process supervisor
// (adapters/process). The program runs with no shell, an empty environment
// and in a process group of its own; its standard error is discarded;
// nothing it starts outlives the server (on Linux; elsewhere its group).
type Spawner interface {
	// Start starts spec's program. The program lives until it exits or
	// Stop is called on the returned Process, whatever happens to any
	// context: its owner must call Stop.
	Start(spec Spec) (Process, error)
}

// Spec is what to run and the bounds of its pipes.
type Spec struct {
	// Path is the executable, an absolute path; it is run as it is (no
	// shell, no PATH lookup).
	Path string
	// Args are its arguments, without the program name.
	Args []string
	// MaxLineBytes caps one output line, its newline not counted. A longer
	// line is read and thrown away up to its newline, never held whole, and
	// delivered as a OutputLine with TooLong set.
	MaxLineBytes int
	// QueueLines bounds the lines waiting to be written to the program's
	// standard input; Send waits while the queue is full.
	QueueLines int
}

// OutputLine is one line the program wrote to its standard output,
// without its newline.
type OutputLine struct {
	Data []byte
	// TooLong: the line ran past MaxLineBytes and was thrown away; Data
	// is empty.
	TooLong bool
}

// Process is one running program. Send is called by one goroutine and
// Lines read by another; Stop may be called from any goroutine, any number
// of times.
type Process interface {
	// Send queues one line (without a newline) for the program's standard
	// input. It waits while the queue is full (back-pressure: a program
	// that does not read holds the sender, and memory stays bounded),
	// until ctx ends (ctx's error) or the program is gone (ErrGone).
	Send(ctx context.Context, line []byte) error
	// Lines delivers the program's output lines, in order. It is closed
	// once the program has exited and its output is read, or on Stop.
	Lines() <-chan OutputLine
	// Stop ends the program and everything it started (SIGTERM, then
	// SIGKILL after a grace period), waits for it and for every goroutine
	// that served it, and returns how the program ended (nil for exit
	// status 0).
	Stop() error
}

// ErrGone is returned by Send once the program has exited or been
// stopped: the line was not queued.
var ErrGone = errors.New("processengine: the supervisor's program is not running")
