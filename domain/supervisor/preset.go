package supervisor

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/yukta/yukta/domain/execution"
	"github.com/yukta/yukta/domain/fault"
	"github.com/yukta/yukta/domain/jsonvalue"
)

// ErrPresetNotFound is returned for a preset name the catalogue lacks.
var ErrPresetNotFound = fmt.Errorf("supervisor: preset not found: %w", fault.ErrNotFound)

// PresetParameter is one parameter of a preset template.
type PresetParameter struct {
	Name string
	// Type is "integer" or "string".
	Type        string
	Default     string
	Description string
	// Min and Max bound an integer parameter.
	Min, Max int64
	// Values lists the allowed values of a string parameter.
	Values []string
}

// presetArgs are a preset's parameter values after checking: integers as
// int64, strings as string.
type presetArgs map[string]any

func (a presetArgs) int(name string) int64  { return a[name].(int64) }
func (a presetArgs) str(name string) string { return a[name].(string) }

// presetTemplate is a preset and the function that writes its document.
type presetTemplate struct {
	Preset
	build func(presetArgs) ordered
}

func (p presetTemplate) public() Preset {
	out := p.Preset
	out.Parameters = slices.Clone(p.Parameters)
	for i := range out.Parameters {
		out.Parameters[i].Values = slices.Clone(out.Parameters[i].Values)
	}
	b, err := marshal(p.build(p.defaults()))
	if err != nil {
		panic(fmt.Sprintf("supervisor: preset %s: %v", p.Name, err)) // templates hold only strings and numbers
	}
	out.Document = string(b)
	return out
}

func (p presetTemplate) defaults() presetArgs {
	a := presetArgs{}
	for _, prm := range p.Parameters {
		if prm.Type == "integer" {
			n, _ := strconv.ParseInt(prm.Default, 10, 64)
			a[prm.Name] = n
		} else {
			a[prm.Name] = prm.Default
		}
	}
	return a
}

// InstantiatePreset fills a preset's parameters (missing ones take their
// defaults; unknown ones are refused) and returns the validated rule
// document. Parameter values are decoded JSON values or Go numbers and
// strings. Problems are listed at once, with paths parameters.<name>.
func InstantiatePreset(name string, params map[string]any, check ExprChecker) (RuleDocument, error) {
	i := slices.IndexFunc(presets, func(p presetTemplate) bool { return p.Name == name })
	if i < 0 {
		names := make([]string, len(presets))
		for j, p := range presets {
			names[j] = p.Name
		}
		return RuleDocument{}, fault.Newf(ErrPresetNotFound, "preset %q does not exist; the presets are %s", clip(name), strings.Join(names, ", "))
	}
	p := presets[i]
	r := &reader{}
	args := p.defaults()
	known := make([]string, len(p.Parameters))
	for j, prm := range p.Parameters {
		known[j] = prm.Name
	}
	for _, k := range slices.Sorted(maps.Keys(params)) {
		if !slices.Contains(known, k) {
			r.add(jsonvalue.Key("parameters", k), "preset %s has no parameter %q; its parameters are %s", p.Name, k, strings.Join(known, ", "))
		}
	}
	for _, prm := range p.Parameters {
		v, ok := params[prm.Name]
		if !ok || v == nil {
			continue
		}
		path := jsonvalue.Key("parameters", prm.Name)
		switch prm.Type {
		case "integer":
			if n, ok := r.intValue(v, path, prm.Min, prm.Max); ok {
				args[prm.Name] = n
			}
		default:
			s, ok := v.(string)
			switch {
			case !ok:
				r.add(path, "must be a string, got %s", kind(v))
			case !slices.Contains(prm.Values, s):
				r.add(path, "%q is not allowed; use %s", clip(s), oneOf(prm.Values))
			default:
				args[prm.Name] = s
			}
		}
	}
	if len(r.vs) > 0 {
		return RuleDocument{}, &fault.ValidationError{Subject: "preset " + p.Name, Violations: r.vs}
	}
	b, err := marshal(p.build(args))
	if err != nil {
		return RuleDocument{}, fmt.Errorf("supervisor: preset %s: %w", p.Name, err)
	}
	return ParseRuleDocument(b, check)
}

func pers() []string {
	out := make([]string, len(Pers))
	for i, p := range Pers {
		out[i] = string(p)
	}
	return out
}

// rulesDoc wraps rules in a version-1 document.
func rulesDoc(rules ...ordered) ordered {
	return ordered{{"schemaVersion", RuleSchemaVersion}, {"rules", rules}}
}

var presets = []presetTemplate{
	{
		Preset: Preset{Name: "failure-guard", Engine: "rules",
			Description: "Pauses a workflow (its unfinished runs, and every new start until it is resumed) when its nodes fail count times within withinSeconds.",
			Parameters: []PresetParameter{
				{Name: "count", Type: "integer", Default: "3", Min: 1, Max: MaxCount, Description: "Node failures that fire the rule."},
				{Name: "withinSeconds", Type: "integer", Default: "60", Min: 1, Max: MaxWithinSeconds, Description: "The sliding window, in seconds."},
				{Name: "per", Type: "string", Default: string(PerWorkflow), Values: pers(),
					Description: "Count per workflow (pause the workflow: its unfinished runs and its new starts), per execution (pause that run) or per supervisor (pause every owned run)."},
			}},
		build: func(a presetArgs) ordered {
			return rulesDoc(ordered{{"id", "failure-guard"},
				{"when", ordered{{"event", "NodeStatusChanged"}, {"status", "FAILURE"}, {"count", a.int("count")},
					{"withinSeconds", a.int("withinSeconds")}, {"per", a.str("per")}}},
				{"then", ordered{{"command", string(PauseWorkflow)},
					{"reason", fmt.Sprintf("%d node failures within %d seconds", a.int("count"), a.int("withinSeconds"))}}}})
		},
	},
	{
		Preset: Preset{Name: "approval-gate", Engine: "rules",
			Description: "Parks every command of one type on the owned units for an ADMIN's approval (restarts, by default).",
			Parameters: []PresetParameter{
				{Name: "command", Type: "string", Default: string(RestartWorkflow), Values: reviewableCommands(), Description: "The command type that needs approval."},
			}},
		build: func(a presetArgs) ordered {
			return rulesDoc(ordered{{"id", "approval-gate"}, {"requireApproval", ordered{{"command", a.str("command")}}}})
		},
	},
	{
		Preset: Preset{Name: "stall-watchdog", Engine: "rules",
			Description: "On each tick, stops RUNNING runs whose nodes have not progressed for minutes minutes.",
			Needs:       "tickSeconds (for example 60): the rule runs on ticks",
			Parameters: []PresetParameter{
				{Name: "minutes", Type: "integer", Default: "10", Min: 1, Max: 1440, Description: "Minutes without progress before a run is stopped."},
				{Name: "mode", Type: "string", Default: string(execution.DefaultStopMode), Values: []string{"DRAIN", "CANCEL", "KILL"}, Description: "How the run is stopped."},
			}},
		build: func(a presetArgs) ordered {
			m := a.int("minutes")
			return rulesDoc(ordered{{"id", "stall-watchdog"},
				{"when", ordered{{"tick", true}, {"status", "RUNNING"}, {"if", fmt.Sprintf("now - execution.lastProgressAt > duration('%dm')", m)}}},
				{"then", ordered{{"command", string(StopWorkflow)}, {"mode", a.str("mode")}, {"reason", fmt.Sprintf("no progress for %d minutes", m)}}}})
		},
	},
	{
		Preset: Preset{Name: "too-many-running", Engine: "rules",
			Description: "Denies a start while max runs of the workflow are already unfinished.",
			Parameters: []PresetParameter{
				{Name: "max", Type: "integer", Default: "10", Min: 1, Max: 10000, Description: "Unfinished runs of one workflow at which starts are denied."},
			}},
		build: func(a presetArgs) ordered {
			n := a.int("max")
			return rulesDoc(ordered{{"id", "too-many-running"},
				{"deny", ordered{{"command", string(StartWorkflow)}, {"if", fmt.Sprintf("workflow.activeCount >= %d", n)},
					{"reason", fmt.Sprintf("%d runs of this workflow are already unfinished; wait for one to finish", n)}}}})
		},
	},
}

// reviewableCommands lists the command types a review can hold.
func reviewableCommands() []string {
	var out []string
	for _, t := range CommandTypes {
		if Reviewable(t) {
			out = append(out, string(t))
		}
	}
	return out
}
