package pluginapp

import (
	"context"
	"fmt"

	"github.com/yukta/yukta/domain/fault"
	"github.com/yukta/yukta/domain/plugin"
)

// ErrPluginNotFound is returned for a type the registry does not know.
var ErrPluginNotFound = fmt.Errorf("pluginapp: plugin type not found: %w", fault.ErrNotFound)

// Description is a node type as seen with one particular config.
type Description struct {
	plugin.Descriptor
	// Ports are the output ports a node of this type has with the config.
	Ports []string
}

// DescribePlugin answers what a node type needs and which ports it has for a
// given config, so clients can build valid edges before applying a session.
type DescribePlugin struct{ registry *Registry }

// NewDescribePlugin returns the use case.
func NewDescribePlugin(r *Registry) *DescribePlugin { return &DescribePlugin{registry: r} }

// Handle describes typ. A nil config means "no config": defaults apply. An
// invalid config is refused with every violation, since its ports would be
// meaningless.
func (uc *DescribePlugin) Handle(_ context.Context, typ string, config map[string]any) (Description, error) {
	d, ok := uc.registry.Describe(typ)
	if !ok {
		return Description{}, fault.Newf(ErrPluginNotFound, "plugin type %q does not exist; call GET /api/plugins (MCP: list_plugins) for the available types", typ)
	}
	if config == nil {
		config = map[string]any{}
		// Without a config the required fields are missing by design; show
		// the ports the defaults give.
		return Description{Descriptor: d, Ports: d.Ports(d.WithDefaults(config))}, nil
	}
	if vs := d.Validate(config); len(vs) > 0 {
		for i := range vs {
			vs[i].Path = "config." + vs[i].Path
		}
		return Description{}, &fault.ValidationError{Subject: "plugin config", Violations: vs}
	}
	return Description{Descriptor: d, Ports: d.Ports(d.WithDefaults(config))}, nil
}
