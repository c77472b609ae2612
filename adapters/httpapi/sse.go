package httpapi

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"time"

	"github.com/yukta/yukta/adapters/authn"
	"github.com/yukta/yukta/adapters/httpapi/restapi"
	"github.com/yukta/yukta/application/executionapp"
	"github.com/yukta/yukta/domain/fault"
)

// Event streams poll the outbox; progress is pushed to the client as soon as
// a poll sees it, so a client never polls itself.
const (
	ssePoll      = 100 * time.Millisecond
	sseKeepAlive = 15 * time.Second
)

// eventStream writes events as Server-Sent Events until the client leaves or
// the server shuts down.
type eventStream struct {
	ctx   context.Context
	read  func(context.Context, executionapp.EventQuery) ([]executionapp.StoredEvent, error)
	query executionapp.EventQuery
	done  <-chan struct{}
}

type envelope struct {
	Seq         int64          `json:"seq"`
	At          time.Time      `json:"at"`
	Type        string         `json:"type"`
	SessionID   string         `json:"sessionId"`
	WorkflowID  string         `json:"workflowId,omitempty"`
	ExecutionID string         `json:"executionId,omitempty"`
	NodeID      string         `json:"nodeId,omitempty"`
	Actor       string         `json:"actor"`
	Channel     string         `json:"channel"`
	Data        map[string]any `json:"data"`
}

func (s eventStream) VisitStreamExecutionEventsResponse(w http.ResponseWriter) error {
	return s.write(w)
}
func (s eventStream) VisitStreamEventsResponse(w http.ResponseWriter) error { return s.write(w) }

func (s eventStream) write(w http.ResponseWriter) error {
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-cache")
	h.Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)
	rc := http.NewResponseController(w)
	_ = rc.SetWriteDeadline(time.Time{})
	_ = rc.Flush()
	poll := time.NewTicker(ssePoll)
	defer poll.Stop()
	last := time.Now()
	for {
		evs, err := s.read(s.ctx, s.query)
		if err != nil {
			if s.ctx.Err() != nil {
				s.keyEnded(w, rc)
				return nil
			}
			fmt.Fprintf(w, "event: error\ndata: {\"detail\":\"reading events failed; reconnect with Last-Event-ID\"}\n\n")
			_ = rc.Flush()
			return nil
		}
		for _, e := range evs {
			b, _ := json.Marshal(envelope{Seq: e.Seq, At: e.At.UTC(), Type: e.Type, SessionID: e.SessionID, WorkflowID: e.WorkflowID,
				ExecutionID: e.ExecutionID, NodeID: e.NodeID, Actor: e.Actor, Channel: e.Channel, Data: e.Data})
			fmt.Fprintf(w, "id: %d\nevent: %s\ndata: %s\n\n", e.Seq, e.Type, b)
			s.query.AfterSeq = e.Seq
		}
		if len(evs) > 0 {
			_ = rc.Flush()
			last = time.Now()
			if len(evs) == executionapp.MaxEventBatch {
				continue
			}
		} else if time.Since(last) > sseKeepAlive {
			fmt.Fprint(w, ": keep-alive\n\n")
			_ = rc.Flush()
			last = time.Now()
		}
		select {
		case <-s.ctx.Done():
			s.keyEnded(w, rc)
			return nil
		case <-s.done:
			fmt.Fprint(w, "event: shutdown\ndata: {}\n\n")
			_ = rc.Flush()
			return nil
		case <-poll.C:
		}
	}
}

// keyEnded writes the stream's last record when the key that opened it is
// no longer valid (authn.Hold ended the request): an `event: error` whose
// data is the problem a request with that key now gets, 401.
func (s eventStream) keyEnded(w http.ResponseWriter, rc *http.ResponseController) {
	cause := authn.Ended(s.ctx)
	if cause == nil {
		return
	}
	b, _ := json.Marshal(restapi.Problem{Type: typeUnauthenticated, Title: http.StatusText(http.StatusUnauthorized),
		Status: http.StatusUnauthorized, Detail: cause.Error()})
	fmt.Fprintf(w, "event: error\ndata: %s\n\n", b)
	_ = rc.Flush()
}

func lastEventID(s string) (int64, error) {
	if s == "" {
		return 0, nil
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil || n < 0 {
		return 0, &fault.ValidationError{Subject: "event stream", Violations: []fault.Violation{{
			Path: "header.Last-Event-ID", Message: fmt.Sprintf("%q is not an event seq; send the id of the last event you received", s)}}}
	}
	return n, nil
}

func (h *handlers) StreamExecutionEvents(ctx context.Context, req restapi.StreamExecutionEventsRequestObject) (restapi.StreamExecutionEventsResponseObject, error) {
	after, err := lastEventID(req.Params.LastEventID)
	if err != nil {
		return nil, err
	}
	if err := h.ex.Events.Check(ctx, req.SessionId, req.ExecutionId); err != nil {
		return nil, err
	}
	q := executionapp.EventQuery{SessionID: req.SessionId, ExecutionID: req.ExecutionId, Sessions: keySessions(ctx), AfterSeq: after}
	if err := h.ex.Events.CheckPosition(ctx, q); err != nil {
		return nil, err
	}
	return eventStream{ctx: ctx, read: h.ex.Events.Handle, done: h.done, query: q}, nil
}

func (h *handlers) StreamEvents(ctx context.Context, req restapi.StreamEventsRequestObject) (restapi.StreamEventsResponseObject, error) {
	after, err := lastEventID(req.Params.LastEventID)
	if err != nil {
		return nil, err
	}
	if req.Params.SessionId != "" {
		if _, err := h.uc.GetSession.Handle(ctx, req.Params.SessionId); err != nil {
			return nil, err
		}
	}
	q := executionapp.EventQuery{SessionID: req.Params.SessionId, Sessions: keySessions(ctx), AfterSeq: after}
	if err := h.ex.Events.CheckPosition(ctx, q); err != nil {
		return nil, err
	}
	return eventStream{ctx: ctx, read: h.ex.Events.Handle, done: h.done, query: q}, nil
}
