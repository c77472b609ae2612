package httpapi

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/getkin/kin-openapi/openapi3"

	"github.com/yukta/yukta/adapters/authn"
	"github.com/yukta/yukta/adapters/httpapi/restapi"
	"github.com/yukta/yukta/domain/access"
)

func TestEverySpecOperationHasAPermission(t *testing.T) {
	spec, err := restapi.GetSpec()
	if err != nil {
		t.Fatal(err)
	}
	routes, err := specRoutes(spec)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, item := range spec.Paths.Map() {
		n += len(item.Operations())
	}
	if len(routes) != n {
		t.Fatalf("%d routes for %d operations", len(routes), n)
	}
	if r := routes["GET /api/sessions/:sessionId/executions/:executionId"]; r.op == 0 || r.public {
		t.Fatalf("getExecution route = %+v", r)
	}
	if r := routes["GET /healthz"]; !r.public {
		t.Fatalf("healthz should be public: %+v", r)
	}
	// An operation the table does not know stops the server from starting.
	spec.Paths.Set("/api/new", &openapi3.PathItem{Post: &openapi3.Operation{OperationID: "brandNew"}})
	if _, err := specRoutes(spec); err == nil || !strings.Contains(err.Error(), "brandNew") {
		t.Fatalf("an unguarded operation: %v", err)
	}
}

func TestEchoPath(t *testing.T) {
	if got := echoPath("/api/sessions/{sessionId}/executions/{executionId}"); got != "/api/sessions/:sessionId/executions/:executionId" {
		t.Fatal(got)
	}
}

func TestLimiterBoundaryAndRefill(t *testing.T) {
	l := newLimiters(Rate{N: 3, Per: time.Minute})
	now := time.Unix(1_000_000, 0)
	for i := range 3 {
		if ok, _ := l.take("a", now); !ok {
			t.Fatalf("request %d of 3 refused", i+1)
		}
	}
	ok, wait := l.take("a", now)
	if ok || wait <= 0 || wait > 20*time.Second {
		t.Fatalf("request 4 of 3: ok=%v wait=%s, want refused for about 20 s", ok, wait)
	}
	if ok, _ := l.take("b", now); !ok {
		t.Fatal("another key shares the bucket")
	}
	if ok, _ := l.take("a", now.Add(20*time.Second)); !ok {
		t.Fatal("no token after a third of the period")
	}
	if spent, _ := l.spent("a", now.Add(20*time.Second)); !spent {
		t.Fatal("spent should see the empty bucket")
	}
	// Idle buckets go after a period, so memory stays bounded.
	l.take("c", now.Add(5*time.Minute))
	if _, ok := l.m["b"]; ok || len(l.m) != 1 {
		t.Fatalf("idle buckets kept: %d", len(l.m))
	}
	if ok, _ := (*limiters)(nil).take("x", now); !ok {
		t.Fatal("no limiter must allow")
	}
	if ok, _ := newLimiters(Rate{}).take("x", now); !ok {
		t.Fatal("an unlimited rate must allow")
	}
	if retryAfter(1500*time.Millisecond) != 2 || retryAfter(0) != 1 {
		t.Fatal("Retry-After rounds up to whole seconds, at least 1")
	}
}

// TestLimiterTableIsBounded: when every bucket is busy, a new key is
// refused rather than tracked, and room comes back once buckets go idle.
func TestLimiterTableIsBounded(t *testing.T) {
	l := newLimiters(Rate{N: 5, Per: time.Minute})
	l.capacity = 3
	now := time.Unix(2_000_000, 0)
	for _, k := range []string{"a", "b", "c"} {
		if ok, _ := l.take(k, now); !ok {
			t.Fatalf("%s refused below capacity", k)
		}
	}
	if ok, wait := l.take("d", now.Add(2*time.Second)); ok || wait <= 0 {
		t.Fatalf("a fourth key in a full table: ok=%v wait=%s, want refused", ok, wait)
	}
	if len(l.m) != 3 {
		t.Fatalf("table grew to %d", len(l.m))
	}
	if ok, _ := l.take("a", now.Add(2*time.Second)); !ok {
		t.Fatal("a known key is refused because the table is full")
	}
	if ok, _ := l.take("d", now.Add(2*time.Minute)); !ok {
		t.Fatal("no room after the buckets went idle")
	}
}

// TestScopedRoutes: answering an input takes its session from the input,
// so the gate checks nothing for it and the handler checks the role
// whatever sessionId the query names; /metrics is refused to a
// session-limited key after the role check; every other route keeps the
// gate's check of the request's session.
func TestScopedRoutes(t *testing.T) {
	spec, err := restapi.GetSpec()
	if err != nil {
		t.Fatal(err)
	}
	routes, err := specRoutes(spec)
	if err != nil {
		t.Fatal(err)
	}
	answer, metrics := routes["POST /api/inputs/:inputId"], routes["GET /metrics"]
	status := routes["GET /api/sessions/:sessionId/executions/:executionId"]
	if answer.scope != scopeResource || answer.op != 0 {
		t.Errorf("answerInput route %+v: want scopeResource, with no gate check (op 0)", answer)
	}
	if metrics.scope != scopeServer || metrics.op != access.ReadMetrics || status.scope != scopeRequest || status.op != access.ReadExecutions {
		t.Errorf("routes: getMetrics %+v, getExecution %+v; want the gate's role check on both", metrics, status)
	}
	for id, sc := range routeScopes {
		if !routeOps[id].Valid() || (sc.scope == scopeServer) != (sc.does != "") {
			t.Errorf("routeScopes[%q] = %+v: want an operation of routeOps, and words for a scopeServer refusal only", id, sc)
		}
	}

	key := func(name string, role access.Role, sessions ...string) access.Principal {
		t.Helper()
		p, err := access.NewPrincipal(name, role, sessions)
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	for _, c := range []struct {
		name, op string
		p        access.Principal
		want     string // "" for allowed, else words of the 403
	}{
		{"limited operator answers", "answerInput", key("ci", access.Operator, "alpha"), ""},
		{"operator answers", "answerInput", key("op", access.Operator), ""},
		{"open mode answers", "answerInput", access.Anonymous(), ""},
		{"viewer answers", "answerInput", key("v", access.Viewer), "key:v has the role VIEWER and cannot answer inputs; use a key with the role OPERATOR or ADMIN"},
		{"limited viewer answers", "answerInput", key("dash", access.Viewer, "alpha"), "OPERATOR or ADMIN"},
		{"no principal answers", "answerInput", access.Principal{}, "not authenticated"},
		{"viewer reads metrics", "getMetrics", key("v", access.Viewer), ""},
		{"open mode reads metrics", "getMetrics", access.Anonymous(), ""},
		{"limited viewer reads metrics", "getMetrics", key("dash", access.Viewer, "alpha", "gamma"),
			"key:dash is limited to the sessions alpha, gamma and cannot read /metrics: the answer counts the work of every session on the server"},
		{"limited admin reads metrics", "getMetrics", key("root", access.Admin, "alpha"), "cannot read /metrics"},
		{"no principal reads metrics", "getMetrics", access.Principal{}, "not authenticated"},
	} {
		ctx := authn.WithPrincipal(context.Background(), c.p)
		err := authorizeScoped(ctx, c.op)
		switch {
		case c.want == "" && err != nil:
			t.Errorf("%s: got %v, want allowed", c.name, err)
		case c.want != "" && (!errors.Is(err, access.ErrForbidden) || !strings.Contains(fmt.Sprint(err), c.want)):
			t.Errorf("%s: got %v, want a 403 saying %q", c.name, err, c.want)
		}
	}
	if err := authorizeScoped(context.Background(), "noSuchOperation"); err == nil || errors.Is(err, access.ErrForbidden) {
		t.Errorf("an operation outside routeOps: got %v, want an internal error", err)
	}
}

// A WORKER key is refused every route of the spec and the MCP door, each
// with the role's refusal; a route of access.WorkTasks (the worker API the
// spec will list) lets it through and refuses every other role, ADMIN
// included.
func TestWorkerKeyRefusedOutsideTheWorkerAPI(t *testing.T) {
	spec, err := restapi.GetSpec()
	if err != nil {
		t.Fatal(err)
	}
	routes, err := specRoutes(spec)
	if err != nil {
		t.Fatal(err)
	}
	worker, err := access.NewKeyPrincipal("runner", access.Worker, nil, []string{"gpu"})
	if err != nil {
		t.Fatal(err)
	}
	admin, _ := access.NewPrincipal("root", access.Admin, nil)
	for key, r := range routes {
		if r.public {
			continue
		}
		err := refuseWorker(worker, r)
		if r.listed == access.WorkTasks {
			if err != nil {
				t.Errorf("%s (%s) refuses the WORKER key: %v", key, r.operationID, err)
			}
			continue
		}
		if !errors.Is(err, access.ErrForbidden) || !strings.Contains(err.Error(), "key:runner has the role WORKER") {
			t.Errorf("%s (%s) as WORKER: %v, want the role's refusal", key, r.operationID, err)
		}
		if err := refuseWorker(admin, r); err != nil {
			t.Errorf("%s as ADMIN: %v", key, err)
		}
	}
	if err := refuseWorker(worker, route{operationID: "mount:/mcp", surface: authn.MCP}); !errors.Is(err, access.ErrForbidden) || !strings.Contains(err.Error(), "cannot use MCP") {
		t.Errorf("the MCP door as WORKER: %v", err)
	}
	if err := refuseWorker(admin, route{operationID: "mount:/mcp", surface: authn.MCP}); err != nil {
		t.Errorf("the MCP door as ADMIN: %v", err)
	}
	// A worker route passes the WORKER key, and the gate's Can refuses
	// every other role there.
	wr := route{operationID: "pollTasks", surface: authn.REST, op: access.WorkTasks, listed: access.WorkTasks}
	if err := refuseWorker(worker, wr); err != nil || worker.Can(wr.op, "") != nil {
		t.Errorf("a worker route refuses the WORKER key: %v", err)
	}
	if err := admin.Can(wr.op, ""); !errors.Is(err, access.ErrForbidden) || !strings.Contains(err.Error(), "use a key with the role WORKER") {
		t.Errorf("%s on a worker route: %v", admin, err)
	}
	// Open mode opens the worker API, as every surface.
	if err := access.Anonymous().Can(wr.op, ""); err != nil {
		t.Errorf("open mode on a worker route: %v", err)
	}
	// No route is answered 403 before it is known to exist.
	if err := refuseWorker(worker, route{surface: authn.REST}); err != nil {
		t.Errorf("an unknown route as WORKER: %v", err)
	}
}
