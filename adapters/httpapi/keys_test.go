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

var fakeKeyUseCases = KeyUseCases{Create: fakeCreateKey{}, List: fakeListKeys{}, Get: fakeGetKey{}, Rotate: fakeRotateKey{}, Revoke: fakeRevokeKey{}}

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
	for _, r := range []struct{ method, target string }{{"GET", "/api/keys/nobody"}, {"POST", "/api/keys/nobody/rotate"}, {"DELETE", "/api/keys/nobody"}} {
		a := send(h, r.method, r.target, "", nil)
		if a.status != http.StatusNotFound || !strings.Contains(a.p.Detail, "GET /api/keys") {
			t.Errorf("%s %s: %d %s", r.method, r.target, a.status, a.body)
		}
	}
}
