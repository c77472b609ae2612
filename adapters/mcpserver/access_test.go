package mcpserver

import (
	"net/http"
	"strings"
	"testing"

	"go.uber.org/zap"

	"github.com/yukta/yukta/adapters/authn"
	"github.com/yukta/yukta/domain/access"
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

// TestWorkerKeyMayUseNoMethod: behind the HTTP door (which answers 403
// first), a WORKER key that reached the MCP handler is refused every
// method, the handshake included, with the role's refusal; MayCall lets it
// call no tool, known or unknown.
func TestWorkerKeyMayUseNoMethod(t *testing.T) {
	t.Parallel()
	_, env := newTestServer(t)
	h, err := New(env.deps, "test", zap.NewNop())
	if err != nil {
		t.Fatal(err)
	}
	w, err := access.NewKeyPrincipal("runner", access.Worker, nil, []string{"gpu"})
	if err != nil {
		t.Fatal(err)
	}
	asWorker := http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		h.ServeHTTP(rw, r.WithContext(authn.WithPrincipal(r.Context(), w)))
	})
	for _, body := range []string{
		`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"w","version":"1"}}}`,
		`{"jsonrpc":"2.0","id":2,"method":"tools/list"}`,
		`{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"list_sessions","arguments":{}}}`,
		`{"jsonrpc":"2.0","id":4,"method":"resources/list"}`,
		`{"jsonrpc":"2.0","id":5,"method":"prompts/list"}`,
	} {
		got := serve(asWorker, "", "2025-06-18", body)
		if !strings.Contains(got, `"code":-32003`) || !strings.Contains(got, "key:runner has the role WORKER and cannot use MCP") || strings.Contains(got, `"result"`) {
			t.Errorf("%s as WORKER: %s", body, got)
		}
	}
	for tool := range toolOps {
		if MayCall(w, tool) {
			t.Errorf("MayCall(WORKER, %s): true", tool)
		}
	}
	if MayCall(w, "no_such_tool") {
		t.Error("MayCall(WORKER, an unknown tool): true")
	}
}
