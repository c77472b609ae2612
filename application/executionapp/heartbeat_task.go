package executionapp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/yukta/yukta/domain/fault"
)

// HeartbeatInput is a worker's heartbeat.
type HeartbeatInput struct {
	Worker     Worker
	TaskID     string
	LeaseToken string
	// Progress, when set, is logged with the task's node.
	Progress any
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
// cancelled (its run or node stopped or skipped, or the lease went
// elsewhere). A heartbeat's progress joins the run's log.
type HeartbeatTask struct {
	leases TaskLeases
	logs   *AppendTaskLogs
}

// NewHeartbeatTask returns the use case; logs writes the progress a
// heartbeat carries (nil: progress is dropped).
func NewHeartbeatTask(leases TaskLeases, logs *AppendTaskLogs) *HeartbeatTask {
	return &HeartbeatTask{leases: leases, logs: logs}
}

// maxProgressBytes bounds a heartbeat's progress, as JSON text.
const maxProgressBytes = 1 << 10

// progressLine is the log line of a heartbeat's progress.
func progressLine(p any) (string, error) {
	b, err := json.Marshal(p)
	if err != nil || len(b) > maxProgressBytes {
		return "", fault.Newf(fault.ErrInvalid, "progress must be a JSON value of at most %d bytes as text; send less", maxProgressBytes)
	}
	return "progress: " + string(b), nil
}

// Handle heartbeats.
func (uc *HeartbeatTask) Handle(ctx context.Context, in HeartbeatInput) (HeartbeatAnswer, error) {
	l, err := findLease(ctx, uc.leases, in.Worker, in.TaskID, in.LeaseToken)
	if errors.Is(err, ErrLeaseLost) {
		return HeartbeatAnswer{TaskID: in.TaskID, Cancelled: true, Reason: err.Error(), LeaseUntil: l.LeaseUntil, Deadline: l.Deadline}, nil
	}
	if err != nil {
		return HeartbeatAnswer{}, err
	}
	if l.Skipped {
		return HeartbeatAnswer{TaskID: in.TaskID, Cancelled: true, LeaseUntil: l.LeaseUntil, Deadline: l.Deadline,
			Reason: fmt.Sprintf("node %s was skipped: its message goes on unchanged, so stop; an answer now passes it on and changes nothing else", l.NodeID)}, nil
	}
	if in.Progress != nil && uc.logs != nil {
		line, err := progressLine(in.Progress)
		if err != nil {
			return HeartbeatAnswer{}, err
		}
		if _, err := uc.logs.Handle(ctx, TaskLogInput{Worker: in.Worker, TaskID: in.TaskID, LeaseToken: in.LeaseToken,
			Lines: []LogLine{{Level: "info", Message: line}}}); err != nil && !errors.Is(err, ErrLeaseLost) {
			return HeartbeatAnswer{}, err
		}
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
