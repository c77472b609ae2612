package supervisorapp

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/yukta/yukta/application/executionapp"
	"github.com/yukta/yukta/domain/fault"
	"github.com/yukta/yukta/domain/supervisor"
)

// Gate is the review gate of Control and StartExecution
// (executionapp.ReviewGate): a command on a unit that enabled supervisors
// own and review (its type in their reviews) is stored as a review, and
// each reviewer in turn is asked through a REVIEW signal (a
// ReviewRequested event its runtime worker reads). The command applies
// when the review allows it (AnswerReview, DecideApproval, the sweeper).
type Gate struct {
	sups  Reader
	runs  RunDirectory
	store ReviewStore
	cfg   ReviewConfig
	now   func() time.Time
}

// NewGate returns the gate.
func NewGate(sups Reader, runs RunDirectory, store ReviewStore, cfg ReviewConfig, now func() time.Time) *Gate {
	return &Gate{sups: sups, runs: runs, store: store, cfg: cfg.withDefaults(), now: now}
}

var _ executionapp.ReviewGate = (*Gate)(nil)

// Open holds the command when a supervisor reviews it.
func (g *Gate) Open(ctx context.Context, r executionapp.Reviewable) (executionapp.ReviewTicket, bool, error) {
	var cmd supervisor.Command
	var key, actor, channel, reason string
	var request any
	switch {
	case r.Start != nil:
		cmd = supervisor.StartCommand(r.SessionID, r.WorkflowID, r.Start.Payload)
		key, actor, channel, request = r.Start.IdempotencyKey, r.Start.Actor, r.Start.Channel, r.Start
	case r.Control != nil:
		c, ok := supervisor.ControlCommand(r.Command, r.SessionID, r.WorkflowID, r.ExecutionID)
		if !ok {
			return executionapp.ReviewTicket{}, false, nil
		}
		cmd = c
		key, actor, channel, reason, request = r.Control.Key, r.Control.Actor, r.Control.Channel, r.Control.Reason, r.Control
	default:
		return executionapp.ReviewTicket{}, false, nil
	}
	list, err := g.sups.Supervisors(ctx)
	if err != nil {
		return executionapp.ReviewTicket{}, false, err
	}
	sups := make([]supervisor.Supervisor, 0, len(list))
	anyReviews := false
	for _, s := range list {
		sups = append(sups, s.Supervisor)
		anyReviews = anyReviews || (s.Supervisor.Enabled() && s.Supervisor.ReviewsCommand(cmd.Type()))
	}
	if !anyReviews { // the common case: no run lookup
		return executionapp.ReviewTicket{}, false, nil
	}
	workflowID := r.WorkflowID
	if r.ExecutionID != "" {
		found, err := g.runs.Runs(ctx, []string{r.ExecutionID})
		if err != nil {
			return executionapp.ReviewTicket{}, false, err
		}
		run, ok := found[r.ExecutionID]
		if !ok || run.SessionID != r.SessionID {
			return executionapp.ReviewTicket{}, false, nil // the use case says it does not exist
		}
		workflowID = run.WorkflowID
	}
	reviewers := supervisor.ReviewersOf(sups, cmd.Type(), supervisor.Place{SessionID: r.SessionID, WorkflowID: workflowID}, actor)
	if len(reviewers) == 0 {
		return executionapp.ReviewTicket{}, false, nil
	}
	req, err := json.Marshal(request)
	if err != nil {
		return executionapp.ReviewTicket{}, false, fmt.Errorf("supervisorapp: encode the reviewed request: %w", err)
	}
	rev, err := supervisor.NewReview(supervisor.ReviewSpec{ID: executionapp.NewID(), Key: key, SessionID: r.SessionID, WorkflowID: workflowID,
		ExecutionID: r.ExecutionID, NodeID: r.NodeID, Command: cmd, Request: req, Actor: actor, Channel: channel, Reason: reason,
		Reviewers: reviewers, Timeout: g.cfg.Timeout, Default: g.cfg.Default, At: g.now()})
	if err != nil {
		return executionapp.ReviewTicket{}, false, err
	}
	stored, created, err := g.store.OpenReview(ctx, rev, reviewEvents(rev, 0))
	if err != nil {
		return executionapp.ReviewTicket{}, false, err
	}
	if !created {
		a, _ := json.Marshal(stored.Command())
		b, _ := json.Marshal(cmd)
		if !bytes.Equal(a, b) {
			return executionapp.ReviewTicket{}, false, fault.Newf(executionapp.ErrKeyReused,
				"the key %q was already used for another command under review %s (%s); send a new key for a different command", key, stored.ID(), a)
		}
	}
	return Ticket(stored), true, nil
}

// Wait polls the review until it settles or d runs out. Waits on reviews
// are rare (a person's command under review), so a short poll is simpler
// than a feed and costs little.
func (g *Gate) Wait(ctx context.Context, id string, d time.Duration) (executionapp.ReviewTicket, error) {
	deadline := time.Now().Add(d)
	every := 20 * time.Millisecond
	for {
		r, ok, err := g.store.Review(ctx, id)
		if err != nil {
			return executionapp.ReviewTicket{}, err
		}
		if !ok {
			return executionapp.ReviewTicket{}, fault.Newf(supervisor.ErrReviewNotFound, "review %s does not exist", id)
		}
		left := time.Until(deadline)
		if r.Status().Settled() || left <= 0 {
			return Ticket(r), nil
		}
		t := time.NewTimer(min(every, left))
		select {
		case <-ctx.Done():
			t.Stop()
			return executionapp.ReviewTicket{}, ctx.Err()
		case <-t.C:
		}
		every = min(2*every, 250*time.Millisecond)
	}
}

// Ticket is a review as the command's sender sees it.
func Ticket(r supervisor.Review) executionapp.ReviewTicket {
	t := executionapp.ReviewTicket{ReviewID: r.ID(), Status: string(r.Status()), Asking: r.Asking(), Settled: r.Status().Settled()}
	switch r.Status() {
	case supervisor.ReviewPending:
		t.Deadline = r.Deadline()
		t.Message = fmt.Sprintf("%s is held for review by supervisor %s (review %s); it applies when the review allows it",
			r.Command().Type(), r.Asking(), r.ID())
	case supervisor.ReviewAwaitingApproval:
		t.Message = fmt.Sprintf("%s waits for an ADMIN's approval (approval %s): %s", r.Command().Type(), r.ID(), r.LastStep().Reason)
	case supervisor.ReviewAllowed:
		t.Message = fmt.Sprintf("%s was allowed and is being applied (review %s)", r.Command().Type(), r.ID())
	case supervisor.ReviewDenied:
		t.Denied = r.Denial()
		t.Message = t.Denied.Error()
	case supervisor.ReviewApplied:
		var o executionapp.ReviewOutcome
		if err := json.Unmarshal(r.Outcome(), &o); err != nil {
			o.Refused = fmt.Sprintf("the outcome of review %s could not be read: %v", r.ID(), err)
		}
		t.Applied = &o
		t.Message = fmt.Sprintf("%s was allowed and applied (review %s)", r.Command().Type(), r.ID())
	}
	return t
}

// reviewEvents are the outbox events of a review's steps from from on:
// ReviewRequested for each supervisor asked, ReviewDecided for each
// decision.
func reviewEvents(r supervisor.Review, from int) []executionapp.Event {
	steps := r.Steps()
	cmd := map[string]any{}
	if b, err := json.Marshal(r.Command()); err == nil {
		_ = json.Unmarshal(b, &cmd)
	}
	var out []executionapp.Event
	ev := func(typ, actor string, data map[string]any) executionapp.Event {
		data["reviewId"] = r.ID()
		data["command"] = cmd
		return executionapp.Event{Type: typ, At: r.CreatedAt(), SessionID: r.SessionID(), WorkflowID: r.WorkflowID(),
			ExecutionID: r.ExecutionID(), NodeID: r.NodeID(), Actor: actor, Channel: r.Channel(), Data: data}
	}
	for i := from; i < len(steps); i++ {
		s := steps[i]
		if s.Move != "REQUEST" {
			d := map[string]any{"move": string(s.Move), "status": string(s.Status)}
			if s.Reason != "" {
				d["reason"] = s.Reason
			}
			if id, ok := supervisorOf(s.By); ok {
				d["supervisorId"] = id
			}
			e := ev(EventReviewDecided, s.By, d)
			e.At = s.At
			out = append(out, e)
		}
		if s.Asking != "" {
			d := map[string]any{"supervisorId": s.Asking, "deadline": r.Deadline().UTC().Format(time.RFC3339Nano),
				"requestedBy": r.Actor(), "channel": r.Channel()}
			if r.Reason() != "" {
				d["reason"] = r.Reason()
			}
			if s.Move == supervisor.MoveNoOpinion {
				d["escalatedFrom"] = s.By
			}
			actor := s.By
			e := ev(EventReviewRequested, actor, d)
			e.At = s.At
			out = append(out, e)
		}
	}
	return out
}

// supervisorOf reads the supervisor id of an actor supervisor:<id>.
func supervisorOf(actor string) (string, bool) {
	const p = "supervisor:"
	if len(actor) > len(p) && actor[:len(p)] == p {
		return actor[len(p):], true
	}
	return "", false
}
