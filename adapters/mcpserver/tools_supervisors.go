package mcpserver

import (
	"context"
	"errors"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/yukta/yukta/application/supervisorapp"
	"github.com/yukta/yukta/domain/access"
	"github.com/yukta/yukta/domain/supervisor"
)

// SupervisorList is the supervisors that exist.
type SupervisorList struct {
	Supervisors []SupervisorSummary `json:"supervisors"`
	Note        string              `json:"note,omitempty"`
}

// SupervisorSummary is one supervisor.
type SupervisorSummary struct {
	ID         string   `json:"id"`
	Name       string   `json:"name"`
	Engine     string   `json:"engine" jsonschema:"engine type: rules, http, workflow or process"`
	Owns       []string `json:"owns" jsonschema:"owned units: session:<id>, workflow:<session>/<workflow> or server"`
	ParentID   string   `json:"parentId,omitempty" jsonschema:"the supervisor a review without opinion or an escalation goes to; absent for a root"`
	Enabled    bool     `json:"enabled"`
	UpdatedAt  string   `json:"updatedAt"`
	UpdatedBy  string   `json:"updatedBy" jsonschema:"who last applied it: key:<name> or anonymous"`
	UpdatedVia string   `json:"updatedVia" jsonschema:"the channel it was applied through"`
}

// SupervisorIn names a supervisor.
type SupervisorIn struct {
	SupervisorID string `json:"supervisorId" jsonschema:"supervisor id, from list_supervisors"`
}

// SupervisorDetails is one supervisor: its whole document, secrets masked.
type SupervisorDetails struct {
	SupervisorSummary
	Settings        map[string]any  `json:"settings" jsonschema:"the engine's settings (for rules, the rule document); secret values read ***"`
	AllowedCommands []string        `json:"allowedCommands" jsonschema:"command types it may send"`
	Reviews         []string        `json:"reviews" jsonschema:"command types on owned units that wait for its verdict"`
	TickSeconds     int             `json:"tickSeconds,omitempty" jsonschema:"seconds between TICK signals; absent when none are sent"`
	CreatedAt       string          `json:"createdAt"`
	Credential      *CredentialInfo `json:"credential,omitempty" jsonschema:"its agent API credential (never the token); absent when it has none"`
	Warnings        []string        `json:"warnings,omitempty" jsonschema:"what is legal but probably not meant: an owned session or workflow that does not exist (the supervisor acts on it once it is created); absent when there is none"`
}

// CredentialInfo is a supervisor credential's metadata; the token is not
// stored, so no read shows it.
type CredentialInfo struct {
	Hint             string   `json:"hint" jsonschema:"the token's prefix and first characters (yks_abcdef), to tell credentials apart"`
	CreatedAt        string   `json:"createdAt"`
	ExpiresAt        string   `json:"expiresAt" jsonschema:"from this moment the token is refused"`
	AllowedAddresses []string `json:"allowedAddresses" jsonschema:"CIDRs the agent may connect from; empty: any"`
	CreatedBy        string   `json:"createdBy" jsonschema:"who issued it: key:<name> or anonymous"`
	CreatedVia       string   `json:"createdVia" jsonschema:"the channel it was issued through"`
	LastUsedAt       string   `json:"lastUsedAt,omitempty" jsonschema:"when the agent API last took it (to the minute); absent: never"`
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
	Usage    string          `json:"usage" jsonschema:"how to write a supervisor of this engine (Markdown): settings, conditions and their variables, a whole example document"`
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
	Name        string           `json:"name"`
	Engine      string           `json:"engine"`
	Description string           `json:"description"`
	Document    string           `json:"document" jsonschema:"the rule document with every parameter at its default, as JSON; use it as engine.settings"`
	Parameters  []PresetParamOut `json:"parameters"`
	Needs       string           `json:"needs,omitempty" jsonschema:"what the supervisor needs besides the document, such as tickSeconds"`
}

// PresetParamOut is one parameter of a preset.
type PresetParamOut struct {
	Name        string   `json:"name"`
	Type        string   `json:"type" jsonschema:"integer or string"`
	Default     string   `json:"default"`
	Description string   `json:"description"`
	Minimum     int64    `json:"minimum,omitempty"`
	Maximum     int64    `json:"maximum,omitempty"`
	Values      []string `json:"values,omitempty" jsonschema:"the values a string parameter takes"`
}

// CredentialIn issues a credential for a supervisor.
type CredentialIn struct {
	SupervisorID     string   `json:"supervisorId" jsonschema:"supervisor id, from list_supervisors"`
	TTLHours         int      `json:"ttlHours,omitempty" jsonschema:"hours until the credential expires, 1 to 8760; absent: 720 (30 days)"`
	AllowedAddresses []string `json:"allowedAddresses,omitempty" jsonschema:"CIDRs (203.0.113.0/24) or addresses the agent may connect from, at most 32; absent: any"`
}

// CredentialOut is an issued credential; the token is shown once.
type CredentialOut struct {
	SupervisorID     string   `json:"supervisorId"`
	Token            string   `json:"token" jsonschema:"the secret, shown this once: the agent sends it as Authorization: Bearer <token> to /api/agent/v1"`
	Rotated          bool     `json:"rotated" jsonschema:"true when it replaced an earlier credential, whose token no longer works"`
	Hint             string   `json:"hint"`
	ExpiresAt        string   `json:"expiresAt"`
	AllowedAddresses []string `json:"allowedAddresses"`
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

// noSupervisors explains an empty list.
const noSupervisors = "No supervisors exist on this server (or none this key may see). An ADMIN creates one with PUT /api/supervisors/{id} " +
	"or yukta supervisors apply FILE; list_supervisor_engines describes the engines a supervisor can use."

// errCredentialsDisabled answers the credential tools of a server whose
// credential use cases are not wired.
var errCredentialsDisabled = errors.New("mcpserver: supervisor credentials are not enabled")

func (s *server) credentialsEnabled() bool {
	return s.d.IssueCredential != nil && s.d.GetCredential != nil && s.d.RevokeCredential != nil
}

func (s *server) addSupervisorTools(m *mcp.Server) {
	addTool(m, &mcp.Tool{Name: "list_supervisors", Annotations: annotated(readOnly, "List supervisors"),
		Description: "The supervisors on this server (rule sets, agents, workflows or programs that steer runs of the units they own), in id order. Next: get_supervisor."},
		s.listSupervisors)
	addTool(m, &mcp.Tool{Name: "get_supervisor", Annotations: annotated(readOnly, "Get a supervisor"),
		Description: "One supervisor's whole document: engine and its settings (secret values read ***), owned units, parent, allowed commands, reviews, who changed it last, " +
			"and its agent API credential (hint, expiry, allowed addresses, last use; never the token)."},
		s.getSupervisor)
	addTool(m, &mcp.Tool{Name: "list_supervisor_engines", Annotations: annotated(readOnly, "List supervisor engines"),
		Description: "The engine catalogue: rules, http, workflow and process, with the signals each takes and its default allowed commands. Next: get_supervisor_engine."},
		s.listEngines)
	addTool(m, &mcp.Tool{Name: "get_supervisor_engine", Annotations: annotated(readOnly, "Get a supervisor engine"),
		Description: "One engine type with its settings, defaults, an example, its presets and a usage guide (conditions, their variables, a whole supervisor document)."},
		s.getEngine)
	addTool(m, &mcp.Tool{Name: "list_supervisor_presets", Annotations: annotated(readOnly, "List supervisor presets"),
		Description: "Ready-made rule documents (failure-guard, approval-gate, stall-watchdog, too-many-running) with their parameters."},
		s.listPresets)
	addTool(m, &mcp.Tool{Name: "create_credential", Annotations: annotated(destructive, "Issue a supervisor credential"),
		Description: "Issue or rotate the agent API credential of a supervisor: the token is in this answer only (give it to the agent, do not repeat it), " +
			"and issuing again stops the earlier one at once. Next: the agent sends it as a bearer token to /api/agent/v1; get_supervisor shows the credential without it."},
		s.createCredential)
	addTool(m, &mcp.Tool{Name: "revoke_credential", Annotations: annotated(destructive, "Revoke a supervisor credential"),
		Description: "Revoke a supervisor's agent API credential: its token is refused from this answer on. Next: create_credential issues a new one."},
		s.revokeCredential)
	addTool(m, &mcp.Tool{Name: "list_holds", Annotations: annotated(readOnly, "List a run's holds"),
		Description: "The hold ledger of one execution: which supervisors hold it (a held run stays paused and refuses RESUME until every holder released it), " +
			"since when and why. Next: release_hold (an ADMIN's) ends a hold whose supervisor does not release it."},
		s.listHolds)
	addTool(m, &mcp.Tool{Name: "release_hold", Annotations: annotated(destructive, "Release a supervisor's hold"),
		Description: "End one supervisor's hold on an execution in its stead (ADMIN only), journaled with you as actor and your reason. " +
			"When it was the last hold and the holds paused the run, the run resumes. Confirm with the user first. Next: get_workflow_status."},
		s.releaseHold)
}

// HoldsIn names a run.
type HoldsIn struct {
	SessionID   string `json:"sessionId" jsonschema:"session id"`
	ExecutionID string `json:"executionId" jsonschema:"execution id"`
}

// HoldsOut is a run's hold ledger.
type HoldsOut struct {
	ExecutionID  string    `json:"executionId"`
	PausedByHold bool      `json:"pausedByHold" jsonschema:"the holds paused the run: the last release resumes it"`
	Holds        []HoldOut `json:"holds" jsonschema:"oldest first; empty when nothing holds the run"`
	Next         string    `json:"next"`
}

// HoldOut is one supervisor's hold.
type HoldOut struct {
	SupervisorID string `json:"supervisorId"`
	Since        string `json:"since"`
	Reason       string `json:"reason"`
}

// ReleaseHoldIn ends one supervisor's hold.
type ReleaseHoldIn struct {
	SessionID    string `json:"sessionId" jsonschema:"session id"`
	ExecutionID  string `json:"executionId" jsonschema:"execution id"`
	SupervisorID string `json:"supervisorId" jsonschema:"the holder, from list_holds"`
	Reason       string `json:"reason,omitempty" jsonschema:"why, recorded in the journal (at most 1024 characters)"`
}

// ReleaseHoldOut is what became of the hold.
type ReleaseHoldOut struct {
	ExecutionID  string    `json:"executionId"`
	SupervisorID string    `json:"supervisorId"`
	HeldSince    string    `json:"heldSince"`
	HoldReason   string    `json:"holdReason"`
	Resumed      bool      `json:"resumed" jsonschema:"it was the last hold of a run the holds paused, and the run resumed"`
	CommandID    string    `json:"commandId,omitempty" jsonschema:"the RESUME command, when one was sent"`
	Message      string    `json:"message"`
	Holds        []HoldOut `json:"holds" jsonschema:"the holds the run still has"`
	Next         string    `json:"next"`
}

// errHoldsDisabled answers the hold tools of a server whose hold use
// cases are not wired.
var errHoldsDisabled = errors.New("mcpserver: supervisor holds are not enabled")

func holdsOut(es []supervisor.HoldEntry) []HoldOut {
	out := make([]HoldOut, len(es))
	for i, e := range es {
		out[i] = HoldOut{SupervisorID: e.SupervisorID(), Since: ts(e.Since()), Reason: e.Reason()}
	}
	return out
}

func (s *server) listHolds(ctx context.Context, _ *mcp.CallToolRequest, in HoldsIn) (*mcp.CallToolResult, HoldsOut, error) {
	const tool = "list_holds"
	subj := subject{Session: in.SessionID, Execution: in.ExecutionID}
	if err := caller(ctx).Can(access.ReadExecutions, in.SessionID); err != nil {
		return nil, HoldsOut{}, s.toolError(tool, err, subj)
	}
	if s.d.ListHolds == nil {
		return nil, HoldsOut{}, s.toolError(tool, errHoldsDisabled, subj)
	}
	hs, err := s.d.ListHolds.Handle(ctx, supervisorapp.ListHoldsInput{SessionID: in.SessionID, ExecutionID: in.ExecutionID})
	if err != nil {
		return nil, HoldsOut{}, s.toolError(tool, err, subj)
	}
	out := HoldsOut{ExecutionID: hs.ExecutionID(), PausedByHold: hs.PausedByHold(), Holds: holdsOut(hs.Entries()),
		Next: "Nothing holds this run."}
	if hs.Held() {
		out.Next = "The run cannot RESUME while it is held. Each holder ends its hold with a Release directive; an ADMIN ends one with release_hold."
	}
	return nil, out, nil
}

func (s *server) releaseHold(ctx context.Context, _ *mcp.CallToolRequest, in ReleaseHoldIn) (*mcp.CallToolResult, ReleaseHoldOut, error) {
	const tool = "release_hold"
	subj := subject{Session: in.SessionID, Execution: in.ExecutionID, Supervisor: in.SupervisorID}
	p := caller(ctx)
	if err := p.Can(access.ManageSupervisors, in.SessionID); err != nil {
		return nil, ReleaseHoldOut{}, s.toolError(tool, err, subj)
	}
	if s.d.ReleaseHold == nil {
		return nil, ReleaseHoldOut{}, s.toolError(tool, errHoldsDisabled, subj)
	}
	rel, err := s.d.ReleaseHold.Handle(ctx, supervisorapp.ReleaseHoldInput{SessionID: in.SessionID, ExecutionID: in.ExecutionID,
		SupervisorID: in.SupervisorID, Reason: in.Reason, Actor: p.Actor(), Channel: Channel})
	if err != nil {
		return nil, ReleaseHoldOut{}, s.toolError(tool, err, subj)
	}
	out := ReleaseHoldOut{ExecutionID: rel.ExecutionID, SupervisorID: rel.SupervisorID, HeldSince: ts(rel.HeldSince), HoldReason: rel.HoldReason,
		Resumed: rel.Resumed, CommandID: rel.CommandID, Message: rel.Message, Holds: holdsOut(rel.Remaining), Next: "get_workflow_status shows the run."}
	if len(rel.Remaining) > 0 {
		out.Next = "Other supervisors still hold the run (holds); it resumes when the last hold ends."
	}
	return nil, out, nil
}

func (s *server) listSupervisors(ctx context.Context, _ *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, SupervisorList, error) {
	const tool = "list_supervisors"
	p := caller(ctx)
	if err := p.Can(access.ReadSupervisors, ""); err != nil {
		return nil, SupervisorList{}, s.toolError(tool, err, subject{})
	}
	list, err := s.d.ListSupervisors.Handle(ctx, supervisorapp.ListInput{Only: p.Sessions()})
	if err != nil {
		return nil, SupervisorList{}, s.toolError(tool, err, subject{})
	}
	out := SupervisorList{Supervisors: make([]SupervisorSummary, 0, len(list))}
	for _, sm := range list {
		out.Supervisors = append(out.Supervisors, supervisorSummary(sm))
	}
	if len(out.Supervisors) == 0 {
		out.Note = noSupervisors
	}
	return nil, out, nil
}

func supervisorSummary(sm supervisorapp.Summary) SupervisorSummary {
	sup := sm.Supervisor
	owns := make([]string, 0, len(sup.Owns()))
	for _, u := range sup.Owns() {
		owns = append(owns, u.String())
	}
	return SupervisorSummary{ID: sup.ID(), Name: sup.Name(), Engine: sup.EngineType(), Owns: owns, ParentID: sup.ParentID(),
		Enabled: sup.Enabled(), UpdatedAt: ts(sm.UpdatedAt), UpdatedBy: sm.UpdatedBy, UpdatedVia: sm.UpdatedVia}
}

func commandNames(ts []supervisor.CommandType) []string {
	out := make([]string, len(ts))
	for i, t := range ts {
		out[i] = string(t)
	}
	return out
}

func (s *server) getSupervisor(ctx context.Context, _ *mcp.CallToolRequest, in SupervisorIn) (*mcp.CallToolResult, SupervisorDetails, error) {
	const tool = "get_supervisor"
	subj := subject{Supervisor: in.SupervisorID}
	p := caller(ctx)
	if err := p.Can(access.ReadSupervisors, ""); err != nil {
		return nil, SupervisorDetails{}, s.toolError(tool, err, subj)
	}
	sm, err := s.d.GetSupervisor.Handle(ctx, supervisorapp.GetInput{ID: in.SupervisorID, Only: p.Sessions()})
	if err != nil {
		return nil, SupervisorDetails{}, s.toolError(tool, err, subj)
	}
	sup := sm.Supervisor
	out := SupervisorDetails{SupervisorSummary: supervisorSummary(sm), Settings: sup.Settings(),
		AllowedCommands: commandNames(sup.AllowedCommands()), Reviews: commandNames(sup.Reviews()), TickSeconds: sup.TickSeconds(),
		CreatedAt: ts(sm.CreatedAt)}
	if len(sm.Warnings) > 0 {
		out.Warnings = sm.Warnings
	}
	if s.credentialsEnabled() {
		c, err := s.d.GetCredential.Handle(ctx, supervisorapp.GetCredentialInput{SupervisorID: in.SupervisorID, Only: p.Sessions()})
		switch {
		case err == nil:
			out.Credential = credentialInfo(c)
		case !errors.Is(err, supervisor.ErrCredentialNotFound):
			return nil, SupervisorDetails{}, s.toolError(tool, err, subj)
		}
	}
	return nil, out, nil
}

func credentialInfo(c supervisor.Credential) *CredentialInfo {
	out := &CredentialInfo{Hint: c.Hint(), CreatedAt: ts(c.CreatedAt()), ExpiresAt: ts(c.ExpiresAt()), AllowedAddresses: c.AllowedAddressStrings(),
		CreatedBy: c.CreatedBy(), CreatedVia: c.CreatedVia()}
	if !c.LastUsedAt().IsZero() {
		out.LastUsedAt = ts(c.LastUsedAt())
	}
	return out
}

func engineSummary(e supervisor.Engine) EngineSummary {
	return EngineSummary{Type: e.Type, Name: e.Name, Category: string(e.Category), Description: e.Description,
		Signals: e.Signals, CanInitiate: e.CanInitiate, DefaultCommands: e.DefaultCommands}
}

func (s *server) listEngines(ctx context.Context, _ *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, EngineList, error) {
	if err := caller(ctx).Can(access.ReadSupervisors, ""); err != nil {
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
	if err := caller(ctx).Can(access.ReadSupervisors, ""); err != nil {
		return nil, EngineDetails{}, s.toolError(tool, err, subject{})
	}
	d, err := s.d.DescribeEngine.Handle(ctx, in.Type)
	if err != nil {
		return nil, EngineDetails{}, s.toolError(tool, err, subject{})
	}
	e := d.Engine
	out := EngineDetails{EngineSummary: engineSummary(e), Settings: []EngineSetting{}, Example: e.Example, Presets: nonNil(e.Presets), Usage: d.Usage}
	for _, st := range e.Settings {
		out.Settings = append(out.Settings, EngineSetting{Name: st.Name, Type: st.Type, Default: st.Default, Required: st.Required, Description: st.Description})
	}
	return nil, out, nil
}

func (s *server) listPresets(ctx context.Context, _ *mcp.CallToolRequest, in PresetsIn) (*mcp.CallToolResult, PresetList, error) {
	const tool = "list_supervisor_presets"
	if err := caller(ctx).Can(access.ReadSupervisors, ""); err != nil {
		return nil, PresetList{}, s.toolError(tool, err, subject{})
	}
	ps, err := supervisor.Presets(in.Engine)
	if err != nil {
		return nil, PresetList{}, s.toolError(tool, err, subject{})
	}
	out := PresetList{Presets: []PresetOut{}}
	for _, p := range ps {
		po := PresetOut{Name: p.Name, Engine: p.Engine, Description: p.Description, Document: p.Document, Needs: p.Needs,
			Parameters: make([]PresetParamOut, 0, len(p.Parameters))}
		for _, prm := range p.Parameters {
			po.Parameters = append(po.Parameters, PresetParamOut{Name: prm.Name, Type: prm.Type, Default: prm.Default,
				Description: prm.Description, Minimum: prm.Min, Maximum: prm.Max, Values: prm.Values})
		}
		out.Presets = append(out.Presets, po)
	}
	return nil, out, nil
}

func (s *server) createCredential(ctx context.Context, _ *mcp.CallToolRequest, in CredentialIn) (*mcp.CallToolResult, CredentialOut, error) {
	const tool = "create_credential"
	subj := subject{Supervisor: in.SupervisorID}
	p := caller(ctx)
	if err := p.Can(access.ManageCredentials, ""); err != nil {
		return nil, CredentialOut{}, s.toolError(tool, err, subj)
	}
	if !s.credentialsEnabled() {
		return nil, CredentialOut{}, s.toolError(tool, errCredentialsDisabled, subj)
	}
	res, err := s.d.IssueCredential.Handle(ctx, supervisorapp.IssueCredentialInput{SupervisorID: in.SupervisorID, TTLHours: in.TTLHours,
		AllowedAddresses: in.AllowedAddresses, Actor: p.Actor(), Channel: Channel})
	if err != nil {
		return nil, CredentialOut{}, s.toolError(tool, err, subj)
	}
	c := res.Credential
	return nil, CredentialOut{SupervisorID: c.SupervisorID(), Token: res.Token.Reveal(), Rotated: res.Rotated, Hint: c.Hint(),
		ExpiresAt: ts(c.ExpiresAt()), AllowedAddresses: c.AllowedAddressStrings()}, nil
}

func (s *server) revokeCredential(ctx context.Context, _ *mcp.CallToolRequest, in RevokeIn) (*mcp.CallToolResult, RevokeOut, error) {
	const tool = "revoke_credential"
	subj := subject{Supervisor: in.SupervisorID}
	p := caller(ctx)
	if err := p.Can(access.ManageCredentials, ""); err != nil {
		return nil, RevokeOut{}, s.toolError(tool, err, subj)
	}
	if !s.credentialsEnabled() {
		return nil, RevokeOut{}, s.toolError(tool, errCredentialsDisabled, subj)
	}
	if _, err := s.d.RevokeCredential.Handle(ctx, supervisorapp.RevokeCredentialInput{SupervisorID: in.SupervisorID, Actor: p.Actor(), Channel: Channel}); err != nil {
		return nil, RevokeOut{}, s.toolError(tool, err, subj)
	}
	return nil, RevokeOut{SupervisorID: in.SupervisorID, Revoked: true}, nil
}
