package cli

import "testing"

// TestCLIWordsNameCommands: the server's hints name REST routes for every
// door; the CLI shows the yukta command instead, and leaves routes it has
// no command for as they are.
func TestCLIWordsNameCommands(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{`node "z": unknown plugin type "NOPE"; call GET /api/plugins (MCP: list_plugins) for the available types`,
			`node "z": unknown plugin type "NOPE"; call yukta plugins list for the available types`},
		{`session "x" does not exist; call GET /api/sessions (MCP: list_sessions) to see the sessions you can use`,
			`session "x" does not exist; call yukta sessions list to see the sessions you can use`},
		{`workflow "w" does not exist in session "ci"; call GET /api/sessions/ci (MCP: get_session_details) to see its workflows`,
			`workflow "w" does not exist in session "ci"; call yukta sessions show ci to see its workflows`},
		{`stop them first (POST /api/sessions/ci/workflows/{workflowId}/stop), then delete the session`,
			`stop them first (yukta stop-all ci WORKFLOW), then delete the session`},
		{`an ADMIN issues one with POST /api/supervisors/ops/credential (MCP: create_credential, CLI: yukta supervisors credential create ops)`,
			`an ADMIN issues one with yukta supervisors credential create ops`},
		{`List a session's executions with GET /api/sessions/{sessionId}/executions.`,
			`List a session's executions with yukta runs list SESSION.`},
		{`GET /api/openapi.yaml describes it`, `GET /api/openapi.yaml describes it`},
		{`no route here`, `no route here`},
	} {
		if got := cliWords(c.in); got != c.want {
			t.Errorf("cliWords(%q)\n got %q\nwant %q", c.in, got, c.want)
		}
	}
}

// TestDocumentIDReadsUpToTheBreak: the id of a document broken after it is
// found, so the server can list every problem.
func TestDocumentIDReadsUpToTheBreak(t *testing.T) {
	for _, c := range []struct{ doc, want string }{
		{`{"sessionId": "ci", "name": "x"}`, "ci"},
		{`{"name": {"sessionId": "inner"}, "sessionId": "ci", "workflows": [}`, "ci"},
		{`{"name": "x", "workflows": [}, "sessionId": "ci"}`, ""},
		{`{"sessionId": 5}`, ""},
		{`[]`, ""},
		{``, ""},
	} {
		if got := documentID([]byte(c.doc), "sessionId"); got != c.want {
			t.Errorf("documentID(%s) = %q, want %q", c.doc, got, c.want)
		}
	}
}
