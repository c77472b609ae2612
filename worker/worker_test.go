package worker_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/yukta/yukta/worker"
)

// The worker's behaviour against the real server (poll, heartbeats,
// cancellation, graceful stop, the concurrency limit) is tested in
// e2e/worker_library_test.go and e2e/workers_test.go; these are the checks
// that need no server.

func noop(context.Context, *worker.Task, map[string]any) (any, error) { return nil, nil }

func TestNewRefusesABadConfig(t *testing.T) {
	h := worker.Handle("q1", noop)
	cases := []struct {
		name     string
		cfg      worker.Config
		handlers []worker.Handler
		want     string
	}{
		{"no url", worker.Config{}, []worker.Handler{h}, "Config.URL is empty"},
		{"no handlers", worker.Config{URL: "http://127.0.0.1:1"}, nil, "no handlers"},
		{"negative concurrency", worker.Config{URL: "http://127.0.0.1:1", Concurrency: -1}, []worker.Handler{h}, "Config.Concurrency is -1"},
		{"poll wait too long", worker.Config{URL: "http://127.0.0.1:1", PollWait: time.Minute}, []worker.Handler{h}, "Config.PollWait is 1m0s"},
		{"two handlers of one queue", worker.Config{URL: "http://127.0.0.1:1"}, []worker.Handler{h, worker.Handle("q1", noop)}, `two handlers for the queue "q1"`},
	}
	for _, c := range cases {
		if _, err := worker.New(c.cfg, c.handlers...); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: New answered %v, want an error saying %q", c.name, err, c.want)
		}
	}
	if _, err := worker.New(worker.Config{URL: "http://127.0.0.1:1"}, h, worker.Handle("q2", noop)); err != nil {
		t.Fatalf("a good config: %v", err)
	}
}

func TestPermanentIsSeenThroughWrapping(t *testing.T) {
	base := errors.New("not an image")
	err := fmt.Errorf("resize: %w", worker.Permanent(base))
	if !worker.IsPermanent(err) || !errors.Is(err, base) {
		t.Fatalf("IsPermanent(%v) = %v, errors.Is = %v; want both true", err, worker.IsPermanent(err), errors.Is(err, base))
	}
	if worker.IsPermanent(base) || worker.Permanent(nil) != nil {
		t.Fatal("a plain error is retryable, and Permanent(nil) is nil")
	}
}

// TestRunStopsWhileTheServerIsAway: a worker whose server cannot be reached
// keeps trying its poll, and returns nil as soon as its context ends.
func TestRunStopsWhileTheServerIsAway(t *testing.T) {
	w, err := worker.New(worker.Config{URL: "http://127.0.0.1:1", Grace: -1}, worker.Handle("q1", noop))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- w.Run(ctx) }()
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("Run after a stop: %v, want nil", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Run did not return within 10 s of its context ending")
	}
}
