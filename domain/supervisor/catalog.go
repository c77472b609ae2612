package supervisor

import (
	"fmt"
	"slices"
	"strconv"

	"github.com/yukta/yukta/domain/fault"
)

// Category groups engines by where the decision is made.
type Category string

// The engine categories.
const (
	Rules          Category = "RULES"
	ExternalSystem Category = "EXTERNAL_SYSTEM"
	OnThisServer   Category = "ON_THIS_SERVER"
)

// Signal kinds an engine may receive.
const (
	SignalEvent     = "Event"
	SignalTick      = "Tick"
	SignalReview    = "Review"
	SignalDelegated = "Delegated"
	SignalStarted   = "Started"
	SignalConsulted = "Consulted"
)

// Commands lists every directive command type as text, in the order DESIGN
// §9 gives (CommandTypes is the typed list).
var Commands = func() []string {
	out := make([]string, len(CommandTypes))
	for i, t := range CommandTypes {
		out[i] = string(t)
	}
	return out
}()

// Setting is one engine setting.
type Setting struct {
	Name        string
	Type        string
	Default     string // "" when there is none
	Required    bool
	Description string
}

// Engine is one engine type of the catalogue.
type Engine struct {
	Type        string
	Name        string
	Category    Category
	Description string
	Signals     []string
	// HearsOwnEffects is true for an engine that is handed the EVENT
	// signals of what its own supervisor caused (actor supervisor:<id>):
	// only http, whose system outside the server reads the agent API's
	// feed, which has them. An engine that decides inside the server is
	// spared them, so it cannot feed on its own directives (Hears).
	HearsOwnEffects bool
	CanInitiate     bool
	// AllCommands is true when the default allowedCommands is every command;
	// otherwise DefaultCommands lists them (empty: none).
	AllCommands     bool
	DefaultCommands []string
	Settings        []Setting
	Example         string
	Presets         []string
}

// Preset is a ready-made rule document of the rules engine, written as a
// template: InstantiatePreset fills its parameters and validates the
// result. Document is the preset with every parameter at its default.
type Preset struct {
	Name        string
	Engine      string
	Description string
	Document    string
	Parameters  []PresetParameter
	// Needs says what the supervisor needs besides the document ("" when
	// nothing), such as tickSeconds for a tick rule.
	Needs string
}

// ErrEngineNotFound is returned for an engine type the catalogue lacks.
var ErrEngineNotFound = fmt.Errorf("supervisor: engine not found: %w", fault.ErrNotFound)

// ErrSupervisorNotFound is returned for a supervisor id that does not exist.
var ErrSupervisorNotFound = fmt.Errorf("supervisor: supervisor not found: %w", fault.ErrNotFound)

// Engines returns the catalogue, in the order rules, http, workflow, process.
// Each call returns fresh copies.
func Engines() []Engine {
	out := make([]Engine, len(engines))
	for i, e := range engines {
		out[i] = e.clone()
	}
	return out
}

// EngineByType returns one engine, or an error matching ErrEngineNotFound
// that lists the known types.
func EngineByType(typ string) (Engine, error) {
	for _, e := range engines {
		if e.Type == typ {
			return e.clone(), nil
		}
	}
	return Engine{}, fault.Newf(ErrEngineNotFound, "supervisor engine %q does not exist; the engines are %s", typ, engineTypes())
}

// Presets returns the presets of an engine type ("" for every engine).
func Presets(engine string) ([]Preset, error) {
	if engine != "" {
		if _, err := EngineByType(engine); err != nil {
			return nil, err
		}
	}
	var out []Preset
	for _, p := range presets {
		if engine == "" || p.Engine == engine {
			out = append(out, p.public())
		}
	}
	if out == nil {
		out = []Preset{}
	}
	return out, nil
}

func engineTypes() string {
	s := ""
	for i, e := range engines {
		if i > 0 {
			s += ", "
		}
		s += e.Type
	}
	return s
}

func (e Engine) clone() Engine {
	e.Signals = slices.Clone(e.Signals)
	e.DefaultCommands = slices.Clone(e.DefaultCommands)
	e.Settings = slices.Clone(e.Settings)
	e.Presets = slices.Clone(e.Presets)
	if e.DefaultCommands == nil {
		e.DefaultCommands = []string{}
	}
	if e.AllCommands {
		e.DefaultCommands = slices.Clone(Commands)
	}
	return e
}

var engines = []Engine{
	{
		Type: "rules", Name: "Rules", Category: Rules,
		Description: "Reacts to events and timers with a JSON rule document.",
		Signals:     []string{SignalEvent, SignalTick, SignalReview, SignalDelegated},
		CanInitiate: true, AllCommands: true,
		Settings: []Setting{
			{Name: "schemaVersion", Type: "number", Default: strconv.Itoa(RuleSchemaVersion), Description: fmt.Sprintf("Version of the rule document; only %d is read.", RuleSchemaVersion)},
			{Name: "rules", Type: "list of rules", Required: true, Description: "The rules, in order; each has an id and when/then, deny or requireApproval."},
		},
		Example: `{"type":"rules","settings":{"rules":[{"id":"pause-on-repeated-failure","when":{"event":"NodeStatusChanged","status":"FAILURE","count":3,"withinSeconds":60},"then":{"command":"PauseWorkflow"}}]}}`,
		Presets: []string{"failure-guard", "approval-gate", "stall-watchdog", "too-many-running"},
	},
	{
		Type: "http", Name: "External system", Category: ExternalSystem,
		Description:     "A system outside the server, often an AI agent, decides. It reads signals from the agent API, or Yukta posts them to a url, and it sends directives to the agent API with the supervisor's credential.",
		Signals:         []string{SignalEvent, SignalReview, SignalStarted, SignalDelegated, SignalConsulted},
		HearsOwnEffects: true, CanInitiate: true, AllCommands: true,
		Settings: []Setting{
			{Name: "url", Type: "string", Description: `Where to post each signal as {"cursor", "kind", "signal"}. The reply is not read. Without it, the system reads signals over the agent API only.`},
			{Name: "headers", Type: "map", Description: "Headers to send; a value may be ${env.NAME}."},
			{Name: "secretHeaders", Type: "secret map", Description: "Headers with secrets; shown as *** on every read."},
			{Name: "timeoutMs", Type: "number", Default: strconv.Itoa(HTTPDefaultTimeoutMs), Description: fmt.Sprintf("How long one post may take; at most %d.", HTTPMaxTimeoutMs)},
			{Name: "maxConcurrent", Type: "number", Default: strconv.Itoa(HTTPDefaultMaxConcurrent), Description: fmt.Sprintf("Most posts at once; at most %d.", HTTPMaxMaxConcurrent)},
		},
		Example: `{"type":"http","settings":{"url":"https://agent.example.com/yukta/signals"}}`,
	},
	{
		Type: "workflow", Name: "Workflow", Category: OnThisServer,
		Description: "Starts a workflow of an internal session for each matching signal. The workflow starts with SUPERVISOR_SIGNAL and ends each exit with SUPERVISOR_DECISION.",
		Signals:     []string{SignalEvent, SignalTick, SignalReview, SignalDelegated, SignalStarted},
		CanInitiate: true,
		Settings: []Setting{
			{Name: "sessionId", Type: "string", Required: true, Description: "The internal session that holds the workflow; it must exist when the supervisor is saved."},
			{Name: "workflowId", Type: "string", Required: true, Description: "The workflow of that session; it must exist when the supervisor is saved."},
			{Name: "events", Type: "list of event type names", Required: true, Description: "Event types that start a run, such as InputRequested."},
			{Name: "when", Type: "expression", Description: "Read-only CEL condition over the redacted event, such as event.type == 'InputRequested' (CEL, not the SpEL #event.type); the run starts only when it holds."},
			{Name: "maxConcurrent", Type: "number", Default: strconv.Itoa(WorkflowDefaultMaxConcurrent), Description: fmt.Sprintf("Runs of this supervisor at once; from %d to the size of the reserved slot pool (--reserved-supervisor-slots).", WorkflowMinMaxConcurrent)},
			{Name: "timeout", Type: "number (seconds)", Default: strconv.Itoa(WorkflowDefaultTimeoutSeconds), Description: fmt.Sprintf("Time one run may take; %d to %d.", WorkflowMinTimeoutSeconds, WorkflowMaxTimeoutSeconds)},
		},
		Example: `{"type":"workflow","settings":{"sessionId":"supervisors","workflowId":"triage","events":["InputRequested"],"timeout":30}}`,
	},
	{
		Type: "process", Name: "Local program", Category: OnThisServer,
		Description: "Runs a program on the machine where Yukta runs. Signals arrive as JSON lines on its standard input; directives are read as JSON lines from its standard output.",
		// Review beyond the seed's table: the seed's output lines include
		// verdict and noOpinion, which answer REVIEW signals only.
		Signals:     []string{SignalEvent, SignalReview, SignalStarted, SignalDelegated, SignalConsulted},
		CanInitiate: true, AllCommands: true,
		Settings: []Setting{
			{Name: "command", Type: "string", Required: true, Description: fmt.Sprintf("The executable, an absolute path of at most %d characters. It must be in yukta.process.allowed-commands, or yukta.process.allow-any must be true while that list is empty.", ProcessMaxCommandLen)},
			{Name: "args", Type: "string", Description: fmt.Sprintf("Arguments, one per line, in order; at most %d characters.", ProcessMaxArgsLen)},
		},
		Example: `{"type":"process","settings":{"command":"/opt/yukta/decide"}}`,
	},
}
