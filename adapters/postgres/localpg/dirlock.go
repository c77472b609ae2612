package localpg

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"syscall"
	"time"
)

// lockFileName is the file in the cluster folder that a Cluster holds an
// exclusive flock on for its whole life.
const lockFileName = "yukta.lock"

// DirInUseError is returned by Start when another process holds the cluster
// folder. Without this lock two servers starting on one empty folder would
// both run initdb and fail on each other's files with messages that explain
// nothing.
type DirInUseError struct {
	Dir string
	PID int // the holder as it recorded itself; 0 if unknown
}

func (e *DirInUseError) Error() string {
	holder := "another yukta"
	if e.PID > 0 {
		holder = fmt.Sprintf("another yukta (pid %d)", e.PID)
	}
	return fmt.Sprintf("localpg: the data directory %s is being initialized or used by %s; use another --data-dir or stop that one",
		e.Dir, holder)
}

// dirLock is a held flock. The kernel drops it when its holder dies, so a
// crash never leaves a lock behind that someone would have to remove by hand;
// the file itself stays, because removing a lock file lets a third process
// lock a new inode while a second still holds the old one.
type dirLock struct{ f *os.File }

// lockDir takes the cluster folder's lock without waiting and records our
// PID in it for the message a loser gets. Go opens files close-on-exec, so
// postgres does not inherit the lock and cannot keep it past our death.
func lockDir(dir string, owner *osUser) (*dirLock, error) {
	path := filepath.Join(dir, lockFileName)
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("localpg: opening the data directory lock: %w", err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		_ = f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return nil, &DirInUseError{Dir: dir, PID: holderPID(path, holderPIDWait)}
		}
		return nil, fmt.Errorf("localpg: locking %s: %w", path, err)
	}
	// The owner may run a later yukta as itself, and must then open the file.
	if err := owner.chown(path); err != nil {
		_ = f.Close()
		return nil, err
	}
	if err := f.Truncate(0); err == nil {
		_, _ = f.WriteAt([]byte(strconv.Itoa(os.Getpid())+"\n"), 0)
	}
	return &dirLock{f: f}, nil
}

// holderPIDWait bounds how long a loser waits for the holder's PID: the
// holder writes it just after taking the lock, so a loser that lost by a
// hair finds the file still empty.
const holderPIDWait = 500 * time.Millisecond

// holderPID reads the PID the lock's holder wrote, waiting up to wait for
// it to appear; 0 when it does not.
func holderPID(path string, wait time.Duration) int {
	deadline := time.Now().Add(wait)
	for {
		b, _ := os.ReadFile(path)
		if pid, err := strconv.Atoi(string(bytes.TrimSpace(b))); err == nil && pid > 0 {
			return pid
		}
		if time.Now().After(deadline) {
			return 0
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// unlock releases the lock; nil-safe so cleanup paths need no checks.
func (l *dirLock) unlock() {
	if l != nil {
		_ = l.f.Close() // closing the last descriptor drops the flock
	}
}
