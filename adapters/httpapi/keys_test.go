package httpapi

import (
	"context"
	"crypto/rand"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/yukta/yukta/application/accessapp"
	"github.com/yukta/yukta/domain/access"
)

// Fakes of the key use cases: create runs the domain's validation, as the
// real use case does before it stores anything; the rest find nothing.
type (
	fakeCreateKey struct{}
	fakeListKeys  struct{}
	fakeGetKey    struct{}
	fakeRotateKey struct{}
	fakeRevokeKey struct{}
	fakeExpireKey struct{}
)

func (fakeCreateKey) Handle(_ context.Context, in accessapp.CreateAPIKeyInput) (accessapp.IssuedAPIKey, error) {
	k, tok, err := access.NewAPIKey(in.Spec, rand.Reader, time.Now(), in.Actor, in.Channel)
	return accessapp.IssuedAPIKey{Key: k, Token: tok}, err
}
func (fakeListKeys) Handle(context.Context) ([]accessapp.ListedKey, error) { return nil, nil }
func (fakeGetKey) Handle(_ context.Context, name string) (access.APIKey, error) {
	return access.APIKey{}, accessapp.NotFound(name)
}
func (fakeRotateKey) Handle(_ context.Context, in accessapp.RotateAPIKeyInput) (accessapp.IssuedAPIKey, error) {
	return accessapp.IssuedAPIKey{}, accessapp.NotFound(in.Name)
}
func (fakeRevokeKey) Handle(_ context.Context, in accessapp.RevokeAPIKeyInput) (access.APIKey, error) {
	return access.APIKey{}, accessapp.NotFound(in.Name)
}

// fakeExpireKey finds only "ci" and runs the domain's checks on it.
func (fakeExpireKey) Handle(_ context.Context, in accessapp.SetAPIKeyExpiryInput) (access.APIKey, error) {
	if in.Name != "ci" {
		return access.APIKey{}, accessapp.NotFound(in.Name)
	}
	k, _, err := access.NewAPIKey(access.APIKeySpec{Name: "ci", Role: "VIEWER"}, rand.Reader, time.Now(), "", "")
	if err != nil {
		return access.APIKey{}, err
	}
	return k.WithExpiry(in.ExpiresAt, in.TTL, time.Now())
}

var fakeKeyUseCases = KeyUseCases{Create: fakeCreateKey{}, List: fakeListKeys{}, Get: fakeGetKey{}, Rotate: fakeRotateKey{}, Revoke: fakeRevokeKey{}, Expire: fakeExpireKey{}}

// PATCH /api/keys/{name} answers the key with its new expiry, and refuses a
// body with neither member, both, or a bad one with a 400 naming it.
func TestSetAPIKeyExpiryBodies(t *testing.T) {
	t.Parallel()
	srv, _, _ := strictServer(t, Config{BodyLimit: 1 << 16})
	h := srv.Handler()
	for _, c := range []struct {
		body   string
		status int
		path   string
	}{
		{`{"ttl":"1h"}`, 200, ""},
		{`{"expiresAt":"2099-01-01T00:00:00Z"}`, 400, "expiresAt"},
		{`{}`, 400, "expiresAt"},
		{`{"ttl":"1h","expiresAt":"` + time.Now().Add(time.Hour).UTC().Format(time.RFC3339) + `"}`, 400, "ttl"},
		{`{"ttl":"soon"}`, 400, "ttl"},
		{`{"ttl":"1h","colour":1}`, 400, ""},
	} {
		a := send(h, "PATCH", "/api/keys/ci", jsonCT, []byte(c.body))
		if a.status != c.status {
			t.Errorf("%s: %d %s, want %d", c.body, a.status, a.body, c.status)
			continue
		}
		if c.status == 200 && (!strings.Contains(a.body, `"expiresAt":"`) || strings.Contains(a.body, "secret")) {
			t.Errorf("%s: %s", c.body, a.body)
		}
		if c.path != "" && !strings.Contains(","+strings.Join(a.paths(), ",")+",", ","+c.path+",") {
			t.Errorf("%s: violations at %v, want one at %s", c.body, a.paths(), c.path)
		}
	}
}

// POST /api/keys refuses a bad body with a 400 naming each bad member,
// answers a good one 201 with the secret and no-store, and a key that does
// not exist 404 with the next step.
func TestCreateAPIKeyBodies(t *testing.T) {
	t.Parallel()
	srv, _, _ := strictServer(t, Config{BodyLimit: 1 << 16})
	h := srv.Handler()
	for _, c := range []struct {
		body   string
		status int
		paths  []string
	}{
		{`{"name":"ci","role":"ADMIN","ttl":"1h"}`, 201, nil},
		{`{"name":"bad name","role":"ROOT","sessions":[],"expiresAt":"x"}`, 400, []string{"name", "role", "sessions", "expiresAt"}},
		{`{"name":"ci","role":"ADMIN","ttl":"1h","expiresAt":"2030-01-01T00:00:00Z"}`, 400, []string{"ttl"}},
		{`{"name":"ci","role":"ADMIN","colour":1}`, 400, nil},
		{`{"role":"ADMIN"}`, 400, nil},
		{`{"name":1,"role":"ADMIN"}`, 400, nil},
	} {
		a := send(h, "POST", "/api/keys", jsonCT, []byte(c.body))
		if a.status != c.status {
			t.Errorf("%s: %d %s, want %d", c.body, a.status, a.body, c.status)
			continue
		}
		if c.status == 201 && !strings.Contains(a.body, `"secret":"yk_`) {
			t.Errorf("%s: %s", c.body, a.body)
		}
		got := strings.Join(a.paths(), ",")
		for _, p := range c.paths {
			if !strings.Contains(","+got+",", ","+p+",") {
				t.Errorf("%s: violations at %s, want one at %s", c.body, got, p)
			}
		}
		if c.status == 400 && len(a.p.Errors) == 0 {
			t.Errorf("%s: 400 without violations: %s", c.body, a.body)
		}
	}
	for _, r := range []struct{ method, target, body string }{{"GET", "/api/keys/nobody", ""}, {"POST", "/api/keys/nobody/rotate", ""}, {"DELETE", "/api/keys/nobody", ""},
		{"PATCH", "/api/keys/nobody", `{"ttl":"1h"}`}} {
		var body []byte
		ct := ""
		if r.body != "" {
			body, ct = []byte(r.body), jsonCT
		}
		a := send(h, r.method, r.target, ct, body)
		if a.status != http.StatusNotFound || !strings.Contains(a.p.Detail, "GET /api/keys") {
			t.Errorf("%s %s: %d %s", r.method, r.target, a.status, a.body)
		}
	}
}
