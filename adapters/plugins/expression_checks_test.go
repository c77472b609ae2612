package plugins_test

import (
	"strings"
	"testing"

	"github.com/yukta/yukta/adapters/cel"
	"github.com/yukta/yukta/adapters/plugins"
	"github.com/yukta/yukta/application/pluginapp"
	"github.com/yukta/yukta/domain/plugin"
)

func checkedDescriptor(t *testing.T, typ string) plugin.Descriptor {
	t.Helper()
	ev, err := cel.New()
	if err != nil {
		t.Fatal(err)
	}
	r, err := pluginapp.NewRegistry(plugins.WithExpressionChecks(plugins.Descriptors(), ev)...)
	if err != nil {
		t.Fatalf("NewRegistry of checked descriptors: got %v, want nil", err)
	}
	d, ok := r.Describe(typ)
	if !ok {
		t.Fatalf("Describe(%s): not found", typ)
	}
	return d
}

func TestWithExpressionChecks(t *testing.T) {
	tests := []struct {
		name, typ, config string
		wantPath, wantMsg string // "" path: no violation
	}{
		{"bad router condition", "ROUTER", `{"routes": [{"port": "a", "condition": "payload.n > 1"}, {"port": "b", "condition": "payload.n >"}]}`, "routes[1].condition", `CEL expression "payload.n >" at line 1, column`},
		{"router condition of the wrong type", "ROUTER", `{"routes": [{"port": "a", "condition": "size(payload.items)"}]}`, "routes[0].condition", "must evaluate to a bool, but its type is int"},
		{"bad transform", "TRANSFORM", `{"expression": "payload.(x"}`, "expression", "at line 1, column"},
		{"unknown variable", "RESULT", `{"expression": "event.x"}`, "expression", "undeclared reference to 'event'"},
		{"filter that is not a condition", "FILTER", `{"condition": "'text'"}`, "condition", "must evaluate to a bool, but its type is string"},
		{"good router", "ROUTER", `{"routes": [{"port": "a", "condition": "payload.n > 1"}]}`, "", ""},
		{"good filter over a member", "FILTER", `{"condition": "payload.flag"}`, "", ""},
		{"result without expression", "RESULT", `{}`, "", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			vs := checkedDescriptor(t, tt.typ).Validate(config(t, tt.config))
			if tt.wantPath == "" {
				if len(vs) != 0 {
					t.Errorf("Validate: got %v, want no violations", vs)
				}
				return
			}
			if len(vs) != 1 || vs[0].Path != tt.wantPath || !strings.Contains(vs[0].Message, tt.wantMsg) {
				t.Errorf("Validate: got %v, want one violation at %s containing %q", vs, tt.wantPath, tt.wantMsg)
			}
		})
	}
}

func TestWithExpressionChecksKeepsTheOwnChecks(t *testing.T) {
	vs := checkedDescriptor(t, "ROUTER").Validate(config(t, `{"routes": [{"port": "a", "condition": "true"}, {"port": "a", "condition": "payload.("}]}`))
	if got := paths(vs); strings.Join(got, ",") != "routes[1].port,routes[1].condition" {
		t.Errorf("violation paths: got %q, want the duplicate port and the bad condition", got)
	}
}

// TestUsageExamplesCompile keeps the examples in the catalogue valid CEL.
func TestUsageExamplesCompile(t *testing.T) {
	const prefix = "Example config: "
	for _, d := range plugins.Descriptors() {
		cd := checkedDescriptor(t, d.Type)
		i := strings.Index(cd.Usage, prefix)
		line, _, _ := strings.Cut(cd.Usage[i+len(prefix):], "\n")
		if vs := cd.Validate(config(t, line)); len(vs) != 0 {
			t.Errorf("%s example %s: got violations %v, want none", d.Type, line, vs)
		}
	}
}
