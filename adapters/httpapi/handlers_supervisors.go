package httpapi

import (
	"context"
	"encoding/json"

	"github.com/yukta/yukta/adapters/authn"
	"github.com/yukta/yukta/adapters/httpapi/restapi"
	"github.com/yukta/yukta/application/engines/rulesengine"
	"github.com/yukta/yukta/application/supervisorapp"
	"github.com/yukta/yukta/domain/fault"
	"github.com/yukta/yukta/domain/supervisor"
)

// SupervisorUseCases are the supervisor calls the REST handlers make. When
// the store's use cases are not set the supervisor routes answer 404; the
// engine catalogue needs no store and defaults to the application's own.
type SupervisorUseCases struct {
	Apply interface {
		Handle(context.Context, supervisorapp.ApplyInput) (supervisorapp.ApplyResult, error)
	}
	Get interface {
		Handle(context.Context, supervisorapp.GetInput) (supervisorapp.Summary, error)
	}
	List interface {
		Handle(context.Context, supervisorapp.ListInput) ([]supervisorapp.Summary, error)
	}
	Delete interface {
		Handle(context.Context, supervisorapp.DeleteInput) (supervisorapp.DeleteResult, error)
	}
	// ListHolds and ReleaseHold read and end the holds of a run
	// (handlers_holds.go); unset, their routes answer 404.
	ListHolds interface {
		Handle(context.Context, supervisorapp.ListHoldsInput) (supervisor.RunHolds, error)
	}
	ReleaseHold interface {
		Handle(context.Context, supervisorapp.ReleaseHoldInput) (supervisorapp.HoldRelease, error)
	}
	Engines interface {
		Handle(context.Context) ([]supervisorapp.EngineDescription, error)
	}
	Engine interface {
		Handle(context.Context, string) (supervisorapp.EngineDescription, error)
	}
	// DryRun replays an execution through a rule document; nil when the
	// supervisor runtime is not wired.
	DryRun interface {
		Handle(context.Context, rulesengine.DryRunInput) (rulesengine.DryRunReport, error)
	}
	// Credentials issue, read and revoke supervisor credentials
	// (handlers_credentials.go); unset, their routes answer 404.
	Credentials CredentialUseCases
	// Refusals reads a supervisor's refused directives; nil when the
	// supervisor runtime is not wired (404).
	Refusals interface {
		Handle(context.Context, supervisorapp.RefusalsInput) (supervisorapp.RefusalPage, error)
	}
	// Status reads a supervisor's runtime status (lease, cursor lag, last
	// directives); nil when the supervisor runtime is not wired (404).
	Status interface {
		Handle(context.Context, supervisorapp.StatusInput) (supervisorapp.Status, error)
	}
}

func (s SupervisorUseCases) enabled() error {
	if s.Apply == nil || s.Get == nil || s.List == nil || s.Delete == nil {
		return fault.Newf(fault.ErrNotFound, "supervisors are not enabled on this server")
	}
	return nil
}

func (s SupervisorUseCases) engines(ctx context.Context) ([]supervisorapp.EngineDescription, error) {
	if s.Engines == nil {
		return supervisorapp.NewListEngines().Handle(ctx)
	}
	return s.Engines.Handle(ctx)
}

func (s SupervisorUseCases) engine(ctx context.Context, typ string) (supervisorapp.EngineDescription, error) {
	if s.Engine == nil {
		return supervisorapp.NewDescribeEngine().Handle(ctx, typ)
	}
	return s.Engine.Handle(ctx, typ)
}

// limitedTo is the session list of a session-limited caller, nil otherwise.
func limitedTo(ctx context.Context) []string {
	if p := authn.PrincipalFrom(ctx); p.Limited() {
		return p.Sessions()
	}
	return nil
}

func (h *handlers) ListSupervisors(ctx context.Context, _ restapi.ListSupervisorsRequestObject) (restapi.ListSupervisorsResponseObject, error) {
	if err := h.uc.Supervisors.enabled(); err != nil {
		return nil, err
	}
	list, err := h.uc.Supervisors.List.Handle(ctx, supervisorapp.ListInput{Only: limitedTo(ctx)})
	if err != nil {
		return nil, err
	}
	out := restapi.ListSupervisors200JSONResponse{Supervisors: make([]restapi.SupervisorSummary, len(list))}
	for i, s := range list {
		out.Supervisors[i] = restapi.SupervisorSummary{Id: s.Supervisor.ID(), Name: s.Supervisor.Name(), Engine: s.Supervisor.EngineType(),
			Owns: units(s.Supervisor), ParentId: s.Supervisor.ParentID(), Enabled: s.Supervisor.Enabled(),
			CreatedAt: s.CreatedAt.UTC(), UpdatedAt: s.UpdatedAt.UTC(), UpdatedBy: s.UpdatedBy, UpdatedVia: s.UpdatedVia}
	}
	return out, nil
}

func (h *handlers) GetSupervisor(ctx context.Context, req restapi.GetSupervisorRequestObject) (restapi.GetSupervisorResponseObject, error) {
	if err := h.uc.Supervisors.enabled(); err != nil {
		return nil, err
	}
	s, err := h.uc.Supervisors.Get.Handle(ctx, supervisorapp.GetInput{ID: req.SupervisorId, Only: limitedTo(ctx)})
	if err != nil {
		return nil, err
	}
	return restapi.GetSupervisor200JSONResponse(withWarnings(supervisorToAPI(s.Supervisor), s.Warnings)), nil
}

func (h *handlers) PutSupervisor(ctx context.Context, req restapi.PutSupervisorRequestObject) (restapi.PutSupervisorResponseObject, error) {
	if err := h.uc.Supervisors.enabled(); err != nil {
		return nil, err
	}
	var doc []byte
	if req.Body != nil {
		doc = *req.Body
	}
	res, err := h.uc.Supervisors.Apply.Handle(ctx, supervisorapp.ApplyInput{ID: req.SupervisorId, Document: doc,
		Actor: actor(ctx), Channel: channel(string(req.Params.YuktaChannel))})
	if err != nil {
		return nil, err
	}
	out := withWarnings(supervisorToAPI(res.Supervisor), res.Warnings)
	if res.Created {
		return restapi.PutSupervisor201JSONResponse(out), nil
	}
	return restapi.PutSupervisor200JSONResponse(out), nil
}

func (h *handlers) DeleteSupervisor(ctx context.Context, req restapi.DeleteSupervisorRequestObject) (restapi.DeleteSupervisorResponseObject, error) {
	if err := h.uc.Supervisors.enabled(); err != nil {
		return nil, err
	}
	res, err := h.uc.Supervisors.Delete.Handle(ctx, supervisorapp.DeleteInput{ID: req.SupervisorId, Actor: actor(ctx),
		Channel: channel(string(req.Params.YuktaChannel))})
	if err != nil {
		return nil, err
	}
	out := restapi.DeleteSupervisor200JSONResponse{SupervisorId: req.SupervisorId, ReleasedHolds: make([]restapi.HoldRelease, len(res.Released))}
	for i, r := range res.Released {
		out.ReleasedHolds[i] = holdReleaseToAPI(r)
	}
	return out, nil
}

func (h *handlers) ListSupervisorEngines(ctx context.Context, _ restapi.ListSupervisorEnginesRequestObject) (restapi.ListSupervisorEnginesResponseObject, error) {
	ds, err := h.uc.Supervisors.engines(ctx)
	if err != nil {
		return nil, err
	}
	out := restapi.ListSupervisorEngines200JSONResponse{Engines: make([]restapi.SupervisorEngine, len(ds))}
	for i, d := range ds {
		out.Engines[i] = engineToAPI(d)
	}
	return out, nil
}

func (h *handlers) GetSupervisorEngine(ctx context.Context, req restapi.GetSupervisorEngineRequestObject) (restapi.GetSupervisorEngineResponseObject, error) {
	d, err := h.uc.Supervisors.engine(ctx, req.Type)
	if err != nil {
		return nil, err
	}
	return restapi.GetSupervisorEngine200JSONResponse(engineToAPI(d)), nil
}

func (h *handlers) GetSupervisorEngineUsage(ctx context.Context, req restapi.GetSupervisorEngineUsageRequestObject) (restapi.GetSupervisorEngineUsageResponseObject, error) {
	d, err := h.uc.Supervisors.engine(ctx, req.Type)
	if err != nil {
		return nil, err
	}
	out := restapi.GetSupervisorEngineUsage200JSONResponse{Type: d.Type, Usage: d.Usage, Example: supervisorToAPI(d.Example),
		Conditions: make([]restapi.ConditionPlace, len(d.Conditions))}
	for i, c := range d.Conditions {
		p := restapi.ConditionPlace{Context: string(c.Context), Where: c.Where, Variables: make([]restapi.ExpressionVariable, len(c.Variables))}
		for j, v := range c.Variables {
			ev := restapi.ExpressionVariable{Name: v.Name, Type: v.Type, Meaning: v.Meaning, Fields: make([]restapi.ExpressionField, len(v.Fields))}
			for k, f := range v.Fields {
				ev.Fields[k] = restapi.ExpressionField{Name: f.Name, Type: f.Type, Meaning: f.Meaning}
			}
			p.Variables[j] = ev
		}
		out.Conditions[i] = p
	}
	return out, nil
}

func (h *handlers) ListSupervisorEnginePresets(ctx context.Context, req restapi.ListSupervisorEnginePresetsRequestObject) (restapi.ListSupervisorEnginePresetsResponseObject, error) {
	d, err := h.uc.Supervisors.engine(ctx, req.Type)
	if err != nil {
		return nil, err
	}
	out := restapi.ListSupervisorEnginePresets200JSONResponse{Presets: make([]restapi.SupervisorPreset, len(d.PresetList))}
	for i, p := range d.PresetList {
		sp := restapi.SupervisorPreset{Name: p.Name, Engine: p.Engine, Description: p.Description, Settings: p.Settings, Needs: p.Needs,
			Parameters: make([]restapi.PresetParameter, len(p.Parameters))}
		for j, prm := range p.Parameters {
			sp.Parameters[j] = restapi.PresetParameter{Name: prm.Name, Type: restapi.PresetParameterType(prm.Type), Default: prm.Default,
				Description: prm.Description, Minimum: prm.Min, Maximum: prm.Max, Values: prm.Values}
		}
		out.Presets[i] = sp
	}
	return out, nil
}

// supervisorToAPI writes a supervisor document; its settings are what the
// use case gave (masked on every read).
func supervisorToAPI(s supervisor.Supervisor) restapi.Supervisor {
	return restapi.Supervisor{Id: s.ID(), Name: s.Name(), Engine: restapi.SupervisorEngineConfig{Type: s.EngineType(), Settings: s.Settings()},
		Owns: units(s), ParentId: s.ParentID(), AllowedCommands: commandNames(s.AllowedCommands()), Reviews: commandNames(s.Reviews()),
		TickSeconds: s.TickSeconds(), Enabled: s.Enabled()}
}

// withWarnings adds the use case's warnings; none leaves the member out.
func withWarnings(s restapi.Supervisor, warnings []string) restapi.Supervisor {
	if len(warnings) > 0 {
		s.Warnings = warnings
	}
	return s
}

func engineToAPI(d supervisorapp.EngineDescription) restapi.SupervisorEngine {
	out := restapi.SupervisorEngine{Type: d.Type, Name: d.Name, Category: restapi.SupervisorEngineCategory(d.Category), Description: d.Description,
		Signals: nonNilStrings(d.Signals), CanInitiate: d.CanInitiate, DefaultAllowedCommands: nonNilStrings(d.DefaultCommands),
		Settings: make([]restapi.SupervisorEngineSetting, len(d.Settings)), Presets: nonNilStrings(d.Presets)}
	for i, s := range d.Settings {
		out.Settings[i] = restapi.SupervisorEngineSetting{Name: s.Name, Type: s.Type, Default: s.Default, Required: s.Required, Description: s.Description}
	}
	out.Example.Type, _ = d.EngineExample["type"].(string)
	out.Example.Settings, _ = d.EngineExample["settings"].(map[string]any)
	if out.Example.Settings == nil {
		out.Example.Settings = map[string]any{}
	}
	return out
}

func units(s supervisor.Supervisor) []string {
	owns := s.Owns()
	out := make([]string, len(owns))
	for i, u := range owns {
		out[i] = u.String()
	}
	return out
}

func commandNames(ts []supervisor.CommandType) []string {
	out := make([]string, len(ts))
	for i, t := range ts {
		out[i] = string(t)
	}
	return out
}

// ListSupervisorRefusals reads a supervisor's refusals: its own audit
// trail, an ADMIN's to read.
func (h *handlers) ListSupervisorRefusals(ctx context.Context, req restapi.ListSupervisorRefusalsRequestObject) (restapi.ListSupervisorRefusalsResponseObject, error) {
	if err := authorizeScoped(ctx, "listSupervisorRefusals"); err != nil {
		return nil, err
	}
	uc := h.uc.Supervisors.Refusals
	if uc == nil {
		return nil, fault.Newf(fault.ErrNotFound, "supervisor refusals are not served here")
	}
	page, err := uc.Handle(ctx, supervisorapp.RefusalsInput{SupervisorID: req.SupervisorId, Limit: req.Params.Limit, Cursor: req.Params.Cursor})
	if err != nil {
		return nil, err
	}
	return restapi.ListSupervisorRefusals200JSONResponse(refusalsToAPI(page)), nil
}

// GetSupervisorStatus reads what the runtime keeps for a supervisor: an
// ADMIN's read, as its directives name runs of any session.
func (h *handlers) GetSupervisorStatus(ctx context.Context, req restapi.GetSupervisorStatusRequestObject) (restapi.GetSupervisorStatusResponseObject, error) {
	if err := authorizeScoped(ctx, "getSupervisorStatus"); err != nil {
		return nil, err
	}
	uc := h.uc.Supervisors.Status
	if uc == nil {
		return nil, fault.Newf(fault.ErrNotFound, "supervisor status is not served here")
	}
	st, err := uc.Handle(ctx, supervisorapp.StatusInput{SupervisorID: req.SupervisorId, Directives: req.Params.Directives})
	if err != nil {
		return nil, err
	}
	out := restapi.GetSupervisorStatus200JSONResponse{SupervisorId: st.SupervisorID, State: restapi.SupervisorStatusState(st.State),
		LastDirectives: make([]restapi.DirectiveRecord, len(st.LastDirectives))}
	if l := st.Lease; l != nil {
		out.Lease = restapi.SupervisorLease{Owner: l.Owner, ExpiresAt: l.ExpiresAt.UTC(), Live: l.Live}
	}
	if c := st.Cursor; c != nil {
		out.Cursor = restapi.SupervisorCursor{UpdatedAt: c.UpdatedAt.UTC(), LagEvents: c.Lag, LagCapped: st.LagCapped}
	}
	for i, d := range st.LastDirectives {
		var dir restapi.Directive
		_ = json.Unmarshal(d.Directive, &dir) // the intake wrote it; a directive is always an object
		r := restapi.DirectiveRecord{Key: d.Key, Status: d.Status, Channel: d.Channel, At: d.At.UTC(),
			Directive: dir, Message: d.Message}
		if !d.SettledAt.IsZero() {
			r.SettledAt = d.SettledAt.UTC()
		}
		out.LastDirectives[i] = r
	}
	return out, nil
}

// refusalsToAPI writes a page of refusals, for REST and the agent API.
func refusalsToAPI(p supervisorapp.RefusalPage) restapi.DirectiveRefusalList {
	out := restapi.DirectiveRefusalList{Refusals: make([]restapi.DirectiveRefusal, len(p.Refusals)), NextCursor: p.NextCursor}
	for i, r := range p.Refusals {
		var d restapi.Directive
		_ = json.Unmarshal(r.Directive, &d) // the intake wrote it; a directive is always an object
		out.Refusals[i] = restapi.DirectiveRefusal{SupervisorId: r.SupervisorID, Key: r.Key, At: r.At.UTC(), Channel: r.Channel,
			Directive: d, Refusal: restapi.DirectiveRefusalRefusal(r.Kind), Message: r.Message}
	}
	return out
}
