package mcpserver

import (
	"context"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// BenchmarkStatusInProcess is one get_workflow_status tools/call over HTTP to
// the handler with the real use cases on a local throwaway PostgreSQL: the
// MCP layer plus one execution read.
func BenchmarkStatusInProcess(b *testing.B) {
	ts, env := newTestServer(b)
	cs := connect(b, ts.URL, secretOf("viewer"))
	args := map[string]any{"sessionId": "own", "executionId": env.ownExec}
	b.ReportAllocs()
	for b.Loop() {
		res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "get_workflow_status", Arguments: args})
		if err != nil || res.IsError {
			b.Fatal(err, res)
		}
	}
}

// BenchmarkStatusRawPOST is the same call as one raw JSON-RPC POST, as a
// stateless agent sends it (no initialize): the server's share alone.
func BenchmarkStatusRawPOST(b *testing.B) {
	ts, env := newTestServer(b)
	body := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"get_workflow_status","arguments":{"sessionId":"own","executionId":"` + env.ownExec + `"}}}`
	b.ReportAllocs()
	for b.Loop() {
		res := post(b, ts.URL, secretOf("viewer"), body)
		if !strings.Contains(res, `"isError":false`) && strings.Contains(res, `"isError":true`) || !strings.Contains(res, `"structuredContent"`) {
			b.Fatal(res)
		}
	}
}

// post sends one raw JSON-RPC body and returns the response body.
func post(tb testing.TB, url, key, body string) string {
	req, _ := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Authorization", "Bearer "+key)
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		tb.Fatal(err)
	}
	defer res.Body.Close()
	out, _ := io.ReadAll(res.Body)
	return string(out)
}
