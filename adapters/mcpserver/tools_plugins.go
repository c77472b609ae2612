package mcpserver

import (
	"context"
	"fmt"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/yukta/yukta/domain/access"
	"github.com/yukta/yukta/domain/plugin"
)

// PluginList is every registered node type.
type PluginList struct {
	Plugins []PluginSummary `json:"plugins"`
}

// PluginSummary is one node type.
type PluginSummary struct {
	Type        string `json:"type"`
	Category    string `json:"category" jsonschema:"trigger (starts runs, no inbound edge), processor, or terminal (no outbound edge)"`
	Description string `json:"description"`
}

// PluginIn names a type, optionally with a config.
type PluginIn struct {
	Type   string         `json:"type" jsonschema:"plugin type, exactly as list_plugins spells it, such as ROUTER"`
	Config map[string]any `json:"config,omitempty" jsonschema:"a node config to validate; the ports returned are the ones a node with this config has"`
}

// PluginDetails is one node type, seen with a config.
type PluginDetails struct {
	Type         string        `json:"type"`
	Category     string        `json:"category"`
	Description  string        `json:"description"`
	Usage        string        `json:"usage,omitempty"`
	ConfigFields []ConfigField `json:"configFields" jsonschema:"every config field; nested fields are named with dots, array elements with []"`
	Ports        []string      `json:"ports" jsonschema:"output ports for the config given (defaults without one); edges name them as sourcePort"`
}

// ConfigField is one config field.
type ConfigField struct {
	Name        string   `json:"name" jsonschema:"path of the field, such as retry.maxAttempts or routes[].port"`
	Type        string   `json:"type"`
	Description string   `json:"description,omitempty"`
	Required    bool     `json:"required"`
	Default     any      `json:"default,omitempty" jsonschema:"the value used when the config leaves the field out: any JSON value of the field's type"`
	Options     []string `json:"options,omitempty"`
	Secret      bool     `json:"secret,omitempty" jsonschema:"masked as *** on every read"`
}

// GuideIn selects the templates of the plugin guide.
type GuideIn struct {
	TemplateType string `json:"templateType,omitempty" jsonschema:"processor, terminal or all (default); every answer has main.go, the custom server that registers the types"`
}

// PluginGuide explains how node types are written in Yukta.
type PluginGuide struct {
	Architecture string     `json:"architecture"`
	Contract     string     `json:"contract"`
	Templates    []Template `json:"templates"`
	Checklist    []string   `json:"checklist"`
	Testing      string     `json:"testing"`
	Registration string     `json:"registration"`
}

// Template is a compilable Go source file.
type Template struct {
	Kind string `json:"kind"`
	File string `json:"file" jsonschema:"where the file goes in the repository"`
	Code string `json:"code"`
}

func (s *server) addPluginTools(m *mcp.Server) {
	addTool(m, &mcp.Tool{Name: "list_plugins", Annotations: annotated(readOnly, "List plugin types"),
		Description: "Every registered node type with its category and description. Next: get_plugin_details for the config fields and ports of one."},
		s.listPlugins)
	addTool(m, &mcp.Tool{Name: "get_plugin_details", Annotations: annotated(readOnly, "Get plugin details"),
		Description: "One node type: description, usage pattern, every config field (type, required, default, options, secret) and the output ports. " +
			"Pass the node's config to validate it and get the ports that config gives (a ROUTER's ports are its routes)."},
		s.pluginDetails)
	addTool(m, &mcp.Tool{Name: "get_plugin_creation_guide", Annotations: annotated(readOnly, "How to write a plugin"),
		Description: "How to run your own code without forking Yukta: remote workers in any language (TASK nodes and the worker API, /api/worker/v1), " +
			"or your own node types in a custom server built on the public Go extension API (package server): the contract (a descriptor plus a runner), " +
			"compilable templates, a checklist, tests and registration."},
		s.pluginGuide)
}

func (s *server) listPlugins(ctx context.Context, _ *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, PluginList, error) {
	if err := caller(ctx).Can(access.ReadPlugins, ""); err != nil {
		return nil, PluginList{}, s.toolError("list_plugins", err, subject{})
	}
	ds := s.d.ListPlugins.Handle(ctx)
	out := PluginList{Plugins: make([]PluginSummary, len(ds))}
	for i, d := range ds {
		out.Plugins[i] = PluginSummary{Type: d.Type, Category: string(d.Category), Description: d.Description}
	}
	return nil, out, nil
}

func (s *server) pluginDetails(ctx context.Context, req *mcp.CallToolRequest, in PluginIn) (*mcp.CallToolResult, PluginDetails, error) {
	const tool = "get_plugin_details"
	subj := subject{Plugin: in.Type}
	if err := caller(ctx).Can(access.ReadPlugins, ""); err != nil {
		return nil, PluginDetails{}, s.toolError(tool, err, subj)
	}
	config := in.Config
	if raw, ok := rawArgument(req, "config"); ok {
		if m, ok := raw.(map[string]any); ok {
			config = m // exact numbers, not the SDK's float64
		}
	}
	d, err := s.d.DescribePlugin.Handle(ctx, in.Type, config)
	if err != nil {
		return nil, PluginDetails{}, s.toolError(tool, err, subj)
	}
	out := PluginDetails{Type: d.Type, Category: string(d.Category), Description: d.Description, Usage: d.Usage,
		ConfigFields: []ConfigField{}, Ports: nonNil(d.Ports)}
	flatten(&out.ConfigFields, "", d.Fields)
	return nil, out, nil
}

// flatten lists nested fields with dotted names, so the schema has no
// recursive type.
func flatten(out *[]ConfigField, prefix string, fs []plugin.Field) {
	for _, f := range fs {
		name := prefix + f.Name
		*out = append(*out, ConfigField{Name: name, Type: string(f.Type), Description: f.Description, Required: f.Required,
			Default: f.Default, Options: f.Options, Secret: f.Secret})
		if f.Fields != nil {
			flatten(out, name+".", f.Fields)
		}
		if f.Items != nil {
			item := *f.Items
			item.Name = ""
			*out = append(*out, ConfigField{Name: name + "[]", Type: string(item.Type), Description: item.Description,
				Options: item.Options, Secret: item.Secret})
			if item.Fields != nil {
				flatten(out, name+"[].", item.Fields)
			}
		}
	}
}

func (s *server) pluginGuide(ctx context.Context, _ *mcp.CallToolRequest, in GuideIn) (*mcp.CallToolResult, PluginGuide, error) {
	const tool = "get_plugin_creation_guide"
	if err := caller(ctx).Can(access.ReadPlugins, ""); err != nil {
		return nil, PluginGuide{}, s.toolError(tool, err, subject{})
	}
	g := Guide()
	switch in.TemplateType {
	case "", "all":
	case "processor", "terminal":
		var kept []Template
		for _, t := range g.Templates {
			if t.Kind == in.TemplateType || t.Kind == "server" {
				kept = append(kept, t)
			}
		}
		g.Templates = kept
	case "trigger":
		return nil, PluginGuide{}, s.toolError(tool, invalid("A node type of your own cannot be a trigger: runs start only through the built-in triggers "+
			"(MANUAL, WEBHOOK, SCHEDULE, SUPERVISOR_SIGNAL). Add a processor after one of them. Valid types: processor, terminal, all."), subject{})
	default:
		return nil, PluginGuide{}, s.toolError(tool, invalid(fmt.Sprintf("Unsupported templateType: %s. Valid types: processor, terminal, all.", in.TemplateType)), subject{})
	}
	return nil, g, nil
}
