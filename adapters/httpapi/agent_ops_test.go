package httpapi

import (
	"net/http"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"

	"go.uber.org/zap"

	"github.com/yukta/yukta/api"
	"github.com/yukta/yukta/application/supervisorapp"
)

// TestAgentRoutesAreTheTable: the agent REST routes the server serves are
// the operation table's, each once, and nothing else (but /mcp); every
// operation but the stream has a tool, each tool once.
func TestAgentRoutesAreTheTable(t *testing.T) {
	t.Parallel()
	m := &memSupervisors{byID: map[string]supervisorapp.Summary{}}
	srv, err := New(Config{Addr: "127.0.0.1:0"}, UseCases{Agent: AgentUseCases{Caller: supervisorapp.NewAgentCaller(m), Signals: noSignals{},
		MCP: http.NotFoundHandler()}}, zap.NewNop())
	if err != nil {
		t.Fatal(err)
	}
	var served, table []string
	for _, r := range srv.echo.Routes() {
		if strings.HasPrefix(r.Path, AgentBase+"/") && r.Path != AgentBase+"/mcp" && r.Method != "echo_route_any" {
			served = append(served, r.Method+" "+r.Path)
		}
	}
	tools := map[string]bool{}
	for _, op := range AgentOperations() {
		table = append(table, op.Method+" "+AgentBase+echoPath(op.Path))
		switch {
		case op.Stream && op.Tool != "":
			t.Errorf("%s: a stream has no tool (MCP has no push)", op.ID)
		case !op.Stream && op.Tool == "":
			t.Errorf("%s: no MCP tool; every operation but a stream is offered by both doors", op.ID)
		case tools[op.Tool]:
			t.Errorf("%s: tool %s twice", op.ID, op.Tool)
		}
		tools[op.Tool] = true
		if !op.Stream && op.call == nil {
			t.Errorf("%s: no use case call", op.ID)
		}
	}
	slices.Sort(served)
	slices.Sort(table)
	if !slices.Equal(served, table) {
		t.Fatalf("agent routes served:\n%s\nthe table:\n%s", strings.Join(served, "\n"), strings.Join(table, "\n"))
	}
}

// TestAgentSpecIsTheTable: api/openapi.yaml describes each operation of the
// table at its path and method with its operationId and parameters, and no
// other agent operation but /mcp.
func TestAgentSpecIsTheTable(t *testing.T) {
	t.Parallel()
	doc, err := openapi3.NewLoader().LoadFromData(api.Spec)
	if err != nil {
		t.Fatal(err)
	}
	inSpec := map[string]*openapi3.Operation{}
	for path, item := range doc.Paths.Map() {
		if rest, ok := strings.CutPrefix(path, AgentBase); ok && rest != "/mcp" {
			for method, op := range item.Operations() {
				inSpec[method+" "+rest] = op
				op.Parameters = append(op.Parameters, item.Parameters...)
			}
		}
	}
	for _, op := range AgentOperations() {
		key := op.Method + " " + op.Path
		s, ok := inSpec[key]
		if !ok {
			t.Errorf("%s (%s) is not in api/openapi.yaml", key, op.ID)
			continue
		}
		delete(inSpec, key)
		if s.OperationID != op.ID {
			t.Errorf("%s: operationId %s in the spec, %s in the table", key, s.OperationID, op.ID)
		}
		var specParams, tableParams []string
		for _, p := range s.Parameters {
			if p.Value != nil && p.Value.In != "header" {
				specParams = append(specParams, p.Value.In+" "+p.Value.Name)
			}
		}
		for _, p := range op.Params {
			tableParams = append(tableParams, p.In+" "+p.Name)
		}
		slices.Sort(specParams)
		slices.Sort(tableParams)
		if !slices.Equal(specParams, tableParams) {
			t.Errorf("%s: parameters %v in the spec, %v in the table", key, specParams, tableParams)
		}
	}
	for key := range inSpec {
		t.Errorf("%s is in api/openapi.yaml but not in the operation table", key)
	}
}

// TestAgentDocListsTheTable: docs/agent-api.md lists every operation of
// the table, with its REST route and its MCP tool, in the table of
// operations, and no other.
func TestAgentDocListsTheTable(t *testing.T) {
	t.Parallel()
	b, err := os.ReadFile("../../docs/agent-api.md")
	if err != nil {
		t.Fatal(err)
	}
	_, rest, ok := strings.Cut(string(b), "## Operations\n")
	if !ok {
		t.Fatal("docs/agent-api.md has no ## Operations section")
	}
	section, _, _ := strings.Cut(rest, "\n## ")
	rows := map[string]bool{}
	for _, line := range strings.Split(section, "\n") {
		if strings.HasPrefix(line, "| `") {
			rows[line] = true
		}
	}
	for _, op := range AgentOperations() {
		tool := "—"
		if op.Tool != "" {
			tool = "`" + op.Tool + "`"
		}
		want := "| `" + op.Method + " " + op.Path + "` | " + tool + " | " + op.Description + " |"
		if !rows[want] {
			t.Errorf("docs/agent-api.md lacks the row (or it differs):\n%s", want)
		}
		delete(rows, want)
	}
	for r := range rows {
		t.Errorf("docs/agent-api.md lists an operation the table does not have:\n%s", r)
	}
}
