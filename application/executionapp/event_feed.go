package executionapp

import (
	"context"
	"sync"
	"time"

	"github.com/yukta/yukta/domain/execution"
)

// EventTail reads the outbox in commit order.
type EventTail interface {
	// EventHead is the position of the newest event every reader can see
	// now (0 when there is none).
	EventHead(ctx context.Context) (int64, error)
	Events(ctx context.Context, q EventQuery) ([]StoredEvent, error)
}

// Feed follows the outbox once for the whole instance and tells waiters when
// the executions they wait on have ended. A hundred callers waiting on runs
// cost one outbox read per change, not a hundred status reads per tick: the
// feed reads only while someone waits, at once when this instance commits
// events (Nudge), and every FeedInterval for commits of other instances.
type Feed struct {
	tail    EventTail
	every   time.Duration
	onError func(error)
	nudge   chan struct{}

	mu   sync.Mutex
	pos  int64 // valid while waiters exist
	gen  int64 // bumped when pos is reset, so a read begun before is dropped
	subs map[*endWatch]struct{}
}

// FeedInterval is how often the feed reads while waiters exist, for events
// committed by other instances (this instance's commits nudge it at once).
const FeedInterval = 100 * time.Millisecond

// NewFeed returns a feed over tail; onError hears read failures (the feed
// retries on its next turn).
func NewFeed(tail EventTail, every time.Duration, onError func(error)) *Feed {
	if onError == nil {
		onError = func(error) {}
	}
	return &Feed{tail: tail, every: every, onError: onError, nudge: make(chan struct{}, 1), subs: map[*endWatch]struct{}{}}
}

// Nudge says this instance committed events; it never blocks.
func (f *Feed) Nudge() {
	select {
	case f.nudge <- struct{}{}:
	default:
	}
}

// followUps are the extra reads after a nudge. An event is readable only
// once every transaction older than its own has ended (the outbox is read
// in commit order), so right after a commit it may still be hidden behind a
// neighbour's transaction for a few milliseconds.
var followUps = []time.Duration{2 * time.Millisecond, 5 * time.Millisecond, 10 * time.Millisecond, 25 * time.Millisecond}

// Run follows the outbox until ctx ends.
func (f *Feed) Run(ctx context.Context) {
	t := time.NewTicker(f.every)
	defer t.Stop()
	again := time.NewTimer(time.Hour)
	defer again.Stop()
	next := len(followUps)
	for {
		select {
		case <-ctx.Done():
			return
		case <-f.nudge:
			next = 0
		case <-again.C:
		case <-t.C:
		}
		if err := f.pull(ctx); err != nil && ctx.Err() == nil {
			f.onError(err)
		}
		if next < len(followUps) {
			again.Reset(followUps[next])
			next++
		}
	}
}

// endWatch is one waiter: the executions it waits on, and where their ends
// are reported.
type endWatch struct {
	ids   map[string]bool
	ended chan string // buffered for every id: a send never blocks
}

// watch registers a waiter for the end of ids. The feed's position is set to
// the outbox head first when nobody was waiting, so an end committed after
// watch returns is always reported; one committed before shows in the
// status the caller reads next.
func (f *Feed) watch(ctx context.Context, ids []string) (*endWatch, error) {
	w := &endWatch{ids: map[string]bool{}, ended: make(chan string, len(ids))}
	for _, id := range ids {
		w.ids[id] = true
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.subs) == 0 {
		head, err := f.tail.EventHead(ctx)
		if err != nil {
			return nil, err
		}
		f.pos = head
		f.gen++
	}
	f.subs[w] = struct{}{}
	return w, nil
}

func (f *Feed) unwatch(w *endWatch) {
	f.mu.Lock()
	delete(f.subs, w)
	f.mu.Unlock()
}

// pull reads every event after the position and reports execution ends.
func (f *Feed) pull(ctx context.Context) error {
	for {
		f.mu.Lock()
		if len(f.subs) == 0 {
			f.mu.Unlock()
			return nil
		}
		pos, gen := f.pos, f.gen
		f.mu.Unlock()
		evs, err := f.tail.Events(ctx, EventQuery{AfterSeq: pos, Limit: MaxEventBatch})
		if err != nil {
			return err
		}
		f.mu.Lock()
		if gen != f.gen {
			f.mu.Unlock()
			continue // the position was reset while reading: read from it
		}
		for _, e := range evs {
			f.pos = e.Seq
			if id, ok := endOf(e); ok {
				for w := range f.subs {
					if w.ids[id] {
						select {
						case w.ended <- id:
						default:
						}
					}
				}
			}
		}
		f.mu.Unlock()
		if len(evs) < MaxEventBatch {
			return nil
		}
	}
}

// endOf reports the execution an event ends, if it ends one.
func endOf(e StoredEvent) (string, bool) {
	if e.Type != EventExecutionStatusChanged || e.ExecutionID == "" {
		return "", false
	}
	to, _ := e.Data["to"].(string)
	return e.ExecutionID, execution.Status(to).Terminal()
}
