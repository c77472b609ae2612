package httpapi

import (
	"bytes"
	"context"
	"errors"
	"net/http"

	"github.com/yukta/yukta/adapters/authn"
	"github.com/yukta/yukta/adapters/httpapi/restapi"
	"github.com/yukta/yukta/api"
	"github.com/yukta/yukta/application/executionapp"
	"github.com/yukta/yukta/application/pluginapp"
	"github.com/yukta/yukta/application/sessionapp"
	"github.com/yukta/yukta/domain/build"
	"github.com/yukta/yukta/domain/fault"
	"github.com/yukta/yukta/domain/jsonvalue"
	"github.com/yukta/yukta/domain/plugin"
	"github.com/yukta/yukta/domain/session"
)

// UseCases are the application calls the REST handlers make. Each is the one
// method the handler needs, so handlers can be tested with the real use cases
// over any store.
type UseCases struct {
	ApplySession interface {
		Handle(context.Context, sessionapp.ApplyInput) (sessionapp.ApplyResult, error)
	}
	GetSession interface {
		Handle(context.Context, string) (session.Session, error)
	}
	ListSessions interface {
		Handle(context.Context, sessionapp.ListInput) (sessionapp.ListResult, error)
	}
	DeleteSession interface {
		Handle(context.Context, sessionapp.DeleteInput) error
	}
	GetWorkflow interface {
		Handle(context.Context, string, string) (sessionapp.WorkflowView, error)
	}
	ListWorkflows interface {
		Handle(context.Context, string) ([]sessionapp.WorkflowSummary, error)
	}
	ListPlugins interface {
		Handle(context.Context) []plugin.Descriptor
	}
	DescribePlugin interface {
		Handle(context.Context, string, map[string]any) (pluginapp.Description, error)
	}
	// Ready reports whether the server can serve (database up, schema current).
	Ready func(context.Context) error
	// Build is the build of this binary (GET /api/version).
	Build build.Info
	// Executions are the execution, control, log, input and event calls.
	Executions ExecutionUseCases
	// Journal are the observer journal calls (export, verify, projection,
	// public key).
	Journal JournalUseCases
	// Scheduler reads the scheduler limits and queue (GET /api/scheduler);
	// nil answers 404.
	Scheduler interface {
		Handle(context.Context) (executionapp.SchedulerStatus, error)
	}
	// Supervisors are the supervisor store and engine catalogue calls.
	Supervisors SupervisorUseCases
	// Approvals are the review and approval calls; unset, their routes
	// answer 404.
	Approvals ApprovalUseCases
	// Agent are the agent API's calls (/api/agent/v1); unset, it is not
	// served.
	Agent AgentUseCases
	// Keys are the stored API key calls (/api/keys); unset, they answer
	// 404.
	Keys KeyUseCases
	// Worker are the worker API's calls (/api/worker/v1); unset, they
	// answer 404.
	Worker WorkerUseCases
}

// handlers implements the generated strict server interface by calling use
// cases and converting between wire and domain values.
type handlers struct {
	uc UseCases
	ex ExecutionUseCases
	// done closes when the server shuts down, ending event streams.
	done <-chan struct{}
	// metrics serves the Prometheus exposition; nil when not configured.
	metrics http.Handler
}

var _ restapi.StrictServerInterface = (*handlers)(nil)

func (h *handlers) GetHealth(context.Context, restapi.GetHealthRequestObject) (restapi.GetHealthResponseObject, error) {
	return restapi.GetHealth200JSONResponse{Status: restapi.Ok}, nil
}

func (h *handlers) GetReady(ctx context.Context, _ restapi.GetReadyRequestObject) (restapi.GetReadyResponseObject, error) {
	if err := h.uc.Ready(ctx); err != nil {
		return restapi.GetReady503ApplicationProblemPlusJSONResponse{ProblemApplicationProblemPlusJSONResponse: restapi.ProblemApplicationProblemPlusJSONResponse{
			Type: "urn:yukta:problem:unavailable", Title: "Service Unavailable", Status: 503,
			// The reasons Ready gives are written to be shown: they never
			// carry the database URL, user or password.
			Detail: "not ready: " + err.Error(),
		}}, nil
	}
	return restapi.GetReady200JSONResponse{Status: restapi.Ok}, nil
}

func (h *handlers) GetOpenAPISpec(context.Context, restapi.GetOpenAPISpecRequestObject) (restapi.GetOpenAPISpecResponseObject, error) {
	return restapi.GetOpenAPISpec200ApplicationyamlResponse{Body: bytes.NewReader(api.Spec), ContentLength: int64(len(api.Spec))}, nil
}

func (h *handlers) GetMetrics(ctx context.Context, _ restapi.GetMetricsRequestObject) (restapi.GetMetricsResponseObject, error) {
	if err := authorizeScoped(ctx, "getMetrics"); err != nil {
		return nil, err
	}
	if h.metrics == nil {
		return nil, fault.Newf(fault.ErrNotFound, "metrics are not enabled on this server")
	}
	return metricsResponse{h.metrics}, nil
}

// metricsResponse streams the exposition straight from the registry.
type metricsResponse struct{ h http.Handler }

func (m metricsResponse) VisitGetMetricsResponse(w http.ResponseWriter) error {
	req, err := http.NewRequest(http.MethodGet, "/metrics", nil)
	if err != nil {
		return err
	}
	m.h.ServeHTTP(w, req)
	return nil
}

func (h *handlers) ListSessions(ctx context.Context, req restapi.ListSessionsRequestObject) (restapi.ListSessionsResponseObject, error) {
	in := sessionapp.ListInput{Limit: req.Params.Limit, Cursor: req.Params.Cursor, Query: req.Params.Q}
	if p := authn.PrincipalFrom(ctx); p.Limited() {
		in.Only = p.Sessions()
	}
	res, err := h.uc.ListSessions.Handle(ctx, in)
	if err != nil {
		return nil, err
	}
	out := restapi.ListSessions200JSONResponse{Sessions: make([]restapi.SessionSummary, len(res.Sessions)), NextCursor: res.NextCursor}
	for i, s := range res.Sessions {
		out.Sessions[i] = restapi.SessionSummary{SessionId: s.ID, Name: s.Name, Description: s.Description,
			WorkflowCount: s.WorkflowCount, UpdatedAt: s.UpdatedAt.UTC(), UpdatedBy: s.UpdatedBy, UpdatedVia: s.UpdatedVia,
			Workflows: workflowSummariesToAPI(s.Workflows)}
	}
	return out, nil
}

func (h *handlers) ListWorkflows(ctx context.Context, req restapi.ListWorkflowsRequestObject) (restapi.ListWorkflowsResponseObject, error) {
	ws, err := h.uc.ListWorkflows.Handle(ctx, req.SessionId)
	if err != nil {
		return nil, err
	}
	return restapi.ListWorkflows200JSONResponse{SessionId: req.SessionId, Workflows: workflowSummariesToAPI(ws)}, nil
}

func workflowSummariesToAPI(ws []sessionapp.WorkflowSummary) []restapi.WorkflowSummary {
	out := make([]restapi.WorkflowSummary, len(ws))
	for i, w := range ws {
		out[i] = restapi.WorkflowSummary{WorkflowId: w.ID, NodeCount: w.NodeCount}
		if p := w.Pause; p != nil {
			out[i].Pause = restapi.WorkflowPause{By: p.Actor, Via: p.Channel, Since: p.Since.UTC(), Reason: p.Reason}
		}
		if l := w.Last; l != nil {
			out[i].LastExecution = restapi.LastExecution{ExecutionId: l.ID, Status: restapi.ExecutionStatus(l.Status),
				StartedAt: l.StartedAt.UTC(), EndedAt: utc(l.EndedAt)}
		}
	}
	return out
}

func (h *handlers) PutSession(ctx context.Context, req restapi.PutSessionRequestObject) (restapi.PutSessionResponseObject, error) {
	var doc []byte
	if req.Body != nil {
		doc = *req.Body
	}
	res, err := h.uc.ApplySession.Handle(ctx, sessionapp.ApplyInput{ID: req.SessionId, Document: doc,
		Actor: actor(ctx), Channel: channel(string(req.Params.YuktaChannel))})
	if err != nil {
		return nil, err
	}
	body := restapi.ApplyResult{SessionId: res.SessionID, Workflows: res.Workflows, RemovedWorkflows: res.RemovedWorkflows, Warnings: res.Warnings}
	if res.Created {
		return restapi.PutSession201JSONResponse(body), nil
	}
	return restapi.PutSession200JSONResponse(body), nil
}

func (h *handlers) GetSession(ctx context.Context, req restapi.GetSessionRequestObject) (restapi.GetSessionResponseObject, error) {
	s, err := h.uc.GetSession.Handle(ctx, req.SessionId)
	if err != nil {
		return nil, err
	}
	out := restapi.GetSession200JSONResponse{SessionId: s.ID(), Name: s.Name(), Description: s.Description(),
		Initiator: s.Initiator(), Tags: s.Tags(), ProjectPath: s.ProjectPath(), Limits: limitsToAPI(s.Limits()),
		Retention: retentionToAPI(s.Retention())}
	for _, w := range s.Workflows() {
		nodes, edges := graphToAPI(w)
		out.Workflows = append(out.Workflows, restapi.WorkflowConfig{WorkflowId: w.ID(), Description: w.Description(),
			Limits: limitsToAPI(w.Limits()), Nodes: nodes, Edges: edges})
	}
	return out, nil
}

func (h *handlers) DeleteSession(ctx context.Context, req restapi.DeleteSessionRequestObject) (restapi.DeleteSessionResponseObject, error) {
	if err := h.uc.DeleteSession.Handle(ctx, sessionapp.DeleteInput{ID: req.SessionId, Actor: actor(ctx),
		Channel: channel(string(req.Params.YuktaChannel))}); err != nil {
		return nil, err
	}
	return restapi.DeleteSession204Response{}, nil
}

func (h *handlers) GetWorkflow(ctx context.Context, req restapi.GetWorkflowRequestObject) (restapi.GetWorkflowResponseObject, error) {
	w, err := h.uc.GetWorkflow.Handle(ctx, req.SessionId, req.WorkflowId)
	if err != nil {
		return nil, err
	}
	nodes, edges := graphToAPI(w.Workflow)
	out := restapi.GetWorkflow200JSONResponse{SessionId: req.SessionId, WorkflowId: w.ID(), Description: w.Description(),
		Limits: limitsToAPI(w.Limits()), Nodes: nodes, Edges: edges}
	if p := w.Pause; p != nil {
		out.Pause = restapi.WorkflowPause{By: p.Actor, Via: p.Channel, Since: p.Since, Reason: p.Reason}
	}
	return out, nil
}

func (h *handlers) ListPlugins(ctx context.Context, _ restapi.ListPluginsRequestObject) (restapi.ListPluginsResponseObject, error) {
	ds := h.uc.ListPlugins.Handle(ctx)
	out := restapi.ListPlugins200JSONResponse{Plugins: make([]restapi.PluginSummary, len(ds))}
	for i, d := range ds {
		out.Plugins[i] = restapi.PluginSummary{Type: d.Type, Category: restapi.PluginSummaryCategory(d.Category), Description: d.Description}
	}
	return out, nil
}

func (h *handlers) GetPlugin(ctx context.Context, req restapi.GetPluginRequestObject) (restapi.GetPluginResponseObject, error) {
	var config map[string]any
	if req.Params.Config != "" {
		v, err := jsonvalue.Decode([]byte(req.Params.Config), "query.config")
		if je, ok := errors.AsType[*jsonvalue.Error](err); ok && !jsonvalue.IsSyntax(err) && je.Path != "query.config" {
			return nil, strictError(err) // a bad place inside a well-formed object: name it
		}
		if config, _ = v.(map[string]any); err != nil || config == nil {
			return nil, &fault.ValidationError{Subject: "request", Violations: []fault.Violation{{
				Path: "query.config", Message: `must be one JSON object, for example {"routes":[{"port":"big","condition":"payload.amount > 100"}]}`}}}
		}
	}
	d, err := h.uc.DescribePlugin.Handle(ctx, req.Type, config)
	if err != nil {
		return nil, err
	}
	return restapi.GetPlugin200JSONResponse{
		Type: d.Type, Category: restapi.PluginDetailsCategory(d.Category), Description: d.Description, Usage: d.Usage,
		ConfigFields: fieldsToAPI(d.Fields), Ports: d.Ports,
	}, nil
}

func graphToAPI(w session.Workflow) ([]restapi.NodeConfig, []restapi.EdgeConfig) {
	nodes := make([]restapi.NodeConfig, 0, len(w.Nodes()))
	for _, n := range w.Nodes() {
		nodes = append(nodes, restapi.NodeConfig{NodeId: n.ID(), Type: n.Type(), Name: n.Name(), Config: n.Config()})
	}
	edges := make([]restapi.EdgeConfig, 0, len(w.Edges()))
	for _, e := range w.Edges() {
		edges = append(edges, restapi.EdgeConfig{Source: e.Source(), Target: e.Target(), SourcePort: e.SourcePort()})
	}
	return nodes, edges
}

func fieldsToAPI(fs []plugin.Field) []restapi.ConfigField {
	out := make([]restapi.ConfigField, len(fs))
	for i, f := range fs {
		out[i] = fieldToAPI(f)
	}
	return out
}

func fieldToAPI(f plugin.Field) restapi.ConfigField {
	cf := restapi.ConfigField{Name: f.Name, Type: restapi.ConfigFieldType(f.Type), Description: f.Description,
		Required: f.Required, Default: f.Default, Options: f.Options, Secret: f.Secret}
	if f.Items != nil {
		it := fieldToAPI(*f.Items)
		cf.Items = &it
	}
	if f.Fields != nil {
		cf.Fields = fieldsToAPI(f.Fields)
	}
	return cf
}
