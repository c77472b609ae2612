package retentionapp

import (
	"context"
	"time"
)

// PruneStore folds finished runs' work items.
type PruneStore interface {
	// Prune folds the work items of up to limit finished runs that ended
	// before t (and are not folded yet, nor locked by anyone) into one row
	// per node holding the payloads it received in arrival order, which is
	// all that RESTART, RESTART_FROM_NODE and node RETRY read of them, and
	// deletes the item rows. It returns how many runs it folded.
	Prune(ctx context.Context, endedBefore time.Time, limit int) (int, error)
}

// PruneItems folds the work items of finished runs, batch by batch.
type PruneItems struct {
	store PruneStore
	batch int
	pause time.Duration
}

// NewPruneItems returns the use case.
func NewPruneItems(s PruneStore, batch int, pause time.Duration) *PruneItems {
	if batch <= 0 {
		batch = DefaultBatch
	}
	return &PruneItems{store: s, batch: batch, pause: pause}
}

// Handle folds every finished run that ended before t, a batch per
// transaction with a pause between, and returns how many it folded.
func (uc *PruneItems) Handle(ctx context.Context, endedBefore time.Time) (int, error) {
	total := 0
	for {
		n, err := uc.store.Prune(ctx, endedBefore, uc.batch)
		total += n
		if err != nil || n < uc.batch {
			return total, err
		}
		if uc.pause > 0 {
			t := time.NewTimer(uc.pause)
			select {
			case <-ctx.Done():
				t.Stop()
				return total, ctx.Err()
			case <-t.C:
			}
		}
	}
}
