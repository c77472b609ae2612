package executionapp

import (
	"cmp"
	"context"
	"slices"
	"sync"
	"time"

	"github.com/yukta/yukta/application/sessionapp"
	"github.com/yukta/yukta/domain/execution"
)

// SessionLister pages through sessions in id order.
type SessionLister interface {
	List(ctx context.Context, q sessionapp.ListQuery) ([]sessionapp.Summary, error)
}

// SystemStatus builds a snapshot of the whole server for people and agents:
// every visible session with its count of active executions, and the most
// recent executions across them. A session it cannot read is named in the
// answer rather than silently left out.
type SystemStatus struct {
	sessions SessionLister
	reader   Reader
}

// NewSystemStatus returns the use case.
func NewSystemStatus(s SessionLister, r Reader) *SystemStatus {
	return &SystemStatus{sessions: s, reader: r}
}

// Limits of the status snapshot.
const (
	StatusMaxSessions  = 1000
	StatusRecent       = 20
	statusActiveCap    = 500
	statusConcurrency  = 8
	statusSessionsPage = 200
)

// StatusInput selects what to read.
type StatusInput struct {
	// Only, when not nil, keeps just these sessions (a session-limited
	// caller).
	Only []string
	// Executions asks for active counts and recent executions; without it
	// only the session list is read.
	Executions bool
}

// SessionStatus is one session in the snapshot.
type SessionStatus struct {
	SessionID, Name string
	Workflows       int
	// Active counts executions that have not ended (at most 500 counted).
	Active int
}

// RecentExecution is one of the most recent executions.
type RecentExecution struct {
	SessionID string
	ExecutionSummary
}

// UnreadableSession names a session the snapshot could not read, and why.
type UnreadableSession struct {
	SessionID string
	Reason    string
}

// StatusReport is the snapshot.
type StatusReport struct {
	Sessions   []SessionStatus
	Recent     []RecentExecution
	Unreadable []UnreadableSession
	// Truncated is true when more than StatusMaxSessions sessions exist.
	Truncated bool
}

// Handle builds the snapshot, reading up to 8 sessions at a time.
func (uc *SystemStatus) Handle(ctx context.Context, in StatusInput) (StatusReport, error) {
	rep := StatusReport{Sessions: []SessionStatus{}, Recent: []RecentExecution{}, Unreadable: []UnreadableSession{}}
	after := ""
	for len(rep.Sessions) < StatusMaxSessions {
		page, err := uc.sessions.List(ctx, sessionapp.ListQuery{After: after, Limit: statusSessionsPage, Only: in.Only})
		if err != nil {
			return StatusReport{}, err
		}
		for _, s := range page {
			if len(rep.Sessions) == StatusMaxSessions {
				rep.Truncated = true
				break
			}
			rep.Sessions = append(rep.Sessions, SessionStatus{SessionID: s.ID, Name: s.Name, Workflows: s.WorkflowCount})
		}
		if len(page) < statusSessionsPage || rep.Truncated {
			break
		}
		after = page[len(page)-1].ID
	}
	if !in.Executions {
		return rep, nil
	}
	type read struct {
		active int
		recent []ExecutionSummary
		err    error
	}
	results := make([]read, len(rep.Sessions))
	sem := make(chan struct{}, statusConcurrency)
	var wg sync.WaitGroup
	for i := range rep.Sessions {
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			results[i].active, results[i].recent, results[i].err = uc.readSession(ctx, rep.Sessions[i].SessionID)
		})
	}
	wg.Wait()
	for i, r := range results {
		sid := rep.Sessions[i].SessionID
		if r.err != nil {
			rep.Unreadable = append(rep.Unreadable, UnreadableSession{SessionID: sid, Reason: r.err.Error()})
			continue
		}
		rep.Sessions[i].Active = r.active
		for _, e := range r.recent {
			rep.Recent = append(rep.Recent, RecentExecution{SessionID: sid, ExecutionSummary: e})
		}
	}
	slices.SortFunc(rep.Recent, func(a, b RecentExecution) int {
		return cmp.Or(b.StartedAt.Compare(a.StartedAt), cmp.Compare(a.ID, b.ID))
	})
	if len(rep.Recent) > StatusRecent {
		rep.Recent = rep.Recent[:StatusRecent]
	}
	return rep, ctx.Err()
}

func (uc *SystemStatus) readSession(ctx context.Context, sid string) (int, []ExecutionSummary, error) {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	active := 0
	for _, st := range []execution.Status{execution.Pending, execution.Running, execution.Paused} {
		rows, err := uc.reader.History(ctx, HistoryQuery{SessionID: sid, Status: st, Limit: statusActiveCap})
		if err != nil {
			return 0, nil, err
		}
		active += len(rows)
	}
	recent, err := uc.reader.History(ctx, HistoryQuery{SessionID: sid, Limit: StatusRecent})
	if err != nil {
		return 0, nil, err
	}
	return active, recent, nil
}
