package session_test

import (
	"slices"
	"testing"

	"github.com/yukta/yukta/domain/plugin"
)

// testCatalog is a hand-written catalogue of node types, small enough to
// read at a glance. The domain must not import adapters, so the real
// built-ins are not used here.
type testCatalog map[string]plugin.Descriptor

func (c testCatalog) Describe(typ string) (plugin.Descriptor, bool) {
	d, ok := c[typ]
	return d, ok
}

// catalog holds:
//   - MANUAL: a trigger with an optional payload;
//   - PASS: a processor with no fields and the single "default" port;
//   - ROUTER: a processor whose ports are the config's routes[].port, plus
//     "default" unless fallback is false;
//   - CALL: a processor with a required url, a secret token, a method with
//     options, a timeout, a retry count and a headers object; ports
//     "default" and "error";
//   - RESULT: a terminal.
var catalog = testCatalog{
	"MANUAL": {
		Type:        "MANUAL",
		Category:    plugin.Trigger,
		Description: "Starts a run with the payload it is given.",
		Fields: []plugin.Field{
			{Name: "payload", Type: plugin.Any, Description: "start payload"},
		},
	},
	"PASS": {
		Type:        "PASS",
		Category:    plugin.Processor,
		Description: "Emits its input unchanged.",
	},
	"ROUTER": {
		Type:        "ROUTER",
		Category:    plugin.Processor,
		Description: "Sends each message to one named port.",
		Fields: []plugin.Field{
			{
				Name: "routes", Type: plugin.Array, Required: true, Description: "the branches",
				Items: &plugin.Field{
					Name: "route", Type: plugin.Object, Description: "one branch",
					Fields: []plugin.Field{
						{Name: "port", Type: plugin.String, Required: true, Description: "port of the branch"},
					},
				},
			},
			{Name: "fallback", Type: plugin.Boolean, Default: true, Description: `whether unmatched messages go to "default"`},
		},
		PortsFunc: routerPorts,
	},
	"CALL": {
		Type:        "CALL",
		Category:    plugin.Processor,
		Description: "Calls a URL.",
		Fields: []plugin.Field{
			{Name: "url", Type: plugin.URL, Required: true, Description: "address to call"},
			{Name: "token", Type: plugin.String, Secret: true, Description: "bearer token"},
			{Name: "method", Type: plugin.String, Options: []string{"GET", "POST"}, Default: "GET", Description: "HTTP method"},
			{Name: "timeout", Type: plugin.Duration, Default: "10s", Description: "time limit"},
			{Name: "attempts", Type: plugin.Integer, Default: 1, Description: "attempts in all"},
			{Name: "headers", Type: plugin.Object, Description: "extra headers"},
		},
		PortsFunc: func(map[string]any) []string { return []string{plugin.DefaultPort, "error"} },
	},
	"RESULT": {
		Type:        "RESULT",
		Category:    plugin.Terminal,
		Description: "Stores the output.",
	},
}

// routerPorts reads what it can: Parse only asks for the ports of a config
// that passed Validate, but the fuzz target feeds it anything.
func routerPorts(config map[string]any) []string {
	ports := []string{}
	routes, _ := config["routes"].([]any)
	for _, r := range routes {
		m, _ := r.(map[string]any)
		if p, _ := m["port"].(string); p != "" && !slices.Contains(ports, p) {
			ports = append(ports, p)
		}
	}
	if b, ok := config["fallback"].(bool); (!ok || b) && !slices.Contains(ports, plugin.DefaultPort) {
		ports = append(ports, plugin.DefaultPort)
	}
	return ports
}

func TestCatalogDescriptorsPassCheck(t *testing.T) {
	t.Parallel()
	for typ, d := range catalog {
		if err := d.Check(); err != nil {
			t.Errorf("%s: Check() = %v, want nil", typ, err)
		}
		if d.Type != typ {
			t.Errorf("catalog key %s: got Type %q, want %q", typ, d.Type, typ)
		}
	}
}
