package mcpserver

import (
	"strings"
	"testing"

	"go.uber.org/zap"
)

// TestSetLevelIsRefusedForEveryRole: logging/setLevel is not a way for any
// key, a VIEWER's least of all, to change something: it is answered "method
// not found" whatever the role and the protocol version, and the server does
// not declare the logging capability.
func TestSetLevelIsRefusedForEveryRole(t *testing.T) {
	t.Parallel()
	ts, env := newTestServer(t)
	h, err := New(env.deps, "test", zap.NewNop())
	if err != nil {
		t.Fatal(err)
	}
	h = authenticated(t, h)
	cells := 0
	for _, name := range []string{"viewer", "operator", "admin", "limited"} {
		cs := connect(t, ts.URL, secretOf(name))
		//lint:ignore SA1019 the test checks that the server does not declare the deprecated logging capability
		if caps := cs.InitializeResult().Capabilities; caps == nil || caps.Logging != nil {
			t.Errorf("%s: capabilities %+v declare logging", name, caps)
		}
		for _, version := range []string{"2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25"} {
			body := serve(h, secretOf(name), version, `{"jsonrpc":"2.0","id":7,"method":"logging/setLevel","params":{"level":"debug"}}`)
			if !strings.Contains(body, `"code":-32601`) || !strings.Contains(body, "logging/setLevel") || strings.Contains(body, `"result"`) {
				t.Errorf("%s, protocol %s: logging/setLevel answered %s, want method not found", name, version, body)
			}
			cells++
			// The same key may still do what its role allows.
			if body := serve(h, secretOf(name), version, `{"jsonrpc":"2.0","id":8,"method":"tools/list"}`); !strings.Contains(body, "list_sessions") {
				t.Errorf("%s, protocol %s: tools/list: %s", name, version, body)
			}
		}
	}
	t.Logf("%d roles x protocol versions refused", cells)
}
