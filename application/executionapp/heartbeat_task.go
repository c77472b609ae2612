package executionapp

import (
	"context"
	"errors"
	"time"

	"github.com/yukta/yukta/domain/fault"
)

// HeartbeatInput is a worker's heartbeat.
type HeartbeatInput struct {
	Worker     Worker
	TaskID     string
	LeaseToken string
}

// HeartbeatAnswer is the lease as a heartbeat left it.
type HeartbeatAnswer struct {
	TaskID string
	// Cancelled is set when the task will not be applied any more: the
	// worker should stop. Reason says why.
	Cancelled  bool
	Reason     string
	LeaseUntil time.Time
	Deadline   time.Time
}

// HeartbeatTask extends a task's lease, or tells the worker it was
// cancelled (its run or node stopped, or the lease went elsewhere).
type HeartbeatTask struct{ leases TaskLeases }

// NewHeartbeatTask returns the use case.
func NewHeartbeatTask(leases TaskLeases) *HeartbeatTask { return &HeartbeatTask{leases: leases} }

// Handle heartbeats.
func (uc *HeartbeatTask) Handle(ctx context.Context, in HeartbeatInput) (HeartbeatAnswer, error) {
	l, err := findLease(ctx, uc.leases, in.Worker, in.TaskID, in.LeaseToken)
	if errors.Is(err, ErrLeaseLost) {
		return HeartbeatAnswer{TaskID: in.TaskID, Cancelled: true, Reason: err.Error(), LeaseUntil: l.LeaseUntil, Deadline: l.Deadline}, nil
	}
	if err != nil {
		return HeartbeatAnswer{}, err
	}
	until, deadline, ok, err := uc.leases.Extend(ctx, l.ItemID, l.Token, l.Owner)
	if err != nil {
		return HeartbeatAnswer{}, err
	}
	if !ok { // lost between the read and the extend
		now, found, err := uc.leases.Lease(ctx, l.ItemID)
		if err != nil {
			return HeartbeatAnswer{}, err
		}
		if !found {
			return HeartbeatAnswer{}, fault.Newf(ErrTaskNotFound, "task %s is gone", in.TaskID)
		}
		return HeartbeatAnswer{TaskID: in.TaskID, Cancelled: true, Reason: lostLease(now, in.Worker).Error(), LeaseUntil: now.LeaseUntil, Deadline: now.Deadline}, nil
	}
	return HeartbeatAnswer{TaskID: in.TaskID, LeaseUntil: until, Deadline: deadline}, nil
}
