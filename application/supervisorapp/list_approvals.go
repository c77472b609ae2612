package supervisorapp

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/yukta/yukta/domain/fault"
	"github.com/yukta/yukta/domain/supervisor"
)

// ListApprovals reads reviews: by default the commands that wait for an
// ADMIN's approval, or every review in the given statuses.
type ListApprovals struct{ store ReviewStore }

// NewListApprovals returns the use case.
func NewListApprovals(s ReviewStore) *ListApprovals { return &ListApprovals{store: s} }

// MaxApprovals caps one list.
const MaxApprovals = 500

// ApprovalQuery filters the list.
type ApprovalQuery struct {
	// Status is one review status, ALL, or "" for AWAITING_APPROVAL.
	Status         string
	Limit          int
	SessionAllowed func(sessionID string) bool
	// Sessions, when not nil, are the only sessions the caller sees.
	Sessions []string
}

// Handle lists reviews, newest first.
func (uc *ListApprovals) Handle(ctx context.Context, q ApprovalQuery) ([]supervisor.Review, error) {
	var sts []supervisor.ReviewStatus
	switch s := supervisor.ReviewStatus(strings.ToUpper(strings.TrimSpace(q.Status))); {
	case s == "":
		sts = []supervisor.ReviewStatus{supervisor.ReviewAwaitingApproval}
	case s == "ALL":
	case s.Valid():
		sts = []supervisor.ReviewStatus{s}
	default:
		names := []string{"ALL"}
		for _, v := range supervisor.ReviewStatuses {
			names = append(names, string(v))
		}
		return nil, &fault.ValidationError{Subject: "approval list", Violations: []fault.Violation{{Path: "status",
			Message: fmt.Sprintf("%q is not a review status; use one of %s", q.Status, strings.Join(names, ", "))}}}
	}
	limit := q.Limit
	if limit <= 0 || limit > MaxApprovals {
		limit = MaxApprovals
	}
	list, err := uc.store.Reviews(ctx, ReviewQuery{Statuses: sts, Sessions: q.Sessions, Limit: limit})
	if err != nil {
		return nil, err
	}
	if q.SessionAllowed != nil {
		list = slices.DeleteFunc(list, func(r supervisor.Review) bool { return !q.SessionAllowed(r.SessionID()) })
	}
	return list, nil
}

// Get returns one review (an approval's id is its review's id).
func (uc *ListApprovals) Get(ctx context.Context, id string, allowed func(sessionID string) bool) (supervisor.Review, error) {
	r, ok, err := uc.store.Review(ctx, id)
	if err != nil {
		return supervisor.Review{}, err
	}
	if !ok || (allowed != nil && !allowed(r.SessionID())) {
		return supervisor.Review{}, fault.Newf(supervisor.ErrReviewNotFound, "review %s does not exist; list the approvals to find one", id)
	}
	return r, nil
}
