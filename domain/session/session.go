// Package session holds sessions and their workflows: named DAGs of plugin
// nodes. It owns the session document format and every rule a workflow must
// obey before it may be stored or run; a Session value that exists has passed
// those rules (or was restored from storage, where they were checked before).
package session

import (
	"fmt"
	"regexp"
	"slices"
	"strings"

	"github.com/yukta/yukta/domain/fault"
	"github.com/yukta/yukta/domain/plugin"
	"github.com/yukta/yukta/domain/retention"
)

// idPattern is shared by session, workflow and node ids: short, lowercase,
// safe in URLs and file names.
var idPattern = regexp.MustCompile(`^[a-z0-9][a-z0-9_-]{0,63}$`)

// ValidID reports whether s may be used as a session, workflow or node id.
func ValidID(s string) bool { return idPattern.MatchString(s) }

// Errors callers branch on.
var (
	ErrSessionNotFound  = fmt.Errorf("session: session not found: %w", fault.ErrNotFound)
	ErrWorkflowNotFound = fmt.Errorf("session: workflow not found: %w", fault.ErrNotFound)
)

// NotFound is the one answer for a session that does not exist, and for one
// a caller may not see: the text is identical, so keys cannot probe ids.
func NotFound(id string) error {
	return fault.Newf(ErrSessionNotFound, "session %q does not exist; call GET /api/sessions (MCP: list_sessions) to see the sessions you can use", id)
}

// Limits keep one document from exhausting the server. They are generous for
// hand-written and generated workflows alike.
const (
	MaxWorkflows      = 100
	MaxNodes          = 500
	MaxEdges          = 2000
	MaxTextLen        = 256
	MaxDescriptionLen = 4096
	MaxTags           = 32
	MaxPathLen        = 1024
	// MaxRunningLimit is the largest limits.maxRunning a session or a
	// workflow may set.
	MaxRunningLimit = 1_000_000
)

// Catalog answers which node types exist. The application's plugin registry
// implements it.
type Catalog interface {
	Describe(typ string) (plugin.Descriptor, bool)
}

// Session is a named set of workflows owned by one initiator.
type Session struct {
	id          string
	name        string
	description string
	initiator   string
	tags        []string
	projectPath string
	limits      Limits
	retention   retention.Override
	workflows   []Workflow
}

// Workflow is one DAG of nodes inside a session.
type Workflow struct {
	id          string
	description string
	limits      Limits
	nodes       []Node
	edges       []Edge
}

// Limits bound how many runs of a session, or of one workflow, hold a slot
// at once (the scheduler limits: docs/adr/0007-scheduler-admission.md). A
// start over a limit waits as PENDING and starts, in start order, when a run
// ends. The zero value bounds nothing.
type Limits struct {
	// MaxRunning is the most runs RUNNING (or PAUSED after they started)
	// at once; 0 means no bound.
	MaxRunning int
}

// IsZero reports whether l bounds nothing.
func (l Limits) IsZero() bool { return l == Limits{} }

// Node is one plugin instance in a workflow.
type Node struct {
	id     string
	typ    string
	name   string
	config map[string]any
}

// Edge carries messages emitted on sourcePort of source to target.
type Edge struct {
	source     string
	target     string
	sourcePort string
}

// Summary is the list view of a stored session.
type Summary struct {
	ID            string
	Name          string
	Description   string
	WorkflowCount int
}

// RestoreSession rebuilds a stored session. Only storage adapters call it; the
// rules were checked when the session was applied.
func RestoreSession(id, name, description, initiator string, tags []string, projectPath string, workflows []Workflow) Session {
	return Session{id: id, name: name, description: description, initiator: initiator,
		tags: slices.Clone(tags), projectPath: projectPath, workflows: slices.Clone(workflows)}
}

// ID returns the session id.
func (s Session) ID() string { return s.id }

// Name returns the display name.
func (s Session) Name() string { return s.name }

// Description returns the free-text description.
func (s Session) Description() string { return s.description }

// Initiator returns who created the session (a person, agent or program).
func (s Session) Initiator() string { return s.initiator }

// Tags returns a copy of the tags.
func (s Session) Tags() []string { return slices.Clone(s.tags) }

// ProjectPath returns the optional project path the session belongs to.
func (s Session) ProjectPath() string { return s.projectPath }

// Limits returns the session's scheduler limits.
func (s Session) Limits() Limits { return s.limits }

// WithLimits returns s with limits l. Storage adapters call it when they
// restore a session; a parsed session has its limits already.
func (s Session) WithLimits(l Limits) Session {
	s.limits = l
	return s
}

// Retention returns the session's own retention; the zero value inherits
// the server's policy.
func (s Session) Retention() retention.Override { return s.retention }

// WithRetention returns s with retention r. Storage adapters call it when
// they restore a session; a parsed session has its retention already.
func (s Session) WithRetention(r retention.Override) Session {
	s.retention = r
	return s
}

// Workflows returns a copy of the workflows in document order.
func (s Session) Workflows() []Workflow { return slices.Clone(s.workflows) }

// WorkflowIDs returns the workflow ids in document order.
func (s Session) WorkflowIDs() []string {
	out := make([]string, len(s.workflows))
	for i, w := range s.workflows {
		out[i] = w.id
	}
	return out
}

// Workflow returns the workflow with the given id.
func (s Session) Workflow(id string) (Workflow, bool) {
	for _, w := range s.workflows {
		if w.id == id {
			return w, true
		}
	}
	return Workflow{}, false
}

// ID returns the workflow id, unique within its session.
func (w Workflow) ID() string { return w.id }

// Description returns the workflow description.
func (w Workflow) Description() string { return w.description }

// Limits returns the workflow's scheduler limits.
func (w Workflow) Limits() Limits { return w.limits }

// WithLimits returns w with limits l. Storage adapters call it when they
// restore a workflow; a parsed workflow has its limits already.
func (w Workflow) WithLimits(l Limits) Workflow {
	w.limits = l
	return w
}

// Nodes returns a copy of the nodes in document order.
func (w Workflow) Nodes() []Node { return slices.Clone(w.nodes) }

// Edges returns a copy of the edges in document order.
func (w Workflow) Edges() []Edge { return slices.Clone(w.edges) }

// Node returns the node with the given id.
func (w Workflow) Node(id string) (Node, bool) {
	for _, n := range w.nodes {
		if n.id == id {
			return n, true
		}
	}
	return Node{}, false
}

// ID returns the node id, unique within its workflow.
func (n Node) ID() string { return n.id }

// Type returns the plugin type.
func (n Node) Type() string { return n.typ }

// Name returns the optional display name.
func (n Node) Name() string { return n.name }

// Config returns a deep copy of the node's config.
func (n Node) Config() map[string]any { return deepCopy(n.config).(map[string]any) }

// Source returns the id of the node the edge leaves.
func (e Edge) Source() string { return e.source }

// Target returns the id of the node the edge enters.
func (e Edge) Target() string { return e.target }

// SourcePort returns the output port of the source the edge listens on.
func (e Edge) SourcePort() string { return e.sourcePort }

// Masked returns a copy of s whose secret config fields read MaskedValue.
// Every read path goes through it.
func (s Session) Masked(c Catalog) Session {
	out := s
	out.workflows = make([]Workflow, len(s.workflows))
	for i, w := range s.workflows {
		w.nodes = slices.Clone(w.nodes)
		for j, n := range w.nodes {
			if d, ok := c.Describe(n.typ); ok {
				n.config = d.Mask(n.config)
			}
			w.nodes[j] = n
		}
		out.workflows[i] = w
	}
	return out
}

// KeepSecrets lets a client send back a document it read (with secrets masked)
// without losing the secrets: a secret field whose value is MaskedValue takes
// the value the same node (same workflow, node id and type) had in prev, and
// so does each member of a secret map (secretHeaders) whose value is
// MaskedValue, by name. A masked value with nothing to keep is a violation,
// never stored as "***".
func (s Session) KeepSecrets(prev *Session, c Catalog) (Session, []fault.Violation) {
	var vs []fault.Violation
	out := s
	out.workflows = make([]Workflow, len(s.workflows))
	for wi, w := range s.workflows {
		var pw Workflow
		havePW := false
		if prev != nil {
			pw, havePW = prev.Workflow(w.id)
		}
		w.nodes = slices.Clone(w.nodes)
		for ni, n := range w.nodes {
			d, ok := c.Describe(n.typ)
			if !ok {
				continue
			}
			var old map[string]any
			if havePW {
				if pn, ok := pw.Node(n.id); ok && pn.typ == n.typ {
					old = pn.config
				}
			}
			kept, missing := d.KeepSecrets(n.config, old)
			for _, p := range missing {
				field, member, isMember := strings.Cut(p, ".")
				what := fmt.Sprintf("secret field %q", field)
				if isMember {
					what = fmt.Sprintf("secret field %q member %q", field, member)
				}
				vs = append(vs, fault.Violation{
					Path:    fmt.Sprintf("workflows[%d].nodes[%d].config.%s", wi, ni, p),
					Message: fmt.Sprintf("node %q: %s is %q but there is no stored value to keep; send the real value", n.id, what, plugin.MaskedValue),
				})
			}
			n.config = kept
			w.nodes[ni] = n
		}
		out.workflows[wi] = w
	}
	return out, vs
}

func deepCopy(v any) any {
	switch t := v.(type) {
	case map[string]any:
		m := make(map[string]any, len(t))
		for k, e := range t {
			m[k] = deepCopy(e)
		}
		return m
	case []any:
		a := make([]any, len(t))
		for i, e := range t {
			a[i] = deepCopy(e)
		}
		return a
	case nil:
		return nil
	default:
		return t
	}
}
