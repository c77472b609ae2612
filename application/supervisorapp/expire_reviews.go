package supervisorapp

import (
	"context"
	"errors"
	"time"

	"github.com/yukta/yukta/domain/supervisor"
)

// ExpireReviews settles the reviews nobody answered in time with the
// configured default, and applies allowed commands whose applier died
// before recording the outcome. Every instance may run it: each review
// moves under its row lock, and an applied command's key makes a second
// application a no-op.
type ExpireReviews struct {
	a     *reviewApplier
	stale time.Duration
}

// NewExpireReviews returns the use case; stale is how long an allowed
// review may wait for its applier before another takes over.
func NewExpireReviews(d ApplierDeps, stale time.Duration) *ExpireReviews {
	return &ExpireReviews{a: newApplier(d), stale: stale}
}

// ExpireBatch caps the reviews one pass settles.
const ExpireBatch = 100

// Handle does one pass and returns how many reviews it moved.
func (uc *ExpireReviews) Handle(ctx context.Context) (int, error) {
	ids, err := uc.a.store.DueReviews(ctx, uc.stale, ExpireBatch)
	if err != nil {
		return 0, err
	}
	moved := 0
	for _, id := range ids {
		r, ok, err := uc.a.store.Review(ctx, id)
		if err != nil {
			return moved, err
		}
		if !ok {
			continue
		}
		if r.Status() == supervisor.ReviewAllowed {
			if _, err := uc.a.apply(ctx, r); err != nil {
				return moved, err
			}
			moved++
			continue
		}
		now := uc.a.now()
		_, err = uc.a.change(ctx, id, nil, func(r *supervisor.Review) error { return r.Expire(now) })
		switch {
		case errors.Is(err, supervisor.ErrReviewSettled): // answered meanwhile
		case err != nil:
			return moved, err
		default:
			moved++
		}
	}
	return moved, nil
}

// Run passes every interval until ctx ends; onError hears failed passes.
func (uc *ExpireReviews) Run(ctx context.Context, every time.Duration, onError func(error)) {
	everyInterval(ctx, every, func(ctx context.Context) error { _, err := uc.Handle(ctx); return err }, onError)
}
