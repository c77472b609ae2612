package httpapi

import (
	"context"

	"github.com/yukta/yukta/adapters/httpapi/restapi"
	"github.com/yukta/yukta/application/supervisorapp"
	"github.com/yukta/yukta/domain/fault"
	"github.com/yukta/yukta/domain/supervisor"
)

func (s SupervisorUseCases) holdsEnabled() error {
	if s.ListHolds == nil || s.ReleaseHold == nil {
		return fault.Newf(fault.ErrNotFound, "supervisors are not enabled on this server")
	}
	return nil
}

func (h *handlers) ListHolds(ctx context.Context, req restapi.ListHoldsRequestObject) (restapi.ListHoldsResponseObject, error) {
	if err := h.uc.Supervisors.holdsEnabled(); err != nil {
		return nil, err
	}
	hs, err := h.uc.Supervisors.ListHolds.Handle(ctx, supervisorapp.ListHoldsInput{SessionID: req.SessionId, ExecutionID: req.ExecutionId})
	if err != nil {
		return nil, err
	}
	return restapi.ListHolds200JSONResponse{ExecutionId: hs.ExecutionID(), PausedByHold: hs.PausedByHold(), Holds: holdsToAPI(hs.Entries())}, nil
}

func (h *handlers) ReleaseHold(ctx context.Context, req restapi.ReleaseHoldRequestObject) (restapi.ReleaseHoldResponseObject, error) {
	if err := h.uc.Supervisors.holdsEnabled(); err != nil {
		return nil, err
	}
	rel, err := h.uc.Supervisors.ReleaseHold.Handle(ctx, supervisorapp.ReleaseHoldInput{SessionID: req.SessionId, ExecutionID: req.ExecutionId,
		SupervisorID: req.SupervisorId, Reason: req.Params.Reason, Actor: actor(ctx), Channel: channel(string(req.Params.YuktaChannel))})
	if err != nil {
		return nil, err
	}
	return restapi.ReleaseHold200JSONResponse(holdReleaseToAPI(rel)), nil
}

func holdsToAPI(es []supervisor.HoldEntry) []restapi.Hold {
	out := make([]restapi.Hold, len(es))
	for i, e := range es {
		out[i] = restapi.Hold{SupervisorId: e.SupervisorID(), Since: e.Since().UTC(), Reason: e.Reason()}
	}
	return out
}

func holdReleaseToAPI(r supervisorapp.HoldRelease) restapi.HoldRelease {
	return restapi.HoldRelease{SessionId: r.SessionID, ExecutionId: r.ExecutionID, SupervisorId: r.SupervisorID, HeldSince: r.HeldSince.UTC(),
		HoldReason: r.HoldReason, Resumed: r.Resumed, CommandId: r.CommandID, Message: r.Message, Holds: holdsToAPI(r.Remaining)}
}
