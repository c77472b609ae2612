package mcpserver

import (
	"context"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/yukta/yukta/domain/access"
)

// CreationInstructions teaches the session format.
type CreationInstructions struct {
	Format       string          `json:"format"`
	Rules        []string        `json:"rules"`
	Example      CreateSessionIn `json:"example" jsonschema:"a complete, valid create_session argument; change its ids before applying it"`
	PluginTypes  []PluginSummary `json:"pluginTypes" jsonschema:"the node types registered on this server"`
	CommonErrors []CommonError   `json:"commonErrors"`
}

// CommonError is a frequent mistake and its fix.
type CommonError struct {
	Error string `json:"error"`
	Fix   string `json:"fix"`
}

// Example returns the example session of the creation guide: a real session
// a test applies through create_session.
func Example() CreateSessionIn {
	return CreateSessionIn{Session: SessionConfig{
		SessionID: "agent-example", Name: "Agent example", Description: "Greets whoever starts the run and stores the greeting.",
		Initiator: "mcp", Tags: []string{"example"},
		Workflows: []WorkflowConfig{{
			WorkflowID: "greet", Description: "MANUAL start -> TRANSFORM builds a greeting -> LOG -> RESULT stores it.",
			Nodes: []NodeConfig{
				{NodeID: "start", Type: "MANUAL", Name: "Start by hand"},
				{NodeID: "greet", Type: "TRANSFORM", Config: map[string]any{"expression": `{"greeting": "Hello, " + payload.name + "!"}`}},
				{NodeID: "log", Type: "LOG", Config: map[string]any{"message": "greeted someone", "level": "info"}},
				{NodeID: "result", Type: "RESULT"},
			},
			Edges: []EdgeConfig{{Source: "start", Target: "greet"}, {Source: "greet", Target: "log"}, {Source: "log", Target: "result"}},
		}},
	}}
}

func (s *server) creationInstructions(ctx context.Context, _ *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, CreationInstructions, error) {
	if err := caller(ctx).Can(access.ReadSessions, ""); err != nil {
		return nil, CreationInstructions{}, s.toolError("get_session_creation_instructions", err, subject{})
	}
	out := CreationInstructions{
		Format: "A session is {sessionId, name, description?, initiator?, tags?, projectPath?, limits?, workflows[]}. A workflow is " +
			"{workflowId, description?, limits?, nodes[], edges[]}. A node is {nodeId, type, name?, config?}. An edge is {source, target, sourcePort?}: " +
			"a message the source node emits on sourcePort (default \"default\") goes to target. Unknown fields are rejected. " +
			"create_session takes the session as its \"session\" argument and replaces any session with the same sessionId whole.",
		Rules: []string{
			"sessionId, workflowId and nodeId are 1 to 64 lowercase letters, digits, '-' and '_', starting with a letter or digit.",
			"Every workflow has at least one trigger node (category trigger: MANUAL, WEBHOOK, SCHEDULE, ...); start_workflow feeds the MANUAL ones.",
			"The graph is acyclic; triggers have no inbound edge and terminals (RESULT, WEBHOOK_OUT, ...) no outbound edge.",
			"sourcePort must be a port the source has for its config: get_plugin_details with the config lists them (a ROUTER's ports are its route names plus default).",
			"config holds exactly the fields get_plugin_details lists; expressions are CEL over payload, such as payload.amount > 100.",
			"Every processor and terminal also takes timeout (\"30s\") and retry {maxAttempts, backoff}.",
			"Secret fields (such as authorization) are stored and read back as ***; send *** back to keep the stored value.",
			"limits {maxRunning} on the session or a workflow caps its runs holding a slot at once; more starts wait PENDING and start in start order (0 or absent: no limit).",
		},
		Example:     Example(),
		PluginTypes: []PluginSummary{},
		CommonErrors: []CommonError{
			{Error: `workflows[0].nodes[1].nodeId: node id "Greet" must match ...`, Fix: "Use lowercase ids: greet."},
			{Error: `workflows[0].edges[0].sourcePort: node "route" has no port "yes"`, Fix: "Call get_plugin_details with the node's config and use one of the ports it returns."},
			{Error: `workflows[0].nodes[0]: unknown field "id"`, Fix: "Nodes use nodeId, edges use source/target/sourcePort; copy the example's field names."},
			{Error: `workflow "x" has no trigger`, Fix: "Add a MANUAL node and an edge from it to the first processor."},
		},
	}
	for _, d := range s.d.ListPlugins.Handle(ctx) {
		out.PluginTypes = append(out.PluginTypes, PluginSummary{Type: d.Type, Category: string(d.Category), Description: d.Description})
	}
	return nil, out, nil
}
