package bootstrap

import (
	"bytes"
	"context"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"go.uber.org/zap"

	"github.com/yukta/yukta/adapters/egress"
	"github.com/yukta/yukta/adapters/plugins"
	"github.com/yukta/yukta/application/executionapp"
	"github.com/yukta/yukta/application/supervisorapp"
	"github.com/yukta/yukta/domain/plugin"
	"github.com/yukta/yukta/domain/supervisor"
)

type passRunner struct{}

func (passRunner) Run(context.Context, executionapp.Invocation) (executionapp.Outcome, error) {
	return executionapp.Outcome{}, nil
}

func extensionType(name string) plugins.NodeType {
	return plugins.Extension(plugin.Descriptor{Type: name, Category: plugin.Processor, Description: "an added type"}, passRunner{})
}

// serveWith runs `serve` with ext on a database that is never reached: a
// wiring error stops the start before the first connection.
func serveWith(t *testing.T, ext Extensions) (int, string) {
	t.Setenv("YUKTA_DATABASE_URL", "postgres://yukta@127.0.0.1:1/nowhere?connect_timeout=1")
	t.Setenv("YUKTA_DATA_DIR", t.TempDir())
	var stdout, stderr bytes.Buffer
	code := MainWith(t.Context(), ext, []string{"serve", "--addr", "127.0.0.1:0", "--log-format", "json"}, &stdout, &stderr)
	return code, stderr.String()
}

// TestExtensionNameTakenStopsTheStart: an added type that takes a
// built-in's name, or another added type's, stops the server before it
// serves, naming the type (docs/extending.md).
func TestExtensionNameTakenStopsTheStart(t *testing.T) {
	const twice = "is registered twice (a built-in and an added type, or two added types, share the name); give the added type a name of its own\n"
	noRunner := extensionType("SHOUT")
	noRunner.Runner = nil
	for want, types := range map[string][]plugins.NodeType{
		"yukta serve: pluginapp: node type LOG " + twice:                          {extensionType("LOG")},
		"yukta serve: pluginapp: node type SHOUT " + twice:                        {extensionType("SHOUT"), extensionType("SHOUT")},
		"yukta serve: node type SHOUT has no runner; add it with its behaviour\n": {noRunner},
		`yukta serve: plugin: type "shout" must match`:                            {extensionType("shout")},
		"yukta serve: node type BELL is a trigger, and runs start only through the built-in triggers": {
			plugins.Extension(plugin.Descriptor{Type: "BELL", Category: plugin.Trigger, Description: "rings"}, passRunner{})},
	} {
		code, stderr := serveWith(t, Extensions{NodeTypes: types})
		if code != 2 || !strings.HasPrefix(stderr, want) {
			t.Errorf("exit %d, stderr:\n%s\nwant exit 2 and a first line starting %q", code, stderr, want)
		}
	}
}

// TestExtensionsJoinTheBuiltIns: the registered list is the built-ins,
// then the added types, each added processor with the run fields.
func TestExtensionsJoinTheBuiltIns(t *testing.T) {
	types, err := newRegisteredTypes(nil, nil, Extensions{NodeTypes: []plugins.NodeType{extensionType("SHOUT")}})
	if err != nil {
		t.Fatal(err)
	}
	if n := len(plugins.Descriptors()); len(types) != n+1 || types[n].Descriptor.Type != "SHOUT" {
		t.Fatalf("registered %d types, the last %s; want the %d built-ins then SHOUT", len(types), types[len(types)-1].Descriptor.Type, n)
	}
	if _, err := plugins.NewRunnerSet(types); err != nil {
		t.Fatal(err)
	}
}

// TestSecretsDefaultToTheEnvironment: without a provider, ${env.NAME}
// reads the process environment; with one, only the provider.
func TestSecretsDefaultToTheEnvironment(t *testing.T) {
	t.Setenv("YUKTA_TEST_SECRET", "from-env")
	if got := (Extensions{}).secrets()("YUKTA_TEST_SECRET"); got != "from-env" {
		t.Errorf("no provider: %q, want the environment's value", got)
	}
	ext := Extensions{Secrets: func(n string) string { return "vault:" + n }}
	if got := ext.secrets()("YUKTA_TEST_SECRET"); got != "vault:YUKTA_TEST_SECRET" {
		t.Errorf("a provider: %q, want its answer", got)
	}
}

// TestSecretProviderFeedsSupervisorHeaders: the http supervisor engine the
// server wires reads ${env.NAME} from the custom server's secret provider,
// not the process environment, and only for allowed names.
func TestSecretProviderFeedsSupervisorHeaders(t *testing.T) {
	t.Setenv("AGENT_TOKEN", "from-env")
	got := make(chan http.Header, 1)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got <- r.Header.Clone()
		w.WriteHeader(http.StatusNoContent)
	}))
	t.Cleanup(srv.Close)
	u, _ := url.Parse(srv.URL)
	eg, err := egress.New(egress.Options{AllowedHosts: []string{u.Host}})
	if err != nil {
		t.Fatal(err)
	}
	var asked []string
	ext := Extensions{Secrets: func(n string) string { asked = append(asked, n); return "from-vault" }}
	f := httpEngine(engineParams{Config: Config{SupervisorEnvAllowed: []string{"AGENT_TOKEN"}}, Egress: eg, Ext: ext}, zap.NewNop())
	sup := supervisor.Restore(supervisor.Spec{ID: "agent", Name: "Agent", EngineType: "http", Enabled: true, Owns: []string{"session:ci"},
		Settings: map[string]any{"url": srv.URL, "headers": map[string]any{"X-Token": "Bearer ${env.AGENT_TOKEN}", "X-Other": "${env.HOME}"}}})
	eng, err := f(t.Context(), sup, supervisorapp.Fence{SupervisorID: "agent"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = eng.(supervisorapp.EngineCloser).Close() })
	sig := supervisor.NewSignal("1", supervisor.EventSignal{Seq: 1, At: time.Now(), Type: "NodeStatusChanged", SessionID: "ci",
		WorkflowID: "build", ExecutionID: "run-1", NodeID: "n1", Actor: "engine"})
	if err := eng.Handle(t.Context(), sig); err != nil {
		t.Fatal(err)
	}
	select {
	case h := <-got:
		if h.Get("X-Token") != "Bearer from-vault" || h.Get("X-Other") != "" {
			t.Errorf("headers X-Token %q X-Other %q, want the provider's value and nothing for a name off the allow-list", h.Get("X-Token"), h.Get("X-Other"))
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the supervisor posted nothing within 10 s")
	}
	if err := eng.(supervisorapp.EngineCloser).Close(); err != nil {
		t.Fatal(err)
	}
	if len(asked) != 1 || asked[0] != "AGENT_TOKEN" {
		t.Errorf("the provider was asked for %v, want only the allowed AGENT_TOKEN", asked)
	}
}
