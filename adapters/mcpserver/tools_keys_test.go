package mcpserver

import (
	"crypto/rand"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"go.uber.org/zap"

	"github.com/yukta/yukta/adapters/postgres"
	"github.com/yukta/yukta/application/accessapp"
	"github.com/yukta/yukta/domain/access"
)

// configuredAdmin is the configured key the key tools must not shadow.
type configuredAdmin struct{}

func (configuredAdmin) ConfiguredKeys() []accessapp.ConfiguredKey {
	p, _ := access.NewPrincipal("admin", access.Admin, nil)
	return []accessapp.ConfiguredKey{{Principal: p, Source: "YUKTA_API_KEYS"}}
}

// The key tools map to the accessapp use cases on a real database: the
// secret once, the list without it, rotate and revoke by name, each
// refusal naming the field or the next tool, and only ADMIN may call them.
func TestKeyTools(t *testing.T) {
	t.Parallel()
	env := newEnv(t)
	store := postgres.NewAPIKeyStore(env.pool)
	tx := postgres.NewAPIKeyTransactor(env.pool)
	ring := accessapp.NewStoredKeys(store, store, nil, time.Now, func(err error) { t.Errorf("ring: %v", err) })
	d := env.deps
	d.Keys = KeyDeps{Create: accessapp.NewCreateAPIKey(tx, configuredAdmin{}, ring, rand.Reader, time.Now),
		List: accessapp.NewListAPIKeys(store, configuredAdmin{}), Rotate: accessapp.NewRotateAPIKey(tx, configuredAdmin{}, ring, rand.Reader, time.Now),
		Revoke: accessapp.NewRevokeAPIKey(tx, configuredAdmin{}, ring, time.Now), Expire: accessapp.NewSetAPIKeyExpiry(tx, configuredAdmin{}, ring, time.Now)}
	h, err := New(d, "test", zap.NewNop())
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(authenticated(t, h))
	t.Cleanup(ts.Close)
	admin := connect(t, ts.URL, secretOf("admin"))

	var created KeyOut
	decode(t, callOK(t, admin, "create_api_key", map[string]any{"name": "ci", "role": "operator", "sessions": []string{"own"}, "ttl": "24h"}), &created)
	if !strings.HasPrefix(created.Secret, "yk_") || created.Role != "OPERATOR" || created.CreatedVia != Channel || created.CreatedBy != "key:admin" ||
		created.ExpiresAt == "" || created.Source != "api" || created.Note != "" {
		t.Fatalf("create: %+v", created)
	}
	var list KeyList
	decode(t, callOK(t, admin, "list_api_keys", nil), &list)
	if len(list.Keys) != 2 || list.Keys[0].Name != "admin" || list.Keys[0].Source != "YUKTA_API_KEYS" || list.Keys[1].Name != "ci" || list.Keys[1].Secret != "" {
		t.Fatalf("list: %+v", list)
	}
	var rotated KeyOut
	decode(t, callOK(t, admin, "rotate_api_key", map[string]any{"name": "CI"}), &rotated)
	if rotated.Secret == created.Secret || rotated.RotatedVia != Channel {
		t.Fatalf("rotate: %+v", rotated)
	}
	if _, ok := ring.Authenticate(created.Secret, ""); ok {
		t.Fatal("the rotated-out secret still works")
	}
	// set_api_key_expiry calls the use case REST's PATCH /api/keys/{name} calls.
	var expiring KeyOut
	decode(t, callOK(t, admin, "set_api_key_expiry", map[string]any{"name": "ci", "ttl": "2h"}), &expiring)
	if at, err := time.Parse(time.RFC3339Nano, expiring.ExpiresAt); err != nil || time.Until(at) < time.Hour || time.Until(at) > 3*time.Hour || expiring.Secret != "" {
		t.Fatalf("set_api_key_expiry: %+v %v", expiring, err)
	}
	if _, ok := ring.Authenticate(rotated.Secret, ""); !ok {
		t.Fatal("a new expiry changed the secret")
	}
	for _, c := range []struct {
		tool string
		args map[string]any
		want string
	}{
		{"create_api_key", map[string]any{"name": "x", "role": "ROOT", "ttl": "forever"}, "ttl"},
		{"create_api_key", map[string]any{"name": "Admin", "role": "VIEWER"}, "YUKTA_API_KEYS"},
		{"create_api_key", map[string]any{"name": "ci", "role": "VIEWER"}, "list_api_keys"},
		{"rotate_api_key", map[string]any{"name": "nobody"}, "list_api_keys"},
		{"set_api_key_expiry", map[string]any{"name": "nobody", "ttl": "1h"}, "list_api_keys"},
		{"set_api_key_expiry", map[string]any{"name": "ci"}, "expiresAt"},
	} {
		res := call(t, admin, c.tool, c.args)
		if !res.IsError || !strings.Contains(text(res), c.want) || !strings.Contains(text(res), "Nothing was changed") {
			t.Errorf("%s(%v): %s, want a refusal naming %s", c.tool, c.args, text(res), c.want)
		}
	}
	operator := connect(t, ts.URL, secretOf("operator"))
	if res := call(t, operator, "list_api_keys", nil); !res.IsError || !strings.HasPrefix(text(res), "Forbidden") {
		t.Fatalf("an OPERATOR lists keys: %s", text(res))
	}
	var revoked KeyRevoked
	decode(t, callOK(t, admin, "revoke_api_key", map[string]any{"name": "ci"}), &revoked)
	if !revoked.Revoked || revoked.Name != "ci" || ring.Len() != 0 {
		t.Fatalf("revoke: %+v, ring %d", revoked, ring.Len())
	}
}
