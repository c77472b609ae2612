package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/yukta/yukta/api/apiclient"
)

// hinter finds, for run --watch, the open inputs of an execution's WAITING
// INPUT_REQUEST nodes and the `yukta answer` command that answers each. It
// asks the server only when the set of waiting nodes (or what they have
// received) changed since the last look.
type hinter struct {
	e     *env
	key   string            // the waiting nodes and their received counts at the last look
	modes map[string]string // node id → INPUT_REQUEST mode, read once from the workflow
}

// hints returns the lines to show under the nodes, nil when nothing waits
// for an answer, and changed=false when they are the same as last time.
// Failures only cost the hint: the watch goes on.
func (h *hinter) hints(ctx context.Context, ex *apiclient.Execution) (lines []string, changed bool) {
	var key strings.Builder
	for _, n := range ex.Nodes {
		if n.Type == "INPUT_REQUEST" && n.Status == "WAITING" {
			fmt.Fprintf(&key, "%s=%d;", n.NodeId, n.Received)
		}
	}
	if key.String() == h.key {
		return nil, false
	}
	h.key = key.String()
	if h.key == "" {
		return nil, true
	}
	res, err := h.e.api.ListInputsWithResponse(ctx, &apiclient.ListInputsParams{SessionId: ptr(ex.SessionId), ExecutionId: ptr(ex.ExecutionId)})
	if err != nil || res.JSON200 == nil {
		h.key = "" // look again on the next change
		return nil, true
	}
	if h.modes == nil {
		h.modes = h.readModes(ctx, ex.SessionId, ex.WorkflowId)
	}
	for _, in := range res.JSON200.Inputs {
		if in.Status != "open" {
			continue
		}
		lines = append(lines, fmt.Sprintf("answer %s: yukta answer %s %s", escape(in.NodeId), in.InputId,
			shellQuote(answerTemplate(h.modes[in.NodeId], in.Schema))))
	}
	return lines, true
}

// readModes reads each INPUT_REQUEST node's mode from the workflow.
func (h *hinter) readModes(ctx context.Context, sid, wid string) map[string]string {
	modes := map[string]string{}
	res, err := h.e.api.GetWorkflowWithResponse(ctx, sid, wid)
	if err != nil || res.JSON200 == nil {
		return modes
	}
	for _, n := range res.JSON200.Nodes {
		if n.Type == "INPUT_REQUEST" && n.Config != nil {
			m, _ := (*n.Config)["mode"].(string)
			modes[n.NodeId] = m
		}
	}
	return modes
}

// answerTemplate is an answer to fill in: an approval's decision, or an
// object with each property of the answer's schema set to a placeholder of
// its type.
func answerTemplate(mode string, schema *map[string]any) string {
	if mode != "answer" {
		return `{"approved": true, "comment": ""}`
	}
	if schema == nil {
		return `{}`
	}
	props, _ := (*schema)["properties"].(map[string]any)
	names := make([]string, 0, len(props))
	for name := range props {
		names = append(names, name)
	}
	slices.Sort(names)
	var b strings.Builder
	b.WriteString("{")
	for i, name := range names {
		if i > 0 {
			b.WriteString(", ")
		}
		k, _ := json.Marshal(name)
		typ := ""
		if p, ok := props[name].(map[string]any); ok {
			typ, _ = p["type"].(string)
		}
		fmt.Fprintf(&b, "%s: %s", k, placeholder(typ))
	}
	b.WriteString("}")
	return b.String()
}

func placeholder(typ string) string {
	switch typ {
	case "boolean":
		return "true"
	case "integer", "number":
		return "0"
	case "array":
		return "[]"
	case "object":
		return "{}"
	case "null":
		return "null"
	}
	return `""`
}

// shellQuote quotes s for a POSIX shell.
func shellQuote(s string) string {
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
