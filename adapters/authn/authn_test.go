package authn

import (
	"context"
	"errors"
	"net/http/httptest"
	"testing"

	"github.com/yukta/yukta/domain/access"
)

func ring(t *testing.T, name string, role access.Role, secret string) *access.Keyring {
	t.Helper()
	spec, err := access.NewKeySpec(name, role, nil, secret)
	if err != nil {
		t.Fatal(err)
	}
	k, err := access.NewKeyring([]access.KeySpec{spec})
	if err != nil {
		t.Fatal(err)
	}
	return k
}

const (
	apiSecret = "api-secret-0123456789abcdefgh"
	mcpSecret = "mcp-secret-0123456789abcdefgh"
)

func TestAuthenticateBySurface(t *testing.T) {
	keys := Keys{API: NewRing(ring(t, "ci", access.Operator, apiSecret)), MCP: ring(t, "mcp", access.Admin, mcpSecret)}
	cases := []struct {
		header, value string
		surface       Surface
		actor         string
		err           error
	}{
		{"Authorization", "Bearer " + apiSecret, REST, "key:ci", nil},
		{"Authorization", "bearer " + apiSecret, MCP, "key:ci", nil},
		{"X-API-Key", apiSecret, REST, "key:ci", nil},
		{"X-API-Key", mcpSecret, MCP, "key:mcp", nil},
		{"X-API-Key", mcpSecret, REST, "", ErrInvalid},  // the MCP key opens /mcp only
		{"X-API-Key", apiSecret, Agent, "", ErrInvalid}, // the agent API takes supervisor credentials
		{"Authorization", "Basic " + apiSecret, REST, "", ErrMissing},
		{"", "", REST, "", ErrMissing},
		{"X-API-Key", "nope", REST, "", ErrInvalid},
	}
	for _, c := range cases {
		r := httptest.NewRequest("GET", "/", nil)
		if c.header != "" {
			r.Header.Set(c.header, c.value)
		}
		p, err := keys.Authenticate(r, c.surface)
		if !errors.Is(err, c.err) || p.Actor() != c.actor {
			t.Errorf("%s %q on %s: actor %q err %v, want %q %v", c.header, c.value, c.surface, p.Actor(), err, c.actor, c.err)
		}
	}
}

func TestOpenMode(t *testing.T) {
	var none Keys
	p, err := none.Authenticate(httptest.NewRequest("GET", "/", nil), REST)
	if err != nil || !p.Anonymous() || p.Role() != access.Admin {
		t.Fatalf("open mode: %v %v", p, err)
	}
	// An MCP key alone closes /mcp but leaves REST open.
	mcpOnly := Keys{MCP: ring(t, "mcp", access.Admin, mcpSecret)}
	if !mcpOnly.OpenOn(REST) || mcpOnly.OpenOn(MCP) || mcpOnly.Open() {
		t.Fatal("an MCP key alone should close only MCP")
	}
	if _, err := mcpOnly.Authenticate(httptest.NewRequest("POST", "/mcp", nil), MCP); !errors.Is(err, ErrMissing) {
		t.Fatalf("MCP without its key: %v", err)
	}
}

func TestPrincipalOnContext(t *testing.T) {
	if !PrincipalFrom(context.Background()).IsZero() {
		t.Fatal("a bare context should carry the zero principal")
	}
	ctx := WithPrincipal(context.Background(), access.Anonymous())
	if PrincipalFrom(ctx).Actor() != "anonymous" {
		t.Fatal("principal lost")
	}
}

// storedRing is a StoredKeys of one key, recording the source it is given.
type storedRing struct {
	secret string
	p      access.Principal
	n      int
	from   string
}

func (s *storedRing) Len() int { return s.n }
func (s *storedRing) Authenticate(presented, from string) (access.Principal, bool) {
	if presented != s.secret {
		return access.Principal{}, false
	}
	s.from = from
	return s.p, true
}

// Stored keys open REST and MCP (not the agent API) after the configured
// rings, get the request's source, and close open mode.
func TestStoredKeys(t *testing.T) {
	p, err := access.NewPrincipal("stored", access.Viewer, nil)
	if err != nil {
		t.Fatal(err)
	}
	st := &storedRing{secret: "yk_stored", p: p}
	keys := Keys{Stored: st}
	if !keys.OpenOn(REST) || !keys.OpenOn(MCP) {
		t.Fatal("no key configured or stored: want open")
	}
	st.n = 1
	if keys.OpenOn(REST) || keys.OpenOn(MCP) || keys.Open() {
		t.Fatal("a stored key: want closed")
	}
	for _, surface := range []Surface{REST, MCP} {
		r := httptest.NewRequest("GET", "/api/sessions", nil)
		r.RemoteAddr = "192.0.2.7:4242"
		r.Header.Set("Authorization", "Bearer yk_stored")
		got, err := keys.Authenticate(r, surface)
		if err != nil || got.Actor() != "key:stored" || st.from != "192.0.2.7" {
			t.Fatalf("%s: %v %v from %q", surface, got, err, st.from)
		}
		r = r.WithContext(WithSource(r.Context(), "203.0.113.9"))
		if _, err := keys.Authenticate(r, surface); err != nil || st.from != "203.0.113.9" {
			t.Fatalf("%s with a source on the context: %v from %q", surface, err, st.from)
		}
	}
	r := httptest.NewRequest("GET", "/api/agent/v1/self", nil)
	r.Header.Set("Authorization", "Bearer yk_stored")
	if _, err := keys.Authenticate(r, Agent); !errors.Is(err, ErrInvalid) {
		t.Fatalf("agent API with a stored key: %v", err)
	}
	// A configured key is matched first and never reaches the stored ring.
	keys.API = NewRing(ring(t, "ci", access.Operator, apiSecret))
	st.from = ""
	r = httptest.NewRequest("GET", "/api/sessions", nil)
	r.Header.Set("X-API-Key", apiSecret)
	if got, err := keys.Authenticate(r, REST); err != nil || got.Actor() != "key:ci" || st.from != "" {
		t.Fatalf("configured key: %v %v", got, err)
	}
}
