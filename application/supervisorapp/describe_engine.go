package supervisorapp

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/yukta/yukta/domain/jsonvalue"
	"github.com/yukta/yukta/domain/supervisor"
)

// DescribeEngine tells how to write a supervisor of one engine type: the
// catalogue entry, a usage guide, a whole example document, the variables
// its conditions may read and its presets. REST (/usage) and MCP
// (get_supervisor_engine) answer from it.
type DescribeEngine struct{}

// NewDescribeEngine returns the use case.
func NewDescribeEngine() *DescribeEngine { return &DescribeEngine{} }

// EngineDescription is one engine and how to use it.
type EngineDescription struct {
	supervisor.Engine
	// Usage is a short guide in Markdown: what the engine does, the
	// signals it takes, its settings, the example and where to send it.
	Usage string
	// Example is a whole supervisor using the engine, as Parse read it
	// (every default explicit when written back).
	Example supervisor.Supervisor
	// Conditions are the places the engine's settings hold CEL conditions,
	// each with the variables it may read; empty for engines without.
	Conditions []ConditionVariables
	// EngineExample is the catalogue's example engine block ({type,
	// settings}), decoded: what Example holds as its engine.
	EngineExample map[string]any
	// PresetList holds the engine's presets with their parameters.
	PresetList []Preset
}

// Preset is a preset of the catalogue and its document decoded: the
// engine settings to send for it.
type Preset struct {
	supervisor.Preset
	// Settings is Document as decoded JSON (numbers as json.Number).
	Settings map[string]any
}

// ConditionVariables are the variables a condition in one place may read.
type ConditionVariables struct {
	// Context is the domain's name of the place (supervisor.ExprContext).
	Context supervisor.ExprContext
	// Where is the place in the supervisor document.
	Where     string
	Variables []supervisor.Variable
}

// conditionPlaces lists, per engine, where its settings hold conditions.
var conditionPlaces = map[string][]struct {
	ctx   supervisor.ExprContext
	where string
}{
	"rules": {
		{supervisor.EventRule, "engine.settings.rules[].when.if of a rule whose when names an event"},
		{supervisor.TickRule, "engine.settings.rules[].when.if of a tick rule"},
		{supervisor.ReviewRule, "engine.settings.rules[].deny.if and engine.settings.rules[].requireApproval.if"},
	},
	"workflow": {
		{supervisor.EngineWhen, "engine.settings.when"},
	},
}

// Handle describes the engine typ, or returns an error matching
// supervisor.ErrEngineNotFound that lists the engines.
func (uc *DescribeEngine) Handle(_ context.Context, typ string) (EngineDescription, error) {
	e, err := supervisor.EngineByType(typ)
	if err != nil {
		return EngineDescription{}, err
	}
	presets, err := supervisor.Presets(typ)
	if err != nil {
		return EngineDescription{}, err
	}
	d := EngineDescription{Engine: e, PresetList: make([]Preset, 0, len(presets)), Conditions: []ConditionVariables{}}
	for _, p := range conditionPlaces[e.Type] {
		d.Conditions = append(d.Conditions, ConditionVariables{Context: p.ctx, Where: p.where, Variables: supervisor.Variables(p.ctx)})
	}
	for _, p := range presets {
		settings, err := decodeObject(p.Document, "preset "+p.Name)
		if err != nil {
			return EngineDescription{}, err
		}
		d.PresetList = append(d.PresetList, Preset{Preset: p, Settings: settings})
	}
	if d.EngineExample, err = decodeObject(e.Example, "the example of engine "+e.Type); err != nil {
		return EngineDescription{}, err
	}
	example := map[string]any{
		"id":     "example-" + e.Type,
		"name":   "Example " + strings.ToLower(e.Name) + " supervisor",
		"engine": d.EngineExample,
		"owns":   []any{"session:ci"},
	}
	doc, err := json.Marshal(example)
	if err == nil {
		d.Example, err = supervisor.Parse(doc, supervisor.ParseOptions{})
	}
	if err != nil {
		// A catalogue bug, not the caller's input: %v keeps it from reading as a 400.
		return EngineDescription{}, fmt.Errorf("supervisor catalogue: the example of engine %s is not a valid supervisor: %v", e.Type, err)
	}
	d.Usage = usageText(d, example)
	return d, nil
}

// decodeObject decodes a JSON object of the catalogue.
func decodeObject(text, what string) (map[string]any, error) {
	v, err := jsonvalue.Decode([]byte(text), "")
	m, ok := v.(map[string]any)
	if err != nil || !ok {
		return nil, fmt.Errorf("supervisor catalogue: %s is not a JSON object: %v", what, err)
	}
	return m, nil
}

// usageText writes the guide of an engine from its description.
func usageText(d EngineDescription, example map[string]any) string {
	var b strings.Builder
	fmt.Fprintf(&b, "# The %s engine (`%s`)\n\n%s\n\n", d.Name, d.Type, d.Description)
	fmt.Fprintf(&b, "- Category: %s.\n- Signals it takes: %s.\n", d.Category, strings.Join(d.Signals, ", "))
	if d.CanInitiate {
		b.WriteString("- It may send directives on its own, not only answer reviews.\n")
	}
	switch {
	case d.AllCommands:
		b.WriteString("- Default allowedCommands: every command type; narrow it with allowedCommands.\n")
	case len(d.DefaultCommands) == 0:
		b.WriteString("- Default allowedCommands: none; list the commands it may send in allowedCommands.\n")
	default:
		fmt.Fprintf(&b, "- Default allowedCommands: %s.\n", strings.Join(d.DefaultCommands, ", "))
	}
	b.WriteString("\n## Settings (engine.settings)\n\n")
	if len(d.Settings) == 0 {
		b.WriteString("None.\n")
	}
	for _, s := range d.Settings {
		req := "optional"
		if s.Required {
			req = "required"
		}
		def := ""
		if s.Default != "" {
			def = ", default " + s.Default
		}
		fmt.Fprintf(&b, "- `%s` (%s, %s%s): %s\n", s.Name, s.Type, req, def, s.Description)
	}
	if d.Type == "rules" {
		b.WriteString("\n## The rule document\n\nengine.settings is a rule document: `{\"schemaVersion\": 1, \"rules\": [...]}`, rules in order, " +
			"each with an `id` and one of `when` + `then` (react to an event type, or to every tick), `deny` or `requireApproval` " +
			"(answer reviews of a command type). `when` takes `event` or `tick`, and optionally `status`, `nodeId`, " +
			"`count` + `withinSeconds` (a sliding window, `per` execution, workflow or supervisor) and `if` (a CEL condition). " +
			"`then` takes `command` and optionally `target`, `nodeId`, `mode`, `reason`. Every `then` command must be in allowedCommands; " +
			"the commands `deny` and `requireApproval` name are the default reviews.\n")
	}
	if len(d.Conditions) > 0 {
		b.WriteString("\n## Conditions\n\nConditions are CEL; each may read only the variables of its place:\n\n")
		for _, c := range d.Conditions {
			names := make([]string, len(c.Variables))
			for i, v := range c.Variables {
				names[i] = v.Name
			}
			fmt.Fprintf(&b, "- %s: %s\n", c.Where, strings.Join(names, ", "))
		}
	}
	if len(d.PresetList) > 0 {
		names := make([]string, len(d.PresetList))
		for i, p := range d.PresetList {
			names[i] = p.Name
		}
		fmt.Fprintf(&b, "\nPresets (ready-made rule documents): %s. GET /api/supervisor-engines/%s/presets (MCP: list_supervisor_presets) lists them with their parameters.\n",
			strings.Join(names, ", "), d.Type)
	}
	text, _ := json.MarshalIndent(example, "", "  ")
	fmt.Fprintf(&b, "\n## Example\n\n```json\n%s\n```\n\nApply it with `PUT /api/supervisors/%s` (ADMIN) or `yukta supervisors apply FILE`. "+
		"A supervisor owns units (`session:<id>`, `workflow:<session>/<workflow>` or `server`) and may name a `parentId`; "+
		"every problem of a document is listed at once, with its path.\n", text, d.Example.ID())
	return b.String()
}
