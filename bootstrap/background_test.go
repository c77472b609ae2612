package bootstrap

import (
	"context"
	"strings"
	"testing"
	"time"

	"go.uber.org/fx/fxtest"
)

// TestRunInBackgroundJoins: stopping cancels the goroutine and waits for it;
// one that does not return in time fails the stop, naming it.
func TestRunInBackgroundJoins(t *testing.T) {
	lc := fxtest.NewLifecycle(t)
	var started, stopped, returned bool
	runInBackground(lc, "loop", func(ctx context.Context) {
		<-ctx.Done()
		time.Sleep(20 * time.Millisecond) // a loop finishing its round
		returned = true
	}, func() { started = true }, func() { stopped = true })
	if err := lc.Start(t.Context()); err != nil || !started {
		t.Fatalf("start: %v, started %v", err, started)
	}
	if err := lc.Stop(t.Context()); err != nil || !returned || !stopped {
		t.Fatalf("stop: %v; returned %v, stopped %v: the stop must join the goroutine", err, returned, stopped)
	}

	stuck := fxtest.NewLifecycle(t)
	release := make(chan struct{})
	defer close(release)
	runInBackground(stuck, "stuck loop", func(context.Context) { <-release }, nil, nil)
	if err := stuck.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 50*time.Millisecond)
	defer cancel()
	if err := stuck.Stop(ctx); err == nil || !strings.Contains(err.Error(), "stuck loop did not stop in time") {
		t.Fatalf("stop of a goroutine that ignores its context: %v, want it named", err)
	}
}
