package httpapi

import (
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/yukta/yukta/adapters/authn"
	"github.com/yukta/yukta/domain/access"
)

const (
	limitedOperatorKey = "ci-secret-0123456789abcdefghijkl"
	limitedViewerKey   = "dash-secret-0123456789abcdefghijk"
	viewerKey          = "view-secret-0123456789abcdefghijk"
)

// limitedKeysServer is a keyed server over the fakes with an OPERATOR and a VIEWER
// limited to "alpha", a VIEWER of every session, and metrics.
func limitedKeysServer(t *testing.T) (*Server, *fakes) {
	t.Helper()
	var specs []access.KeySpec
	for _, k := range []struct {
		name     string
		role     access.Role
		sessions []string
		secret   string
	}{
		{"ci", access.Operator, []string{"alpha"}, limitedOperatorKey},
		{"dash", access.Viewer, []string{"alpha"}, limitedViewerKey},
		{"view", access.Viewer, nil, viewerKey},
	} {
		s, err := access.NewKeySpec(k.name, k.role, k.sessions, k.secret)
		if err != nil {
			t.Fatal(err)
		}
		specs = append(specs, s)
	}
	ring, err := access.NewKeyring(specs)
	if err != nil {
		t.Fatal(err)
	}
	metrics := http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte("yukta_queue_ready 0\n")) })
	srv, f, _ := strictServer(t, Config{Security: Security{Keys: authn.Keys{API: authn.NewRing(ring)}}, MetricsHandler: metrics})
	return srv, f
}

// TestAnswerInputNeedsNoSessionID: a session-limited OPERATOR's answer
// reaches the use case without sessionId, with its session list to check
// the input's session against and the sessionId it named, if any; a VIEWER
// is refused before anything is looked up.
func TestAnswerInputNeedsNoSessionID(t *testing.T) {
	srv, f := limitedKeysServer(t)
	const path = "/api/inputs/0192f0c4-8c5e-7b7a-9f3e-2d4c5b6a7e8f"
	body := []byte(`{"answer":{"approved":true}}`)
	for _, q := range []string{"", "?sessionId=alpha", "?sessionId=beta"} {
		f.reset()
		a := send(srv.Handler(), "POST", path+q, "application/json", body, "X-API-Key", limitedOperatorKey)
		if a.status != http.StatusOK {
			t.Fatalf("limited operator, %q: %d %s, want it to reach the use case", q, a.status, a.body)
		}
		in := f.answers[0]
		if in.SessionID != strings.TrimPrefix(q, "?sessionId=") || in.SessionAllowed == nil ||
			!in.SessionAllowed("alpha") || in.SessionAllowed("beta") || in.Actor != "key:ci" {
			t.Errorf("limited operator, %q: the use case got session %q, actor %q; want the named session and alpha's filter", q, in.SessionID, in.Actor)
		}
	}
	for _, key := range []string{viewerKey, limitedViewerKey} {
		f.reset()
		a := send(srv.Handler(), "POST", path, "application/json", body, "X-API-Key", key)
		if a.status != http.StatusForbidden || !strings.Contains(a.p.Detail, "OPERATOR or ADMIN") || slices.Contains(f.called(), "answer") {
			t.Errorf("a VIEWER answering: %d %s, calls %v; want 403 naming the roles, and no call", a.status, a.body, f.called())
		}
	}
}

// TestMetricsRefusedToLimitedKeys: /metrics counts every session's work: a
// session-limited key gets 403 saying so, a key of every session the
// metrics.
func TestMetricsRefusedToLimitedKeys(t *testing.T) {
	srv, _ := limitedKeysServer(t)
	for _, target := range []string{"/metrics", "/metrics?sessionId=alpha"} {
		a := send(srv.Handler(), "GET", target, "", nil, "X-API-Key", limitedViewerKey)
		if a.status != http.StatusForbidden || a.p.Type != "urn:yukta:problem:forbidden" ||
			!strings.Contains(a.p.Detail, "key:dash is limited to the sessions alpha and cannot read /metrics") || strings.Contains(a.body, "yukta_queue") {
			t.Errorf("GET %s with a limited key: %d %s, want the documented 403", target, a.status, a.body)
		}
	}
	if a := send(srv.Handler(), "GET", "/metrics", "", nil, "X-API-Key", viewerKey); a.status != http.StatusOK || !strings.Contains(a.body, "yukta_queue_ready") {
		t.Errorf("GET /metrics as a VIEWER of every session: %d %s, want the metrics", a.status, a.body)
	}
}
