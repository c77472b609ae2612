package executionapp

import (
	"context"
	"sync"
	"testing"
	"time"
)

// memoryTail is an outbox in memory: the feed's port, nothing more.
type memoryTail struct {
	mu     sync.Mutex
	events []StoredEvent
	reads  int
}

func (m *memoryTail) EventHead(context.Context) (int64, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if len(m.events) == 0 {
		return 0, nil
	}
	return m.events[len(m.events)-1].Seq, nil
}

func (m *memoryTail) Events(_ context.Context, q EventQuery) ([]StoredEvent, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.reads++
	var out []StoredEvent
	for _, e := range m.events {
		if e.Seq > q.AfterSeq && len(out) < q.Limit {
			out = append(out, e)
		}
	}
	return out, nil
}

func (m *memoryTail) add(typ, execID, to string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.events = append(m.events, StoredEvent{Seq: int64(len(m.events) + 1),
		Event: Event{Type: typ, ExecutionID: execID, Data: map[string]any{"to": to}}})
}

func (m *memoryTail) readCount() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.reads
}

func runFeed(t *testing.T, tail EventTail, every time.Duration) *Feed {
	t.Helper()
	f := NewFeed(tail, every, func(err error) { t.Errorf("feed: %v", err) })
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); f.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
	return f
}

func TestFeedReportsOnlyEndsOfWatchedExecutionsCommittedAfterWatch(t *testing.T) {
	tail := &memoryTail{}
	tail.add(EventExecutionStatusChanged, "old", "SUCCESS") // before the watch: not reported
	f := runFeed(t, tail, time.Hour)                        // only nudges make it read
	w, err := f.watch(t.Context(), []string{"a", "b", "old"})
	if err != nil {
		t.Fatal(err)
	}
	defer f.unwatch(w)
	tail.add(EventExecutionStatusChanged, "a", "RUNNING")     // not an end
	tail.add(EventNodeStatusChanged, "a", "SUCCESS")          // a node's end, not the run's
	tail.add(EventExecutionStatusChanged, "other", "FAILURE") // not watched
	tail.add(EventExecutionStatusChanged, "b", "STOPPED")
	f.Nudge()
	select {
	case id := <-w.ended:
		if id != "b" {
			t.Fatalf("reported %q, want b", id)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the end of b was not reported after a nudge")
	}
	tail.add(EventExecutionStatusChanged, "a", "FAILURE")
	f.Nudge()
	select {
	case id := <-w.ended:
		if id != "a" {
			t.Fatalf("reported %q, want a", id)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the end of a was not reported")
	}
	select {
	case id := <-w.ended:
		t.Fatalf("reported %q as well; old ended before the watch", id)
	default:
	}
}

func TestFeedReadsNothingWithoutWaiters(t *testing.T) {
	tail := &memoryTail{}
	f := runFeed(t, tail, time.Millisecond)
	for range 20 {
		tail.add(EventExecutionStatusChanged, "x", "SUCCESS")
		f.Nudge()
		time.Sleep(time.Millisecond)
	}
	if n := tail.readCount(); n != 0 {
		t.Fatalf("the feed read the outbox %d times with nobody waiting", n)
	}
	// A waiter arriving later starts at the head: the 20 old ends are not
	// reported to it.
	w, err := f.watch(t.Context(), []string{"x"})
	if err != nil {
		t.Fatal(err)
	}
	defer f.unwatch(w)
	time.Sleep(20 * time.Millisecond)
	if len(w.ended) != 0 {
		t.Fatalf("a new waiter got %d old ends", len(w.ended))
	}
	if tail.readCount() == 0 {
		t.Fatal("the feed did not read on its interval while someone waited")
	}
}

func TestFeedReadsPastAFullBatch(t *testing.T) {
	tail := &memoryTail{}
	f := runFeed(t, tail, time.Hour)
	w, err := f.watch(t.Context(), []string{"last"})
	if err != nil {
		t.Fatal(err)
	}
	defer f.unwatch(w)
	for range MaxEventBatch + 7 {
		tail.add(EventNodeStatusChanged, "busy", "RUNNING")
	}
	tail.add(EventExecutionStatusChanged, "last", "SUCCESS")
	f.Nudge() // one nudge: the feed must read every batch, not one
	select {
	case <-w.ended:
	case <-time.After(5 * time.Second):
		t.Fatal("an end behind a full batch was not reported after one nudge")
	}
}
