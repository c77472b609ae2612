package httpapi

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/getkin/kin-openapi/openapi3"

	"github.com/yukta/yukta/adapters/authn"
	"github.com/yukta/yukta/domain/access"
	"github.com/yukta/yukta/domain/fault"
)

// routeOps is the one table from each OpenAPI operation to the access
// operation it performs. The server refuses to start when the spec has an
// operation missing here, so a new route cannot ship unguarded.
var routeOps = map[string]access.Operation{
	"listSessions":          access.ReadSessions,
	"getSession":            access.ReadSessions,
	"putSession":            access.ApplySession,
	"deleteSession":         access.DeleteSession,
	"getWorkflow":           access.ReadSessions,
	"listWorkflows":         access.ReadSessions,
	"startExecution":        access.StartExecution,
	"stopWorkflow":          access.ControlExecution,
	"pauseWorkflow":         access.ControlExecution,
	"resumeWorkflow":        access.ControlExecution,
	"postWebhook":           access.PostWebhook,
	"listExecutions":        access.ReadExecutions,
	"getExecution":          access.ReadExecutions,
	"getExecutionLogs":      access.ReadLogs,
	"controlExecution":      access.ControlExecution,
	"controlNode":           access.ControlExecution,
	"setBreakpoint":         access.SetBreakpoint,
	"clearBreakpoint":       access.SetBreakpoint,
	"streamExecutionEvents": access.ReadEvents,
	"streamEvents":          access.ReadEvents,
	"listInputs":            access.ReadExecutions,
	"answerInput":           access.AnswerInput,
	"listPlugins":           access.ReadPlugins,
	"getPlugin":             access.ReadPlugins,
	"getMetrics":            access.ReadMetrics,
	"getSchedulerStatus":    access.ReadMetrics,
	// The build of the server (issue 15): read like the metrics, by any
	// key, but not server-scoped: it says nothing about any session.
	"getVersion": access.ReadMetrics,
	// Who the key is (issue 24, the console's sign-in): any key may ask.
	"getSelf": access.ReadMetrics,

	// The observer journal (issue 5): reading a journal is reading the execution.
	"exportJournal":          access.ReadExecutions,
	"verifyJournal":          access.ReadExecutions,
	"getExecutionProjection": access.ReadExecutions,
	"getJournalPublicKey":    access.ReadExecutions,

	// Supervisors (issue 13): server configuration, read by every role,
	// changed by ADMIN only. A session-limited key may read the ones
	// acting within its sessions alone (the use cases filter); its writes
	// name no session, so the gate refuses them.
	"listSupervisors":             access.ReadSupervisors,
	"getSupervisor":               access.ReadSupervisors,
	"putSupervisor":               access.ManageSupervisors,
	"deleteSupervisor":            access.ManageSupervisors,
	"listSupervisorEngines":       access.ReadSupervisors,
	"getSupervisorEngine":         access.ReadSupervisors,
	"dryRunRules":                 access.ManageSupervisors,
	"getSupervisorEngineUsage":    access.ReadSupervisors,
	"listSupervisorEnginePresets": access.ReadSupervisors,
	// A supervisor's refused directives (issue 21): its audit trail holds
	// the text it sent about runs it may not own, so only an ADMIN reads it.
	"listSupervisorRefusals": access.ManageSupervisors,

	// Supervisor credentials (issue 14): issuing and revoking are an
	// ADMIN's; the metadata (never the token) is read like the
	// supervisor itself, as MCP get_supervisor shows it.
	// Stored API keys (issue 22): an ADMIN's, reads included, since the
	// list names every key and role of the server.
	// The worker API (issue 23): remote workers taking and answering the
	// tasks of TASK nodes.
	"pollTasks":      workerOp,
	"heartbeatTask":  workerOp,
	"completeTask":   workerOp,
	"failTask":       workerOp,
	"appendTaskLogs": workerOp,

	"listAPIKeys":     access.ManageAPIKeys,
	"createAPIKey":    access.ManageAPIKeys,
	"getAPIKey":       access.ManageAPIKeys,
	"rotateAPIKey":    access.ManageAPIKeys,
	"revokeAPIKey":    access.ManageAPIKeys,
	"setAPIKeyExpiry": access.ManageAPIKeys,

	"issueCredential":  access.ManageCredentials,
	"getCredential":    access.ReadSupervisors,
	"revokeCredential": access.ManageCredentials,

	// Reviews and approvals (issue 13): reading a review is reading the
	// run it holds a command for (the use cases filter a session-limited
	// key's view); deciding one is an ADMIN's.
	"listApprovals":  access.ReadExecutions,
	"getApproval":    access.ReadExecutions,
	"decideApproval": access.DecideApprovals,

	// The hold ledger (issue 21): reading a run's holds is reading the
	// run; ending a supervisor's hold in its stead is managing
	// supervisors, an ADMIN's (a session-limited ADMIN within its
	// sessions: the path names the session).
	"listHolds":   access.ReadExecutions,
	"releaseHold": access.ManageSupervisors,
}

// publicOps need no key: probes and the API description, which say nothing
// about sessions or executions.
var publicOps = map[string]bool{
	"getHealth":      true,
	"getReady":       true,
	"getOpenAPISpec": true,
}

// sessionScope is where a route finds the session it acts on, which decides
// what a session-limited key may do with it.
type sessionScope uint8

const (
	// scopeRequest: the {sessionId} path parameter, else the sessionId query
	// parameter; none is a read across sessions, whose answer the handler
	// filters to the key's sessions. The gate checks the role and the
	// session.
	scopeRequest sessionScope = iota
	// scopeResource: the session of the thing the route names (an input's
	// session), known only once the thing is loaded. The gate only
	// authenticates; the handler checks the role (authorizeScoped) before
	// it looks anything up, and the use case checks the thing's session,
	// answering one outside the key's list exactly as one that does not
	// exist. A sessionId query parameter is not trusted for it.
	scopeResource
	// scopeServer: the whole server. Its answer counts the work of every
	// session (metrics), so a session-limited key may not read it at all:
	// the gate checks the role, the handler refuses a limited key
	// (authorizeScoped).
	scopeServer
)

// scoped is a routeScopes entry: the scope, and what a scopeServer operation
// does, for its refusal.
type scoped struct {
	scope sessionScope
	does  string
}

// routeScopes lists the operations whose session is not the request's.
var routeScopes = map[string]scoped{
	"answerInput": {scope: scopeResource},
	// An approval's session is its review's, known once it is loaded.
	"decideApproval": {scope: scopeResource},
	"getMetrics":     {scope: scopeServer, does: "read /metrics"},
	// The scheduler counts the runs of every session, as /metrics does.
	"getSchedulerStatus": {scope: scopeServer, does: "read the scheduler status"},
	// A supervisor's refusals name runs of any session.
	"listSupervisorRefusals": {scope: scopeServer, does: "read a supervisor's refused directives"},
}

// route is what the access gate knows of a matched route.
type route struct {
	operationID string
	op          access.Operation // zero: authenticate only (the surface or handler authorizes, e.g. MCP per tool)
	// listed is the route's operation in routeOps, also where the handler
	// authorizes (scopeResource); zero for public routes and mounts.
	listed  access.Operation
	scope   sessionScope
	public  bool
	surface authn.Surface
}

// authorizeScoped is the part of a scoped operation's authorization that
// its handler does, because the gate cannot: for scopeResource the role
// (the gate let the request through unchecked), for scopeServer the refusal
// of a session-limited key (after the gate's role check). The role refusal
// is the permission table's own and never depends on a session.
func authorizeScoped(ctx context.Context, operationID string) error {
	sc, op := routeScopes[operationID], routeOps[operationID]
	if !op.Valid() {
		return fmt.Errorf("httpapi: %s is not in routeOps", operationID)
	}
	p := authn.PrincipalFrom(ctx)
	if !access.Allowed(p.Role(), op) {
		return &access.ForbiddenError{Actor: p.Actor(), Role: p.Role(), Op: op, Need: op.MinRole()}
	}
	if sc.scope == scopeServer && p.Limited() {
		return fault.Newf(access.ErrForbidden, "%s is limited to the sessions %s and cannot %s: the answer counts the work of every session on the server; use a key without a session list",
			p.Actor(), strings.Join(p.Sessions(), ", "), sc.does)
	}
	return nil
}

// specRoutes maps "METHOD /echo/:path" of every spec operation to its route,
// and fails naming each operation the permission table does not cover.
func specRoutes(spec *openapi3.T) (map[string]route, error) {
	// The generated code's copy of the spec capitalizes operation ids.
	ops, public := map[string]access.Operation{}, map[string]bool{}
	scopes := map[string]sessionScope{}
	for id, op := range routeOps {
		ops[strings.ToLower(id)] = op
	}
	for id, sc := range routeScopes {
		scopes[strings.ToLower(id)] = sc.scope
	}
	for id := range publicOps {
		public[strings.ToLower(id)] = true
	}
	out := map[string]route{}
	var missing []string
	for path, item := range spec.Paths.Map() {
		for method, op := range item.Operations() {
			if slices.Contains(op.Tags, "agent") {
				continue // the agent API registers its own routes (agent.go)
			}
			id := strings.ToLower(op.OperationID)
			r := route{operationID: op.OperationID, surface: authn.REST, public: public[id], scope: scopes[id]}
			if !r.public {
				aop, ok := ops[id]
				if !ok || !aop.Valid() {
					missing = append(missing, op.OperationID)
					continue
				}
				r.listed = aop
				if r.scope != scopeResource {
					r.op = aop
				}
			}
			out[method+" "+echoPath(path)] = r
		}
	}
	if len(missing) > 0 {
		sort.Strings(missing)
		return nil, fmt.Errorf("httpapi: operations without a permission entry in routeOps: %s; add each with the access operation it performs",
			strings.Join(missing, ", "))
	}
	return out, nil
}

// echoPath turns /a/{b}/c into echo's /a/:b/c.
func echoPath(p string) string {
	var b strings.Builder
	for seg := range strings.SplitSeq(p, "/") {
		if seg == "" {
			continue
		}
		b.WriteByte('/')
		if strings.HasPrefix(seg, "{") && strings.HasSuffix(seg, "}") {
			b.WriteByte(':')
			seg = seg[1 : len(seg)-1]
		}
		b.WriteString(seg)
	}
	return b.String()
}
