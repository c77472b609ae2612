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
