package mcpserver

import (
	"context"
	"fmt"
	"runtime"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/yukta/yukta/application/executionapp"
	"github.com/yukta/yukta/domain/access"
)

// StatusIn selects a part of the status.
type StatusIn struct {
	FilterType string `json:"filterType,omitempty" jsonschema:"sessions, executions, plugins or health; absent means all four"`
}

// ControlBusStatus is a snapshot of the server.
type ControlBusStatus struct {
	Sessions         []SessionActivity `json:"sessions"`
	RecentExecutions []RecentRun       `json:"recentExecutions" jsonschema:"the 20 most recent executions across the sessions shown, newest first"`
	Plugins          []PluginSummary   `json:"plugins"`
	Health           *Health           `json:"health,omitempty"`
	SkippedSessions  []SkippedSession  `json:"skippedSessions" jsonschema:"sessions that could not be read, and why; they are missing from the counts"`
	Truncated        bool              `json:"truncated,omitempty" jsonschema:"more sessions exist than the 1000 shown"`
}

// SessionActivity is one session with its active executions.
type SessionActivity struct {
	SessionID        string `json:"sessionId"`
	Name             string `json:"name"`
	WorkflowCount    int    `json:"workflowCount"`
	ActiveExecutions int    `json:"activeExecutions" jsonschema:"executions PENDING, RUNNING or PAUSED"`
}

// RecentRun is one recent execution.
type RecentRun struct {
	SessionID   string `json:"sessionId"`
	ExecutionID string `json:"executionId"`
	WorkflowID  string `json:"workflowId"`
	Status      string `json:"status"`
	StartedAt   string `json:"startedAt"`
	DurationMs  int64  `json:"durationMs,omitempty" jsonschema:"absent while the execution runs"`
}

// SkippedSession names a session the snapshot could not read.
type SkippedSession struct {
	SessionID string `json:"sessionId"`
	Reason    string `json:"reason"`
}

// Health is the server process's state.
type Health struct {
	Version       string           `json:"version"`
	UptimeSeconds int64            `json:"uptimeSeconds"`
	Goroutines    int              `json:"goroutines"`
	HeapAllocMB   uint64           `json:"heapAllocMB"`
	SysMB         uint64           `json:"sysMB" jsonschema:"memory obtained from the OS"`
	GoVersion     string           `json:"goVersion"`
	Scheduler     *SchedulerHealth `json:"scheduler,omitempty" jsonschema:"the scheduler limits and queue of the whole server; absent for a key limited to some sessions"`
}

// SchedulerHealth is the scheduler limits and how full they are.
type SchedulerHealth struct {
	MaxRunning              int         `json:"maxRunning" jsonschema:"most runs holding a slot at once on the server (--max-running); 0 is no limit"`
	ReservedSupervisorSlots int         `json:"reservedSupervisorSlots" jsonschema:"slots kept for workflow supervisors' runs beside maxRunning"`
	Running                 int         `json:"running" jsonschema:"runs holding a slot (RUNNING, or PAUSED after they started)"`
	Waiting                 int         `json:"waiting" jsonschema:"runs waiting PENDING for a slot: the queue depth"`
	WaitingReserved         int         `json:"waitingReserved,omitempty" jsonschema:"of those, supervisor runs waiting for a reserved slot"`
	OldestWaitingSince      string      `json:"oldestWaitingSince,omitempty" jsonschema:"when the oldest waiting run was started"`
	TaskQueues              []TaskQueue `json:"taskQueues" jsonschema:"the worker queues with live tasks or workers seen, with the workers that poll each (docs/workers.md)"`
}

// TaskQueue is one worker queue.
type TaskQueue struct {
	Queue              string       `json:"queue"`
	Waiting            int          `json:"waiting" jsonschema:"tasks due and not leased"`
	Leased             int          `json:"leased" jsonschema:"tasks a worker holds"`
	OldestWaitingSince string       `json:"oldestWaitingSince,omitempty" jsonschema:"since when the oldest waiting task has been due"`
	Workers            []WorkerSeen `json:"workers" jsonschema:"the worker keys that polled the queue, most recent first"`
}

// WorkerSeen is a worker and when it last polled.
type WorkerSeen struct {
	Worker   string `json:"worker" jsonschema:"worker:<key name>"`
	LastSeen string `json:"lastSeen"`
}

func (s *server) addStatusTool(m *mcp.Server) {
	addTool(m, &mcp.Tool{Name: "get_control_bus_status", Annotations: annotated(readOnly, "Server status"),
		Description: "A snapshot of the server: sessions with active execution counts, the 20 most recent executions, plugin types and the process's memory, goroutines and uptime, " +
			"with the scheduler limits and how many runs wait for a slot (PENDING). " +
			"Sessions it could not read are named in skippedSessions. Next: get_workflow_status or control_workflow STOP_ALL."},
		s.busStatus)
}

var statusFilters = map[string]bool{"": true, "sessions": true, "executions": true, "plugins": true, "health": true}

func (s *server) busStatus(ctx context.Context, _ *mcp.CallToolRequest, in StatusIn) (*mcp.CallToolResult, ControlBusStatus, error) {
	const tool = "get_control_bus_status"
	p := caller(ctx)
	if err := p.Can(access.ReadExecutions, ""); err != nil {
		return nil, ControlBusStatus{}, s.toolError(tool, err, subject{})
	}
	f := in.FilterType
	if !statusFilters[f] {
		return nil, ControlBusStatus{}, s.toolError(tool, invalid(fmt.Sprintf("Unsupported filter: %s. Valid filters: sessions, executions, plugins, health; or leave filterType out for all four.", f)), subject{})
	}
	out := ControlBusStatus{Sessions: []SessionActivity{}, RecentExecutions: []RecentRun{}, Plugins: []PluginSummary{}, SkippedSessions: []SkippedSession{}}
	if f == "" || f == "sessions" || f == "executions" {
		rep, err := s.d.Status.Handle(ctx, executionapp.StatusInput{Only: p.Sessions(), Executions: true})
		if err != nil {
			return nil, ControlBusStatus{}, s.toolError(tool, err, subject{})
		}
		if f != "executions" {
			for _, x := range rep.Sessions {
				out.Sessions = append(out.Sessions, SessionActivity{SessionID: x.SessionID, Name: x.Name, WorkflowCount: x.Workflows, ActiveExecutions: x.Active})
			}
			out.Truncated = rep.Truncated
		}
		if f != "sessions" {
			for _, r := range rep.Recent {
				rr := RecentRun{SessionID: r.SessionID, ExecutionID: r.ID, WorkflowID: r.WorkflowID, Status: string(r.Status), StartedAt: ts(r.StartedAt)}
				if !r.EndedAt.IsZero() {
					rr.DurationMs = r.EndedAt.Sub(r.StartedAt).Milliseconds()
				}
				out.RecentExecutions = append(out.RecentExecutions, rr)
			}
		}
		for _, u := range rep.Unreadable {
			out.SkippedSessions = append(out.SkippedSessions, SkippedSession{SessionID: u.SessionID, Reason: sanitizeText(u.Reason, 512)})
		}
	}
	if f == "" || f == "plugins" {
		for _, d := range s.d.ListPlugins.Handle(ctx) {
			out.Plugins = append(out.Plugins, PluginSummary{Type: d.Type, Category: string(d.Category), Description: d.Description})
		}
	}
	if f == "" || f == "health" {
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		out.Health = &Health{Version: s.version, UptimeSeconds: int64(time.Since(s.d.Started).Seconds()), Goroutines: runtime.NumGoroutine(),
			HeapAllocMB: ms.HeapAlloc >> 20, SysMB: ms.Sys >> 20, GoVersion: runtime.Version()}
		// The scheduler counts every session's runs: only a key that sees
		// them all gets it (REST: GET /api/scheduler, refused the same way).
		if s.d.Scheduler != nil && !p.Limited() {
			st, err := s.d.Scheduler.Handle(ctx)
			if err != nil {
				return nil, ControlBusStatus{}, s.toolError(tool, err, subject{})
			}
			sh := &SchedulerHealth{MaxRunning: st.Slots.MaxRunning, ReservedSupervisorSlots: st.Slots.Reserved,
				Running: st.Running.Total(), Waiting: st.Waiting.Total(), WaitingReserved: st.Waiting.Reserved}
			if !st.OldestWaiting.IsZero() {
				sh.OldestWaitingSince = ts(st.OldestWaiting)
			}
			sh.TaskQueues = make([]TaskQueue, len(st.Queues))
			for i, q := range st.Queues {
				tq := TaskQueue{Queue: q.Queue, Waiting: q.Waiting, Leased: q.Leased, Workers: make([]WorkerSeen, len(q.Workers))}
				if !q.OldestWaiting.IsZero() {
					tq.OldestWaitingSince = ts(q.OldestWaiting)
				}
				for j, w := range q.Workers {
					tq.Workers[j] = WorkerSeen{Worker: w.Worker, LastSeen: ts(w.LastSeen)}
				}
				sh.TaskQueues[i] = tq
			}
			out.Health.Scheduler = sh
		}
	}
	return nil, out, nil
}
