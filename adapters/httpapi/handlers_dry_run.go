package httpapi

import (
	"context"
	"encoding/json"

	"github.com/yukta/yukta/adapters/httpapi/restapi"
	"github.com/yukta/yukta/application/engines/rulesengine"
	"github.com/yukta/yukta/application/executionapp"
	"github.com/yukta/yukta/domain/fault"
)

// DryRunRules replays an execution through a rule document. The execution's
// session comes from the body, so a session-limited key is checked here: a
// run of another session reads as one that does not exist.
func (h *handlers) DryRunRules(ctx context.Context, req restapi.DryRunRulesRequestObject) (restapi.DryRunRulesResponseObject, error) {
	if h.uc.Supervisors.DryRun == nil {
		return nil, fault.Newf(fault.ErrNotFound, "the supervisor runtime is not enabled on this server")
	}
	b := req.Body
	if see := visible(ctx); see != nil && !see(b.SessionId) {
		return nil, fault.Newf(executionapp.ErrExecutionNotFound, "execution %s not found in session %s", b.ExecutionId, b.SessionId)
	}
	in := rulesengine.DryRunInput{Preset: b.Preset, Parameters: b.Parameters, SessionID: b.SessionId, ExecutionID: b.ExecutionId}
	if b.RuleDocument != nil {
		raw, err := json.Marshal(b.RuleDocument)
		if err != nil {
			return nil, err
		}
		in.RuleDocument = raw
	}
	rep, err := h.uc.Supervisors.DryRun.Handle(ctx, in)
	if err != nil {
		return nil, err
	}
	out := restapi.DryRunRules200JSONResponse{SessionId: rep.SessionID, ExecutionId: rep.ExecutionID, Events: rep.Events,
		Truncated: rep.Truncated}
	if out.Fired, err = asObjects(rep.Fired); err == nil {
		if out.Evaluations, err = asObjects(rep.Evaluations); err == nil {
			out.NotReplayed, err = asObjects(rep.NotReplayed)
		}
	}
	return out, err
}

// asObjects turns report rows into the JSON objects the API lists.
func asObjects[T any](rows []T) ([]map[string]any, error) {
	out := make([]map[string]any, 0, len(rows))
	for _, r := range rows {
		raw, err := json.Marshal(r)
		if err != nil {
			return nil, err
		}
		var m map[string]any
		if err := json.Unmarshal(raw, &m); err != nil {
			return nil, err
		}
		out = append(out, m)
	}
	return out, nil
}
