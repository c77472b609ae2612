package executionapp_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/yukta/yukta/application/executionapp"
	"github.com/yukta/yukta/application/sessionapp"
	"github.com/yukta/yukta/domain/execution"
	"github.com/yukta/yukta/domain/session"
)

type sessions []string

func (s sessions) List(_ context.Context, q sessionapp.ListQuery) ([]sessionapp.Summary, error) {
	var out []sessionapp.Summary
	for _, id := range s {
		if id <= q.After || q.Only != nil && !contains(q.Only, id) || len(out) == q.Limit {
			continue
		}
		var x sessionapp.Summary
		x.Summary = session.Summary{ID: id, Name: strings.ToUpper(id), WorkflowCount: 1}
		out = append(out, x)
	}
	return out, nil
}

func contains(ss []string, s string) bool {
	for _, x := range ss {
		if x == s {
			return true
		}
	}
	return false
}

func TestSystemStatus(t *testing.T) {
	t.Parallel()
	at := func(m int) time.Time { return time.Date(2026, 1, 1, 0, m, 0, 0, time.UTC) }
	r := &memReader{history: map[string][]executionapp.ExecutionSummary{}}
	for i := range 15 {
		r.history["a"] = append(r.history["a"], executionapp.ExecutionSummary{ID: fmt.Sprintf("a%02d", i), Status: execution.Success, StartedAt: at(i)})
		r.history["b"] = append(r.history["b"], executionapp.ExecutionSummary{ID: fmt.Sprintf("b%02d", i), Status: execution.Running, StartedAt: at(i + 30)})
	}
	uc := executionapp.NewSystemStatus(sessions{"a", "b", "broken"}, r)
	rep, err := uc.Handle(t.Context(), executionapp.StatusInput{Executions: true})
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Sessions) != 3 || rep.Sessions[0].Active != 0 || rep.Sessions[1].Active != 15 {
		t.Errorf("sessions = %+v, want a with 0 active and b with 15", rep.Sessions)
	}
	if len(rep.Recent) != executionapp.StatusRecent || rep.Recent[0].ID != "b14" || rep.Recent[0].SessionID != "b" {
		t.Errorf("recent = %d, first %+v; want 20, newest b14 first", len(rep.Recent), rep.Recent[0])
	}
	if len(rep.Unreadable) != 1 || rep.Unreadable[0].SessionID != "broken" || !strings.Contains(rep.Unreadable[0].Reason, "unreadable") {
		t.Errorf("unreadable = %+v, want broken named", rep.Unreadable)
	}
	rep, err = uc.Handle(t.Context(), executionapp.StatusInput{Only: []string{"a"}, Executions: true})
	if err != nil || len(rep.Sessions) != 1 || rep.Sessions[0].SessionID != "a" {
		t.Errorf("limited: %+v %v, want only a", rep.Sessions, err)
	}
	for _, e := range rep.Recent {
		if e.SessionID != "a" {
			t.Errorf("limited status shows %s of session %s", e.ID, e.SessionID)
		}
	}
}
