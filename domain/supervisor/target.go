package supervisor

import (
	"fmt"
	"regexp"
	"slices"
	"strings"

	"github.com/yukta/yukta/domain/fault"
	"github.com/yukta/yukta/domain/session"
)

// TargetKind says which runs a directive's target names.
type TargetKind string

// The target kinds (DESIGN §9).
const (
	// TargetExecution is one run: execution:<id>.
	TargetExecution TargetKind = "execution"
	// TargetWorkflow is one workflow: workflow:<session>/<workflow>. For a
	// run command it names the workflow's unfinished runs; StartWorkflow
	// and StopAll act on the workflow itself.
	TargetWorkflow TargetKind = "workflow"
	// TargetNodes is nodes of runs: node:<execution>/<node>[,<execution>/<node>...].
	TargetNodes TargetKind = "node"
	// TargetOwnedRunning is every unfinished run (PENDING, RUNNING or PAUSED)
	// of the units the supervisor owns: owned.running.
	TargetOwnedRunning TargetKind = "owned.running"
	// TargetHeld is every run the supervisor holds: held.
	TargetHeld TargetKind = "held"
)

// MaxTargetRuns is how many runs one directive may touch once its target
// is expanded.
const MaxTargetRuns = 200

// MaxRefLen is the longest execution or input id a target or command names.
const MaxRefLen = 128

// refPattern is what an execution or input id may look like: the server
// makes UUIDs, and the pattern keeps ids free of the separators targets use.
var refPattern = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$`)

// ValidRef reports whether s may be an execution or input id in a directive.
func ValidRef(s string) bool { return refPattern.MatchString(s) }

// NodeRef names one node of one run.
type NodeRef struct {
	ExecutionID string
	NodeID      string
}

// Target is a parsed directive target. The zero Target names nothing.
type Target struct {
	kind        TargetKind
	executionID string
	sessionID   string
	workflowID  string
	nodes       []NodeRef
}

// ExecutionTarget names one run.
func ExecutionTarget(id string) Target { return Target{kind: TargetExecution, executionID: id} }

// WorkflowTarget names one workflow of a session.
func WorkflowTarget(sessionID, workflowID string) Target {
	return Target{kind: TargetWorkflow, sessionID: sessionID, workflowID: workflowID}
}

// NodesTarget names nodes of runs.
func NodesTarget(nodes ...NodeRef) Target {
	return Target{kind: TargetNodes, nodes: slices.Clone(nodes)}
}

// OwnedRunning names every unfinished run of the owned units.
func OwnedRunning() Target { return Target{kind: TargetOwnedRunning} }

// Held names every run the supervisor holds.
func Held() Target { return Target{kind: TargetHeld} }

// Kind returns the target kind ("" for the zero Target).
func (t Target) Kind() TargetKind { return t.kind }

// IsZero reports whether t names nothing.
func (t Target) IsZero() bool { return t.kind == "" }

// ExecutionID returns the run of an execution target.
func (t Target) ExecutionID() string { return t.executionID }

// SessionID returns the session of a workflow target.
func (t Target) SessionID() string { return t.sessionID }

// WorkflowID returns the workflow of a workflow target.
func (t Target) WorkflowID() string { return t.workflowID }

// Nodes returns a copy of the nodes of a node target, in the order given.
func (t Target) Nodes() []NodeRef { return slices.Clone(t.nodes) }

// ExecutionIDs returns the distinct runs a target names literally (an
// execution target's run, a node target's runs in first-seen order); nil
// for the kinds the application expands.
func (t Target) ExecutionIDs() []string {
	switch t.kind {
	case TargetExecution:
		return []string{t.executionID}
	case TargetNodes:
		var out []string
		for _, n := range t.nodes {
			if !slices.Contains(out, n.ExecutionID) {
				out = append(out, n.ExecutionID)
			}
		}
		return out
	}
	return nil
}

// String returns the target in its wire form.
func (t Target) String() string {
	switch t.kind {
	case TargetExecution:
		return "execution:" + t.executionID
	case TargetWorkflow:
		return "workflow:" + t.sessionID + "/" + t.workflowID
	case TargetNodes:
		parts := make([]string, len(t.nodes))
		for i, n := range t.nodes {
			parts[i] = n.ExecutionID + "/" + n.NodeID
		}
		return "node:" + strings.Join(parts, ",")
	case TargetOwnedRunning, TargetHeld:
		return string(t.kind)
	}
	return ""
}

const targetForms = "execution:<id>, workflow:<session>/<workflow>, node:<execution>/<node>[,...], owned.running or held"

// ParseTarget reads a target in its wire form. Errors are sentences that
// show the form to send instead.
func ParseTarget(s string) (Target, error) {
	t, msg := parseTarget(s)
	if msg != "" {
		return Target{}, fault.Newf(fault.ErrInvalid, "target %s", msg)
	}
	return t, nil
}

func parseTarget(s string) (Target, string) {
	switch s {
	case string(TargetOwnedRunning):
		return OwnedRunning(), ""
	case string(TargetHeld):
		return Held(), ""
	case "":
		return Target{}, "is empty; use " + targetForms
	}
	prefix, rest, ok := strings.Cut(s, ":")
	if !ok {
		return Target{}, fmt.Sprintf("%q is not a target; use %s", clip(s), targetForms)
	}
	switch TargetKind(prefix) {
	case TargetExecution:
		if !ValidRef(rest) {
			return Target{}, fmt.Sprintf("%q does not name an execution; use execution:<id> with the id from the signal or GET /executions", clip(s))
		}
		return ExecutionTarget(rest), ""
	case TargetWorkflow:
		sid, wid, ok := strings.Cut(rest, "/")
		if !ok {
			return Target{}, fmt.Sprintf("%q names no session; use workflow:<session>/<workflow>, as in owns", clip(s))
		}
		if !session.ValidID(sid) || !session.ValidID(wid) {
			return Target{}, fmt.Sprintf("%q is not workflow:<session>/<workflow> with valid ids (lowercase letters, digits, '-' and '_')", clip(s))
		}
		return WorkflowTarget(sid, wid), ""
	case TargetNodes:
		if rest == "" {
			return Target{}, "node: lists no nodes; use node:<execution>/<node>[,<execution>/<node>...]"
		}
		parts := strings.Split(rest, ",")
		if len(parts) > MaxTargetRuns {
			return Target{}, fmt.Sprintf("lists %d nodes; the limit is %d", len(parts), MaxTargetRuns)
		}
		t := Target{kind: TargetNodes}
		for _, p := range parts {
			eid, nid, ok := strings.Cut(p, "/")
			if !ok || !ValidRef(eid) || !session.ValidID(nid) {
				return Target{}, fmt.Sprintf("entry %q is not <execution>/<node>; use node:<execution>/<node>[,<execution>/<node>...]", clip(p))
			}
			ref := NodeRef{ExecutionID: eid, NodeID: nid}
			if slices.Contains(t.nodes, ref) {
				return Target{}, fmt.Sprintf("names node %s twice", p)
			}
			t.nodes = append(t.nodes, ref)
		}
		return t, ""
	}
	return Target{}, fmt.Sprintf("%q is not a target; use %s", clip(s), targetForms)
}

// LimitRuns checks the runs a target expanded to: it drops repeats, keeps
// the first-seen order and refuses more than MaxTargetRuns with a sentence
// that says how to narrow the target.
func LimitRuns(t Target, runs []string) ([]string, error) {
	out := make([]string, 0, len(runs))
	seen := make(map[string]bool, len(runs))
	for _, r := range runs {
		if !seen[r] {
			seen[r] = true
			out = append(out, r)
		}
	}
	if len(out) > MaxTargetRuns {
		return nil, fault.Newf(ErrTooManyRuns, "target %s names %d runs; one directive may touch at most %d. Narrow the target (execution:<id>, node:<execution>/<node> or workflow:<session>/<workflow>) or send several directives",
			t, len(out), MaxTargetRuns)
	}
	return out, nil
}

// clip keeps a quoted value in a message short.
func clip(s string) string {
	if len(s) <= 80 {
		return s
	}
	cut := 80
	for cut > 0 && s[cut]&0xC0 == 0x80 {
		cut--
	}
	return s[:cut] + "…"
}
