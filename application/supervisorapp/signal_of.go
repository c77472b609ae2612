package supervisorapp

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/yukta/yukta/application/executionapp"
	"github.com/yukta/yukta/domain/supervisor"
)

// signalOf turns one outbox event into the signal sup receives for it, the
// same for the runtime's engines and for agents reading the agent API: a
// REVIEW when the event asks sup for a verdict on a review that still waits
// for it (the store, not the event, says so), an EVENT (its data redacted)
// when the event lies on an owned unit, a DELEGATED or CONSULTED signal
// for a delegation's target (while it is OPEN) or, with the answer, its
// sender (delegationSignal), an EVENT for the supervisor a
// SupervisorLimitReached names, nothing otherwise.
func signalOf(ctx context.Context, red EventRedactor, reviews ReviewStore, dels DelegationStore, sup supervisor.Supervisor, e executionapp.StoredEvent) (supervisor.Signal, bool, error) {
	if e.Type == EventDelegationRequested || e.Type == EventDelegationAnswered {
		return delegationSignal(ctx, dels, sup, e)
	}
	if e.Type == EventSupervisorLimitReached {
		// The loop bounds' notice (loop_guard.go) belongs to no session:
		// it goes to the supervisor it names, as an EVENT.
		if e.Data["supervisorId"] != sup.ID() {
			return supervisor.Signal{}, false, nil
		}
		return supervisor.NewSignal(EventCursor(e), EventSignal(e, e.Data)), true, nil
	}
	if e.Type == EventReviewRequested && e.Data["supervisorId"] == sup.ID() {
		id, _ := e.Data["reviewId"].(string)
		if reviews == nil || id == "" || !sup.Takes(supervisor.KindReview) {
			return supervisor.Signal{}, false, nil
		}
		r, ok, err := reviews.Review(ctx, id)
		if err != nil {
			return supervisor.Signal{}, false, fmt.Errorf("read review %s: %w", id, err)
		}
		if !ok || r.Status() != supervisor.ReviewPending || r.Asking() != sup.ID() {
			return supervisor.Signal{}, false, nil
		}
		return supervisor.NewSignal(EventCursor(e), ReviewSignal(r)), true, nil
	}
	if !sup.OwnsPlace(supervisor.Place{SessionID: e.SessionID, WorkflowID: e.WorkflowID}) {
		return supervisor.Signal{}, false, nil
	}
	data, err := red.Redact(ctx, e)
	if err != nil {
		return supervisor.Signal{}, false, fmt.Errorf("redact: %w", err)
	}
	return supervisor.NewSignal(EventCursor(e), EventSignal(e, data)), true, nil
}

// delegationSignal is the signal of a delegation event for sup: the request
// for its target (DelegationRequested, while the delegation is OPEN), the
// answer for its sender (DelegationAnswered), each as DELEGATED (ESCALATE)
// or CONSULTED (CONSULT) when sup's engine takes that kind. The store, not
// the event, has the payload and the answer.
func delegationSignal(ctx context.Context, dels DelegationStore, sup supervisor.Supervisor, e executionapp.StoredEvent) (supervisor.Signal, bool, error) {
	who := "to"
	if e.Type == EventDelegationAnswered {
		who = "from"
	}
	id, _ := e.Data["delegationId"].(string)
	kind, _ := e.Data["kind"].(string)
	if dels == nil || id == "" || e.Data[who] != sup.ID() || !sup.Takes(supervisor.DelegationKind(kind).SignalKind()) {
		return supervisor.Signal{}, false, nil
	}
	d, ok, err := dels.Delegation(ctx, id)
	if err != nil {
		return supervisor.Signal{}, false, fmt.Errorf("read delegation %s: %w", id, err)
	}
	if !ok {
		return supervisor.Signal{}, false, nil
	}
	answer := e.Type == EventDelegationAnswered
	if (!answer && (d.Status() != supervisor.DelegationOpen || d.To() != sup.ID())) ||
		(answer && (d.Status() != supervisor.DelegationAnswered || d.From() != sup.ID())) {
		return supervisor.Signal{}, false, nil
	}
	return supervisor.NewSignal(EventCursor(e), DelegationSignal(d, answer)), true, nil
}

// DelegationSignal is the body of the signal of a delegation: its request
// (for the target) or, with answer, its answer (for the sender).
func DelegationSignal(d supervisor.Delegation, answer bool) supervisor.SignalBody {
	payload := rawJSON(d.Payload())
	var ans any
	to := ""
	if answer {
		ans, to = rawJSON(d.Answer()), d.To()
	}
	if d.Kind() == supervisor.Consult {
		return supervisor.ConsultedSignal{DelegationID: d.ID(), From: d.From(), Payload: payload, To: to, Answered: answer, Answer: ans}
	}
	return supervisor.DelegatedSignal{DelegationID: d.ID(), From: d.From(), Request: payload, To: to, Answered: answer, Answer: ans}
}

// rawJSON is a stored JSON document as a signal carries it ("null" for
// none).
func rawJSON(b []byte) json.RawMessage {
	if len(b) == 0 {
		return json.RawMessage("null")
	}
	return json.RawMessage(b)
}

// EventPosition is the outbox position of a stored event.
func EventPosition(e executionapp.StoredEvent) supervisor.Position {
	return supervisor.Position{XID: e.XID, Seq: e.Seq}
}

// EventCursor is the cursor of the signal of a stored event.
func EventCursor(e executionapp.StoredEvent) string { return supervisor.FormatCursor(EventPosition(e)) }

// ReviewSignal is the body of a REVIEW signal for a review.
func ReviewSignal(r supervisor.Review) supervisor.ReviewSignal {
	return supervisor.ReviewSignal{ReviewID: r.ID(), Command: r.Command(), Actor: r.Actor(), Channel: r.Channel(),
		SessionID: r.SessionID(), WorkflowID: r.WorkflowID(), ExecutionID: r.ExecutionID(), Reason: r.Reason(), Deadline: r.Deadline()}
}

// EventSignal is the body of an EVENT signal for a stored event whose data
// is already redacted.
func EventSignal(e executionapp.StoredEvent, redacted map[string]any) supervisor.EventSignal {
	return supervisor.EventSignal{Seq: e.Seq, At: e.At, Type: e.Type, SessionID: e.SessionID, WorkflowID: e.WorkflowID,
		ExecutionID: e.ExecutionID, NodeID: e.NodeID, Actor: e.Actor, Data: redacted}
}
