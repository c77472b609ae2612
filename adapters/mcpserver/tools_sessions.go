package mcpserver

import (
	"context"
	"encoding/json"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/yukta/yukta/application/sessionapp"
	"github.com/yukta/yukta/domain/access"
	"github.com/yukta/yukta/domain/session"
)

// ListSessionsIn pages through sessions.
type ListSessionsIn struct {
	Limit  int    `json:"limit,omitempty" jsonschema:"page size, 1 to 500; default 50"`
	Cursor string `json:"cursor,omitempty" jsonschema:"nextCursor of the previous page; omit for the first page"`
	Query  string `json:"query,omitempty" jsonschema:"only sessions whose id, name or description contains this text, ignoring case (at most 200 characters)"`
}

// SessionSummary is one session of a list.
type SessionSummary struct {
	SessionID     string            `json:"sessionId"`
	Name          string            `json:"name"`
	Description   string            `json:"description,omitempty"`
	WorkflowCount int               `json:"workflowCount"`
	Workflows     []WorkflowLastRun `json:"workflows" jsonschema:"the session's workflows in document order, each with its newest run"`
}

// WorkflowLastRun is a workflow of a session list: whether it is paused and
// its newest run.
type WorkflowLastRun struct {
	WorkflowID    string   `json:"workflowId"`
	Paused        bool     `json:"paused,omitempty" jsonschema:"true while PAUSE_WORKFLOW refuses its new runs"`
	LastExecution *LastRun `json:"lastExecution,omitempty" jsonschema:"its newest run; absent when it has none"`
}

// LastRun is a workflow's newest run.
type LastRun struct {
	ExecutionID string `json:"executionId"`
	Status      string `json:"status"`
	StartedAt   string `json:"startedAt"`
	EndedAt     string `json:"endedAt,omitempty"`
}

// SessionList is a page of sessions.
type SessionList struct {
	Sessions   []SessionSummary `json:"sessions"`
	NextCursor string           `json:"nextCursor,omitempty" jsonschema:"pass as cursor for the next page; absent on the last page"`
}

// SessionIn names a session.
type SessionIn struct {
	SessionID string `json:"sessionId" jsonschema:"session id, from list_sessions"`
}

// SessionDetails is one session and its workflows.
type SessionDetails struct {
	SessionID   string            `json:"sessionId"`
	Name        string            `json:"name"`
	Description string            `json:"description,omitempty"`
	Initiator   string            `json:"initiator,omitempty"`
	Tags        []string          `json:"tags"`
	ProjectPath string            `json:"projectPath,omitempty"`
	Limits      *LimitsConfig     `json:"limits,omitempty" jsonschema:"the session's scheduler limits; absent means none"`
	Workflows   []WorkflowSummary `json:"workflows"`
}

// WorkflowSummary is a workflow of a session.
type WorkflowSummary struct {
	WorkflowID  string        `json:"workflowId"`
	Description string        `json:"description,omitempty"`
	Limits      *LimitsConfig `json:"limits,omitempty" jsonschema:"the workflow's scheduler limits; absent means none"`
	NodeCount   int           `json:"nodeCount"`
}

// LimitsConfig is the scheduler limits of a session or a workflow.
type LimitsConfig struct {
	MaxRunning int `json:"maxRunning,omitempty" jsonschema:"most runs holding a slot at once (RUNNING, or PAUSED after they started); more starts wait PENDING and start in order; 0 or absent is no limit; at most 1000000"`
}

func limitsOf(l session.Limits) *LimitsConfig {
	if l.IsZero() {
		return nil
	}
	return &LimitsConfig{MaxRunning: l.MaxRunning}
}

// WorkflowIn names a workflow of a session.
type WorkflowIn struct {
	SessionID  string `json:"sessionId" jsonschema:"session id, from list_sessions"`
	WorkflowID string `json:"workflowId" jsonschema:"workflow id, from get_session_details"`
}

// WorkflowDetails is a workflow definition (secret config values read ***).
type WorkflowDetails struct {
	SessionID   string       `json:"sessionId"`
	WorkflowID  string       `json:"workflowId"`
	Description string       `json:"description,omitempty"`
	Nodes       []NodeConfig `json:"nodes"`
	Edges       []EdgeConfig `json:"edges"`
	Pause       *PauseOut    `json:"pause,omitempty" jsonschema:"present while the workflow is paused: every new run is refused until control_workflow RESUME_WORKFLOW"`
}

// PauseOut is a workflow's pause: who paused it, through which door, since
// when and why.
type PauseOut struct {
	By     string `json:"by" jsonschema:"the actor who paused it"`
	Via    string `json:"via" jsonschema:"the channel it came through"`
	Since  string `json:"since" jsonschema:"RFC 3339 time"`
	Reason string `json:"reason" jsonschema:"why, as given with the pause; empty when none was"`
}

// NodeConfig is one node of a workflow definition.
type NodeConfig struct {
	NodeID string         `json:"nodeId" jsonschema:"node id, unique in the workflow: lowercase letters, digits, - and _"`
	Type   string         `json:"type" jsonschema:"plugin type from list_plugins, such as MANUAL, TRANSFORM, HTTP_REQUEST, LOG, RESULT"`
	Name   string         `json:"name,omitempty" jsonschema:"display name"`
	Config map[string]any `json:"config,omitempty" jsonschema:"plugin config; get_plugin_details lists the fields"`
}

// EdgeConfig connects an output port of one node to another node.
type EdgeConfig struct {
	Source     string `json:"source" jsonschema:"nodeId the message leaves"`
	Target     string `json:"target" jsonschema:"nodeId the message enters"`
	SourcePort string `json:"sourcePort,omitempty" jsonschema:"output port of the source; default \"default\"; get_plugin_details shows the ports for a config"`
}

// WorkflowConfig is one workflow of a session document.
type WorkflowConfig struct {
	WorkflowID  string        `json:"workflowId" jsonschema:"workflow id, unique in the session"`
	Description string        `json:"description,omitempty"`
	Limits      *LimitsConfig `json:"limits,omitempty" jsonschema:"scheduler limits of this workflow's runs"`
	Nodes       []NodeConfig  `json:"nodes" jsonschema:"the nodes; at least one trigger (MANUAL, WEBHOOK, SCHEDULE)"`
	Edges       []EdgeConfig  `json:"edges,omitempty" jsonschema:"the edges; the graph must be acyclic"`
}

// SessionConfig is a whole session document, as create_session takes it.
type SessionConfig struct {
	SessionID   string           `json:"sessionId" jsonschema:"session id: 1 to 64 lowercase letters, digits, - and _"`
	Name        string           `json:"name" jsonschema:"display name"`
	Description string           `json:"description,omitempty"`
	Initiator   string           `json:"initiator,omitempty" jsonschema:"who or what created the session"`
	Tags        []string         `json:"tags,omitempty"`
	ProjectPath string           `json:"projectPath,omitempty"`
	Limits      *LimitsConfig    `json:"limits,omitempty" jsonschema:"scheduler limits of the whole session (all its workflows together)"`
	Workflows   []WorkflowConfig `json:"workflows" jsonschema:"at least one workflow"`
}

// CreateSessionIn wraps the session document.
type CreateSessionIn struct {
	Session SessionConfig `json:"session" jsonschema:"the session document; get_session_creation_instructions explains the format"`
}

// CreateSessionOut tells what create_session did.
type CreateSessionOut struct {
	SessionID        string   `json:"sessionId"`
	Created          bool     `json:"created" jsonschema:"false when an existing session was replaced"`
	Workflows        []string `json:"workflows"`
	RemovedWorkflows []string `json:"removedWorkflows" jsonschema:"workflows the replaced session had and this one does not"`
	Warnings         []string `json:"warnings"`
}

func (s *server) addSessionTools(m *mcp.Server) {
	addTool(m, &mcp.Tool{Name: "list_sessions", Annotations: annotated(readOnly, "List sessions"),
		Description: "List the sessions this key can see, with their workflows (each one's pause and newest run), a page at a time; query searches ids, names and descriptions. Next: get_session_details."},
		s.listSessions)
	addTool(m, &mcp.Tool{Name: "get_session_details", Annotations: annotated(readOnly, "Get session details"),
		Description: "One session and its workflows. Next: get_workflow_details for a workflow's nodes, or start_workflow."},
		s.getSession)
	addTool(m, &mcp.Tool{Name: "get_session_creation_instructions", Annotations: annotated(readOnly, "How to write a session"),
		Description: "The session format: fields, naming rules, DAG rules, a complete valid example, the registered plugin types and common errors with fixes. Read it before create_session."},
		s.creationInstructions)
	addTool(m, &mcp.Tool{Name: "create_session", Annotations: annotated(destructOpen, "Create or replace a session"),
		Description: "Create a session, or replace the one with the same sessionId whole (workflows it no longer lists are removed). " +
			"Its workflows can call other systems. Confirm with the user before calling. Next: start_workflow."},
		s.createSession)
	addTool(m, &mcp.Tool{Name: "get_workflow_details", Annotations: annotated(readOnly, "Get workflow definition"),
		Description: "A workflow's definition: nodes with plugin type and config (secret values read ***) and edges. Next: start_workflow."},
		s.getWorkflow)
}

func (s *server) listSessions(ctx context.Context, _ *mcp.CallToolRequest, in ListSessionsIn) (*mcp.CallToolResult, SessionList, error) {
	const tool = "list_sessions"
	p := caller(ctx)
	if err := p.Can(access.ReadSessions, ""); err != nil {
		return nil, SessionList{}, s.toolError(tool, err, subject{})
	}
	out := SessionList{Sessions: []SessionSummary{}}
	res, err := s.d.ListSessions.Handle(ctx, sessionapp.ListInput{Limit: in.Limit, Cursor: in.Cursor, Only: p.Sessions(), Query: in.Query})
	if err != nil {
		return nil, SessionList{}, s.toolError(tool, err, subject{})
	}
	for _, x := range res.Sessions {
		sm := SessionSummary{SessionID: x.ID, Name: x.Name, Description: x.Description, WorkflowCount: x.WorkflowCount,
			Workflows: make([]WorkflowLastRun, len(x.Workflows))}
		for i, w := range x.Workflows {
			sm.Workflows[i] = WorkflowLastRun{WorkflowID: w.ID, Paused: w.Pause != nil}
			if l := w.Last; l != nil {
				sm.Workflows[i].LastExecution = &LastRun{ExecutionID: l.ID, Status: string(l.Status), StartedAt: ts(l.StartedAt), EndedAt: ts(l.EndedAt)}
			}
		}
		out.Sessions = append(out.Sessions, sm)
	}
	out.NextCursor = res.NextCursor
	return nil, out, nil
}

func (s *server) getSession(ctx context.Context, _ *mcp.CallToolRequest, in SessionIn) (*mcp.CallToolResult, SessionDetails, error) {
	const tool = "get_session_details"
	subj := subject{Session: in.SessionID}
	if err := caller(ctx).Can(access.ReadSessions, in.SessionID); err != nil {
		return nil, SessionDetails{}, s.toolError(tool, err, subj)
	}
	ss, err := s.d.GetSession.Handle(ctx, in.SessionID)
	if err != nil {
		return nil, SessionDetails{}, s.toolError(tool, err, subj)
	}
	out := SessionDetails{SessionID: ss.ID(), Name: ss.Name(), Description: ss.Description(), Initiator: ss.Initiator(),
		Tags: nonNil(ss.Tags()), ProjectPath: ss.ProjectPath(), Limits: limitsOf(ss.Limits()), Workflows: []WorkflowSummary{}}
	for _, w := range ss.Workflows() {
		out.Workflows = append(out.Workflows, WorkflowSummary{WorkflowID: w.ID(), Description: w.Description(),
			Limits: limitsOf(w.Limits()), NodeCount: len(w.Nodes())})
	}
	return nil, out, nil
}

func (s *server) getWorkflow(ctx context.Context, _ *mcp.CallToolRequest, in WorkflowIn) (*mcp.CallToolResult, WorkflowDetails, error) {
	const tool = "get_workflow_details"
	subj := subject{Session: in.SessionID, Workflow: in.WorkflowID}
	if err := caller(ctx).Can(access.ReadSessions, in.SessionID); err != nil {
		return nil, WorkflowDetails{}, s.toolError(tool, err, subj)
	}
	w, err := s.d.GetWorkflow.Handle(ctx, in.SessionID, in.WorkflowID)
	if err != nil {
		return nil, WorkflowDetails{}, s.toolError(tool, err, subj)
	}
	nodes, edges := graph(w.Workflow)
	out := WorkflowDetails{SessionID: in.SessionID, WorkflowID: w.ID(), Description: w.Description(), Nodes: nodes, Edges: edges}
	if p := w.Pause; p != nil {
		out.Pause = &PauseOut{By: p.Actor, Via: p.Channel, Since: p.Since.UTC().Format(time.RFC3339Nano), Reason: p.Reason}
	}
	return nil, out, nil
}

func graph(w session.Workflow) ([]NodeConfig, []EdgeConfig) {
	nodes := make([]NodeConfig, 0, len(w.Nodes()))
	for _, n := range w.Nodes() {
		nodes = append(nodes, NodeConfig{NodeID: n.ID(), Type: n.Type(), Name: n.Name(), Config: n.Config()})
	}
	edges := make([]EdgeConfig, 0, len(w.Edges()))
	for _, e := range w.Edges() {
		edges = append(edges, EdgeConfig{Source: e.Source(), Target: e.Target(), SourcePort: e.SourcePort()})
	}
	return nodes, edges
}

func (s *server) createSession(ctx context.Context, req *mcp.CallToolRequest, in CreateSessionIn) (*mcp.CallToolResult, CreateSessionOut, error) {
	const tool = "create_session"
	subj := subject{Session: in.Session.SessionID}
	p := caller(ctx)
	if err := p.Can(access.ApplySession, in.Session.SessionID); err != nil {
		return nil, CreateSessionOut{}, s.toolError(tool, err, subj)
	}
	// The document as sent, so node configs keep their exact numbers; the
	// typed copy (whose numbers the SDK rounded) is the fallback.
	doc, ok := rawArgumentJSON(req, "session")
	if !ok {
		var err error
		if doc, err = json.Marshal(in.Session); err != nil {
			return nil, CreateSessionOut{}, s.toolError(tool, err, subj)
		}
	}
	res, err := s.d.ApplySession.Handle(ctx, sessionapp.ApplyInput{ID: in.Session.SessionID, Document: doc, Actor: p.Actor(), Channel: Channel})
	if err != nil {
		return nil, CreateSessionOut{}, s.toolError(tool, err, subj)
	}
	return nil, CreateSessionOut{SessionID: res.SessionID, Created: res.Created, Workflows: nonNil(res.Workflows),
		RemovedWorkflows: nonNil(res.RemovedWorkflows), Warnings: nonNil(res.Warnings)}, nil
}

func nonNil[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}
