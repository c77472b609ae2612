package supervisorapp

import (
	"context"
	"fmt"

	"github.com/yukta/yukta/domain/fault"
	"github.com/yukta/yukta/domain/supervisor"
)

// AnswerReview takes a supervisor's verdict on a review it was asked (the
// rules engine's answer to a REVIEW signal; the agent API's POST
// /reviews/{id} next). ALLOW asks the next reviewer or applies the
// command; DENY refuses it; REQUIRE_APPROVAL parks it for an ADMIN;
// NO_OPINION asks the supervisor's parent, or at the root takes the
// configured default.
type AnswerReview struct{ a *reviewApplier }

// NewAnswerReview returns the use case.
func NewAnswerReview(d ApplierDeps) *AnswerReview { return &AnswerReview{a: newApplier(d)} }

// AnswerInput is one verdict.
type AnswerInput struct {
	ReviewID     string
	SupervisorID string
	Verdict      supervisor.Verdict
	// Fence is the answering engine's lease; an engine that lost it
	// answers nothing (ErrLeaseLost).
	Fence *Fence
}

// Handle records the verdict and returns the review as it stands after
// it. A review that has moved on (another answer, the timeout, an ADMIN)
// is supervisor.ErrReviewSettled.
func (uc *AnswerReview) Handle(ctx context.Context, in AnswerInput) (supervisor.Review, error) {
	if !in.Verdict.Decision().Valid() {
		return supervisor.Review{}, fault.Newf(fault.ErrInvalid, "the verdict has no decision; build it with supervisor.NewVerdict or ParseVerdict")
	}
	parentOf, err := uc.a.parents(ctx)
	if err != nil {
		return supervisor.Review{}, err
	}
	now := uc.a.now()
	r, err := uc.a.change(ctx, in.ReviewID, in.Fence, func(r *supervisor.Review) error {
		return r.Answer(in.SupervisorID, in.Verdict, parentOf, now)
	})
	if err != nil {
		return supervisor.Review{}, fmt.Errorf("answer review %s: %w", in.ReviewID, err)
	}
	return r, nil
}
