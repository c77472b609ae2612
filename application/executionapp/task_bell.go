package executionapp

import "sync"

// taskBell wakes the long polls of remote workers. A poll registers before
// it claims, so a commit that queues a task between its claim and its wait
// still wakes it; a commit rings only the queues it queued work on.
type taskBell struct {
	mu      sync.Mutex
	waiters map[string]map[*taskWaiter]bool
}

type taskWaiter struct {
	queues []string
	c      chan struct{}
}

func newTaskBell() *taskBell { return &taskBell{waiters: map[string]map[*taskWaiter]bool{}} }

// listen registers a waiter for queues; its channel receives once after a
// ring of any of them. stop unregisters it.
func (b *taskBell) listen(queues []string) (w *taskWaiter, stop func()) {
	w = &taskWaiter{queues: queues, c: make(chan struct{}, 1)}
	b.mu.Lock()
	for _, q := range queues {
		if b.waiters[q] == nil {
			b.waiters[q] = map[*taskWaiter]bool{}
		}
		b.waiters[q][w] = true
	}
	b.mu.Unlock()
	return w, func() {
		b.mu.Lock()
		for _, q := range w.queues {
			delete(b.waiters[q], w)
			if len(b.waiters[q]) == 0 {
				delete(b.waiters, q)
			}
		}
		b.mu.Unlock()
	}
}

// ring wakes the waiters of queues.
func (b *taskBell) ring(queues []string) {
	if len(queues) == 0 {
		return
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, q := range queues {
		for w := range b.waiters[q] {
			w.signal()
		}
	}
}

// ringAll wakes every waiter.
func (b *taskBell) ringAll() {
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, ws := range b.waiters {
		for w := range ws {
			w.signal()
		}
	}
}

func (w *taskWaiter) signal() {
	select {
	case w.c <- struct{}{}:
	default:
	}
}
