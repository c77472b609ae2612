package mcpserver

import (
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

func ptr[T any](v T) *T { return &v }

// Hint sets of the seed's catalogue. DestructiveHint and OpenWorldHint
// default to true in the protocol, so every tool sets both.
var (
	readOnly     = &mcp.ToolAnnotations{ReadOnlyHint: true, DestructiveHint: ptr(false), OpenWorldHint: ptr(false)}
	additive     = &mcp.ToolAnnotations{DestructiveHint: ptr(false), OpenWorldHint: ptr(false)}
	destructive  = &mcp.ToolAnnotations{DestructiveHint: ptr(true), OpenWorldHint: ptr(false)}
	destructOpen = &mcp.ToolAnnotations{DestructiveHint: ptr(true), OpenWorldHint: ptr(true)}
)

func annotated(a *mcp.ToolAnnotations, title string) *mcp.ToolAnnotations {
	c := *a
	c.Title = title
	return &c
}

// addTools registers the 36 tools.
func (s *server) addTools(m *mcp.Server) {
	s.addSessionTools(m)
	s.addExecutionTools(m)
	s.addControlTools(m)
	s.addPluginTools(m)
	s.addStatusTool(m)
	s.addSupervisorTools(m)
	s.addInputTools(m)
	s.addJournalTools(m)
	s.addApprovalTools(m)
	s.addKeyTools(m)
}
