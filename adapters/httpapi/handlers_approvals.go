package httpapi

import (
	"context"
	"encoding/json"

	"github.com/yukta/yukta/adapters/authn"
	"github.com/yukta/yukta/adapters/httpapi/restapi"
	"github.com/yukta/yukta/application/executionapp"
	"github.com/yukta/yukta/application/supervisorapp"
	"github.com/yukta/yukta/domain/fault"
	"github.com/yukta/yukta/domain/supervisor"
)

// ApprovalUseCases are the review and approval calls.
type ApprovalUseCases struct {
	List interface {
		Handle(context.Context, supervisorapp.ApprovalQuery) ([]supervisor.Review, error)
		Get(ctx context.Context, id string, allowed func(string) bool) (supervisor.Review, error)
	}
	Decide interface {
		Handle(context.Context, supervisorapp.DecideInput) (supervisor.Review, error)
	}
}

func (a ApprovalUseCases) enabled() error {
	if a.List == nil || a.Decide == nil {
		return fault.Newf(fault.ErrNotFound, "approvals are not enabled on this server")
	}
	return nil
}

// sessionFilter is what a session-limited key may see (nil: everything).
func sessionFilter(ctx context.Context) func(string) bool {
	p := authn.PrincipalFrom(ctx)
	if !p.Limited() {
		return nil
	}
	return p.SessionVisible
}

func (h *handlers) ListApprovals(ctx context.Context, req restapi.ListApprovalsRequestObject) (restapi.ListApprovalsResponseObject, error) {
	if err := h.uc.Approvals.enabled(); err != nil {
		return nil, err
	}
	list, err := h.uc.Approvals.List.Handle(ctx, supervisorapp.ApprovalQuery{Status: req.Params.Status, Limit: req.Params.Limit, Sessions: keySessions(ctx)})
	if err != nil {
		return nil, err
	}
	out := restapi.ListApprovals200JSONResponse{Reviews: make([]restapi.Review, len(list))}
	for i, r := range list {
		out.Reviews[i] = reviewToAPI(r)
	}
	return out, nil
}

func (h *handlers) GetApproval(ctx context.Context, req restapi.GetApprovalRequestObject) (restapi.GetApprovalResponseObject, error) {
	if err := h.uc.Approvals.enabled(); err != nil {
		return nil, err
	}
	r, err := h.uc.Approvals.List.Get(ctx, req.ApprovalId, sessionFilter(ctx))
	if err != nil {
		return nil, err
	}
	return restapi.GetApproval200JSONResponse(reviewToAPI(r)), nil
}

func (h *handlers) DecideApproval(ctx context.Context, req restapi.DecideApprovalRequestObject) (restapi.DecideApprovalResponseObject, error) {
	if err := h.uc.Approvals.enabled(); err != nil {
		return nil, err
	}
	if err := authorizeScoped(ctx, "decideApproval"); err != nil {
		return nil, err
	}
	r, err := h.uc.Approvals.Decide.Handle(ctx, supervisorapp.DecideInput{ApprovalID: req.ApprovalId, Decision: string(req.Body.Decision),
		Reason: req.Body.Reason, Actor: actor(ctx), SessionAllowed: sessionFilter(ctx)})
	if err != nil {
		return nil, err
	}
	return restapi.DecideApproval200JSONResponse(reviewToAPI(r)), nil
}

// reviewToAPI is a review on the wire.
func reviewToAPI(r supervisor.Review) restapi.Review {
	out := restapi.Review{ReviewId: r.ID(), Status: restapi.ReviewStatus(r.Status()), SessionId: r.SessionID(), WorkflowId: r.WorkflowID(),
		ExecutionId: r.ExecutionID(), NodeId: r.NodeID(), Actor: r.Actor(), Channel: r.Channel(), Reason: r.Reason(),
		Reviewers: nonNilStrings(r.Reviewers()), Asking: r.Asking(), CreatedAt: r.CreatedAt().UTC(), Steps: []restapi.ReviewStep{}}
	if b, err := json.Marshal(r.Command()); err == nil {
		_ = json.Unmarshal(b, &out.Command)
	}
	if r.Status() == supervisor.ReviewPending {
		out.Deadline = r.Deadline().UTC()
	}
	if o := r.Outcome(); o != nil {
		_ = json.Unmarshal(o, &out.Outcome)
	}
	for _, s := range r.Steps() {
		out.Steps = append(out.Steps, restapi.ReviewStep{At: s.At.UTC(), By: s.By, Move: restapi.ReviewStepMove(s.Move), Reason: s.Reason,
			Status: restapi.ReviewStatus(s.Status), Asking: s.Asking})
	}
	return out
}

// ticketToAPI is a held command's ticket on the wire.
func ticketToAPI(t executionapp.ReviewTicket) restapi.ReviewTicket {
	out := restapi.ReviewTicket{ReviewId: t.ReviewID, Status: restapi.ReviewStatus(t.Status), Asking: t.Asking, Message: t.Message}
	if !t.Deadline.IsZero() {
		out.Deadline = t.Deadline.UTC()
	}
	return out
}
