package supervisorapp

import (
	"context"
	"fmt"

	"github.com/yukta/yukta/application/executionapp"
	"github.com/yukta/yukta/domain/supervisor"
)

// signalOf turns one outbox event into the signal sup receives for it, the
// same for the runtime's engines and for agents reading the agent API: a
// REVIEW when the event asks sup for a verdict on a review that still waits
// for it (the store, not the event, says so), an EVENT (its data redacted)
// when the event lies on an owned unit, nothing otherwise.
func signalOf(ctx context.Context, red EventRedactor, reviews ReviewStore, sup supervisor.Supervisor, e executionapp.StoredEvent) (supervisor.Signal, bool, error) {
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
		return supervisor.NewSignal(supervisor.FormatCursor(e.Seq), ReviewSignal(r)), true, nil
	}
	if !sup.OwnsPlace(supervisor.Place{SessionID: e.SessionID, WorkflowID: e.WorkflowID}) {
		return supervisor.Signal{}, false, nil
	}
	data, err := red.Redact(ctx, e)
	if err != nil {
		return supervisor.Signal{}, false, fmt.Errorf("redact: %w", err)
	}
	return supervisor.NewSignal(supervisor.FormatCursor(e.Seq), EventSignal(e, data)), true, nil
}
