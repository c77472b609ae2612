package session

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"math"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/yukta/yukta/domain/fault"
	"github.com/yukta/yukta/domain/jsonvalue"
	"github.com/yukta/yukta/domain/plugin"
	"github.com/yukta/yukta/domain/retention"
)

// ParseOptions tune Parse.
type ParseOptions struct {
	// ID is the session id the caller addressed (the URL path). When set, the
	// document's sessionId may be omitted and, if present, must equal it.
	ID string
	// KeepSecrets makes a secret sent back as MaskedValue take its value
	// from Stored, the session the document replaces (nil: none is
	// stored); one with nothing to keep is a violation in the same answer
	// as every other. Without it MaskedValue is read like any value.
	KeepSecrets bool
	Stored      *Session
}

// Parse reads a session document and checks every rule of the format at once:
// field names and types (unknown fields are rejected), ids, lengths, the DAG
// rules, ports and plugin configs. It returns a *fault.ValidationError listing
// all violations, or the session and warnings about things that are legal but
// probably unintended (a node no trigger reaches). Nothing is checked in a
// later stage: shape, ids, graph, plugin configs (with their own checks)
// and, with o.KeepSecrets, masked secrets are all in the one answer.
func Parse(data []byte, c Catalog, o ParseOptions) (Session, []string, error) {
	// A text that reads is checked whole even when it breaks a strict-JSON
	// rule (a repeated key, U+0000): those come with the rest, and a rule
	// about a place they reported already is not said again.
	root, rules, err := jsonvalue.DecodeAll(data, "")
	if err != nil {
		return Session{}, nil, invalid(jsonvalue.DocumentViolation(err))
	}
	r := &reader{}
	s := r.session(root, o)
	// The graph rules run even when the shape had errors, on whatever parsed,
	// so one answer lists every problem a user must fix.
	r.check(&s, c)
	if o.KeepSecrets {
		var vs []fault.Violation
		s, vs = s.KeepSecrets(o.Stored, c)
		r.vs = append(r.vs, vs...)
	}
	if len(rules) > 0 {
		vs := make([]fault.Violation, 0, len(rules)+len(r.vs))
		for _, e := range rules {
			vs = append(vs, e.Violation())
		}
		for _, v := range r.vs {
			if !slices.ContainsFunc(rules, func(e *jsonvalue.Error) bool { return within(v.Path, e.Path) }) {
				vs = append(vs, v)
			}
		}
		r.vs = vs
	}
	if len(r.vs) > 0 {
		return Session{}, nil, invalid(r.vs...)
	}
	return s, warnings(s, c), nil
}

// within reports whether path is place or inside it ("a.b[0]" is within
// "a.b"; "a.bc" is not).
func within(path, place string) bool {
	if place == "" || path == place {
		return true
	}
	rest, ok := strings.CutPrefix(path, place)
	return ok && (rest[0] == '.' || rest[0] == '[')
}

// DocumentID returns the sessionId a session document names, or "" when it
// names none or cannot be read (Parse then says why). A caller that must
// load the stored session before Parse (to keep its secrets) finds it by
// this id.
func DocumentID(data []byte) string {
	root, _, err := jsonvalue.DecodeAll(data, "")
	if err != nil {
		return ""
	}
	m, _ := root.(map[string]any)
	id, _ := m["sessionId"].(string)
	return id
}

func invalid(vs ...fault.Violation) error {
	return &fault.ValidationError{Subject: "session", Violations: vs}
}

type reader struct{ vs []fault.Violation }

func (r *reader) add(path, format string, args ...any) {
	r.vs = append(r.vs, fault.Violation{Path: path, Message: fmt.Sprintf(format, args...)})
}

// object checks that v is an object holding only the allowed keys.
func (r *reader) object(v any, path string, allowed ...string) map[string]any {
	m, ok := v.(map[string]any)
	if !ok {
		r.add(path, "must be an object, got %s", kind(v))
		return nil
	}
	for _, k := range slices.Sorted(maps.Keys(m)) {
		if !slices.Contains(allowed, k) {
			r.add(join(path, k), "unknown field %q; allowed fields: %s", k, strings.Join(allowed, ", "))
		}
	}
	return m
}

func (r *reader) str(m map[string]any, key, path string, required bool, max int) string {
	v, ok := m[key]
	if !ok || v == nil {
		if required {
			r.add(join(path, key), "is required")
		}
		return ""
	}
	s, ok := v.(string)
	if !ok {
		r.add(join(path, key), "must be a string, got %s", kind(v))
		return ""
	}
	if required && strings.TrimSpace(s) == "" {
		r.add(join(path, key), "must not be empty")
	}
	if n := utf8.RuneCountInString(s); n > max {
		r.add(join(path, key), "is %d characters long; the limit is %d", n, max)
	}
	return s
}

func (r *reader) id(m map[string]any, key, path, what string) string {
	s := r.str(m, key, path, true, 64)
	if s != "" && !ValidID(s) && utf8.RuneCountInString(s) <= 64 { // longer is reported by str
		r.add(join(path, key), "%s id %q must match %s (lowercase letters, digits, '-' and '_', starting with a letter or digit)", what, s, idPattern)
	}
	return s
}

func (r *reader) array(m map[string]any, key, path string, required bool, max int) []any {
	v, ok := m[key]
	if !ok || v == nil {
		if required {
			r.add(join(path, key), "is required")
		}
		return nil
	}
	a, ok := v.([]any)
	if !ok {
		r.add(join(path, key), "must be an array, got %s", kind(v))
		return nil
	}
	if len(a) > max {
		r.add(join(path, key), "has %d entries; the limit is %d", len(a), max)
		return nil
	}
	return a
}

func (r *reader) session(v any, o ParseOptions) Session {
	m := r.object(v, "", "sessionId", "name", "description", "initiator", "tags", "projectPath", "limits", "retention", "workflows")
	if m == nil {
		return Session{}
	}
	var s Session
	// One sentence per problem with the id: a sessionId that differs from
	// the URL's is reported as that, not also as a bad id (the fix is to
	// make it the URL's, or drop it).
	raw, isString := m["sessionId"].(string)
	switch {
	case o.ID == "":
		s.id = r.id(m, "sessionId", "", "session")
	case m["sessionId"] == nil:
		s.id = o.ID
		if !ValidID(o.ID) {
			r.add("sessionId", "session id %q (from the URL) must match %s (lowercase letters, digits, '-' and '_', starting with a letter or digit)", o.ID, idPattern)
		}
	case isString && raw != o.ID:
		s.id = o.ID
		r.add("sessionId", "is %q but the URL names session %q; they must match (or omit sessionId)", raw, o.ID)
	default:
		if s.id = r.id(m, "sessionId", "", "session"); s.id == "" {
			s.id = o.ID
		}
	}
	s.name = r.str(m, "name", "", true, MaxTextLen)
	s.description = r.str(m, "description", "", false, MaxTextLen)
	s.initiator = r.str(m, "initiator", "", false, MaxTextLen)
	s.projectPath = r.str(m, "projectPath", "", false, MaxPathLen)
	s.limits = r.limits(m, "")
	s.retention = r.retention(m)
	for i, t := range r.array(m, "tags", "", false, MaxTags) {
		p := fmt.Sprintf("tags[%d]", i)
		ts, ok := t.(string)
		switch {
		case !ok:
			r.add(p, "must be a string, got %s", kind(t))
		case ts == "" || utf8.RuneCountInString(ts) > 64:
			r.add(p, "must be 1 to 64 characters long")
		case slices.Contains(s.tags, ts):
			r.add(p, "repeats tag %q", ts)
		default:
			s.tags = append(s.tags, ts)
		}
	}
	wfs := r.array(m, "workflows", "", true, MaxWorkflows)
	if _, present := m["workflows"]; present && wfs != nil && len(wfs) == 0 {
		r.add("workflows", "must list at least one workflow")
	}
	seen := map[string]int{}
	for i, wv := range wfs {
		p := fmt.Sprintf("workflows[%d]", i)
		w := r.workflow(wv, p)
		if w.id != "" {
			if j, dup := seen[w.id]; dup {
				r.add(join(p, "workflowId"), "workflow id %q is already used by workflows[%d]", w.id, j)
			}
			seen[w.id] = i
		}
		s.workflows = append(s.workflows, w)
	}
	return s
}

func (r *reader) workflow(v any, path string) Workflow {
	m := r.object(v, path, "workflowId", "description", "limits", "nodes", "edges")
	if m == nil {
		return Workflow{}
	}
	w := Workflow{
		id:          r.id(m, "workflowId", path, "workflow"),
		description: r.str(m, "description", path, false, MaxDescriptionLen),
		limits:      r.limits(m, path),
	}
	label := fmt.Sprintf("workflow %q", w.id)
	nodes := r.array(m, "nodes", path, true, MaxNodes)
	if _, present := m["nodes"]; present && nodes != nil && len(nodes) == 0 {
		r.add(join(path, "nodes"), "%s has no nodes; it needs at least one trigger", label)
	}
	seen := map[string]int{}
	for i, nv := range nodes {
		p := fmt.Sprintf("%s.nodes[%d]", path, i)
		n := r.node(nv, p)
		if n.id != "" {
			if j, dup := seen[n.id]; dup {
				r.add(join(p, "nodeId"), "node id %q is already used by %s.nodes[%d]", n.id, path, j)
			}
			seen[n.id] = i
		}
		w.nodes = append(w.nodes, n)
	}
	for i, ev := range r.array(m, "edges", path, false, MaxEdges) {
		w.edges = append(w.edges, r.edge(ev, fmt.Sprintf("%s.edges[%d]", path, i)))
	}
	return w
}

// limits reads the optional "limits" object of a session or a workflow:
// {"maxRunning": n}, n a whole number from 0 (no bound) to
// MaxRunningLimit.
func (r *reader) limits(m map[string]any, path string) Limits {
	v, ok := m["limits"]
	if !ok || v == nil {
		return Limits{}
	}
	p := join(path, "limits")
	lm := r.object(v, p, "maxRunning")
	if lm == nil {
		return Limits{}
	}
	var l Limits
	if mv, ok := lm["maxRunning"]; ok && mv != nil {
		n, isNum := mv.(json.Number)
		f, err := n.Float64()
		switch {
		case !isNum:
			r.add(join(p, "maxRunning"), "must be a number, got %s", kind(mv))
		case err != nil || f != math.Trunc(f) || f < 0 || f > MaxRunningLimit:
			r.add(join(p, "maxRunning"), "is %s; it must be a whole number from 0 (no limit) to %d", n, MaxRunningLimit)
		default:
			l.MaxRunning = int(f)
		}
	}
	return l
}

// retention reads the optional "retention" object of a session:
// {"days": n, "journals": "keep"|"delete"}, each part optional (left out, it
// inherits the server's policy). retention.NewOverride holds the rules.
func (r *reader) retention(m map[string]any) retention.Override {
	v, ok := m["retention"]
	if !ok || v == nil {
		return retention.Override{}
	}
	rm := r.object(v, "retention", "days", "journals")
	if rm == nil {
		return retention.Override{}
	}
	var days *int
	if dv, ok := rm["days"]; ok && dv != nil {
		n, isNum := dv.(json.Number)
		f, err := n.Float64()
		switch {
		case !isNum:
			r.add("retention.days", "must be a number, got %s", kind(dv))
			return retention.Override{}
		case err != nil || f != math.Trunc(f) || f < 0 || f > retention.MaxDays:
			r.add("retention.days", "is %s; it must be a whole number of days from 0 (keep this session's runs forever) to %d", n, retention.MaxDays)
			return retention.Override{}
		}
		d := int(f)
		days = &d
	}
	journals := ""
	if jv, ok := rm["journals"]; ok && jv != nil {
		js, isStr := jv.(string)
		if !isStr {
			r.add("retention.journals", "must be a string, got %s", kind(jv))
			return retention.Override{}
		}
		if js == "" {
			r.add("retention.journals", "is empty; use keep or delete, or leave it out to inherit the server's YUKTA_RETENTION_JOURNALS")
			return retention.Override{}
		}
		journals = js
	}
	o, err := retention.NewOverride(days, journals)
	var ve *fault.ValidationError
	if errors.As(err, &ve) {
		for _, v := range ve.Violations {
			r.add(join("retention", v.Path), "%s", v.Message)
		}
		return retention.Override{}
	}
	return o
}

func (r *reader) node(v any, path string) Node {
	m := r.object(v, path, "nodeId", "type", "name", "config")
	if m == nil {
		return Node{}
	}
	n := Node{
		id:   r.id(m, "nodeId", path, "node"),
		typ:  r.str(m, "type", path, true, 64),
		name: r.str(m, "name", path, false, MaxTextLen),
	}
	switch cv := m["config"].(type) {
	case nil:
		n.config = map[string]any{}
	case map[string]any:
		n.config = cv
	default:
		r.add(join(path, "config"), "node %q: config must be an object, got %s", n.id, kind(cv))
	}
	return n
}

func (r *reader) edge(v any, path string) Edge {
	m := r.object(v, path, "source", "target", "sourcePort")
	if m == nil {
		return Edge{}
	}
	e := Edge{
		source:     r.str(m, "source", path, true, 64),
		target:     r.str(m, "target", path, true, 64),
		sourcePort: r.str(m, "sourcePort", path, false, 64),
	}
	if e.sourcePort == "" {
		e.sourcePort = plugin.DefaultPort
	}
	return e
}

// check applies the rules that need the whole document and the catalog.
func (r *reader) check(s *Session, c Catalog) {
	for wi, w := range s.workflows {
		r.checkWorkflow(fmt.Sprintf("workflows[%d]", wi), w, c)
	}
}

func (r *reader) checkWorkflow(path string, w Workflow, c Catalog) {
	index := map[string]int{}
	descs := map[string]plugin.Descriptor{}
	ports := map[string][]string{} // only for nodes whose config is valid
	triggers := 0
	if len(w.nodes) == 0 {
		return // nodes missing, empty, not a list or over the limit: already reported
	}
	untyped := false // a node whose type could not be read, or is unknown, may be the trigger
	for i, n := range w.nodes {
		if n.id != "" { // a node without an id is already reported; no edge can name it
			index[n.id] = i
		}
		p := fmt.Sprintf("%s.nodes[%d]", path, i)
		if n.typ == "" {
			untyped = true
			continue // already reported as missing
		}
		d, ok := c.Describe(n.typ)
		if !ok {
			r.add(join(p, "type"), "node %q: unknown plugin type %q; call GET /api/plugins (MCP: list_plugins) for the available types", n.id, n.typ)
			untyped = true // the type meant may be the trigger
			continue
		}
		descs[n.id] = d
		if d.Category == plugin.Trigger {
			triggers++
		}
		if n.config == nil {
			continue // config was not an object; already reported
		}
		vs := d.Validate(n.config)
		for _, v := range vs {
			r.add(join(join(p, "config"), v.Path), "node %q (%s): config field %q %s", n.id, n.typ, v.Path, v.Message)
		}
		if len(vs) == 0 {
			ports[n.id] = d.Ports(d.WithDefaults(n.config))
		}
	}
	if triggers == 0 && !untyped {
		r.add(join(path, "nodes"), "workflow %q has no trigger node; add one (MANUAL, WEBHOOK, SCHEDULE or SUPERVISOR_SIGNAL) to start its runs", w.id)
	}

	type pair struct{ s, t, p string }
	seen := map[pair]int{}
	adj := map[string][]string{}
	for i, e := range w.edges {
		p := fmt.Sprintf("%s.edges[%d]", path, i)
		label := fmt.Sprintf("edge %q -> %q", e.source, e.target)
		_, srcOK := index[e.source]
		_, dstOK := index[e.target]
		if e.source != "" && !srcOK {
			r.add(join(p, "source"), "%s: source node %q does not exist in workflow %q", label, e.source, w.id)
		}
		if e.target != "" && !dstOK {
			r.add(join(p, "target"), "%s: target node %q does not exist in workflow %q", label, e.target, w.id)
		}
		if !srcOK || !dstOK {
			continue
		}
		k := pair{e.source, e.target, e.sourcePort}
		if j, dup := seen[k]; dup {
			r.add(p, "%s on port %q repeats %s.edges[%d]", label, e.sourcePort, path, j)
			continue
		}
		seen[k] = i
		if d, ok := descs[e.source]; ok {
			switch d.Category {
			case plugin.Terminal:
				r.add(join(p, "source"), "%s: node %q is a terminal (%s) and cannot have outbound edges", label, e.source, d.Type)
			default:
				if ps, ok := ports[e.source]; ok && !slices.Contains(ps, e.sourcePort) {
					r.add(join(p, "sourcePort"), "%s: node %q (%s) has no port %q with this config; its ports are: %s", label, e.source, d.Type, e.sourcePort, strings.Join(ps, ", "))
				}
			}
		}
		if d, ok := descs[e.target]; ok && d.Category == plugin.Trigger {
			r.add(join(p, "target"), "%s: node %q is a trigger (%s) and cannot have inbound edges", label, e.target, d.Type)
		}
		adj[e.source] = append(adj[e.source], e.target)
	}
	for _, cyc := range cycles(w.nodes, adj) {
		r.add(join(path, "edges"), "workflow %q has a cycle: %s; workflows must be acyclic", w.id, strings.Join(cyc, " -> "))
	}
}

// cycles returns one closed path per cycle found by a depth-first search, in
// node order, each as the list of ids with the first repeated at the end.
func cycles(nodes []Node, adj map[string][]string) [][]string {
	const (
		white = iota
		grey
		black
	)
	color := map[string]int{}
	var stack []string
	var out [][]string
	var visit func(string)
	visit = func(n string) {
		color[n] = grey
		stack = append(stack, n)
		for _, m := range adj[n] {
			switch color[m] {
			case white:
				visit(m)
			case grey:
				i := slices.Index(stack, m)
				out = append(out, append(slices.Clone(stack[i:]), m))
			}
		}
		stack = stack[:len(stack)-1]
		color[n] = black
	}
	for _, n := range nodes {
		if color[n.id] == white {
			visit(n.id)
		}
	}
	return out
}

// warnings lists legal but suspicious shapes.
func warnings(s Session, c Catalog) []string {
	out := []string{}
	for _, w := range s.workflows {
		if sm, wm := s.limits.MaxRunning, w.limits.MaxRunning; sm > 0 && wm > sm {
			out = append(out, fmt.Sprintf("workflow %q: limits.maxRunning %d is above the session's %d, so the session's limit is the one that holds", w.id, wm, sm))
		}
		reached := map[string]bool{}
		var queue []string
		for _, n := range w.nodes {
			if d, _ := c.Describe(n.typ); d.Category == plugin.Trigger {
				reached[n.id] = true
				queue = append(queue, n.id)
			}
		}
		for len(queue) > 0 {
			n := queue[0]
			queue = queue[1:]
			for _, e := range w.edges {
				if e.source == n && !reached[e.target] {
					reached[e.target] = true
					queue = append(queue, e.target)
				}
			}
		}
		for _, n := range w.nodes {
			if !reached[n.id] {
				out = append(out, fmt.Sprintf("workflow %q: node %q is not reachable from any trigger and will never run", w.id, n.id))
			}
		}
	}
	return out
}

func join(path, key string) string {
	if path == "" {
		return key
	}
	if key == "" {
		return path
	}
	return path + "." + key
}

func kind(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case string:
		return "a string"
	case bool:
		return "a boolean"
	case json.Number:
		return "a number"
	case map[string]any:
		return "an object"
	case []any:
		return "an array"
	}
	return fmt.Sprintf("%T", v)
}
