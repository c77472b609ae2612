package mcpserver

import (
	"context"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/yukta/yukta/domain/access"
	"github.com/yukta/yukta/domain/fault"
	"github.com/yukta/yukta/domain/supervisor"
)

// SupervisorList is the supervisors that exist.
type SupervisorList struct {
	Supervisors []SupervisorSummary `json:"supervisors"`
	Note        string              `json:"note,omitempty"`
}

// SupervisorSummary is one supervisor.
type SupervisorSummary struct {
	ID      string   `json:"id"`
	Name    string   `json:"name"`
	Engine  string   `json:"engine"`
	Owns    []string `json:"owns"`
	Enabled bool     `json:"enabled"`
}

// SupervisorIn names a supervisor.
type SupervisorIn struct {
	SupervisorID string `json:"supervisorId" jsonschema:"supervisor id, from list_supervisors"`
}

// SupervisorDetails is one supervisor with its credential metadata.
type SupervisorDetails struct {
	SupervisorSummary
	AllowedCommands []string `json:"allowedCommands"`
}

// EngineList is the engine catalogue.
type EngineList struct {
	Engines []EngineSummary `json:"engines"`
}

// EngineSummary is one engine type.
type EngineSummary struct {
	Type            string   `json:"type"`
	Name            string   `json:"name"`
	Category        string   `json:"category" jsonschema:"RULES, EXTERNAL_SYSTEM or ON_THIS_SERVER"`
	Description     string   `json:"description"`
	Signals         []string `json:"signals" jsonschema:"signal kinds the engine receives"`
	CanInitiate     bool     `json:"canInitiate"`
	DefaultCommands []string `json:"defaultAllowedCommands"`
}

// EngineIn names an engine type.
type EngineIn struct {
	Type string `json:"type" jsonschema:"rules, http, workflow or process"`
}

// EngineDetails is one engine with its settings.
type EngineDetails struct {
	EngineSummary
	Settings []EngineSetting `json:"settings"`
	Example  string          `json:"example" jsonschema:"a supervisor engine block, as JSON"`
	Presets  []string        `json:"presets"`
}

// EngineSetting is one setting of an engine.
type EngineSetting struct {
	Name        string `json:"name"`
	Type        string `json:"type"`
	Default     string `json:"default,omitempty"`
	Required    bool   `json:"required"`
	Description string `json:"description"`
}

// PresetsIn selects presets.
type PresetsIn struct {
	Engine string `json:"engine,omitempty" jsonschema:"engine type; absent means every engine"`
}

// PresetList is the ready-made engine settings.
type PresetList struct {
	Presets []PresetOut `json:"presets"`
}

// PresetOut is one preset.
type PresetOut struct {
	Name        string `json:"name"`
	Engine      string `json:"engine"`
	Description string `json:"description"`
	Document    string `json:"document" jsonschema:"the rule document, as JSON"`
}

// CredentialIn issues a credential for a supervisor.
type CredentialIn struct {
	SupervisorID     string   `json:"supervisorId" jsonschema:"supervisor id, from list_supervisors"`
	TTLHours         int      `json:"ttlHours,omitempty" jsonschema:"hours until the credential expires"`
	AllowedAddresses []string `json:"allowedAddresses,omitempty" jsonschema:"CIDRs the credential may be used from"`
}

// CredentialOut is an issued credential; the token is shown once.
type CredentialOut struct {
	SupervisorID string `json:"supervisorId"`
	Token        string `json:"token"`
	ExpiresAt    string `json:"expiresAt,omitempty"`
}

// RevokeIn revokes a supervisor's credential.
type RevokeIn struct {
	SupervisorID string `json:"supervisorId" jsonschema:"supervisor id, from list_supervisors"`
}

// RevokeOut confirms a revocation.
type RevokeOut struct {
	SupervisorID string `json:"supervisorId"`
	Revoked      bool   `json:"revoked"`
}

// noSupervisors explains the empty list: this server has no supervisor
// store yet, so none can exist.
const noSupervisors = "No supervisors exist on this server. list_supervisor_engines describes the engines a supervisor can use."

func (s *server) addSupervisorTools(m *mcp.Server) {
	addTool(m, &mcp.Tool{Name: "list_supervisors", Annotations: annotated(readOnly, "List supervisors"),
		Description: "The supervisors on this server (programs, rules or agents that steer runs of the units they own). Next: get_supervisor."},
		s.listSupervisors)
	addTool(m, &mcp.Tool{Name: "get_supervisor", Annotations: annotated(readOnly, "Get a supervisor"),
		Description: "One supervisor: engine, owned units, allowed commands and credential metadata (never the secret)."},
		s.getSupervisor)
	addTool(m, &mcp.Tool{Name: "list_supervisor_engines", Annotations: annotated(readOnly, "List supervisor engines"),
		Description: "The engine catalogue: rules, http, workflow and process, with the signals each takes and its default allowed commands. Next: get_supervisor_engine."},
		s.listEngines)
	addTool(m, &mcp.Tool{Name: "get_supervisor_engine", Annotations: annotated(readOnly, "Get a supervisor engine"),
		Description: "One engine type with its settings, defaults, an example and its presets."},
		s.getEngine)
	addTool(m, &mcp.Tool{Name: "list_supervisor_presets", Annotations: annotated(readOnly, "List supervisor presets"),
		Description: "Ready-made rule documents (failure-guard, approval-gate, stall-watchdog, too-many-running)."},
		s.listPresets)
	addTool(m, &mcp.Tool{Name: "create_credential", Annotations: annotated(destructive, "Issue a supervisor credential"),
		Description: "Issue or rotate the agent API credential of a supervisor (the token is shown once; issuing again stops the earlier one). Next: the agent API at /api/agent/v1."},
		s.createCredential)
	addTool(m, &mcp.Tool{Name: "revoke_credential", Annotations: annotated(destructive, "Revoke a supervisor credential"),
		Description: "Revoke a supervisor's agent API credential at once."},
		s.revokeCredential)
}

func (s *server) listSupervisors(ctx context.Context, _ *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, SupervisorList, error) {
	if err := caller(ctx).Can(access.ReadSessions, ""); err != nil {
		return nil, SupervisorList{}, s.toolError("list_supervisors", err, subject{})
	}
	return nil, SupervisorList{Supervisors: []SupervisorSummary{}, Note: noSupervisors}, nil
}

// supervisorNotFound is the answer for every supervisor id while none exist.
func supervisorNotFound(id string) error {
	return fault.Newf(supervisor.ErrSupervisorNotFound, "supervisor %q does not exist", id)
}

func (s *server) getSupervisor(ctx context.Context, _ *mcp.CallToolRequest, in SupervisorIn) (*mcp.CallToolResult, SupervisorDetails, error) {
	subj := subject{Supervisor: in.SupervisorID}
	if err := caller(ctx).Can(access.ReadSessions, ""); err != nil {
		return nil, SupervisorDetails{}, s.toolError("get_supervisor", err, subj)
	}
	return nil, SupervisorDetails{}, s.toolError("get_supervisor", supervisorNotFound(in.SupervisorID), subj)
}

func engineSummary(e supervisor.Engine) EngineSummary {
	return EngineSummary{Type: e.Type, Name: e.Name, Category: string(e.Category), Description: e.Description,
		Signals: e.Signals, CanInitiate: e.CanInitiate, DefaultCommands: e.DefaultCommands}
}

func (s *server) listEngines(ctx context.Context, _ *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, EngineList, error) {
	if err := caller(ctx).Can(access.ReadSessions, ""); err != nil {
		return nil, EngineList{}, s.toolError("list_supervisor_engines", err, subject{})
	}
	out := EngineList{Engines: []EngineSummary{}}
	for _, e := range supervisor.Engines() {
		out.Engines = append(out.Engines, engineSummary(e))
	}
	return nil, out, nil
}

func (s *server) getEngine(ctx context.Context, _ *mcp.CallToolRequest, in EngineIn) (*mcp.CallToolResult, EngineDetails, error) {
	const tool = "get_supervisor_engine"
	if err := caller(ctx).Can(access.ReadSessions, ""); err != nil {
		return nil, EngineDetails{}, s.toolError(tool, err, subject{})
	}
	e, err := supervisor.EngineByType(in.Type)
	if err != nil {
		return nil, EngineDetails{}, s.toolError(tool, err, subject{})
	}
	out := EngineDetails{EngineSummary: engineSummary(e), Settings: []EngineSetting{}, Example: e.Example, Presets: nonNil(e.Presets)}
	for _, st := range e.Settings {
		out.Settings = append(out.Settings, EngineSetting{Name: st.Name, Type: st.Type, Default: st.Default, Required: st.Required, Description: st.Description})
	}
	return nil, out, nil
}

func (s *server) listPresets(ctx context.Context, _ *mcp.CallToolRequest, in PresetsIn) (*mcp.CallToolResult, PresetList, error) {
	const tool = "list_supervisor_presets"
	if err := caller(ctx).Can(access.ReadSessions, ""); err != nil {
		return nil, PresetList{}, s.toolError(tool, err, subject{})
	}
	ps, err := supervisor.Presets(in.Engine)
	if err != nil {
		return nil, PresetList{}, s.toolError(tool, err, subject{})
	}
	out := PresetList{Presets: []PresetOut{}}
	for _, p := range ps {
		out.Presets = append(out.Presets, PresetOut{Name: p.Name, Engine: p.Engine, Description: p.Description, Document: p.Document})
	}
	return nil, out, nil
}

func (s *server) createCredential(ctx context.Context, _ *mcp.CallToolRequest, in CredentialIn) (*mcp.CallToolResult, CredentialOut, error) {
	subj := subject{Supervisor: in.SupervisorID}
	if err := caller(ctx).Can(access.ManageCredentials, ""); err != nil {
		return nil, CredentialOut{}, s.toolError("create_credential", err, subj)
	}
	// A credential belongs to a supervisor, and none exists yet.
	return nil, CredentialOut{}, s.toolError("create_credential", supervisorNotFound(in.SupervisorID), subj)
}

func (s *server) revokeCredential(ctx context.Context, _ *mcp.CallToolRequest, in RevokeIn) (*mcp.CallToolResult, RevokeOut, error) {
	subj := subject{Supervisor: in.SupervisorID}
	if err := caller(ctx).Can(access.ManageCredentials, ""); err != nil {
		return nil, RevokeOut{}, s.toolError("revoke_credential", err, subj)
	}
	return nil, RevokeOut{}, s.toolError("revoke_credential", supervisorNotFound(in.SupervisorID), subj)
}
