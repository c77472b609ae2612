package supervisorapp

import (
	"errors"
	"fmt"
	"testing"

	"github.com/yukta/yukta/domain/fault"
	"github.com/yukta/yukta/domain/supervisor"
)

// TestSortEffect: every engine reads a use case's answer the one way
// SortEffect says. A lost lease is a conflict, but it stops the engine; a
// loop bound's refusal is a refusal the guard already reported.
func TestSortEffect(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		err  error
		want Effect
	}{
		{nil, EffectDone},
		{fmt.Errorf("settle: %w", ErrLeaseLost), EffectLeaseLost},
		{fault.Newf(supervisor.ErrLoopTooDeep, "too deep"), EffectLoopBound},
		{fault.Newf(supervisor.ErrBudgetExceeded, "over budget"), EffectLoopBound},
		{fault.Newf(fault.ErrForbidden, "not owned"), EffectRefused},
		{fault.Newf(fault.ErrNotFound, "no such run"), EffectRefused},
		{errors.New("connection refused"), EffectFailed},
		{fault.Newf(fault.ErrUnavailable, "database down"), EffectFailed},
	} {
		if got := SortEffect(c.err); got != c.want {
			t.Errorf("SortEffect(%v) = %d, want %d", c.err, got, c.want)
		}
	}
}
