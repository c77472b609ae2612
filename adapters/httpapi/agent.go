package httpapi

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/yukta/yukta/adapters/authn"
	"github.com/yukta/yukta/application/executionapp"
	"github.com/yukta/yukta/application/supervisorapp"
	"github.com/yukta/yukta/domain/fault"
	"github.com/yukta/yukta/domain/jsonvalue"
	"github.com/yukta/yukta/domain/session"
	"github.com/yukta/yukta/domain/supervisor"
)

// AgentContract is the version of the supervisor contract the agent API
// speaks; every agent API response carries it as Yukta-Supervisor-Contract.
const AgentContract = "1"

// AgentBase is the agent API's path prefix.
const AgentBase = "/api/agent/v1"

// DefaultAgentBodyLimit caps agent API request bodies (seed 000: 64 KiB).
const DefaultAgentBodyLimit = 64 << 10

// AgentUseCases are the calls of the agent API (/api/agent/v1): what a
// supervisor's agent reads and sends with its credential. Unset (Signals
// nil), the agent API is not served.
type AgentUseCases struct {
	Supervisors supervisorapp.Reader
	Signals     interface {
		Handle(context.Context, supervisorapp.SignalsInput) (supervisorapp.SignalPage, error)
	}
	// Watched serves the reads that may wait (GET /signals and the SSE
	// stream): Signals in slices, with the credential and the supervisor
	// read again between them (supervisorapp.ReadAgentSignals), so an open
	// read ends when its credential or supervisor does. Nil: those routes
	// answer 503.
	Watched interface {
		Handle(context.Context, supervisorapp.AgentSignalsInput) (supervisorapp.SignalPage, error)
	}
	Directives interface {
		Handle(context.Context, supervisorapp.SubmitInput) (supervisorapp.DirectiveResult, error)
	}
	Reviews interface {
		Handle(context.Context, supervisorapp.AnswerInput) (supervisor.Review, error)
	}
	// Delegate and AnswerDelegation serve POST /delegations and POST
	// /delegations/{id} (nil: those routes answer 503).
	Delegate         supervisorapp.Delegator
	AnswerDelegation supervisorapp.DelegationAnswerer
	Runs             supervisorapp.RunDirectory
	Holds            supervisorapp.HoldStore
	Events           executionapp.EventTail
	// Positions gives the head, the cursor of the snapshot.
	Positions supervisorapp.OutboxPositions
	Execution interface {
		Handle(ctx context.Context, sessionID, id string) (executionapp.ExecutionView, error)
	}
	Logs interface {
		Handle(context.Context, executionapp.TailInput) (executionapp.TailResult, error)
	}
	Workflow interface {
		Handle(ctx context.Context, sessionID, workflowID string) (session.Workflow, error)
	}
	Scheduler interface {
		Handle(context.Context) (executionapp.SchedulerStatus, error)
	}
	// MCP serves the same operations as MCP tools at /mcp under the base
	// (JSON-RPC, no push); nil leaves it out.
	MCP http.Handler
	// Refusals serves GET /refusals, the supervisor's own refused
	// directives (nil: 503).
	Refusals interface {
		Handle(context.Context, supervisorapp.RefusalsInput) (supervisorapp.RefusalPage, error)
	}
}

// agentRoute is one agent API route: method, echo path and handler.
type agentRoute struct {
	method, path string
	h            func(c echo.Context, sup supervisor.Supervisor) error
}

func (a *agentAPI) routes() []agentRoute {
	return []agentRoute{
		{http.MethodGet, "/self", a.self},
		{http.MethodGet, "/snapshot", a.snapshot},
		{http.MethodGet, "/signals", a.signals},
		{http.MethodGet, "/events", a.events},
		{http.MethodGet, "/executions", a.executions},
		{http.MethodGet, "/executions/:executionId", a.execution},
		{http.MethodGet, "/executions/:executionId/logs", a.logs},
		{http.MethodGet, "/workflows/:sessionId/:workflowId", a.workflow},
		{http.MethodGet, "/scheduler", a.scheduler},
		{http.MethodGet, "/inputs", a.inputs},
		{http.MethodGet, "/refusals", a.refusals},
		{http.MethodPost, "/directives", a.directive},
		{http.MethodPost, "/reviews/:reviewId", a.review},
		{http.MethodPost, "/delegations", a.delegate},
		{http.MethodPost, "/delegations/:delegationId", a.answerDelegation},
	}
}

type agentAPI struct {
	uc   AgentUseCases
	done <-chan struct{}
}

// registerAgent serves the agent API: behind the host gate and the access
// gate (which takes supervisor credentials only on these paths, and limits
// each credential), with bodies capped at limit.
func (s *Server) registerAgent(uc AgentUseCases, limit int64) {
	if uc.Signals == nil {
		return
	}
	if limit <= 0 {
		limit = DefaultAgentBodyLimit
	}
	a := &agentAPI{uc: uc, done: s.shutdown}
	if uc.MCP != nil {
		path := AgentBase + "/mcp"
		s.mounted[path] = route{operationID: "agent mcp", surface: authn.Agent}
		s.echo.Any(path, echo.WrapHandler(uc.MCP), bodyCap(limit))
	}
	for _, r := range a.routes() {
		path := AgentBase + r.path
		s.mounted[path] = route{operationID: "agent " + r.method + " " + r.path, surface: authn.Agent}
		h := r.h
		s.echo.Add(r.method, path, func(c echo.Context) error {
			sup, err := a.supervisor(c)
			if err != nil {
				return err
			}
			return h(c, sup)
		}, bodyCap(limit))
	}
}

// agentContract sets Yukta-Supervisor-Contract on every agent API answer,
// refusals by the gates included.
func agentContract(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		if strings.HasPrefix(c.Request().URL.Path, AgentBase+"/") {
			c.Response().Header().Set("Yukta-Supervisor-Contract", AgentContract)
		}
		return next(c)
	}
}

// supervisor loads the caller's supervisor as stored now: a change applies
// to the next request, and a deleted or disabled supervisor is refused.
func (a *agentAPI) supervisor(c echo.Context) (supervisor.Supervisor, error) {
	id := authn.PrincipalFrom(c.Request().Context()).Supervisor()
	if id == "" {
		return supervisor.Supervisor{}, echo.NewHTTPError(http.StatusUnauthorized, "the agent API takes a supervisor credential")
	}
	s, err := a.uc.Supervisors.Supervisor(c.Request().Context(), id)
	if err != nil {
		return supervisor.Supervisor{}, err
	}
	if !s.Supervisor.Enabled() {
		return supervisor.Supervisor{}, fault.Newf(fault.ErrForbidden, "supervisor %s is disabled; an ADMIN must enable it before its agent may act", id)
	}
	return s.Supervisor, nil
}

func (a *agentAPI) self(c echo.Context, sup supervisor.Supervisor) error {
	ctx := c.Request().Context()
	var parents []string
	for p := sup.ParentID(); p != "" && len(parents) < supervisor.MaxDepth; {
		parents = append(parents, p)
		s, err := a.uc.Supervisors.Supervisor(ctx, p)
		if err != nil {
			break
		}
		p = s.Supervisor.ParentID()
	}
	owns := make([]string, 0, len(sup.Owns()))
	for _, u := range sup.Owns() {
		owns = append(owns, u.String())
	}
	return c.JSON(http.StatusOK, map[string]any{
		"id": sup.ID(), "name": sup.Name(), "engine": sup.EngineType(), "owns": owns, "parentId": sup.ParentID(),
		"parents": nonNilStrings(parents), "allowedCommands": commandNames(sup.AllowedCommands()),
		"reviews": commandNames(sup.Reviews()), "contract": AgentContract,
	})
}

func (a *agentAPI) snapshot(c echo.Context, sup supervisor.Supervisor) error {
	ctx := c.Request().Context()
	head, err := a.uc.Positions.Head(ctx)
	if err != nil {
		return err
	}
	snap, err := supervisorapp.BuildSnapshot(ctx, a.uc.Runs, a.uc.Holds, sup, head)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, snap)
}

// waitParam reads ?wait= in seconds (0 to 60).
func waitParam(c echo.Context) (time.Duration, error) {
	w := c.QueryParam("wait")
	if w == "" {
		return 0, nil
	}
	n, err := strconv.ParseFloat(w, 64)
	if err != nil || !(n >= 0 && n <= supervisorapp.MaxSignalWait.Seconds()) {
		return 0, &fault.ValidationError{Subject: "request", Violations: []fault.Violation{{Path: "query.wait",
			Message: fmt.Sprintf("%q must be a number of seconds from 0 to %d", w, int(supervisorapp.MaxSignalWait.Seconds()))}}}
	}
	return time.Duration(n * float64(time.Second)), nil
}

func limitParam(c echo.Context) (int, error) {
	l := c.QueryParam("limit")
	if l == "" {
		return 0, nil
	}
	n, err := strconv.Atoi(l)
	if err != nil || n < 1 || n > supervisorapp.MaxSignalBatch {
		return 0, &fault.ValidationError{Subject: "request", Violations: []fault.Violation{{Path: "query.limit",
			Message: fmt.Sprintf("%q must be an integer from 1 to %d", l, supervisorapp.MaxSignalBatch)}}}
	}
	return n, nil
}

// signals is the long poll: the signals after ?after=, waiting up to
// ?wait= seconds for the first.
func (a *agentAPI) signals(c echo.Context, sup supervisor.Supervisor) error {
	wait, err := waitParam(c)
	if err != nil {
		return err
	}
	limit, err := limitParam(c)
	if err != nil {
		return err
	}
	if a.uc.Watched == nil {
		return fault.Newf(fault.ErrUnavailable, "signal reads are not served here")
	}
	page, err := a.uc.Watched.Handle(c.Request().Context(), supervisorapp.AgentSignalsInput{Token: authn.Presented(c.Request()),
		After: c.QueryParam("after"), Wait: wait, Limit: limit})
	if err != nil {
		return refused(c, err)
	}
	return c.JSON(http.StatusOK, map[string]any{"signals": page.Signals, "cursor": page.Cursor})
}

// refused answers a credential refused while a request was open (it was
// rotated or revoked, or its supervisor disabled or deleted) as the access
// gate answers one refused at the door: 401 with the same words.
func refused(c echo.Context, err error) error {
	if errors.Is(err, supervisorapp.ErrAgentUnauthenticated) {
		c.Response().Header().Set(echo.HeaderWWWAuthenticate, `Bearer realm="yukta"`)
		return echo.NewHTTPError(http.StatusUnauthorized, err.Error())
	}
	return err
}

// agentHeartbeat is how often the signal stream writes a comment line
// while nothing happens, so proxies keep it open and a dead client is
// noticed.
const agentHeartbeat = 15 * time.Second

// events streams the signals as Server-Sent Events: each has the signal's
// cursor as its id, its kind as the event name and the envelope as data.
// A reconnect with Last-Event-ID (or ?after=) resumes after that cursor.
// The batches are read by Watched, which asks again who is asking at least
// every supervisorapp.AgentRecheckInterval: the stream ends (after a
// comment line saying why) once the credential or the supervisor no longer
// opens the agent API, and carries only what the supervisor owns now.
func (a *agentAPI) events(c echo.Context, sup supervisor.Supervisor) error {
	after := c.Request().Header.Get("Last-Event-ID")
	if after == "" {
		after = c.QueryParam("after")
	}
	if a.uc.Watched == nil {
		return fault.Newf(fault.ErrUnavailable, "signal reads are not served here")
	}
	ctx := c.Request().Context()
	token := authn.Presented(c.Request())
	// Check the cursor before the stream starts, so a bad one is a 400.
	if _, err := a.uc.Signals.Handle(ctx, supervisorapp.SignalsInput{Supervisor: sup, After: after, Limit: 1}); err != nil {
		return err
	}
	h := c.Response().Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-store")
	h.Set("X-Accel-Buffering", "no")
	c.Response().WriteHeader(http.StatusOK)
	c.Response().Flush()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-a.done:
			return nil
		default:
		}
		page, err := a.uc.Watched.Handle(ctx, supervisorapp.AgentSignalsInput{Token: token, After: after, Wait: agentHeartbeat})
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			fmt.Fprintf(c.Response(), ": error %s\n\n", strings.ReplaceAll(err.Error(), "\n", " "))
			c.Response().Flush()
			return nil
		}
		if err := writeSignals(c.Response(), page); err != nil {
			return nil // the client went away
		}
		c.Response().Flush()
		after = page.Cursor
	}
}

// writeSignals writes one page as SSE records; an empty page is a
// heartbeat comment carrying the cursor, so a reconnect skips what was
// looked at.
func writeSignals(w io.Writer, page supervisorapp.SignalPage) error {
	if len(page.Signals) == 0 {
		_, err := fmt.Fprintf(w, ": cursor %s\n\n", page.Cursor)
		return err
	}
	for _, s := range page.Signals {
		b, err := json.Marshal(s)
		if err != nil {
			return err
		}
		if _, err := fmt.Fprintf(w, "id: %s\nevent: %s\ndata: %s\n\n", s.Cursor(), s.Kind(), b); err != nil {
			return err
		}
	}
	return nil
}

// AgentRunLimit caps the runs and inputs one list answers.
const AgentRunLimit = 200

func (a *agentAPI) executions(c echo.Context, sup supervisor.Supervisor) error {
	runs := []supervisorapp.RunInfo{}
	if owns := sup.Owns(); len(owns) > 0 {
		var err error
		if runs, err = a.uc.Runs.ActiveRuns(c.Request().Context(), owns, AgentRunLimit); err != nil {
			return err
		}
	}
	out := make([]map[string]any, len(runs))
	for i, r := range runs {
		out[i] = map[string]any{"executionId": r.ID, "sessionId": r.SessionID, "workflowId": r.WorkflowID, "status": string(r.Status),
			"startedAt": r.StartedAt.UTC()}
	}
	return c.JSON(http.StatusOK, map[string]any{"executions": out})
}

// owned finds an owned run; a run outside the owned units answers as one
// that does not exist.
func (a *agentAPI) owned(ctx context.Context, sup supervisor.Supervisor, id string) (supervisorapp.RunInfo, error) {
	// The same format, and the same refusal, as the REST routes' ExecutionId.
	if !executionapp.ValidID(id) {
		return supervisorapp.RunInfo{}, &fault.ValidationError{Subject: "request", Violations: []fault.Violation{{Path: "path.executionId",
			Message: fmt.Sprintf("%q is not an execution id (a UUID such as 0193b7a0-0000-7000-8000-000000000000); list the runs with GET %s/executions", clipID(id), AgentBase)}}}
	}
	found, err := a.uc.Runs.Runs(ctx, []string{id})
	if err != nil {
		return supervisorapp.RunInfo{}, err
	}
	r, ok := found[id]
	if !ok || !sup.OwnsPlace(r.Place()) {
		return supervisorapp.RunInfo{}, fault.Newf(executionapp.ErrExecutionNotFound,
			"execution %s does not exist among the runs supervisor %s owns; list them with GET %s/executions", id, sup.ID(), AgentBase)
	}
	return r, nil
}

// execution answers one owned run with its nodes.
func (a *agentAPI) execution(c echo.Context, sup supervisor.Supervisor) error {
	ctx := c.Request().Context()
	r, err := a.owned(ctx, sup, c.Param("executionId"))
	if err != nil {
		return err
	}
	v, err := a.uc.Execution.Handle(ctx, r.SessionID, r.ID)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, executionToAPI(v))
}

// AgentMaxLogLines caps the log lines one agent read returns.
const AgentMaxLogLines = 200

// logs answers the newest lines of an owned run's log (?tail=, at most
// 200), with secret values removed (TailLogs) and control characters
// escaped, since an agent may feed them to a model or a terminal.
func (a *agentAPI) logs(c echo.Context, sup supervisor.Supervisor) error {
	ctx := c.Request().Context()
	r, err := a.owned(ctx, sup, c.Param("executionId"))
	if err != nil {
		return err
	}
	n := AgentMaxLogLines
	if t := c.QueryParam("tail"); t != "" {
		if n, err = strconv.Atoi(t); err != nil || n < 1 || n > AgentMaxLogLines {
			return &fault.ValidationError{Subject: "request", Violations: []fault.Violation{{Path: "query.tail",
				Message: fmt.Sprintf("%q must be an integer from 1 to %d", t, AgentMaxLogLines)}}}
		}
	}
	res, err := a.uc.Logs.Handle(ctx, executionapp.TailInput{SessionID: r.SessionID, ExecutionID: r.ID, TailLines: n})
	if err != nil {
		return err
	}
	lines := make([]map[string]any, len(res.Lines))
	for i, l := range res.Lines {
		lines[i] = map[string]any{"seq": l.Seq, "at": l.At.UTC(), "level": l.Level, "nodeId": l.NodeID, "message": escapeControl(l.Message)}
	}
	return c.JSON(http.StatusOK, map[string]any{"executionId": r.ID, "lines": lines, "totalLines": res.TotalMatched})
}

// escapeControl writes control characters (but tab) as \u escapes.
func escapeControl(s string) string {
	var b strings.Builder
	for _, r := range s {
		if r != '\t' && (r < 0x20 || r == 0x7f || (r >= 0x80 && r < 0xa0)) {
			fmt.Fprintf(&b, "\\u%04x", r)
			continue
		}
		b.WriteRune(r)
	}
	return b.String()
}

// workflow answers a workflow of an owned unit: its nodes (id and type)
// and edges, never their settings (which may hold secrets).
func (a *agentAPI) workflow(c echo.Context, sup supervisor.Supervisor) error {
	sid, wid := c.Param("sessionId"), c.Param("workflowId")
	if !sup.OwnsPlace(supervisor.Place{SessionID: sid, WorkflowID: wid}) {
		return fault.Newf(fault.ErrNotFound, "workflow %s/%s is not in the units supervisor %s owns", sid, wid, sup.ID())
	}
	w, err := a.uc.Workflow.Handle(c.Request().Context(), sid, wid)
	if err != nil {
		return err
	}
	nodes := make([]map[string]any, 0, len(w.Nodes()))
	for _, n := range w.Nodes() {
		nodes = append(nodes, map[string]any{"nodeId": n.ID(), "type": n.Type()})
	}
	edges := make([]map[string]any, 0, len(w.Edges()))
	for _, e := range w.Edges() {
		edges = append(edges, map[string]any{"source": e.Source(), "target": e.Target(), "sourcePort": e.SourcePort()})
	}
	return c.JSON(http.StatusOK, map[string]any{"sessionId": sid, "workflowId": wid, "nodes": nodes, "edges": edges})
}

// scheduler answers the scheduler's limits and queue, to a supervisor
// that owns the server only: the answer counts every session's work.
func (a *agentAPI) scheduler(c echo.Context, sup supervisor.Supervisor) error {
	server := false
	for _, u := range sup.Owns() {
		server = server || u.Kind() == supervisor.UnitServer
	}
	if !server {
		return fault.Newf(fault.ErrForbidden, "supervisor %s does not own the server; the scheduler status counts the work of every session", sup.ID())
	}
	st, err := a.uc.Scheduler.Handle(c.Request().Context())
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, SchedulerStatusToAPI(st))
}

func (a *agentAPI) inputs(c echo.Context, sup supervisor.Supervisor) error {
	ins := []supervisorapp.InputInfo{}
	if owns := sup.Owns(); len(owns) > 0 {
		var err error
		if ins, err = a.uc.Runs.OpenInputs(c.Request().Context(), owns, AgentRunLimit); err != nil {
			return err
		}
	}
	out := make([]map[string]any, len(ins))
	for i, in := range ins {
		out[i] = map[string]any{"inputId": in.ID, "sessionId": in.SessionID, "workflowId": in.WorkflowID, "executionId": in.ExecutionID,
			"nodeId": in.NodeID, "prompt": in.Prompt, "createdAt": in.CreatedAt.UTC()}
	}
	return c.JSON(http.StatusOK, map[string]any{"inputs": out})
}

// readBody reads a capped agent request body.
func readBody(c echo.Context) ([]byte, error) {
	b, err := io.ReadAll(c.Request().Body)
	if err != nil {
		var tooBig *http.MaxBytesError
		if errors.As(err, &tooBig) {
			return nil, echo.NewHTTPError(http.StatusRequestEntityTooLarge, fmt.Sprintf("the request body is over the limit of %d bytes here", tooBig.Limit))
		}
		return nil, echo.NewHTTPError(http.StatusBadRequest, "the request body could not be read completely; send it again")
	}
	return b, nil
}

// directive hands a directive to the intake, as supervisor:<id> on channel
// agent; the answer is the intake's result (202 when accepted: its effects
// are in the outcomes, a DRAIN may still be draining).
func (a *agentAPI) directive(c echo.Context, sup supervisor.Supervisor) error {
	b, err := readBody(c)
	if err != nil {
		return err
	}
	d, err := supervisor.ParseDirective(b)
	if err != nil {
		return err
	}
	res, err := a.uc.Directives.Handle(c.Request().Context(), supervisorapp.SubmitInput{SupervisorID: sup.ID(), Directive: d, Channel: "agent"})
	if err != nil {
		return err // refused (and recorded with the sender): a problem naming why
	}
	return c.JSON(http.StatusAccepted, res)
}

// refusals pages through the supervisor's own refused directives.
func (a *agentAPI) refusals(c echo.Context, sup supervisor.Supervisor) error {
	if a.uc.Refusals == nil {
		return fault.Newf(fault.ErrUnavailable, "refusals are not served here")
	}
	in := supervisorapp.RefusalsInput{SupervisorID: sup.ID(), Cursor: c.QueryParam("cursor")}
	if v := c.QueryParam("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			return &fault.ValidationError{Subject: "refusal list", Violations: []fault.Violation{{Path: "limit",
				Message: fmt.Sprintf("must be a whole number between 1 and %d, got %q", supervisorapp.MaxRefusalPage, clipID(v))}}}
		}
		in.Limit = n
	}
	page, err := a.uc.Refusals.Handle(c.Request().Context(), in)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, refusalsToAPI(page))
}

// review takes the supervisor's verdict on a review it was asked.
func (a *agentAPI) review(c echo.Context, sup supervisor.Supervisor) error {
	b, err := readBody(c)
	if err != nil {
		return err
	}
	v, err := supervisor.ParseVerdict(b)
	if err != nil {
		return err
	}
	r, err := a.uc.Reviews.Handle(c.Request().Context(), supervisorapp.AnswerInput{ReviewID: c.Param("reviewId"), SupervisorID: sup.ID(), Verdict: v})
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, reviewToAPI(r))
}

// delegationToAPI is a delegation as the agent API shows it.
func delegationToAPI(d supervisor.Delegation) map[string]any {
	m := map[string]any{"delegationId": d.ID(), "kind": string(d.Kind()), "from": d.From(), "to": d.To(), "key": d.Key(),
		"payload": json.RawMessage(d.Payload()), "status": string(d.Status()), "createdAt": d.CreatedAt().UTC(), "deadline": d.Deadline().UTC()}
	if d.Answer() != nil {
		m["answer"], m["answeredAt"] = json.RawMessage(d.Answer()), d.AnsweredAt().UTC()
	}
	return m
}

// agentBody reads an agent request body as every other body is read: one
// strict JSON value (domain/jsonvalue: no repeated key, no NUL, no lone
// surrogate, valid UTF-8, numbers within range, nesting within bounds,
// nothing after it), an object holding only the members the call takes,
// each of its type. Every refusal is a 400 naming the member.
func agentBody(b []byte, v any, members ...string) error {
	doc, err := jsonvalue.Decode(b, "body")
	if err != nil {
		return strictError(err)
	}
	m, ok := doc.(map[string]any)
	if !ok {
		return &fault.ValidationError{Subject: "request", Violations: []fault.Violation{{Path: "body",
			Message: "must be a JSON object with " + strings.Join(members, ", ")}}}
	}
	var vs []fault.Violation
	for k := range m {
		if !slices.Contains(members, k) {
			vs = append(vs, fault.Violation{Path: jsonvalue.Key("body", k), Message: "is not a member this call takes; it takes " + strings.Join(members, ", ")})
		}
	}
	if len(vs) > 0 {
		slices.SortFunc(vs, func(a, b fault.Violation) int { return strings.Compare(a.Path, b.Path) })
		return &fault.ValidationError{Subject: "request", Violations: vs}
	}
	return decodeBody(b, v)
}

// delegate opens an ESCALATE to the supervisor's parent or a CONSULT of
// another supervisor: 201 with the delegation, 200 with the one the same
// key opened before.
func (a *agentAPI) delegate(c echo.Context, sup supervisor.Supervisor) error {
	if a.uc.Delegate == nil {
		return fault.Newf(fault.ErrUnavailable, "delegations are not served here")
	}
	b, err := readBody(c)
	if err != nil {
		return err
	}
	var in struct {
		Kind    string          `json:"kind"`
		Key     string          `json:"key"`
		To      string          `json:"to"`
		Payload json.RawMessage `json:"payload"`
	}
	if err := agentBody(b, &in, "kind", "key", "to", "payload"); err != nil {
		return err
	}
	d, created, err := a.uc.Delegate.Handle(c.Request().Context(), supervisorapp.DelegateInput{SupervisorID: sup.ID(),
		Kind: supervisor.DelegationKind(in.Kind), Key: in.Key, To: in.To, Payload: in.Payload, Channel: "agent"})
	if err != nil {
		return err
	}
	status := http.StatusOK
	if created {
		status = http.StatusCreated
	}
	return c.JSON(status, delegationToAPI(d))
}

// answerDelegation answers a delegation sent to the supervisor, once.
func (a *agentAPI) answerDelegation(c echo.Context, sup supervisor.Supervisor) error {
	if a.uc.AnswerDelegation == nil {
		return fault.Newf(fault.ErrUnavailable, "delegations are not served here")
	}
	b, err := readBody(c)
	if err != nil {
		return err
	}
	var in struct {
		Answer json.RawMessage `json:"answer"`
	}
	if err := agentBody(b, &in, "answer"); err != nil {
		return err
	}
	d, err := a.uc.AnswerDelegation.Handle(c.Request().Context(), supervisorapp.AnswerDelegationInput{DelegationID: c.Param("delegationId"),
		SupervisorID: sup.ID(), Answer: in.Answer, Channel: "agent"})
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, delegationToAPI(d))
}

// clipID shortens an id quoted back in an error.
func clipID(s string) string {
	if len(s) > 64 {
		return s[:64] + "…"
	}
	return s
}
