package bootstrap

import (
	"flag"
	"io"
	"maps"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"go.uber.org/fx"
	"go.uber.org/zap"

	"github.com/yukta/yukta/adapters/authn"
)

// TestModuleIsComplete fails when a constructor's dependency has no provider;
// it calls no constructor.
func TestModuleIsComplete(t *testing.T) {
	if err := fx.ValidateApp(Module, fx.Supply(Config{}, DSN(""), zap.NewNop(), Extensions{})); err != nil {
		t.Fatal(err)
	}
}

func parse(t *testing.T, args []string, env map[string]string) (Config, error) {
	t.Helper()
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	return ParseServeConfig(args, func(k string) string { return env[k] }, fs)
}

func TestServeConfigDefaultsEnvAndFlags(t *testing.T) {
	c, err := parse(t, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if c.Addr != "127.0.0.1:8080" || c.DataDir != defaultDataDir(func(string) string { return "" }, os.Geteuid(), passwdHome) || c.Workers != 128 || c.Lease != 15*time.Second || c.ShutdownTimeout != 15*time.Second {
		t.Fatalf("defaults = %+v", c)
	}
	c, err = parse(t, []string{"--workers", "8"}, map[string]string{"YUKTA_WORKERS": "4", "YUKTA_ADDR": "127.0.0.1:9", "YUKTA_ALLOWED_HOSTS": "a.example, b.example"})
	if err != nil {
		t.Fatal(err)
	}
	if c.Workers != 8 || c.Addr != "127.0.0.1:9" || len(c.AllowedHosts) != 2 || c.AllowedHosts[1] != "b.example" {
		t.Fatalf("flag should beat env, env should beat default: %+v", c)
	}
}

func TestServeConfigRefusesBadValuesNamingEach(t *testing.T) {
	_, err := parse(t, []string{"--addr", "nowhere", "--workers", "0", "--log-level", "loud", "--debug-addr", "0.0.0.0:6060"},
		map[string]string{"YUKTA_LEASE": "1ms"})
	if err == nil {
		t.Fatal("bad config accepted")
	}
	for _, want := range []string{"YUKTA_ADDR", "YUKTA_WORKERS", "YUKTA_LOG_LEVEL", "YUKTA_DEBUG_ADDR", "YUKTA_LEASE"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error does not name %s: %v", want, err)
		}
	}
}

// TestBindGuard: with no access keys every surface is open, so only loopback
// binds start.
func TestBindGuard(t *testing.T) {
	for addr, ok := range map[string]bool{
		"127.0.0.1:8080": true, "127.0.0.1:0": true, "[::1]:8080": true, "localhost:9000": true,
		"0.0.0.0:8080": false, ":8080": false, "10.0.0.5:8080": false, "[::]:8080": false, "example.com:80": false,
	} {
		_, err := parse(t, []string{"--addr", addr}, nil)
		if got := err == nil; got != ok {
			t.Errorf("--addr %s: accepted=%v, want %v (err %v)", addr, got, ok, err)
		}
		if err != nil && !strings.Contains(err.Error(), "loopback") {
			t.Errorf("--addr %s: error does not say why: %v", addr, err)
		}
	}
}

// TestStartupMatrix: every combination of keys and binds; a non-loopback
// bind starts only when API keys protect REST, MCP and the agent API, and a
// refusal names the setting that is missing.
func TestStartupMatrix(t *testing.T) {
	dir := t.TempDir()
	keyFile := dir + "/keys"
	if err := os.WriteFile(keyFile, []byte("ops OPERATOR sessions=etl 0123456789abcdef0123456789\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	const secret = "abcdefghijklmnopqrstuvwxyz012345"
	keySets := map[string]map[string]string{
		"none":         {},
		"api key":      {"YUKTA_API_KEY": secret},
		"key file":     {"YUKTA_API_KEYS": keyFile},
		"mcp key only": {"YUKTA_MCP_API_KEY": secret},
		"api and mcp":  {"YUKTA_API_KEY": secret, "YUKTA_MCP_API_KEY": secret + "-mcp"},
		"file and mcp": {"YUKTA_API_KEYS": keyFile, "YUKTA_MCP_API_KEY": secret},
	}
	binds := map[string]bool{ // loopback?
		"127.0.0.1:8080": true, "[::1]:8080": true, "localhost:8080": true, "127.0.0.2:0": true,
		"0.0.0.0:8080": false, ":8080": false, "[::]:8080": false, "10.0.0.5:8080": false, "192.168.1.20:80": false, "example.com:443": false,
	}
	openNetwork := 0
	for name, env := range keySets {
		protected := env["YUKTA_API_KEY"] != "" || env["YUKTA_API_KEYS"] != ""
		for addr, loopback := range binds {
			e := map[string]string{"YUKTA_ADDR": addr}
			maps.Copy(e, env)
			c, err := parse(t, nil, e)
			started := err == nil
			if started && !loopback && (c.Keys.OpenOn(authn.REST) || c.Keys.OpenOn(authn.MCP) || c.Keys.OpenOn(authn.Agent)) {
				openNetwork++
			}
			if want := loopback || protected; started != want {
				t.Errorf("%s on %s: started=%v, want %v (%v)", name, addr, started, want, err)
				continue
			}
			if !started {
				msg := err.Error()
				if !strings.Contains(msg, "YUKTA_API_KEY") || !strings.Contains(msg, "YUKTA_API_KEYS") {
					t.Errorf("%s on %s: the refusal does not name the missing settings: %v", name, addr, err)
				}
				if env["YUKTA_MCP_API_KEY"] != "" && !strings.Contains(msg, "protects /mcp alone") {
					t.Errorf("%s on %s: the refusal does not say the MCP key is not enough: %v", name, addr, err)
				}
				if strings.Contains(msg, secret) {
					t.Errorf("%s on %s: the refusal repeats a secret", name, addr)
				}
			}
		}
	}
	if openNetwork != 0 {
		t.Fatalf("%d combinations start on a network address with a surface open", openNetwork)
	}
}

// TestKeyFileErrorsFailBootNamingTheLine: a bad key file stops the server
// with the file's line numbers and never a secret.
func TestKeyFileErrorsFailBootNamingTheLine(t *testing.T) {
	keyFile := t.TempDir() + "/keys"
	body := "# ok\nalice ADMIN sha256:" + strings.Repeat("ab", 32) + "\nbob BOSS supersecretvalue-0123456789abc\ncarol VIEWER xQz9Wk7\n"
	if err := os.WriteFile(keyFile, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	_, err := parse(t, nil, map[string]string{"YUKTA_API_KEYS": keyFile})
	if err == nil {
		t.Fatal("a bad key file was accepted")
	}
	for _, want := range []string{"YUKTA_API_KEYS", "line 3", "line 4"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error does not name %s: %v", want, err)
		}
	}
	for _, secret := range []string{"supersecretvalue-0123456789abc", "xQz9Wk7"} {
		if strings.Contains(err.Error(), secret) {
			t.Errorf("error repeats the secret %q: %v", secret, err)
		}
	}
	_, err = parse(t, nil, map[string]string{"YUKTA_API_KEY": "too-short"})
	if err == nil || !strings.Contains(err.Error(), "YUKTA_API_KEY") || strings.Contains(err.Error(), "too-short") {
		t.Fatalf("a short YUKTA_API_KEY: %v", err)
	}
}

func TestRateSettings(t *testing.T) {
	c, err := parse(t, nil, map[string]string{"YUKTA_RATE_LIMIT_KEY": "5/m", "YUKTA_RATE_LIMIT_SOURCE": "off", "YUKTA_TRUSTED_PROXIES": "10.0.0.0/8, 192.168.1.1"})
	if err != nil {
		t.Fatal(err)
	}
	if c.KeyRate.N != 5 || c.KeyRate.Per != time.Minute || !c.SourceRate.Unlimited() || len(c.TrustedProxies) != 2 {
		t.Fatalf("config %+v", c)
	}
	_, err = parse(t, nil, map[string]string{"YUKTA_RATE_LIMIT_KEY": "fast", "YUKTA_TRUSTED_PROXIES": "nope"})
	if err == nil || !strings.Contains(err.Error(), "YUKTA_RATE_LIMIT_KEY") || !strings.Contains(err.Error(), "YUKTA_TRUSTED_PROXIES") {
		t.Fatalf("bad rate settings: %v", err)
	}
}

func TestValueLimitSettings(t *testing.T) {
	c, err := parse(t, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if l := c.Limits; l.MaxMessageBytes != 1<<20 || l.MaxOutputBytes != 8<<20 || l.MaxLogLineBytes != 16<<10 {
		t.Fatalf("default limits = %+v", l)
	}
	c, err = parse(t, []string{"--max-log-line-bytes", "4096"}, map[string]string{"YUKTA_MAX_MESSAGE_BYTES": "64KiB", "YUKTA_MAX_OUTPUT_BYTES": "2 MiB"})
	if err != nil {
		t.Fatal(err)
	}
	if l := c.Limits; l.MaxMessageBytes != 64<<10 || l.MaxOutputBytes != 2<<20 || l.MaxLogLineBytes != 4096 {
		t.Fatalf("limits = %+v", l)
	}
	for _, bad := range []map[string]string{
		{"YUKTA_MAX_MESSAGE_BYTES": "1GiB"},
		{"YUKTA_MAX_MESSAGE_BYTES": "12"},
		{"YUKTA_MAX_MESSAGE_BYTES": "lots"},
		{"YUKTA_MAX_MESSAGE_BYTES": "4MiB", "YUKTA_MAX_OUTPUT_BYTES": "2MiB"},
		{"YUKTA_MAX_LOG_LINE_BYTES": "-1"},
	} {
		if _, err := parse(t, nil, bad); err == nil || !strings.Contains(err.Error(), "YUKTA_MAX_") {
			t.Errorf("%v: got %v, want an error naming the setting", bad, err)
		}
	}
}

// TestAllowedOriginsSetting: origins are read from the flag or the
// variable and normalised; anything that is not scheme://host[:port] stops
// the server naming the setting.
func TestAllowedOriginsSetting(t *testing.T) {
	c, err := parse(t, nil, map[string]string{"YUKTA_ALLOWED_ORIGINS": "http://LocalHost:3000, https://ui.example:443 http://[::1]:80/"})
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"http://localhost:3000", "https://ui.example", "http://[::1]"}; !slices.Equal(c.AllowedOrigins, want) {
		t.Fatalf("allowed origins %q, want %q", c.AllowedOrigins, want)
	}
	c, err = parse(t, []string{"--allowed-origins", "http://a.example:8081"}, map[string]string{"YUKTA_ALLOWED_ORIGINS": "http://b.example"})
	if err != nil || !slices.Equal(c.AllowedOrigins, []string{"http://a.example:8081"}) {
		t.Fatalf("the flag should beat the variable: %q %v", c.AllowedOrigins, err)
	}
	if c, _ := parse(t, nil, nil); len(c.AllowedOrigins) != 0 {
		t.Fatalf("default allowed origins %q, want none", c.AllowedOrigins)
	}
	for _, bad := range []string{"localhost:3000", "null", "*", "http://*.example", "ftp://x.example", "http://x.example/app", "http://x.example?q", "http://u@x.example", "http://"} {
		_, err := parse(t, nil, map[string]string{"YUKTA_ALLOWED_ORIGINS": bad})
		if err == nil || !strings.Contains(err.Error(), "YUKTA_ALLOWED_ORIGINS") || !strings.Contains(err.Error(), "is not an origin") {
			t.Errorf("YUKTA_ALLOWED_ORIGINS=%s: %v, want refused naming the setting", bad, err)
		}
	}
}
