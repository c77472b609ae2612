package plugins

import (
	"fmt"
	"sync"
	"time"

	"github.com/robfig/cron/v3"

	"github.com/yukta/yukta/application/executionapp"
)

// CronClock computes SCHEDULE firings with the same parser that validated
// the spec when the session was applied.
type CronClock struct {
	mu    sync.Mutex
	cache map[string]cron.Schedule
}

var _ executionapp.CronClock = (*CronClock)(nil)

// NewCronClock returns a clock with an empty parse cache.
func NewCronClock() *CronClock { return &CronClock{cache: map[string]cron.Schedule{}} }

// Next returns the first firing strictly after `after`, in the spec's zone.
func (c *CronClock) Next(spec, timezone string, after time.Time) (time.Time, error) {
	if timezone == "" {
		timezone = "UTC"
	}
	loc, err := time.LoadLocation(timezone)
	if err != nil {
		return time.Time{}, fmt.Errorf("timezone %q: %w", timezone, err)
	}
	c.mu.Lock()
	sch, ok := c.cache[spec]
	if !ok {
		sch, err = parseCron(spec)
		if err == nil {
			if len(c.cache) > 10_000 {
				clear(c.cache)
			}
			c.cache[spec] = sch
		}
	}
	c.mu.Unlock()
	if err != nil {
		return time.Time{}, fmt.Errorf("cron %q: %w", spec, err)
	}
	if every, ok := sch.(cron.ConstantDelaySchedule); ok {
		// robfig counts @every from the time it is asked about, so asked
		// every second it would always answer "later". Slots are aligned to
		// the zero time instead: the same on every instance and every tick.
		return after.Truncate(every.Delay).Add(every.Delay), nil
	}
	return sch.Next(after.In(loc)), nil
}
