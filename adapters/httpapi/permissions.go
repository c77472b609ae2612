package httpapi

import (
	"fmt"
	"sort"
	"strings"

	"github.com/getkin/kin-openapi/openapi3"

	"github.com/yukta/yukta/adapters/authn"
	"github.com/yukta/yukta/domain/access"
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
	"startExecution":        access.StartExecution,
	"stopWorkflow":          access.ControlExecution,
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

	// The observer journal (issue 5): reading a journal is reading the execution.
	"exportJournal":          access.ReadExecutions,
	"verifyJournal":          access.ReadExecutions,
	"getExecutionProjection": access.ReadExecutions,
	"getJournalPublicKey":    access.ReadExecutions,
}

// publicOps need no key: probes and the API description, which say nothing
// about sessions or executions.
var publicOps = map[string]bool{
	"getHealth":      true,
	"getReady":       true,
	"getOpenAPISpec": true,
}

// route is what the access gate knows of a matched route.
type route struct {
	operationID string
	op          access.Operation // zero: authenticate only (the surface authorizes, e.g. MCP per tool)
	public      bool
	surface     authn.Surface
}

// specRoutes maps "METHOD /echo/:path" of every spec operation to its route,
// and fails naming each operation the permission table does not cover.
func specRoutes(spec *openapi3.T) (map[string]route, error) {
	// The generated code's copy of the spec capitalizes operation ids.
	ops, public := map[string]access.Operation{}, map[string]bool{}
	for id, op := range routeOps {
		ops[strings.ToLower(id)] = op
	}
	for id := range publicOps {
		public[strings.ToLower(id)] = true
	}
	out := map[string]route{}
	var missing []string
	for path, item := range spec.Paths.Map() {
		for method, op := range item.Operations() {
			id := strings.ToLower(op.OperationID)
			r := route{operationID: op.OperationID, surface: authn.REST, public: public[id]}
			if !r.public {
				aop, ok := ops[id]
				if !ok || !aop.Valid() {
					missing = append(missing, op.OperationID)
					continue
				}
				r.op = aop
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
