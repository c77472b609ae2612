package httpapi

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
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
// nil), the agent API is not served. Both doors call them through the
// operation table (agent_ops.go); a nil call answers 503.
type AgentUseCases struct {
	// Caller loads the supervisor a credential acts for, as stored now.
	Caller interface {
		Handle(ctx context.Context, supervisorID string) (supervisor.Supervisor, error)
	}
	Signals interface {
		Handle(context.Context, supervisorapp.SignalsInput) (supervisorapp.SignalPage, error)
	}
	// Watched serves the reads that may wait (GET /signals and the SSE
	// stream, MCP read_signals): Signals in slices, with the credential and
	// the supervisor read again between them (supervisorapp.ReadAgentSignals),
	// so an open read ends when its credential or supervisor does.
	Watched interface {
		Handle(context.Context, supervisorapp.AgentSignalsInput) (supervisorapp.SignalPage, error)
	}
	Self interface {
		Handle(context.Context, supervisor.Supervisor) (supervisorapp.AgentSelf, error)
	}
	Snapshot interface {
		Handle(context.Context, supervisor.Supervisor) (supervisorapp.Snapshot, error)
	}
	Executions interface {
		Handle(context.Context, supervisorapp.AgentExecutionsInput) (supervisorapp.AgentExecutionPage, error)
	}
	Execution interface {
		Handle(ctx context.Context, sup supervisor.Supervisor, id string) (executionapp.ExecutionView, error)
	}
	Logs interface {
		Handle(context.Context, supervisorapp.AgentLogsInput) (executionapp.TailResult, error)
	}
	Workflow interface {
		Handle(ctx context.Context, sup supervisor.Supervisor, sessionID, workflowID string) (session.Workflow, error)
	}
	Scheduler interface {
		Handle(context.Context, supervisor.Supervisor) (executionapp.SchedulerStatus, error)
	}
	Inputs interface {
		Handle(context.Context, supervisor.Supervisor) (supervisorapp.AgentInputs, error)
	}
	// Refusals serves GET /refusals, the supervisor's own refused
	// directives.
	Refusals interface {
		Handle(context.Context, supervisorapp.RefusalsInput) (supervisorapp.RefusalPage, error)
	}
	Directives interface {
		Handle(context.Context, supervisorapp.SubmitInput) (supervisorapp.DirectiveResult, error)
	}
	Reviews interface {
		Handle(context.Context, supervisorapp.AnswerInput) (supervisor.Review, error)
	}
	Delegate         supervisorapp.Delegator
	AnswerDelegation supervisorapp.DelegationAnswerer
	// MCP serves the same operations as MCP tools at /mcp under the base
	// (JSON-RPC, no push); nil leaves it out.
	MCP http.Handler
}

type agentAPI struct {
	uc   AgentUseCases
	done <-chan struct{}
}

// registerAgent serves the agent API from the operation table: behind the
// host gate and the access gate (which takes supervisor credentials only on
// these paths, and limits each credential), with bodies capped at limit.
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
	for _, op := range agentOps {
		path := AgentBase + echoPath(op.Path)
		s.mounted[path] = route{operationID: "agent " + op.Method + " " + echoPath(op.Path), surface: authn.Agent}
		h := a.operation(op)
		if op.Stream {
			h = a.withSupervisor(a.events)
		}
		s.echo.Add(op.Method, path, h, bodyCap(limit))
	}
}

// withSupervisor runs h with the caller's supervisor as stored now.
func (a *agentAPI) withSupervisor(h func(echo.Context, supervisor.Supervisor) error) echo.HandlerFunc {
	return func(c echo.Context) error {
		sup, err := a.supervisor(c)
		if err != nil {
			return err
		}
		return h(c, sup)
	}
}

// operation is the REST door of an operation: its parameters from the path
// and the query, its body as sent; the answer the table built.
func (a *agentAPI) operation(op AgentOp) echo.HandlerFunc {
	return a.withSupervisor(func(c echo.Context, sup supervisor.Supervisor) error {
		r := &AgentRequest{Supervisor: sup, Token: authn.Presented(c.Request()), Values: map[string]string{},
			Where: func(p AgentParam) string { return p.In + "." + p.Name }}
		q := c.QueryParams()
		for _, p := range op.Params {
			if p.In == "path" {
				r.Values[p.Name] = c.Param(p.Name)
			} else if q.Has(p.Name) {
				r.Values[p.Name] = q.Get(p.Name)
			}
		}
		if len(op.Body) > 0 {
			b, err := readBody(c)
			if err != nil {
				return err
			}
			r.Body = b
		}
		status, out, err := op.Call(c.Request().Context(), &a.uc, r)
		if err != nil {
			return refused(c, err)
		}
		return c.JSON(status, out)
	})
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
	return a.uc.Caller.Handle(c.Request().Context(), id)
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

// clipID shortens an id quoted back in an error.
func clipID(s string) string {
	if len(s) > 64 {
		return s[:64] + "…"
	}
	return s
}
