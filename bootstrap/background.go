package bootstrap

import (
	"context"
	"fmt"

	"go.uber.org/fx"
)

// runInBackground gives run a goroutine owned by the fx lifecycle: it starts
// in OnStart with a context of its own and, in OnStop, is cancelled and
// joined within the stop deadline, or the stop fails naming what did not
// stop. started (after the goroutine is launched) and stopped (after a clean
// join) may be nil; they log.
func runInBackground(lc fx.Lifecycle, what string, run func(ctx context.Context), started, stopped func()) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	lc.Append(fx.Hook{
		OnStart: func(context.Context) error {
			go func() { defer close(done); run(ctx) }()
			if started != nil {
				started()
			}
			return nil
		},
		OnStop: func(stop context.Context) error {
			cancel()
			select {
			case <-done:
				if stopped != nil {
					stopped()
				}
				return nil
			case <-stop.Done():
				return fmt.Errorf("%s did not stop in time: %w", what, stop.Err())
			}
		},
	})
}
