package execution_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"slices"
	"testing"
	"unicode/utf8"

	"github.com/yukta/yukta/domain/execution"
	"github.com/yukta/yukta/domain/fault"
)

// controlBody is a control request body as REST (ExecutionCommand,
// NodeCommand, StopAllRequest) and MCP send it, plus nodeId and the
// BreakpointRequest fields so one body can be tried in every scope.
type controlBody struct {
	Action     string          `json:"action"`
	Mode       string          `json:"mode"`
	FromNodeID string          `json:"fromNodeId"`
	Immediate  bool            `json:"immediate"`
	Reason     string          `json:"reason"`
	Key        string          `json:"key"`
	IfStatus   string          `json:"ifStatus"`
	Wait       float64         `json:"wait"`
	NodeID     string          `json:"nodeId"`
	Field      string          `json:"field"`
	Equals     json.RawMessage `json:"equals"`
	Condition  string          `json:"condition"`
}

// FuzzCommand decodes fuzzed bytes as a control body and validates it in
// every scope: NewCommand never panics; a refusal is a *fault.ValidationError
// whose every violation names a path; an accepted command has an action of
// its scope, a wait within 0..MaxWait and the arguments its action needs.
func FuzzCommand(f *testing.F) {
	for _, seed := range []string{
		`{"action":"PAUSE"}`,
		`{"action":"resume","reason":"lunch is over","key":"k-1"}`,
		`{"action":"STOP","mode":"DRAIN","wait":30}`,
		`{"action":"STOP","mode":"kill","ifStatus":"running"}`,
		`{"action":"STOP","mode":"HARD"}`,
		`{"action":"RESTART"}`,
		`{"action":"RESTART_FROM_NODE","fromNodeId":"fetch"}`,
		`{"action":"RESTART_FROM_NODE"}`,
		`{"action":"STOP_ALL","mode":"CANCEL","reason":"deploy"}`,
		`{"action":"STOP","nodeId":"fetch","immediate":true}`,
		`{"action":"STEP_ENABLE","nodeId":"fetch"}`,
		`{"action":"STEP","nodeId":"fetch","ifStatus":"WAITING"}`,
		`{"action":"SKIP","nodeId":"fetch","wait":0.5}`,
		`{"action":"RETRY","nodeId":"fetch"}`,
		`{"action":"BREAKPOINT","nodeId":"fetch","field":"order.status","equals":"error"}`,
		`{"action":"BREAKPOINT","nodeId":"fetch","condition":"payload.total > 100"}`,
		`{"action":"BREAKPOINT","nodeId":"fetch","field":"a..b"}`,
		`{"action":"BREAKPOINT_CLEAR","nodeId":"fetch"}`,
		`{"action":"","wait":-1,"immediate":true,"fromNodeId":"x","mode":"DRAIN"}`,
		`{"action":"PAUSE","wait":61,"ifStatus":"nope"}`,
		`{"action":"PAUSE","wait":1e308}`,
		`{"action":" Pause\u0000","reason":"\ud800"}`,
		`{}`,
		`[]`,
		`null`,
		`{"action":1}`,
	} {
		f.Add([]byte(seed))
	}
	scopes := []execution.Scope{execution.ScopeExecution, execution.ScopeWorkflow, execution.ScopeNode}
	f.Fuzz(func(t *testing.T, data []byte) {
		var b controlBody
		if err := json.Unmarshal(data, &b); err != nil {
			return // not a JSON object of this shape: the edge answers 400 before the domain sees it
		}
		var bp *execution.Breakpoint
		if b.Field != "" || b.Condition != "" || b.Equals != nil {
			var equals any
			if b.Equals != nil {
				d := json.NewDecoder(bytes.NewReader(b.Equals))
				d.UseNumber()
				_ = d.Decode(&equals)
			}
			got, err := execution.NewBreakpoint(b.Field, equals, b.Equals != nil, b.Condition)
			if err != nil {
				checkValidationError(t, "NewBreakpoint", err)
			} else {
				bp = &got
				_ = got.MatchField(equals) // must not panic whatever the payload
			}
		}
		for _, scope := range scopes {
			in := execution.CommandInput{Scope: scope, Action: b.Action, Mode: b.Mode, NodeID: b.NodeID, FromNodeID: b.FromNodeID,
				Immediate: b.Immediate, Reason: b.Reason, Key: b.Key, IfStatus: b.IfStatus, WaitSecs: b.Wait, Breakpoint: bp,
				Actor: "anonymous", Channel: "rest"}
			c, err := execution.NewCommand(in)
			if err != nil {
				checkValidationError(t, "NewCommand("+string(scope)+")", err)
				continue
			}
			if !slices.Contains(execution.Actions(scope), c.Action) {
				t.Fatalf("%s: accepted action %q, want one of %v", scope, c.Action, execution.Actions(scope))
			}
			if c.Wait < 0 || c.Wait > execution.MaxWait {
				t.Fatalf("%s: accepted wait %v from %v, want 0..%v", scope, c.Wait, b.Wait, execution.MaxWait)
			}
			if c.Scope != scope || c.Actor != "anonymous" || c.Channel != "rest" {
				t.Fatalf("%s: got scope %s actor %q channel %q, want them kept", scope, c.Scope, c.Actor, c.Channel)
			}
			stops := c.Action == execution.ActionStopAll || c.Action == execution.ActionStop && scope == execution.ScopeExecution
			if stops != (c.Mode != "") || stops && !slices.Contains([]execution.StopMode{execution.Drain, execution.Cancel, execution.Kill}, c.Mode) {
				t.Fatalf("%s %s: got mode %q, want a stop mode exactly for STOP and STOP_ALL", scope, c.Action, c.Mode)
			}
			if scope == execution.ScopeNode && c.NodeID == "" {
				t.Fatalf("node %s accepted without a nodeId", c.Action)
			}
			if (c.Action == execution.ActionRestartFromNode) != (c.FromNodeID != "") {
				t.Fatalf("%s %s: got fromNodeId %q, want one exactly for RESTART_FROM_NODE", scope, c.Action, c.FromNodeID)
			}
			if c.Immediate && !(scope == execution.ScopeNode && c.Action == execution.ActionStop) {
				t.Fatalf("%s %s accepted with immediate", scope, c.Action)
			}
			if c.Action == execution.ActionBreakpoint && c.Breakpoint == nil {
				t.Fatalf("BREAKPOINT accepted without a breakpoint")
			}
			if utf8.RuneCountInString(c.Reason) > execution.MaxReasonLen || utf8.RuneCountInString(c.Key) > execution.MaxKeyLen {
				t.Fatalf("%s: accepted a reason of %d or a key of %d characters", scope, utf8.RuneCountInString(c.Reason), utf8.RuneCountInString(c.Key))
			}
			if c.IfStatus != "" {
				ok := scope == execution.ScopeExecution && execution.Status(c.IfStatus).Valid() ||
					scope == execution.ScopeNode && execution.NodeStatus(c.IfStatus).Valid()
				if !ok {
					t.Fatalf("%s: accepted ifStatus %q", scope, c.IfStatus)
				}
			}
		}
	})
}

func checkValidationError(t *testing.T, what string, err error) {
	t.Helper()
	ve, ok := err.(*fault.ValidationError)
	if !ok {
		t.Fatalf("%s: got %T (%v), want *fault.ValidationError", what, err, err)
	}
	if !errors.Is(err, fault.ErrInvalid) {
		t.Fatalf("%s: got %v, want it to match fault.ErrInvalid", what, err)
	}
	if len(ve.Violations) == 0 {
		t.Fatalf("%s: got a ValidationError without violations", what)
	}
	for _, v := range ve.Violations {
		if v.Path == "" || v.Message == "" {
			t.Fatalf("%s: got violation %+v, want a path and a message", what, v)
		}
	}
}
