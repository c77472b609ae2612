package supervisorapp

import (
	"context"
	"errors"
	"time"

	"github.com/yukta/yukta/domain/supervisor"
)

// ExpireDelegations moves the OPEN delegations nobody answered by their
// deadline to EXPIRED. Every instance may run it: each delegation moves
// under its row lock. An expired delegation sends no signal; its target
// no longer receives the request.
type ExpireDelegations struct{ d DelegationDeps }

// NewExpireDelegations returns the use case.
func NewExpireDelegations(d DelegationDeps) *ExpireDelegations {
	if d.Now == nil {
		d.Now = time.Now
	}
	return &ExpireDelegations{d: d}
}

// Handle does one pass and returns how many delegations it expired.
func (uc *ExpireDelegations) Handle(ctx context.Context) (int, error) {
	ids, err := uc.d.Store.DueDelegations(ctx, ExpireBatch)
	if err != nil {
		return 0, err
	}
	moved := 0
	for _, id := range ids {
		now := uc.d.Now()
		_, err := uc.d.Store.ChangeDelegation(ctx, id, "server", "", nil, func(d supervisor.Delegation) (supervisor.Delegation, error) {
			err := d.Expire(now)
			return d, err
		})
		switch {
		case errors.Is(err, supervisor.ErrDelegationSettled): // answered meanwhile, or the clocks differ
		case err != nil:
			return moved, err
		default:
			moved++
		}
	}
	return moved, nil
}

// Run passes every interval until ctx ends; onError hears failed passes.
func (uc *ExpireDelegations) Run(ctx context.Context, every time.Duration, onError func(error)) {
	everyInterval(ctx, every, func(ctx context.Context) error { _, err := uc.Handle(ctx); return err }, onError)
}
