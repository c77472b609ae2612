package plugin_test

import (
	"testing"

	"github.com/yukta/yukta/domain/plugin"
)

// TestSecretNamesMatchInAnyCase: a member whose name says it holds a
// secret is one whatever its case and spelling (HTTP header names are
// case-insensitive, and JSON members come as each program spells them).
func TestSecretNamesMatchInAnyCase(t *testing.T) {
	t.Parallel()
	for _, name := range []string{
		"authorization", "Authorization", "AUTHORIZATION", "Proxy-Authorization", "proxy_AUTHORIZATION",
		"apiKey", "api_key", "X-Api-Key", "x-API-key", "X-API-KEY", "xApiKey",
		"token", "Access_Token", "X-AUTH-TOKEN", "password", "PassWord", "DB_PASSWD", "secret", "clientSecret", "CLIENT-SECRET",
		"credential", "Credentials", "cookie", "Set-Cookie", "SET_COOKIE", "privateKey", "PRIVATE-KEY", "private_key",
	} {
		if !plugin.SecretName(name) {
			t.Errorf("SecretName(%q) = false, want true", name)
		}
	}
	for _, name := range []string{"Content-Type", "X-Team", "status", "nodeId", "executionId", "key", "message", "reason"} {
		if plugin.SecretName(name) {
			t.Errorf("SecretName(%q) = true, want false", name)
		}
	}
}
