package executionapp_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/yukta/yukta/application/executionapp"
	"github.com/yukta/yukta/domain/plugin"
)

// memReader is a Reader over fixed data: one execution with its log, and a
// history per session (failing for the session "broken").
type memReader struct {
	sessionID, id string
	lines         []executionapp.LogEntry // oldest first
	history       map[string][]executionapp.ExecutionSummary
}

func (r *memReader) Execution(_ context.Context, sid, id string) (executionapp.ExecutionView, error) {
	if sid != r.sessionID || id != r.id {
		return executionapp.ExecutionView{}, executionapp.ErrExecutionNotFound
	}
	return executionapp.ExecutionView{ID: id, SessionID: sid}, nil
}

func (r *memReader) History(_ context.Context, q executionapp.HistoryQuery) ([]executionapp.ExecutionSummary, error) {
	if q.SessionID == "broken" {
		return nil, errors.New("history unreadable")
	}
	var out []executionapp.ExecutionSummary
	for _, e := range r.history[q.SessionID] {
		if q.Status == "" || e.Status == q.Status {
			out = append(out, e)
		}
	}
	return out, nil
}

func (r *memReader) LogsBefore(_ context.Context, _ string, before int64, limit int) ([]executionapp.LogEntry, int64, error) {
	var out []executionapp.LogEntry
	for i := len(r.lines) - 1; i >= 0 && len(out) < limit; i-- {
		if before == 0 || r.lines[i].Seq < before {
			out = append(out, r.lines[i])
		}
	}
	return out, int64(len(r.lines)), nil
}

func (r *memReader) Inputs(context.Context, executionapp.InputQuery) ([]executionapp.Input, error) {
	return nil, nil
}
func (r *memReader) Events(context.Context, executionapp.EventQuery) ([]executionapp.StoredEvent, error) {
	return nil, nil
}
func (r *memReader) EventExists(context.Context, int64, []string) (bool, error) { return false, nil }

type defs map[string][]byte

func (d defs) Source(_ context.Context, id string) (executionapp.RunSource, error) {
	return executionapp.RunSource{ExecutionID: id, WorkflowID: "w", Definition: d[id]}, nil
}

type catalog map[string]plugin.Descriptor

func (c catalog) Describe(t string) (plugin.Descriptor, bool) { d, ok := c[t]; return d, ok }

func TestTailLogsMasksSecretConfigValues(t *testing.T) {
	t.Parallel()
	const id = "e1"
	r := &memReader{sessionID: "s", id: id, lines: []executionapp.LogEntry{
		{Seq: 1, Level: "info", Message: "calling with Bearer tok-0123456789 now"},
		{Seq: 2, Level: "info", Message: "raw token tok-0123456789 and hook secret whsec-abcdefgh"},
		{Seq: 3, Level: "info", Message: "nothing secret; short value ab stays"},
	}}
	cat := catalog{
		"CALL": {Type: "CALL", Category: plugin.Processor, Description: "x", Fields: []plugin.Field{{Name: "authorization", Type: plugin.String, Secret: true}, {Name: "short", Type: plugin.String, Secret: true}}},
		"HOOK": {Type: "HOOK", Category: plugin.Trigger, Description: "x", Fields: []plugin.Field{{Name: "secret", Type: plugin.String, Secret: true}}},
	}
	def := []byte(`{"nodes":[{"nodeId":"h","type":"HOOK","config":{"secret":"whsec-abcdefgh"}},{"nodeId":"c","type":"CALL","config":{"authorization":"Bearer tok-0123456789","short":"ab"}},{"nodeId":"gone","type":"REMOVED","config":{"secret":"kept-visible"}}],"edges":[]}`)
	uc := executionapp.NewTailLogs(r, defs{id: def}, cat, time.Now)
	res, err := uc.Handle(t.Context(), executionapp.TailInput{SessionID: "s", ExecutionID: id})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"calling with *** now", "raw token *** and hook secret ***", "nothing secret; short value ab stays"}
	for i, l := range res.Lines {
		if l.Message != want[i] {
			t.Errorf("line %d = %q, want %q", i, l.Message, want[i])
		}
	}
	if r.lines[0].Message != "calling with Bearer tok-0123456789 now" {
		t.Error("Handle changed the reader's lines")
	}
	// A filter sees the masked text, so it cannot find a secret by counting.
	for _, guess := range []string{"tok-0123", "whsec", `Bearer tok`} {
		res, err := uc.Handle(t.Context(), executionapp.TailInput{SessionID: "s", ExecutionID: id, FilterPattern: guess})
		if err != nil || res.TotalMatched != 0 || len(res.Lines) != 0 {
			t.Errorf("filter %q: %d matches %v (%v), want none", guess, res.TotalMatched, res.Lines, err)
		}
	}
	res, err = uc.Handle(t.Context(), executionapp.TailInput{SessionID: "s", ExecutionID: id, FilterPattern: `\*\*\*`})
	if err != nil || res.TotalMatched != 2 || res.Lines[1].Message != want[1] {
		t.Errorf("filter on the mask: %d %v %v", res.TotalMatched, res.Lines, err)
	}
	_, err = uc.Handle(t.Context(), executionapp.TailInput{SessionID: "other", ExecutionID: id})
	if !errors.Is(err, executionapp.ErrExecutionNotFound) {
		t.Errorf("foreign execution: %v, want ErrExecutionNotFound", err)
	}
}
