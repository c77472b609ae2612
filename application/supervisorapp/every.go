package supervisorapp

import (
	"context"
	"time"
)

// everyInterval runs pass every interval until ctx ends; onError, when set,
// hears the passes that failed while ctx was live.
func everyInterval(ctx context.Context, every time.Duration, pass func(context.Context) error, onError func(error)) {
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		if err := pass(ctx); err != nil && ctx.Err() == nil && onError != nil {
			onError(err)
		}
	}
}
