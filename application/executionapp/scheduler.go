package executionapp

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/yukta/yukta/domain/execution"
	"github.com/yukta/yukta/domain/fault"
)

// Schedule is one SCHEDULE trigger node of a stored workflow.
type Schedule struct {
	SessionID, WorkflowID, NodeID string
	Cron, Timezone                string
}

// ScheduleSource lists every SCHEDULE node of every stored workflow.
type ScheduleSource interface {
	Schedules(ctx context.Context) ([]Schedule, error)
}

// CronClock computes the next firing of a cron spec after a time.
type CronClock interface {
	Next(spec, timezone string, after time.Time) (time.Time, error)
}

// Scheduler fires SCHEDULE triggers. Every instance runs one; a firing is a
// start whose idempotency key names the node and the slot, so the unique
// (session, key) constraint fences it: however many instances see a slot
// come due, it starts one execution. Slots that passed while no instance ran
// are not back-filled.
type Scheduler struct {
	source  ScheduleSource
	clock   CronClock
	start   *StartExecution
	now     func() time.Time
	tick    time.Duration
	onError func(error)
}

// NewScheduler returns a scheduler that checks for due slots every tick.
func NewScheduler(src ScheduleSource, c CronClock, start *StartExecution, now func() time.Time, tick time.Duration, onError func(error)) *Scheduler {
	if tick <= 0 {
		tick = time.Second
	}
	if onError == nil {
		onError = func(error) {}
	}
	return &Scheduler{source: src, clock: c, start: start, now: now, tick: tick, onError: onError}
}

// ScheduleKey is the idempotency key of one slot of one node of one workflow
// (keys are unique per session, so the workflow is part of it).
func ScheduleKey(workflowID, nodeID string, slot time.Time) string {
	return fmt.Sprintf("schedule:%s/%s:%s", workflowID, nodeID, slot.UTC().Format(time.RFC3339))
}

// Run fires due slots until ctx ends.
func (s *Scheduler) Run(ctx context.Context) {
	last := s.now()
	t := time.NewTicker(s.tick)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		now := s.now()
		// While the database is away the window grows, so the slots that
		// came due meanwhile fire when it is back (their keys make a second
		// firing a no-op); other failures do not hold the window back.
		if !s.fire(ctx, last, now) {
			last = now
		}
	}
}

// fire starts every slot in (from, to] and reports whether it should be
// tried again because the database was unavailable.
func (s *Scheduler) fire(ctx context.Context, from, to time.Time) (again bool) {
	schedules, err := s.source.Schedules(ctx)
	if err != nil {
		if ctx.Err() == nil {
			s.onError(fmt.Errorf("list schedules: %w", err))
		}
		return errors.Is(err, fault.ErrUnavailable)
	}
	for _, sc := range schedules {
		slot := from
		for range 100 { // a bound: a spec firing every second cannot flood after a stall
			next, err := s.clock.Next(sc.Cron, sc.Timezone, slot)
			if err != nil {
				s.onError(fmt.Errorf("schedule %s/%s/%s: %w", sc.SessionID, sc.WorkflowID, sc.NodeID, err))
				break
			}
			if next.IsZero() || next.After(to) {
				break
			}
			slot = next
			_, err = s.start.Handle(ctx, StartInput{SessionID: sc.SessionID, WorkflowID: sc.WorkflowID,
				Payload: nil, IdempotencyKey: ScheduleKey(sc.WorkflowID, sc.NodeID, slot), TriggerNode: sc.NodeID,
				Trigger: TriggerSchedule, Actor: "scheduler", Channel: "schedule"})
			if _, paused := execution.IsPaused(err); paused {
				// Skipped, not queued up: the slot passes (counted by the
				// start's StartSkips), and a resume does not fire it later.
				continue
			}
			if err != nil && ctx.Err() == nil {
				s.onError(fmt.Errorf("fire %s/%s/%s at %s: %w", sc.SessionID, sc.WorkflowID, sc.NodeID, slot.Format(time.RFC3339), err))
				again = again || errors.Is(err, fault.ErrUnavailable)
			}
		}
	}
	return again
}
