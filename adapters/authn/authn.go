// Package authn is the one adapter-side authenticator of every door (REST,
// MCP, agent API). It turns a request's credentials into a domain
// access.Principal, carries it on the request context for use cases and
// tool handlers, and rate limits failed attempts per source. It decides who
// the caller is; domain/access decides what the caller may do.
package authn

import (
	"context"
	"errors"
	"net"
	"net/http"
	"strings"

	"github.com/yukta/yukta/domain/access"
)

// Surface is a door into the server. Keys are scoped to surfaces: the MCP
// key opens only /mcp.
type Surface uint8

// The surfaces.
const (
	REST  Surface = iota + 1 // /api, webhooks, /metrics
	MCP                      // /mcp and its /sse alias
	Agent                    // /api/agent/v1 (supervisor credentials)
)

func (s Surface) String() string {
	switch s {
	case REST:
		return "rest"
	case MCP:
		return "mcp"
	case Agent:
		return "agent"
	}
	return "unknown"
}

// Keys are the configured keyrings. API opens REST and MCP (YUKTA_API_KEY and
// YUKTA_API_KEYS); a reload of the key file replaces its keyring whole (see
// Ring). MCP opens /mcp only (YUKTA_MCP_API_KEY). Stored, the keys ADMINs
// create at runtime, open REST and MCP like API keys.
type Keys struct {
	API    *Ring
	MCP    *access.Keyring
	Stored StoredKeys
}

// StoredKeys are the stored API keys as this instance holds them in memory
// (accessapp.StoredKeys). Authenticate gets the request's source address,
// recorded as the key's last use.
type StoredKeys interface {
	Len() int
	Authenticate(presented, from string) (access.Principal, bool)
}

func (k Keys) stored() int {
	if k.Stored == nil {
		return 0
	}
	return k.Stored.Len()
}

// Open reports whether no key is configured or stored at all, so every
// caller is the anonymous ADMIN (allowed only on a loopback bind).
func (k Keys) Open() bool { return k.API.Len() == 0 && k.MCP.Len() == 0 && k.stored() == 0 }

// OpenOn reports whether surface takes callers without a key. REST is open
// when no API key is configured; MCP only when no MCP key
// is configured either. So an MCP key alone leaves REST open, which is why
// the bind guard does not count it as protecting the server.
//
// The agent API is never open: it takes supervisor credentials only, with
// or without API keys configured.
func (k Keys) OpenOn(surface Surface) bool {
	switch surface {
	case MCP:
		return k.Open()
	case Agent:
		return false
	}
	return k.API.Len() == 0 && k.stored() == 0
}

// Errors of Authenticate. Edges answer both with 401; neither says which
// keys exist.
var (
	ErrMissing = errors.New("authn: no API key presented")
	ErrInvalid = errors.New("authn: the API key presented is not valid here")
)

// Authenticate returns the principal of the key r presents for surface, or
// the anonymous principal in open mode. Keys are read from
// "Authorization: Bearer <key>" or "X-API-Key: <key>".
func (k Keys) Authenticate(r *http.Request, surface Surface) (access.Principal, error) {
	if k.OpenOn(surface) {
		return access.Anonymous(), nil
	}
	secret := Presented(r)
	if secret == "" {
		return access.Principal{}, ErrMissing
	}
	if p, ok := k.API.Authenticate(secret); ok && surface != Agent {
		return p, nil
	}
	if surface == MCP {
		if p, ok := k.MCP.Authenticate(secret); ok {
			return p, nil
		}
	}
	if k.Stored != nil && surface != Agent {
		if p, ok := k.Stored.Authenticate(secret, Source(r)); ok {
			return p, nil
		}
	}
	return access.Principal{}, ErrInvalid
}

type sourceKey struct{}

// WithSource returns ctx carrying the address a request came from, as the
// edge decided it (the peer, or X-Forwarded-For behind a trusted proxy).
func WithSource(ctx context.Context, addr string) context.Context {
	return context.WithValue(ctx, sourceKey{}, addr)
}

// Source returns the address r came from: the one WithSource put on its
// context, else the host of its peer.
func Source(r *http.Request) string {
	if s, ok := r.Context().Value(sourceKey{}).(string); ok && s != "" {
		return s
	}
	if host, _, err := net.SplitHostPort(r.RemoteAddr); err == nil {
		return host
	}
	return r.RemoteAddr
}

// Presented returns the secret a request carries, or "".
func Presented(r *http.Request) string {
	if a := r.Header.Get("Authorization"); a != "" {
		if scheme, rest, ok := strings.Cut(a, " "); ok && strings.EqualFold(scheme, "Bearer") {
			return strings.TrimSpace(rest)
		}
		return ""
	}
	return strings.TrimSpace(r.Header.Get("X-API-Key"))
}

type principalKey struct{}

// WithPrincipal returns ctx carrying p.
func WithPrincipal(ctx context.Context, p access.Principal) context.Context {
	return context.WithValue(ctx, principalKey{}, p)
}

// PrincipalFrom returns the principal ctx carries; the zero Principal (which
// may do nothing) when there is none.
func PrincipalFrom(ctx context.Context) access.Principal {
	p, _ := ctx.Value(principalKey{}).(access.Principal)
	return p
}
