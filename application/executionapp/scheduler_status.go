package executionapp

import (
	"cmp"
	"context"
	"slices"
	"time"

	"github.com/yukta/yukta/domain/execution"
)

// SchedulerCounts is the scheduler's state in one snapshot.
type SchedulerCounts struct {
	// Held counts the runs holding a slot (RUNNING, or PAUSED after they
	// were admitted); Waiting the PENDING runs.
	Held, Waiting execution.Tally
	// SessionMax and WorkflowMax are the bounds of every session and
	// workflow that has one.
	SessionMax  map[string]int
	WorkflowMax map[execution.WorkflowRef]int
	// OldestWaiting is when the oldest waiting run was started (zero when
	// none waits).
	OldestWaiting time.Time
	// Queues are the worker queues that have live tasks or were polled,
	// in name order, at most SchedulerStatusMaxQueues.
	Queues []TaskQueueStatus
}

// TaskQueueStatus is one worker queue: its tasks and the workers that poll it.
type TaskQueueStatus struct {
	Queue string
	// Waiting tasks are due and not leased; Leased ones are with a worker.
	Waiting, Leased int
	// OldestWaiting is since when the oldest waiting task has been due
	// (zero when none waits).
	OldestWaiting time.Time
	// Workers are the keys that polled the queue, most recent first, at
	// most SchedulerStatusMaxWorkers.
	Workers []WorkerSeen
}

// WorkerSeen is a worker key and when it last polled a queue.
type WorkerSeen struct {
	Worker   string
	LastSeen time.Time
}

// The bounds of the queue part of a status.
const (
	SchedulerStatusMaxQueues  = 100
	SchedulerStatusMaxWorkers = 50
)

// SchedulerReader reads the scheduler's state outside any transaction.
type SchedulerReader interface {
	SchedulerCounts(ctx context.Context) (SchedulerCounts, error)
}

// SchedulerStatusMaxScopes caps the sessions and workflows a status lists.
const SchedulerStatusMaxScopes = 500

// PoolCounts counts runs per slot pool, as the runs asked.
type PoolCounts struct {
	Normal, Reserved int
}

// Total is both pools together.
func (p PoolCounts) Total() int { return p.Normal + p.Reserved }

// ScopeStatus is one session (WorkflowID empty) or workflow with a limit or
// waiting runs.
type ScopeStatus struct {
	SessionID, WorkflowID string
	// MaxRunning is its bound (0: none).
	MaxRunning       int
	Running, Waiting int
}

// SchedulerStatus is what GET /api/scheduler, the MCP status and /metrics
// show: the server's bounds, the runs holding a slot and the queue.
type SchedulerStatus struct {
	Slots execution.Slots
	// Running are the runs holding a slot; Waiting the queue depth. A
	// reserved run counts in the normal pool's bound when no reserved pool
	// is configured.
	Running, Waiting PoolCounts
	OldestWaiting    time.Time
	// Scopes are the sessions and workflows that have a limit or waiting
	// runs, in id order, each session followed by its workflows; at most
	// SchedulerStatusMaxScopes (Truncated then says so).
	Scopes    []ScopeStatus
	Truncated bool
	// Queues are the worker queues (docs/workers.md).
	Queues []TaskQueueStatus
}

// GetSchedulerStatus reads the scheduler limits and how full they are.
type GetSchedulerStatus struct {
	reader SchedulerReader
	slots  execution.Slots
}

// NewGetSchedulerStatus returns the use case; slots are this instance's
// server-wide bounds.
func NewGetSchedulerStatus(r SchedulerReader, slots execution.Slots) *GetSchedulerStatus {
	return &GetSchedulerStatus{reader: r, slots: slots}
}

// Handle reads the status.
func (uc *GetSchedulerStatus) Handle(ctx context.Context) (SchedulerStatus, error) {
	c, err := uc.reader.SchedulerCounts(ctx)
	if err != nil {
		return SchedulerStatus{}, err
	}
	st := SchedulerStatus{Slots: uc.slots, OldestWaiting: c.OldestWaiting, Scopes: []ScopeStatus{}, Queues: c.Queues,
		Running: PoolCounts{Normal: c.Held.Pools[execution.PoolNormal], Reserved: c.Held.Pools[execution.PoolReserved]},
		Waiting: PoolCounts{Normal: c.Waiting.Pools[execution.PoolNormal], Reserved: c.Waiting.Pools[execution.PoolReserved]}}
	scopes := map[execution.WorkflowRef]*ScopeStatus{}
	scope := func(sid, wid string) *ScopeStatus {
		k := execution.WorkflowRef{SessionID: sid, WorkflowID: wid}
		if scopes[k] == nil {
			scopes[k] = &ScopeStatus{SessionID: sid, WorkflowID: wid}
		}
		return scopes[k]
	}
	for sid, n := range c.SessionMax {
		scope(sid, "").MaxRunning = n
	}
	for k, n := range c.WorkflowMax {
		scope(k.SessionID, k.WorkflowID).MaxRunning = n
	}
	for sid, n := range c.Waiting.Sessions {
		scope(sid, "").Waiting = n
	}
	for k, n := range c.Waiting.Workflows {
		scope(k.SessionID, k.WorkflowID).Waiting = n
	}
	for k, sc := range scopes {
		if k.WorkflowID == "" {
			sc.Running = c.Held.Sessions[k.SessionID]
		} else {
			sc.Running = c.Held.Workflows[k]
		}
		st.Scopes = append(st.Scopes, *sc)
	}
	slices.SortFunc(st.Scopes, func(a, b ScopeStatus) int {
		return cmp.Or(cmp.Compare(a.SessionID, b.SessionID), cmp.Compare(a.WorkflowID, b.WorkflowID))
	})
	if len(st.Scopes) > SchedulerStatusMaxScopes {
		st.Scopes, st.Truncated = st.Scopes[:SchedulerStatusMaxScopes], true
	}
	return st, nil
}
