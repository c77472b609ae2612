package bootstrap

import (
	"flag"
	"io"
	"strings"
	"testing"
	"time"

	"go.uber.org/fx"
	"go.uber.org/zap"
)

// TestModuleIsComplete fails when a constructor's dependency has no provider;
// it calls no constructor.
func TestModuleIsComplete(t *testing.T) {
	if err := fx.ValidateApp(Module, fx.Supply(Config{}, DSN(""), zap.NewNop())); err != nil {
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
	if c.Addr != "127.0.0.1:8080" || c.DataDir != ".yukta" || c.Workers != 128 || c.Lease != 15*time.Second || c.ShutdownTimeout != 15*time.Second {
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
