package supervisorapp

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"
)

// TestEveryIntervalPassesUntilCancelled: passes repeat on the interval, a
// failed pass is reported and the loop goes on, and cancelling ends it.
func TestEveryIntervalPassesUntilCancelled(t *testing.T) {
	ctx, cancel := context.WithCancel(t.Context())
	var passes, failures atomic.Int32
	done := make(chan struct{})
	go func() {
		defer close(done)
		everyInterval(ctx, time.Millisecond, func(context.Context) error {
			if passes.Add(1)%2 == 0 {
				return errors.New("boom")
			}
			return nil
		}, func(error) { failures.Add(1) })
	}()
	for deadline := time.Now().Add(5 * time.Second); passes.Load() < 6; time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("%d passes in 5 s, want 6", passes.Load())
		}
	}
	cancel()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("the loop did not end after cancel")
	}
	if f := failures.Load(); f < 3 {
		t.Fatalf("%d failures reported after %d passes, want every second one", f, passes.Load())
	}
}
