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

// TestMaskCredentials: each shape the list knows is masked, what it names
// (the scheme, the key, the URL around the password) is kept, and plain
// text is left alone.
func TestMaskCredentials(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		"Authorization: Bearer abcdefgh12345":        "Authorization: *** ***",
		"curl -H 'x: Bearer abcdefgh12345'":          "curl -H 'x: Bearer ***'",
		"Basic dXNlcjpwYXNzd29yZA==":                 "Basic ***",
		`password="hunter2!"`:                        `password="***"`,
		"CLIENT_SECRET=s3cr3tvalue and more":         "CLIENT_SECRET=*** and more",
		"credential: abcd1234":                       "credential: ***",
		"postgres://app:pa55w0rd@db:5432/yukta":      "postgres://app:***@db:5432/yukta",
		"token yks_ABCDEFGHabcdefgh12345678 expired": "token yks_*** expired",
		"nothing secret here, status=ok":             "nothing secret here, status=ok",
	} {
		if got := plugin.MaskCredentials(in); got != want {
			t.Errorf("MaskCredentials(%q) = %q, want %q", in, got, want)
		}
	}
}
