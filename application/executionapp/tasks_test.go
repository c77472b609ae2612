package executionapp

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/yukta/yukta/domain/fault"
)

func TestTaskBellRingsOnlyItsQueues(t *testing.T) {
	b := newTaskBell()
	images, stopImages := b.listen([]string{"images"})
	both, stopBoth := b.listen([]string{"images", "mail"})
	b.ring([]string{"mail"})
	select {
	case <-images.c:
		t.Fatal("a ring of mail woke a poll of images")
	default:
	}
	select {
	case <-both.c:
	default:
		t.Fatal("a ring of mail did not wake a poll of images and mail")
	}
	b.ring([]string{"images"})
	b.ring([]string{"images"}) // a second ring before the poll looks is one wake-up
	<-images.c
	select {
	case <-images.c:
		t.Fatal("two rings queued two wake-ups")
	default:
	}
	stopImages()
	stopBoth()
	if len(b.waiters) != 0 {
		t.Fatalf("stopped waiters stay registered: %v", b.waiters)
	}
	w, stop := b.listen([]string{"x"})
	defer stop()
	b.ringAll()
	<-w.c
}

func TestPollBoundsAreInclusive(t *testing.T) {
	queues := func(n int) []string {
		out := make([]string, n)
		for i := range out {
			out[i] = fmt.Sprintf("q%d", i)
		}
		return out
	}
	limited := Worker{Name: "w", Queues: []string{"build"}}
	for _, c := range []struct {
		name string
		in   PollInput
		kind error // nil: accepted
		says string
	}{
		{"20 queues", PollInput{Queues: queues(MaxPollQueues)}, nil, ""},
		{"21 queues", PollInput{Queues: queues(MaxPollQueues + 1)}, fault.ErrInvalid, "1 to 20"},
		{"no queue", PollInput{}, fault.ErrInvalid, "1 to 20"},
		{"a queue twice", PollInput{Queues: []string{"a", "b", "a"}}, fault.ErrInvalid, "queues[2]"},
		{"a bad name", PollInput{Queues: []string{"Build"}}, fault.ErrInvalid, "queues[0]"},
		{"wait at its bound", PollInput{Queues: []string{"a"}, Wait: MaxPollWait}, nil, ""},
		{"wait past it", PollInput{Queues: []string{"a"}, Wait: MaxPollWait + time.Second}, fault.ErrInvalid, "wait"},
		{"max at its bound", PollInput{Queues: []string{"a"}, Max: MaxPollTasks}, nil, ""},
		{"max past it", PollInput{Queues: []string{"a"}, Max: MaxPollTasks + 1}, fault.ErrInvalid, "max"},
		{"its own queue", PollInput{Worker: limited, Queues: []string{"build"}}, nil, ""},
		{"another queue", PollInput{Worker: limited, Queues: []string{"build", "deploy"}}, fault.ErrForbidden, `queues[1]: worker:w may not take tasks of the queue "deploy"`},
	} {
		err := checkPoll(c.in)
		switch {
		case c.kind == nil && err != nil:
			t.Errorf("%s: %v, want accepted", c.name, err)
		case c.kind != nil && (!errors.Is(err, c.kind) || !strings.Contains(err.Error(), c.says)):
			t.Errorf("%s: %v, want %v saying %q", c.name, err, c.kind, c.says)
		}
	}
}

func TestLostLeaseSaysWhy(t *testing.T) {
	w := Worker{Name: "w"}
	for _, c := range []struct {
		lease TaskLease
		says  string
	}{
		{TaskLease{ItemID: 1, State: ItemDone}, "already answered"},
		{TaskLease{ItemID: 1, State: ItemDropped}, "stopped"},
		{TaskLease{ItemID: 1, State: ItemReady, Owner: "worker:w", Lapsed: true, Attempt: 2}, "lease ran out"},
		{TaskLease{ItemID: 1, State: ItemReady, Attempt: 2}, "waits to be delivered again"},
		{TaskLease{ItemID: 1, State: ItemReady, Owner: "worker:other", Attempt: 3}, "another worker (attempt 3)"},
		{TaskLease{ItemID: 1, State: ItemReady, Owner: "worker:w", Attempt: 4}, "delivered again since (attempt 4)"},
	} {
		err := lostLease(c.lease, w)
		if !errors.Is(err, ErrLeaseLost) || !errors.Is(err, fault.ErrConflict) || !strings.Contains(err.Error(), c.says) || !strings.Contains(err.Error(), "nothing changed") {
			t.Errorf("%+v: %v, want a conflict saying %q", c.lease, err, c.says)
		}
	}
}
