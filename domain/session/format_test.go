package session_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/yukta/yukta/domain/fault"
	"github.com/yukta/yukta/domain/plugin"
	"github.com/yukta/yukta/domain/session"
)

type (
	obj = map[string]any
	arr = []any
)

// baseDoc is a valid session: start(MANUAL) -> route(ROUTER) -big-> call(CALL)
// -> done(RESULT), and route -default-> done. Every rule case edits a fresh
// copy of it.
func baseDoc() obj {
	return obj{
		"sessionId":   "s1",
		"name":        "Orders",
		"description": "order intake",
		"initiator":   "ann",
		"tags":        arr{"a", "b"},
		"projectPath": "/srv/orders",
		"workflows": arr{obj{
			"workflowId":  "wf",
			"description": "routes orders",
			"nodes": arr{
				obj{"nodeId": "start", "type": "MANUAL"},
				obj{"nodeId": "route", "type": "ROUTER", "name": "Route", "config": obj{"routes": arr{obj{"port": "big"}}}},
				obj{"nodeId": "call", "type": "CALL", "config": obj{"url": "https://example.com/hook", "token": "t0k"}},
				obj{"nodeId": "done", "type": "RESULT"},
			},
			"edges": arr{
				obj{"source": "start", "target": "route"},
				obj{"source": "route", "target": "call", "sourcePort": "big"},
				obj{"source": "route", "target": "done"},
				obj{"source": "call", "target": "done"},
			},
		}},
	}
}

// edit changes a document in place.
type edit func(d obj)

func edits(es ...edit) edit {
	return func(d obj) {
		for _, e := range es {
			e(d)
		}
	}
}

// walk follows a dotted path ("workflows.0.nodes.1") and returns the value.
func walk(v any, path string) any {
	if path == "" {
		return v
	}
	for _, k := range strings.Split(path, ".") {
		switch c := v.(type) {
		case obj:
			v = c[k]
		case arr:
			i, err := strconv.Atoi(k)
			if err != nil {
				panic("bad index " + k + " in " + path)
			}
			v = c[i]
		default:
			panic("cannot walk " + path)
		}
	}
	return v
}

func splitLast(path string) (string, string) {
	i := strings.LastIndex(path, ".")
	if i < 0 {
		return "", path
	}
	return path[:i], path[i+1:]
}

// set stores v at path, creating nothing: the parent must exist.
func set(path string, v any) edit {
	return func(d obj) {
		parent, key := splitLast(path)
		switch c := walk(d, parent).(type) {
		case obj:
			c[key] = v
		case arr:
			i, _ := strconv.Atoi(key)
			c[i] = v
		default:
			panic("cannot set " + path)
		}
	}
}

// del removes the member at path.
func del(path string) edit {
	return func(d obj) {
		parent, key := splitLast(path)
		delete(walk(d, parent).(obj), key)
	}
}

// add appends vs to the array at path.
func add(path string, vs ...any) edit {
	return func(d obj) {
		a, _ := walk(d, path).(arr)
		set(path, append(slices.Clone(a), vs...))(d)
	}
}

func node(id, typ string) obj { return obj{"nodeId": id, "type": typ} }

func edge(source, target string) obj { return obj{"source": source, "target": target} }

func portEdge(source, target, port string) obj {
	return obj{"source": source, "target": target, "sourcePort": port}
}

func docWith(e edit) obj {
	d := baseDoc()
	if e != nil {
		e(d)
	}
	return d
}

func encode(t testing.TB, d any) []byte {
	t.Helper()
	b, err := json.Marshal(d)
	if err != nil {
		t.Fatalf("marshal test document: %v", err)
	}
	return b
}

// want is one expected violation: its exact path and substrings of its message.
type want struct {
	path string
	msg  []string
}

// violations returns the violations of err, which must be a
// *fault.ValidationError matching fault.ErrInvalid.
func violations(t *testing.T, err error) []fault.Violation {
	t.Helper()
	if err == nil {
		t.Fatalf("Parse: got no error, want a validation error")
	}
	if !errors.Is(err, fault.ErrInvalid) {
		t.Errorf("errors.Is(err, fault.ErrInvalid): got false, want true (err %v)", err)
	}
	var ve *fault.ValidationError
	if !errors.As(err, &ve) {
		t.Fatalf("Parse error: got %T (%v), want *fault.ValidationError", err, err)
	}
	if ve.Subject != "session" {
		t.Errorf("Subject: got %q, want %q", ve.Subject, "session")
	}
	return ve.Violations
}

func checkViolations(t *testing.T, err error, wants []want) {
	t.Helper()
	vs := violations(t, err)
	if len(vs) != len(wants) {
		t.Fatalf("got %d violations %s, want %d", len(vs), describe(vs), len(wants))
	}
	for i, w := range wants {
		if vs[i].Path != w.path {
			t.Errorf("violation %d path: got %q, want %q (message %q)", i, vs[i].Path, w.path, vs[i].Message)
		}
		for _, m := range w.msg {
			if !strings.Contains(vs[i].Message, m) {
				t.Errorf("violation %d message: got %q, want it to contain %q", i, vs[i].Message, m)
			}
		}
	}
}

func describe(vs []fault.Violation) string {
	parts := make([]string, len(vs))
	for i, v := range vs {
		parts[i] = fmt.Sprintf("[%s: %s]", v.Path, v.Message)
	}
	return strings.Join(parts, " ")
}

func mustParse(t *testing.T, data []byte, o session.ParseOptions) (session.Session, []string) {
	t.Helper()
	s, warns, err := session.Parse(data, catalog, o)
	if err != nil {
		t.Fatalf("Parse valid document: got %v, want no error", err)
	}
	return s, warns
}

func TestParseBaseDocument(t *testing.T) {
	t.Parallel()
	s, warns := mustParse(t, encode(t, baseDoc()), session.ParseOptions{})
	if len(warns) != 0 {
		t.Errorf("warnings: got %q, want none", warns)
	}
	if got, want := s.ID(), "s1"; got != want {
		t.Errorf("ID: got %q, want %q", got, want)
	}
	if got, want := s.Name(), "Orders"; got != want {
		t.Errorf("Name: got %q, want %q", got, want)
	}
	if got, want := s.Description(), "order intake"; got != want {
		t.Errorf("Description: got %q, want %q", got, want)
	}
	if got, want := s.Initiator(), "ann"; got != want {
		t.Errorf("Initiator: got %q, want %q", got, want)
	}
	if got, want := s.ProjectPath(), "/srv/orders"; got != want {
		t.Errorf("ProjectPath: got %q, want %q", got, want)
	}
	if got, want := s.Tags(), []string{"a", "b"}; !slices.Equal(got, want) {
		t.Errorf("Tags: got %q, want %q", got, want)
	}
	if got, want := s.WorkflowIDs(), []string{"wf"}; !slices.Equal(got, want) {
		t.Errorf("WorkflowIDs: got %q, want %q", got, want)
	}
	w, ok := s.Workflow("wf")
	if !ok {
		t.Fatalf("Workflow(wf): got not found, want found")
	}
	if got, want := w.Description(), "routes orders"; got != want {
		t.Errorf("workflow Description: got %q, want %q", got, want)
	}
	var ids []string
	for _, n := range w.Nodes() {
		ids = append(ids, n.ID()+":"+n.Type())
	}
	if want := []string{"start:MANUAL", "route:ROUTER", "call:CALL", "done:RESULT"}; !slices.Equal(ids, want) {
		t.Errorf("nodes: got %q, want %q", ids, want)
	}
	if n, _ := w.Node("route"); n.Name() != "Route" {
		t.Errorf("node route Name: got %q, want %q", n.Name(), "Route")
	}
	var es []string
	for _, e := range w.Edges() {
		es = append(es, e.Source()+"-"+e.SourcePort()+"->"+e.Target())
	}
	want := []string{"start-default->route", "route-big->call", "route-default->done", "call-default->done"}
	if !slices.Equal(es, want) {
		t.Errorf("edges: got %q, want %q", es, want)
	}
	if _, ok := s.Workflow("nope"); ok {
		t.Errorf("Workflow(nope): got found, want not found")
	}
	if _, ok := w.Node("nope"); ok {
		t.Errorf("Node(nope): got found, want not found")
	}
}

// ruleCase is one rule of DESIGN §3: bad breaks it, good is the nearest
// document that keeps it (nil means the base document), and want lists
// every violation bad must produce, in order.
type ruleCase struct {
	name string
	opts session.ParseOptions
	bad  edit
	good edit
	want []want
}

func runRuleCases(t *testing.T, cases []ruleCase) {
	t.Helper()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			_, _, err := session.Parse(encode(t, docWith(tc.bad)), catalog, tc.opts)
			checkViolations(t, err, tc.want)
			if _, _, err := session.Parse(encode(t, docWith(tc.good)), catalog, tc.opts); err != nil {
				t.Errorf("valid variant: got %v, want no error", err)
			}
		})
	}
}

func TestParseSessionFields(t *testing.T) {
	t.Parallel()
	long := func(n int) string { return strings.Repeat("x", n) }
	runRuleCases(t, []ruleCase{
		{
			name: "sessionId with capitals and underscore start",
			bad:  set("sessionId", "Bad_Id"),
			good: set("sessionId", "bad_id"),
			want: []want{{"sessionId", []string{`session id "Bad_Id"`, "must match"}}},
		},
		{
			name: "sessionId starting with a dash",
			bad:  set("sessionId", "-s"),
			good: set("sessionId", "s-"),
			want: []want{{"sessionId", []string{`"-s"`, "must match"}}},
		},
		{
			name: "sessionId longer than 64",
			bad:  set("sessionId", strings.Repeat("a", 65)),
			good: set("sessionId", strings.Repeat("a", 64)),
			want: []want{{"sessionId", []string{"65 characters", "limit is 64"}}},
		},
		{
			name: "sessionId of 40 two-byte characters",
			bad:  set("sessionId", strings.Repeat("é", 40)),
			good: set("sessionId", strings.Repeat("e", 40)),
			want: []want{{"sessionId", []string{"session id", "must match"}}},
		},
		{
			name: "sessionId of 65 two-byte characters",
			bad:  set("sessionId", strings.Repeat("é", 65)),
			good: set("sessionId", strings.Repeat("e", 64)),
			want: []want{{"sessionId", []string{"65 characters", "limit is 64"}}},
		},
		{
			name: "sessionId missing without a URL id",
			bad:  del("sessionId"),
			want: []want{{"sessionId", []string{"is required"}}},
		},
		{
			name: "sessionId empty",
			bad:  set("sessionId", ""),
			want: []want{{"sessionId", []string{"must not be empty"}}},
		},
		{
			name: "sessionId differs from the URL id",
			opts: session.ParseOptions{ID: "other"},
			bad:  set("sessionId", "s1"),
			good: set("sessionId", "other"),
			want: []want{{"sessionId", []string{`"s1"`, `"other"`, "must match"}}},
		},
		{
			name: "name missing",
			bad:  del("name"),
			want: []want{{"name", []string{"is required"}}},
		},
		{
			name: "name blank",
			bad:  set("name", "  \t "),
			good: set("name", " x "),
			want: []want{{"name", []string{"must not be empty"}}},
		},
		{
			name: "name longer than 256",
			bad:  set("name", long(257)),
			good: set("name", long(256)),
			want: []want{{"name", []string{"257 characters", "limit is 256"}}},
		},
		{
			name: "description longer than 256",
			bad:  set("description", long(257)),
			good: set("description", long(256)),
			want: []want{{"description", []string{"257 characters", "limit is 256"}}},
		},
		{
			name: "initiator longer than 256",
			bad:  set("initiator", long(257)),
			good: set("initiator", long(256)),
			want: []want{{"initiator", []string{"257 characters", "limit is 256"}}},
		},
		{
			name: "projectPath longer than MaxPathLen",
			bad:  set("projectPath", long(session.MaxPathLen+1)),
			good: set("projectPath", long(session.MaxPathLen)),
			want: []want{{"projectPath", []string{fmt.Sprint(session.MaxPathLen + 1), fmt.Sprintf("limit is %d", session.MaxPathLen)}}},
		},
		{
			name: "workflow description longer than MaxDescriptionLen",
			bad:  set("workflows.0.description", long(session.MaxDescriptionLen+1)),
			good: set("workflows.0.description", long(session.MaxDescriptionLen)),
			want: []want{{"workflows[0].description", []string{fmt.Sprintf("limit is %d", session.MaxDescriptionLen)}}},
		},
		{
			name: "node name longer than 256",
			bad:  set("workflows.0.nodes.0.name", long(257)),
			good: set("workflows.0.nodes.0.name", long(256)),
			want: []want{{"workflows[0].nodes[0].name", []string{"257 characters"}}},
		},
		{
			name: "tags repeated",
			bad:  set("tags", arr{"a", "a"}),
			good: set("tags", arr{"a", "A"}),
			want: []want{{"tags[1]", []string{`repeats tag "a"`}}},
		},
		{
			name: "too many tags",
			bad:  set("tags", manyTags(session.MaxTags+1)),
			good: set("tags", manyTags(session.MaxTags)),
			want: []want{{"tags", []string{fmt.Sprintf("%d entries", session.MaxTags+1), fmt.Sprintf("limit is %d", session.MaxTags)}}},
		},
		{
			name: "tag longer than 64",
			bad:  set("tags", arr{long(65)}),
			good: set("tags", arr{long(64)}),
			want: []want{{"tags[0]", []string{"1 to 64 characters"}}},
		},
		{
			name: "tag empty",
			bad:  set("tags", arr{"a", ""}),
			good: set("tags", arr{"a"}),
			want: []want{{"tags[1]", []string{"1 to 64 characters"}}},
		},
		{
			name: "tag not a string",
			bad:  set("tags", arr{"a", 7}),
			good: set("tags", arr{"a", "7"}),
			want: []want{{"tags[1]", []string{"must be a string, got a number"}}},
		},
	})
}

func manyTags(n int) arr {
	out := make(arr, n)
	for i := range out {
		out[i] = fmt.Sprintf("t%d", i)
	}
	return out
}

func TestParseUnknownFields(t *testing.T) {
	t.Parallel()
	runRuleCases(t, []ruleCase{
		{
			name: "session",
			bad:  set("owner", "ann"),
			want: []want{{"owner", []string{`unknown field "owner"`, "sessionId", "workflows"}}},
		},
		{
			name: "workflow",
			bad:  set("workflows.0.timeout", "1s"),
			want: []want{{"workflows[0].timeout", []string{`unknown field "timeout"`, "workflowId", "edges"}}},
		},
		{
			name: "node",
			bad:  set("workflows.0.nodes.1.ports", arr{"x"}),
			want: []want{{"workflows[0].nodes[1].ports", []string{`unknown field "ports"`, "nodeId", "config"}}},
		},
		{
			name: "edge",
			bad:  set("workflows.0.edges.2.port", "default"),
			good: set("workflows.0.edges.2.sourcePort", "default"),
			want: []want{{"workflows[0].edges[2].port", []string{`unknown field "port"`, "sourcePort"}}},
		},
		{
			name: "field names are case sensitive",
			bad:  edits(del("sessionId"), set("sessionID", "s1")),
			want: []want{
				{"sessionID", []string{`unknown field "sessionID"`}},
				{"sessionId", []string{"is required"}},
			},
		},
	})
}

func TestParseWrongJSONTypes(t *testing.T) {
	t.Parallel()
	runRuleCases(t, []ruleCase{
		{
			name: "name is a number",
			bad:  set("name", 42),
			want: []want{{"name", []string{"must be a string, got a number"}}},
		},
		{
			name: "name is null",
			bad:  set("name", nil),
			want: []want{{"name", []string{"is required"}}},
		},
		{
			name: "sessionId is a boolean",
			bad:  set("sessionId", true),
			want: []want{{"sessionId", []string{"must be a string, got a boolean"}}},
		},
		{
			name: "tags is a string",
			bad:  set("tags", "a,b"),
			want: []want{{"tags", []string{"must be an array, got a string"}}},
		},
		{
			name: "workflows is an object",
			bad:  set("workflows", obj{}),
			want: []want{{"workflows", []string{"must be an array, got an object"}}},
		},
		{
			name: "workflow is a string",
			bad:  set("workflows.0", "wf"),
			want: []want{{"workflows[0]", []string{"must be an object, got a string"}}},
		},
		{
			name: "workflowId is a number",
			bad:  set("workflows.0.workflowId", 3),
			want: []want{{"workflows[0].workflowId", []string{"must be a string, got a number"}}},
		},
		{
			name: "nodes is a string",
			bad:  set("workflows.0.nodes", "start"),
			want: []want{{"workflows[0].nodes", []string{"must be an array, got a string"}}},
		},
		{
			name: "node is a boolean",
			bad:  edits(add("workflows.0.nodes", true)),
			want: []want{{"workflows[0].nodes[4]", []string{"must be an object, got a boolean"}}},
		},
		{
			name: "node config is an array",
			bad:  set("workflows.0.nodes.1.config", arr{}),
			want: []want{{"workflows[0].nodes[1].config", []string{`node "route"`, "config must be an object, got an array"}}},
		},
		{
			name: "node type is a number",
			bad:  set("workflows.0.nodes.3.type", 1),
			want: []want{{"workflows[0].nodes[3].type", []string{"must be a string, got a number"}}},
		},
		{
			name: "edges is an object",
			bad:  set("workflows.0.edges", obj{}),
			good: set("workflows.0.edges", arr{}),
			want: []want{{"workflows[0].edges", []string{"must be an array, got an object"}}},
		},
		{
			name: "edge is null",
			bad:  add("workflows.0.edges", nil),
			want: []want{{"workflows[0].edges[4]", []string{"must be an object, got null"}}},
		},
		{
			name: "edge sourcePort is a number",
			bad:  set("workflows.0.edges.1.sourcePort", 7),
			want: []want{{"workflows[0].edges[1].sourcePort", []string{"must be a string, got a number"}}},
		},
		{
			name: "edge target is null",
			bad:  set("workflows.0.edges.1.target", nil),
			want: []want{{"workflows[0].edges[1].target", []string{"is required"}}},
		},
	})
}

func TestParseWorkflowsAndIDs(t *testing.T) {
	t.Parallel()
	runRuleCases(t, []ruleCase{
		{
			name: "workflows empty",
			bad:  set("workflows", arr{}),
			want: []want{{"workflows", []string{"at least one workflow"}}},
		},
		{
			name: "workflows missing",
			bad:  del("workflows"),
			want: []want{{"workflows", []string{"is required"}}},
		},
		{
			name: "workflows null",
			bad:  set("workflows", nil),
			want: []want{{"workflows", []string{"is required"}}},
		},
		{
			name: "duplicate workflow id",
			bad:  add("workflows", walk(baseDoc(), "workflows.0")),
			good: add("workflows", docWith(set("workflows.0.workflowId", "wf2"))["workflows"].(arr)[0]),
			want: []want{{"workflows[1].workflowId", []string{`workflow id "wf"`, "workflows[0]"}}},
		},
		{
			name: "workflow id pattern",
			bad:  set("workflows.0.workflowId", "WF 1"),
			good: set("workflows.0.workflowId", "wf-1"),
			want: []want{{"workflows[0].workflowId", []string{`workflow id "WF 1"`, "must match"}}},
		},
		{
			name: "workflow id missing",
			bad:  del("workflows.0.workflowId"),
			want: []want{{"workflows[0].workflowId", []string{"is required"}}},
		},
		{
			name: "nodes empty",
			bad:  edits(set("workflows.0.nodes", arr{}), set("workflows.0.edges", arr{})),
			good: edits(set("workflows.0.nodes", arr{node("start", "MANUAL")}), set("workflows.0.edges", arr{})),
			want: []want{{"workflows[0].nodes", []string{`workflow "wf" has no nodes`, "trigger"}}},
		},
		{
			name: "nodes missing",
			bad:  edits(del("workflows.0.nodes"), del("workflows.0.edges")),
			good: del("workflows.0.edges"),
			want: []want{{"workflows[0].nodes", []string{"is required"}}},
		},
		{
			name: "duplicate node id",
			bad:  add("workflows.0.nodes", node("done", "RESULT")),
			good: add("workflows.0.nodes", node("done2", "RESULT")),
			want: []want{{"workflows[0].nodes[4].nodeId", []string{`node id "done"`, "workflows[0].nodes[3]"}}},
		},
		{
			name: "node id pattern",
			bad:  add("workflows.0.nodes", node("Bad Id", "PASS")),
			good: add("workflows.0.nodes", node("bad-id", "PASS")),
			want: []want{{"workflows[0].nodes[4].nodeId", []string{`node id "Bad Id"`, "must match"}}},
		},
		{
			name: "node id missing",
			bad:  add("workflows.0.nodes", obj{"type": "PASS"}),
			good: add("workflows.0.nodes", node("p", "PASS")),
			want: []want{{"workflows[0].nodes[4].nodeId", []string{"is required"}}},
		},
		{
			name: "unknown plugin type",
			bad:  set("workflows.0.nodes.3.type", "NOPE"),
			want: []want{{"workflows[0].nodes[3].type", []string{`node "done"`, `unknown plugin type "NOPE"`}}},
		},
		{
			name: "plugin type is case sensitive",
			bad:  set("workflows.0.nodes.3.type", "result"),
			want: []want{{"workflows[0].nodes[3].type", []string{`node "done"`, `unknown plugin type "result"`}}},
		},
		{
			name: "node type missing",
			bad:  del("workflows.0.nodes.3.type"),
			want: []want{{"workflows[0].nodes[3].type", []string{"is required"}}},
		},
	})
}

func TestParseSessionIDFromURL(t *testing.T) {
	t.Parallel()
	t.Run("omitted id takes the URL id", func(t *testing.T) {
		t.Parallel()
		s, _ := mustParse(t, encode(t, docWith(del("sessionId"))), session.ParseOptions{ID: "from-url"})
		if got, want := s.ID(), "from-url"; got != want {
			t.Errorf("ID: got %q, want %q", got, want)
		}
	})
	t.Run("equal ids", func(t *testing.T) {
		t.Parallel()
		s, _ := mustParse(t, encode(t, baseDoc()), session.ParseOptions{ID: "s1"})
		if got, want := s.ID(), "s1"; got != want {
			t.Errorf("ID: got %q, want %q", got, want)
		}
	})
	t.Run("omitted id and a URL id that breaks the pattern", func(t *testing.T) {
		t.Parallel()
		_, _, err := session.Parse(encode(t, docWith(del("sessionId"))), catalog, session.ParseOptions{ID: "Bad!"})
		checkViolations(t, err, []want{{"sessionId", []string{`"Bad!"`, "must match"}}})
	})
	t.Run("document id breaks the pattern and differs from the URL", func(t *testing.T) {
		t.Parallel()
		_, _, err := session.Parse(encode(t, docWith(set("sessionId", "Bad!"))), catalog, session.ParseOptions{ID: "s1"})
		// One sentence: the fix is the URL's id (or none), so the pattern
		// the document's id breaks is a consequence, not a second problem.
		checkViolations(t, err, []want{{"sessionId", []string{`is "Bad!" but the URL names session "s1"`}}})
	})
	t.Run("a bad id in the document and the URL hides nothing", func(t *testing.T) {
		t.Parallel()
		doc := docWith(edits(set("sessionId", "Bad Id"), set("name", ""), set("workflows.0.nodes.3.type", "NOPE")))
		_, _, err := session.Parse(encode(t, doc), catalog, session.ParseOptions{ID: "Bad Id"})
		checkViolations(t, err, []want{
			{"sessionId", []string{`session id "Bad Id" must match`}},
			{"name", []string{"must not be empty"}},
			{"workflows[0].nodes[3].type", []string{`unknown plugin type "NOPE"`}},
		})
	})
}

// Lengths are in characters, as DESIGN §3 and the OpenAPI maxLength say,
// not in UTF-8 bytes.
func TestParseLengthsCountCharacters(t *testing.T) {
	t.Parallel()
	runRuleCases(t, []ruleCase{
		{
			name: "name of 257 two-byte characters",
			bad:  set("name", strings.Repeat("é", 257)),
			good: set("name", strings.Repeat("é", 256)),
			want: []want{{"name", []string{"257 characters", "limit is 256"}}},
		},
		{
			name: "description of 257 three-byte characters",
			bad:  set("description", strings.Repeat("目", 257)),
			good: set("description", strings.Repeat("目", 256)),
			want: []want{{"description", []string{"257 characters"}}},
		},
		{
			name: "tag of 65 four-byte characters",
			bad:  set("tags", arr{strings.Repeat("🙂", 65)}),
			good: set("tags", arr{strings.Repeat("🙂", 64)}),
			want: []want{{"tags[0]", []string{"1 to 64 characters"}}},
		},
	})
}

func TestParseEdges(t *testing.T) {
	t.Parallel()
	runRuleCases(t, []ruleCase{
		{
			name: "target node missing",
			bad:  set("workflows.0.edges.0.target", "ghost"),
			want: []want{{"workflows[0].edges[0].target", []string{`edge "start" -> "ghost"`, `target node "ghost" does not exist`, `workflow "wf"`}}},
		},
		{
			name: "source node missing",
			bad:  set("workflows.0.edges.3.source", "ghost"),
			want: []want{{"workflows[0].edges[3].source", []string{`edge "ghost" -> "done"`, `source node "ghost" does not exist`}}},
		},
		{
			name: "both ends missing",
			bad:  add("workflows.0.edges", edge("x", "y")),
			want: []want{
				{"workflows[0].edges[4].source", []string{`edge "x" -> "y"`, `source node "x"`}},
				{"workflows[0].edges[4].target", []string{`edge "x" -> "y"`, `target node "y"`}},
			},
		},
		{
			name: "edge to a node of another workflow",
			bad: edits(
				add("workflows", obj{"workflowId": "other", "nodes": arr{node("elsewhere", "MANUAL")}}),
				add("workflows.0.edges", edge("route", "elsewhere")),
			),
			good: add("workflows", obj{"workflowId": "other", "nodes": arr{node("elsewhere", "MANUAL")}}),
			want: []want{{"workflows[0].edges[4].target", []string{`target node "elsewhere"`, `workflow "wf"`}}},
		},
		{
			name: "duplicate edge, implicit and explicit default port",
			bad:  add("workflows.0.edges", portEdge("start", "route", "default")),
			good: add("workflows.0.edges", edge("start", "call")),
			want: []want{{"workflows[0].edges[4]", []string{`edge "start" -> "route"`, `port "default"`, "repeats workflows[0].edges[0]"}}},
		},
		{
			name: "same pair on two ports is not a duplicate",
			bad:  add("workflows.0.edges", portEdge("call", "done", "default")),
			good: add("workflows.0.edges", portEdge("call", "done", "error")),
			want: []want{{"workflows[0].edges[4]", []string{`edge "call" -> "done"`, "repeats workflows[0].edges[3]"}}},
		},
		{
			name: "trigger with an inbound edge",
			bad:  edits(add("workflows.0.nodes", node("t2", "MANUAL")), add("workflows.0.edges", edge("route", "t2"))),
			good: edits(add("workflows.0.nodes", node("t2", "MANUAL")), add("workflows.0.edges", edge("t2", "call"))),
			want: []want{{"workflows[0].edges[4].target", []string{`edge "route" -> "t2"`, `node "t2" is a trigger`, "MANUAL"}}},
		},
		{
			name: "terminal with an outbound edge",
			bad:  edits(add("workflows.0.nodes", node("after", "PASS")), add("workflows.0.edges", edge("done", "after"))),
			good: edits(add("workflows.0.nodes", node("after", "PASS")), add("workflows.0.edges", edge("route", "after"))),
			want: []want{{"workflows[0].edges[4].source", []string{`edge "done" -> "after"`, `node "done" is a terminal`, "RESULT"}}},
		},
		{
			name: "no trigger",
			bad:  set("workflows.0.nodes.0.type", "PASS"),
			want: []want{{"workflows[0].nodes", []string{`workflow "wf" has no trigger`}}},
		},
	})
}

func TestParseCycles(t *testing.T) {
	t.Parallel()
	// withPass adds PASS nodes p1..pn fed by start and the given edges.
	withPass := func(n int, es ...any) edit {
		var nodes arr
		for i := 1; i <= n; i++ {
			nodes = append(nodes, node(fmt.Sprintf("p%d", i), "PASS"))
		}
		return edits(add("workflows.0.nodes", nodes...), add("workflows.0.edges", append(arr{edge("start", "p1")}, es...)...))
	}
	runRuleCases(t, []ruleCase{
		{
			name: "self-loop",
			bad:  withPass(1, edge("p1", "p1")),
			good: withPass(1, edge("p1", "done")),
			want: []want{{"workflows[0].edges", []string{`workflow "wf" has a cycle: p1 -> p1`}}},
		},
		{
			name: "two nodes",
			bad:  withPass(2, edge("p1", "p2"), edge("p2", "p1")),
			good: withPass(2, edge("p1", "p2"), edge("p2", "done")),
			want: []want{{"workflows[0].edges", []string{`workflow "wf" has a cycle: p1 -> p2 -> p1`}}},
		},
		{
			name: "three nodes",
			bad:  withPass(3, edge("p1", "p2"), edge("p2", "p3"), edge("p3", "p1")),
			good: withPass(3, edge("p1", "p2"), edge("p2", "p3"), edge("p1", "p3")),
			want: []want{{"workflows[0].edges", []string{`has a cycle: p1 -> p2 -> p3 -> p1`}}},
		},
		{
			name: "through a named port",
			bad:  withPass(1, edge("p1", "route"), portEdge("route", "p1", "big")),
			good: withPass(1, edge("p1", "call"), portEdge("route", "p1", "big")),
			want: []want{{"workflows[0].edges", []string{`has a cycle: route -> p1 -> route`}}},
		},
		{
			name: "trigger self-loop",
			bad:  add("workflows.0.edges", edge("start", "start")),
			want: []want{
				{"workflows[0].edges[4].target", []string{`edge "start" -> "start"`, `node "start" is a trigger`}},
				{"workflows[0].edges", []string{"has a cycle: start -> start"}},
			},
		},
		{
			name: "two separate cycles",
			bad:  withPass(4, edge("p1", "p2"), edge("p2", "p1"), edge("p1", "p3"), edge("p3", "p4"), edge("p4", "p3")),
			good: withPass(4, edge("p1", "p2"), edge("p1", "p3"), edge("p3", "p4")),
			want: []want{
				{"workflows[0].edges", []string{"p1 -> p2 -> p1"}},
				{"workflows[0].edges", []string{"p3 -> p4 -> p3"}},
			},
		},
	})
}

func TestParsePorts(t *testing.T) {
	t.Parallel()
	runRuleCases(t, []ruleCase{
		{
			name: "port the router config does not declare",
			bad:  set("workflows.0.edges.1.sourcePort", "small"),
			good: edits(
				set("workflows.0.edges.1.sourcePort", "small"),
				add("workflows.0.nodes.1.config.routes", obj{"port": "small"}),
			),
			want: []want{{"workflows[0].edges[1].sourcePort", []string{`edge "route" -> "call"`, `node "route" (ROUTER)`, `no port "small"`, "big, default"}}},
		},
		{
			name: "implicit default port absent when the config drops it",
			bad:  set("workflows.0.nodes.1.config.fallback", false),
			good: edits(set("workflows.0.nodes.1.config.fallback", false), set("workflows.0.edges.2.sourcePort", "big")),
			want: []want{{"workflows[0].edges[2].sourcePort", []string{`edge "route" -> "done"`, `no port "default"`, "ports are: big"}}},
		},
		{
			name: "default of a config field decides the ports",
			bad:  set("workflows.0.nodes.1.config.fallback", false),
			good: set("workflows.0.nodes.1.config.fallback", true),
			want: []want{{"workflows[0].edges[2].sourcePort", []string{`no port "default"`}}},
		},
		{
			name: "port of a fixed-port processor",
			bad:  set("workflows.0.edges.3.sourcePort", "big"),
			good: set("workflows.0.edges.3.sourcePort", "error"),
			want: []want{{"workflows[0].edges[3].sourcePort", []string{`node "call" (CALL)`, `no port "big"`, "default, error"}}},
		},
		{
			name: "processor without PortsFunc has only default",
			bad:  edits(add("workflows.0.nodes", node("p", "PASS")), add("workflows.0.edges", edge("start", "p"), portEdge("p", "done", "error"))),
			good: edits(add("workflows.0.nodes", node("p", "PASS")), add("workflows.0.edges", edge("start", "p"), portEdge("p", "done", "default"))),
			want: []want{{"workflows[0].edges[5].sourcePort", []string{`node "p" (PASS)`, `no port "error"`, "ports are: default"}}},
		},
		{
			name: "trigger ports",
			bad:  set("workflows.0.edges.0.sourcePort", "out"),
			good: set("workflows.0.edges.0.sourcePort", "default"),
			want: []want{{"workflows[0].edges[0].sourcePort", []string{`node "start" (MANUAL)`, `no port "out"`}}},
		},
	})
}

func TestParseConfig(t *testing.T) {
	t.Parallel()
	const call = "workflows.0.nodes.2.config"
	const callPath = "workflows[0].nodes[2].config"
	runRuleCases(t, []ruleCase{
		{
			name: "required field missing",
			bad:  del(call + ".url"),
			want: []want{{callPath + ".url", []string{`node "call" (CALL)`, `config field "url"`, "is required"}}},
		},
		{
			name: "required field null",
			bad:  set(call+".url", nil),
			want: []want{{callPath + ".url", []string{`node "call"`, "is required"}}},
		},
		{
			name: "config absent on a type with a required field",
			bad:  del(call),
			want: []want{{callPath + ".url", []string{`node "call"`, "is required"}}},
		},
		{
			name: "url of the wrong JSON type",
			bad:  set(call+".url", 5),
			good: set(call+".url", "http://x.y"),
			want: []want{{callPath + ".url", []string{`node "call"`, `config field "url"`, "must be a URL string, got a number"}}},
		},
		{
			name: "url not absolute",
			bad:  set(call+".url", "example.com/hook"),
			good: set(call+".url", "https://example.com/hook"),
			want: []want{{callPath + ".url", []string{`node "call"`, "absolute http:// or https:// URL", `"example.com/hook"`}}},
		},
		{
			name: "unknown config field",
			bad:  set(call+".retries", 3),
			good: set(call+".attempts", 3),
			want: []want{{callPath + ".retries", []string{`node "call"`, `config field "retries"`, "is not a config field of CALL", "url, token"}}},
		},
		{
			name: "option not allowed",
			bad:  set(call+".method", "FETCH"),
			good: set(call+".method", "POST"),
			want: []want{{callPath + ".method", []string{`node "call"`, `config field "method"`, "must be one of GET, POST", `"FETCH"`}}},
		},
		{
			name: "integer given 1.5",
			bad:  set(call+".attempts", 1.5),
			good: set(call+".attempts", 2),
			want: []want{{callPath + ".attempts", []string{`node "call"`, "must be an integer"}}},
		},
		{
			name: "bad duration",
			bad:  set(call+".timeout", "soon"),
			good: set(call+".timeout", "1m30s"),
			want: []want{{callPath + ".timeout", []string{`node "call"`, "duration", `"soon"`}}},
		},
		{
			name: "object field given a string",
			bad:  set(call+".headers", "X-A: 1"),
			good: set(call+".headers", obj{"X-A": "1"}),
			want: []want{{callPath + ".headers", []string{`node "call"`, "must be an object, got a string"}}},
		},
		{
			name: "nested required member missing",
			bad:  set("workflows.0.nodes.1.config.routes", arr{obj{"port": "big"}, obj{}}),
			good: set("workflows.0.nodes.1.config.routes", arr{obj{"port": "big"}, obj{"port": "small"}}),
			want: []want{{"workflows[0].nodes[1].config.routes[1].port", []string{`node "route" (ROUTER)`, "is required"}}},
		},
		{
			name: "nested unknown member",
			bad:  set("workflows.0.nodes.1.config.routes.0.when", "true"),
			want: []want{{"workflows[0].nodes[1].config.routes[0].when", []string{`node "route"`, "is not a known member", "port"}}},
		},
		{
			name: "config field on a type without fields",
			bad:  set("workflows.0.nodes.3.config", obj{"store": true}),
			good: set("workflows.0.nodes.3.config", obj{}),
			want: []want{{"workflows[0].nodes[3].config.store", []string{`node "done" (RESULT)`, "is not a config field of RESULT", "(none)"}}},
		},
		{
			name: "several config violations of one node",
			bad:  edits(del(call+".url"), set(call+".method", "FETCH"), set(call+".zz", 1)),
			want: []want{
				{callPath + ".url", []string{`node "call"`, "is required"}},
				{callPath + ".method", []string{`node "call"`, "must be one of"}},
				{callPath + ".zz", []string{`node "call"`, "not a config field"}},
			},
		},
	})
}

// TestParseLimits builds documents at and just over each size limit.
func TestParseLimits(t *testing.T) {
	t.Parallel()
	passNodes := func(n int) arr {
		out := arr{node("start", "MANUAL")}
		for i := 1; i < n; i++ {
			out = append(out, node(fmt.Sprintf("p%d", i), "PASS"))
		}
		return out
	}
	// forwardEdges returns n distinct edges p_i -> p_j (i < j) among 69 PASS
	// nodes, plus start -> p1: always a DAG.
	forwardEdges := func(n int) arr {
		out := arr{edge("start", "p1")}
		for i := 1; i < 70 && len(out) < n; i++ {
			for j := i + 1; j < 70 && len(out) < n; j++ {
				out = append(out, edge(fmt.Sprintf("p%d", i), fmt.Sprintf("p%d", j)))
			}
		}
		if len(out) != n {
			panic(fmt.Sprintf("built %d edges, want %d", len(out), n))
		}
		return out
	}
	workflows := func(n int) arr {
		out := make(arr, n)
		for i := range out {
			out[i] = obj{"workflowId": fmt.Sprintf("wf%d", i), "nodes": arr{node("start", "MANUAL")}}
		}
		return out
	}
	runRuleCases(t, []ruleCase{
		{
			name: "MaxNodes",
			bad:  edits(set("workflows.0.nodes", passNodes(session.MaxNodes+1)), set("workflows.0.edges", arr{})),
			good: edits(set("workflows.0.nodes", passNodes(session.MaxNodes)), set("workflows.0.edges", arr{})),
			want: []want{{"workflows[0].nodes", []string{fmt.Sprintf("has %d entries", session.MaxNodes+1), fmt.Sprintf("limit is %d", session.MaxNodes)}}},
		},
		{
			name: "MaxEdges",
			bad:  edits(set("workflows.0.nodes", passNodes(70)), set("workflows.0.edges", forwardEdges(session.MaxEdges+1))),
			good: edits(set("workflows.0.nodes", passNodes(70)), set("workflows.0.edges", forwardEdges(session.MaxEdges))),
			want: []want{{"workflows[0].edges", []string{fmt.Sprintf("has %d entries", session.MaxEdges+1), fmt.Sprintf("limit is %d", session.MaxEdges)}}},
		},
		{
			name: "MaxWorkflows",
			bad:  set("workflows", workflows(session.MaxWorkflows+1)),
			good: set("workflows", workflows(session.MaxWorkflows)),
			want: []want{{"workflows", []string{fmt.Sprintf("has %d entries", session.MaxWorkflows+1), fmt.Sprintf("limit is %d", session.MaxWorkflows)}}},
		},
		{
			name: "MaxNodes with edges into the dropped list",
			bad:  set("workflows.0.nodes", append(passNodes(session.MaxNodes-3), walk(baseDoc(), "workflows.0.nodes.1"), node("call", "PASS"), node("done", "RESULT"), node("x", "PASS"))),
			good: set("workflows.0.nodes", append(passNodes(session.MaxNodes-3), walk(baseDoc(), "workflows.0.nodes.1"), node("call", "PASS"), node("done", "RESULT"))),
			want: []want{{"workflows[0].nodes", []string{fmt.Sprintf("has %d entries", session.MaxNodes+1)}}},
		},
	})
}

func TestParseRawBodies(t *testing.T) {
	t.Parallel()
	valid := encode(t, baseDoc())
	cases := []struct {
		name string
		bad  []byte
		good []byte
		want want
	}{
		{"empty body", nil, valid, want{"", []string{"not valid JSON"}}},
		{"truncated", valid[:len(valid)-1], valid, want{"", []string{"not valid JSON", "one JSON object"}}},
		{"syntax error", []byte(`{"name": }`), valid, want{"", []string{"not valid JSON"}}},
		{"second object", append(slices.Clone(valid), []byte(` {}`)...), append(slices.Clone(valid), []byte(" \n\t")...), want{"", []string{"data after the JSON object"}}},
		{"trailing garbage", append(slices.Clone(valid), 'x'), valid, want{"", []string{"data after the JSON object"}}},
		{"trailing bracket", append(slices.Clone(valid), '}'), valid, want{"", []string{"data after the JSON object"}}},
		{"array at the top", []byte(`[` + string(valid) + `]`), valid, want{"", []string{"must be an object, got an array"}}},
		{"null at the top", []byte(`null`), valid, want{"", []string{"must be an object, got null"}}},
		{"string at the top", []byte(`"s1"`), valid, want{"", []string{"must be an object, got a string"}}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			_, _, err := session.Parse(tc.bad, catalog, session.ParseOptions{})
			checkViolations(t, err, []want{tc.want})
			if _, _, err := session.Parse(tc.good, catalog, session.ParseOptions{}); err != nil {
				t.Errorf("valid variant: got %v, want no error", err)
			}
		})
	}
}

// One document breaking many rules gets one error listing all of them.
func TestParseReportsEveryViolationAtOnce(t *testing.T) {
	t.Parallel()
	bad := docWith(edits(
		set("owner", "ann"),                            // unknown session field
		set("workflows.0.nodes.0.color", "red"),        // unknown node field
		set("workflows.0.edges.0.target", "ghost"),     // edge to a node that does not exist
		set("workflows.0.edges.1.sourcePort", "small"), // port ROUTER does not declare
		del("workflows.0.nodes.2.config.url"),          // required config field missing
		add("workflows.0.nodes", node("p1", "PASS"), node("p2", "PASS")),
		add("workflows.0.edges", edge("p1", "p2"), edge("p2", "p1")), // cycle
	))
	_, _, err := session.Parse(encode(t, bad), catalog, session.ParseOptions{})
	checkViolations(t, err, []want{
		{"owner", []string{`unknown field "owner"`}},
		{"workflows[0].nodes[0].color", []string{`unknown field "color"`}},
		{"workflows[0].nodes[2].config.url", []string{`node "call"`, "is required"}},
		{"workflows[0].edges[0].target", []string{`target node "ghost"`}},
		{"workflows[0].edges[1].sourcePort", []string{`node "route"`, `no port "small"`}},
		{"workflows[0].edges", []string{"p1 -> p2 -> p1"}},
	})
	if msg := err.Error(); !strings.HasPrefix(msg, "session is invalid: ") || strings.Count(msg, "; ") < 5 {
		t.Errorf("Error(): got %q, want every violation after %q", msg, "session is invalid: ")
	}
}

// Shape errors must not bury the graph rules under invented violations:
// what could not be read is reported once, and the rest is still checked.
func TestParseShapeErrorsDoNotInventGraphErrors(t *testing.T) {
	t.Parallel()
	runRuleCases(t, []ruleCase{
		{
			name: "trigger without a type",
			bad:  del("workflows.0.nodes.0.type"),
			want: []want{{"workflows[0].nodes[0].type", []string{"is required"}}},
		},
		{
			name: "node without an id and an edge without ends make no cycle",
			bad:  edits(add("workflows.0.nodes", obj{"type": "PASS"}), add("workflows.0.edges", obj{})),
			good: edits(add("workflows.0.nodes", node("p", "PASS")), add("workflows.0.edges", edge("start", "p"))),
			want: []want{
				{"workflows[0].nodes[4].nodeId", []string{"is required"}},
				{"workflows[0].edges[4].source", []string{"is required"}},
				{"workflows[0].edges[4].target", []string{"is required"}},
			},
		},
		{
			name: "nodes of the wrong type do not turn every edge into a missing-node error",
			bad:  set("workflows.0.nodes", obj{"start": "MANUAL"}),
			want: []want{{"workflows[0].nodes", []string{"must be an array, got an object"}}},
		},
		{
			name: "nodes over the limit do not turn every edge into a missing-node error",
			bad:  add("workflows.0.nodes", passNodesFrom(session.MaxNodes-3)...),
			good: add("workflows.0.nodes", passNodesFrom(session.MaxNodes-4)...),
			want: []want{{"workflows[0].nodes", []string{fmt.Sprintf("has %d entries", session.MaxNodes+1)}}},
		},
		{
			name: "edges without ends",
			bad:  add("workflows.0.edges", obj{}, obj{"sourcePort": "x"}),
			want: []want{
				{"workflows[0].edges[4].source", []string{"is required"}},
				{"workflows[0].edges[4].target", []string{"is required"}},
				{"workflows[0].edges[5].source", []string{"is required"}},
				{"workflows[0].edges[5].target", []string{"is required"}},
			},
		},
		{
			name: "graph rules still run next to a shape error",
			bad:  edits(set("workflows.0.nodes.1.config", "x"), set("workflows.0.edges.3.target", "ghost")),
			want: []want{
				{"workflows[0].nodes[1].config", []string{`node "route"`, "must be an object"}},
				{"workflows[0].edges[3].target", []string{`target node "ghost"`}},
			},
		},
	})
}

func passNodesFrom(n int) arr {
	out := make(arr, n)
	for i := range out {
		out[i] = node(fmt.Sprintf("x%d", i), "PASS")
	}
	return out
}

func TestParseWarnings(t *testing.T) {
	t.Parallel()
	t.Run("connected workflow", func(t *testing.T) {
		t.Parallel()
		_, warns := mustParse(t, encode(t, baseDoc()), session.ParseOptions{})
		if warns == nil || len(warns) != 0 {
			t.Errorf("warnings: got %#v, want an empty list", warns)
		}
	})
	t.Run("node no trigger reaches", func(t *testing.T) {
		t.Parallel()
		d := docWith(edits(add("workflows.0.nodes", node("island", "PASS")), add("workflows.0.edges", edge("island", "done"))))
		_, warns := mustParse(t, encode(t, d), session.ParseOptions{})
		if len(warns) != 1 {
			t.Fatalf("warnings: got %q, want 1", warns)
		}
		for _, s := range []string{`workflow "wf"`, `node "island"`, "not reachable"} {
			if !strings.Contains(warns[0], s) {
				t.Errorf("warning: got %q, want it to contain %q", warns[0], s)
			}
		}
	})
	t.Run("chain no trigger reaches", func(t *testing.T) {
		t.Parallel()
		d := docWith(edits(
			add("workflows.0.nodes", node("i1", "PASS"), node("i2", "PASS")),
			add("workflows.0.edges", edge("i1", "i2")),
		))
		_, warns := mustParse(t, encode(t, d), session.ParseOptions{})
		if len(warns) != 2 || !strings.Contains(warns[0], `"i1"`) || !strings.Contains(warns[1], `"i2"`) {
			t.Errorf("warnings: got %q, want one naming i1 then one naming i2", warns)
		}
	})
	t.Run("second trigger reaches its own branch", func(t *testing.T) {
		t.Parallel()
		d := docWith(edits(
			add("workflows.0.nodes", node("t2", "MANUAL"), node("p", "PASS")),
			add("workflows.0.edges", edge("t2", "p")),
		))
		_, warns := mustParse(t, encode(t, d), session.ParseOptions{})
		if len(warns) != 0 {
			t.Errorf("warnings: got %q, want none", warns)
		}
	})
}

func TestKeepSecrets(t *testing.T) {
	t.Parallel()
	const tokenPath = "workflows[0].nodes[2].config.token"
	prev, _ := mustParse(t, encode(t, baseDoc()), session.ParseOptions{})
	masked := docWith(set("workflows.0.nodes.2.config.token", plugin.MaskedValue))

	t.Run("masked value takes the stored one", func(t *testing.T) {
		t.Parallel()
		next, _ := mustParse(t, encode(t, masked), session.ParseOptions{})
		kept, vs := next.KeepSecrets(&prev, catalog)
		if len(vs) != 0 {
			t.Fatalf("violations: got %s, want none", describe(vs))
		}
		if got := configOf(t, kept, "wf", "call")["token"]; got != "t0k" {
			t.Errorf("kept token: got %v, want %q", got, "t0k")
		}
		if got := configOf(t, next, "wf", "call")["token"]; got != plugin.MaskedValue {
			t.Errorf("KeepSecrets changed its receiver: token got %v, want %q", got, plugin.MaskedValue)
		}
	})
	t.Run("new value replaces the stored one", func(t *testing.T) {
		t.Parallel()
		next, _ := mustParse(t, encode(t, docWith(set("workflows.0.nodes.2.config.token", "new"))), session.ParseOptions{})
		kept, vs := next.KeepSecrets(&prev, catalog)
		if len(vs) != 0 {
			t.Fatalf("violations: got %s, want none", describe(vs))
		}
		if got := configOf(t, kept, "wf", "call")["token"]; got != "new" {
			t.Errorf("token: got %v, want %q", got, "new")
		}
	})

	prevOtherType, _ := mustParse(t, encode(t, docWith(set("workflows.0.nodes.2", node("call", "PASS")))), session.ParseOptions{})
	prevOtherWorkflow, _ := mustParse(t, encode(t, docWith(set("workflows.0.workflowId", "wf2"))), session.ParseOptions{})
	prevNoToken, _ := mustParse(t, encode(t, docWith(del("workflows.0.nodes.2.config.token"))), session.ParseOptions{})
	prevOtherNode, _ := mustParse(t, encode(t, docWith(edits(
		set("workflows.0.nodes.2.nodeId", "call2"),
		set("workflows.0.edges.1.target", "call2"),
		set("workflows.0.edges.3.source", "call2"),
	))), session.ParseOptions{})
	for _, tc := range []struct {
		name string
		prev *session.Session
	}{
		{"no previous session", nil},
		{"previous node of another type", &prevOtherType},
		{"previous node in another workflow", &prevOtherWorkflow},
		{"previous node with another id", &prevOtherNode},
		{"previous node without the secret", &prevNoToken},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			next, _ := mustParse(t, encode(t, masked), session.ParseOptions{})
			_, vs := next.KeepSecrets(tc.prev, catalog)
			if len(vs) != 1 {
				t.Fatalf("violations: got %s, want 1", describe(vs))
			}
			if vs[0].Path != tokenPath {
				t.Errorf("path: got %q, want %q", vs[0].Path, tokenPath)
			}
			for _, s := range []string{`node "call"`, `secret field "token"`, `"***"`} {
				if !strings.Contains(vs[0].Message, s) {
					t.Errorf("message: got %q, want it to contain %q", vs[0].Message, s)
				}
			}
		})
	}
	t.Run("read, masked, sent back unchanged", func(t *testing.T) {
		t.Parallel()
		// A secret that is set, and one that is null: neither may be lost
		// nor refused when the client sends back what it read.
		d := docWith(edits(
			add("workflows", docWith(edits(
				set("workflows.0.workflowId", "nulltoken"),
				set("workflows.0.nodes.2.config.token", nil),
			))["workflows"].(arr)[0]),
		))
		stored, _ := mustParse(t, encode(t, d), session.ParseOptions{})
		read := stored.Masked(catalog)
		back, _ := mustParse(t, encode(t, rebuild(read)), session.ParseOptions{})
		kept, vs := back.KeepSecrets(&stored, catalog)
		if len(vs) != 0 {
			t.Fatalf("violations: got %s, want none", describe(vs))
		}
		for _, wf := range []string{"wf", "nulltoken"} {
			got, want := configOf(t, kept, wf, "call"), configOf(t, stored, wf, "call")
			if !reflect.DeepEqual(got, want) {
				t.Errorf("workflow %s config: got %v, want %v", wf, got, want)
			}
		}
	})
}

func TestMasked(t *testing.T) {
	t.Parallel()
	d := docWith(set("workflows.0.nodes.2.config.headers", obj{"X-A": "1"}))
	s, _ := mustParse(t, encode(t, d), session.ParseOptions{})
	m := s.Masked(catalog)
	cfg := configOf(t, m, "wf", "call")
	if got := cfg["token"]; got != plugin.MaskedValue {
		t.Errorf("masked token: got %v, want %q", got, plugin.MaskedValue)
	}
	if got := cfg["url"]; got != "https://example.com/hook" {
		t.Errorf("url: got %v, want it unchanged", got)
	}
	if got := cfg["headers"]; !reflect.DeepEqual(got, obj{"X-A": "1"}) {
		t.Errorf("headers: got %v, want them unchanged", got)
	}
	if _, ok := cfg["method"]; ok {
		t.Errorf("Masked added the default method; got %v, want absent", cfg["method"])
	}
	if got, want := configOf(t, m, "wf", "route"), configOf(t, s, "wf", "route"); !reflect.DeepEqual(got, want) {
		t.Errorf("route config: got %v, want %v", got, want)
	}
	if got := configOf(t, s, "wf", "call")["token"]; got != "t0k" {
		t.Errorf("Masked changed its receiver: token got %v, want %q", got, "t0k")
	}
	if m.ID() != s.ID() || m.Name() != s.Name() || !slices.Equal(m.WorkflowIDs(), s.WorkflowIDs()) {
		t.Errorf("Masked changed the session fields: got %q %q %q, want %q %q %q", m.ID(), m.Name(), m.WorkflowIDs(), s.ID(), s.Name(), s.WorkflowIDs())
	}
	// A node whose type left the catalogue is shown as stored.
	w, _ := session.RestoreWorkflow("gone", "", []byte(`{"nodes":[{"nodeId":"a","type":"GONE","config":{"token":"x"}}],"edges":[]}`))
	r := session.RestoreSession("r", "R", "", "", nil, "", []session.Workflow{w}).Masked(catalog)
	if got := configOf(t, r, "gone", "a")["token"]; got != "x" {
		t.Errorf("unknown type token: got %v, want %q", got, "x")
	}
}

func TestConfigIsADeepCopy(t *testing.T) {
	t.Parallel()
	d := docWith(set("workflows.0.nodes.2.config.headers", obj{"X-A": "1"}))
	s, _ := mustParse(t, encode(t, d), session.ParseOptions{})
	w, _ := s.Workflow("wf")
	call, _ := w.Node("call")
	cfg := call.Config()
	cfg["url"] = "changed"
	cfg["headers"].(map[string]any)["X-A"] = "changed"
	route, _ := w.Node("route")
	rc := route.Config()
	rc["routes"].([]any)[0].(map[string]any)["port"] = "changed"
	rc["routes"] = append(rc["routes"].([]any), "more")

	again := configOf(t, s, "wf", "call")
	if got := again["url"]; got != "https://example.com/hook" {
		t.Errorf("url after mutating a copy: got %v, want unchanged", got)
	}
	if got := again["headers"].(map[string]any)["X-A"]; got != "1" {
		t.Errorf("nested header after mutating a copy: got %v, want %q", got, "1")
	}
	routes := configOf(t, s, "wf", "route")["routes"].([]any)
	if len(routes) != 1 || routes[0].(map[string]any)["port"] != "big" {
		t.Errorf("routes after mutating a copy: got %v, want [map[port:big]]", routes)
	}
	var zero session.Node
	if got := zero.Config(); got == nil || len(got) != 0 {
		t.Errorf("zero Node Config: got %#v, want an empty map", got)
	}
}

func TestDefinitionRoundTrip(t *testing.T) {
	t.Parallel()
	d := docWith(edits(
		set("workflows.0.nodes.0.config", obj{"payload": obj{
			"big":   json.Number("123456789012345678901234567890"),
			"exp":   json.Number("1.50e-7"),
			"neg":   json.Number("-0"),
			"list":  arr{json.Number("1"), "two", nil, true},
			"html":  "<a href='x'>&</a>",
			"emoji": "🙂",
		}}),
		set("workflows.0.nodes.2.name", "Call out"),
		set("workflows.0.nodes.2.config.headers", obj{"X-A": "1"}),
		add("workflows.0.edges", portEdge("call", "done", "error")),
	))
	s, _ := mustParse(t, encode(t, d), session.ParseOptions{})
	w, _ := s.Workflow("wf")
	b, err := session.MarshalDefinition(w)
	if err != nil {
		t.Fatalf("MarshalDefinition: %v", err)
	}
	r, err := session.RestoreWorkflow(w.ID(), w.Description(), b)
	if err != nil {
		t.Fatalf("RestoreWorkflow: %v", err)
	}
	if r.ID() != "wf" || r.Description() != "routes orders" {
		t.Errorf("id, description: got %q, %q, want %q, %q", r.ID(), r.Description(), "wf", "routes orders")
	}
	if got, want := len(r.Nodes()), len(w.Nodes()); got != want {
		t.Fatalf("nodes: got %d, want %d", got, want)
	}
	for i, n := range w.Nodes() {
		g := r.Nodes()[i]
		if g.ID() != n.ID() || g.Type() != n.Type() || g.Name() != n.Name() {
			t.Errorf("node %d: got %q %q %q, want %q %q %q", i, g.ID(), g.Type(), g.Name(), n.ID(), n.Type(), n.Name())
		}
		if !reflect.DeepEqual(g.Config(), n.Config()) {
			t.Errorf("node %s config: got %#v, want %#v", n.ID(), g.Config(), n.Config())
		}
	}
	if got, want := r.Edges(), w.Edges(); !slices.Equal(got, want) {
		t.Errorf("edges: got %v, want %v", got, want)
	}
	if got := r.Edges()[0].SourcePort(); got != plugin.DefaultPort {
		t.Errorf("omitted sourcePort after round trip: got %q, want %q", got, plugin.DefaultPort)
	}
	payload := configOf(t, session.RestoreSession("s", "S", "", "", nil, "", []session.Workflow{r}), "wf", "start")["payload"].(map[string]any)
	for k, want := range map[string]json.Number{"big": "123456789012345678901234567890", "exp": "1.50e-7", "neg": "-0"} {
		if got, ok := payload[k].(json.Number); !ok || got != want {
			t.Errorf("payload.%s: got %#v, want json.Number(%q)", k, payload[k], want)
		}
	}
	b2, err := session.MarshalDefinition(r)
	if err != nil {
		t.Fatalf("MarshalDefinition of restored: %v", err)
	}
	if !bytes.Equal(b, b2) {
		t.Errorf("second encoding differs:\ngot  %s\nwant %s", b2, b)
	}
}

func TestRestoreWorkflow(t *testing.T) {
	t.Parallel()
	t.Run("absent config reads as empty", func(t *testing.T) {
		t.Parallel()
		w, err := session.RestoreWorkflow("w", "", []byte(`{"nodes":[{"nodeId":"a","type":"GONE"}]}`))
		if err != nil {
			t.Fatalf("RestoreWorkflow: got %v, want no error", err)
		}
		n, _ := w.Node("a")
		if c := n.Config(); c == nil || len(c) != 0 {
			t.Errorf("config: got %#v, want an empty map", c)
		}
		if len(w.Edges()) != 0 {
			t.Errorf("edges: got %v, want none", w.Edges())
		}
	})
	t.Run("bad encoding", func(t *testing.T) {
		t.Parallel()
		_, err := session.RestoreWorkflow("w", "", []byte(`{"nodes":`))
		if err == nil || !strings.Contains(err.Error(), `workflow "w"`) {
			t.Errorf("err: got %v, want an error naming workflow \"w\"", err)
		}
	})
	t.Run("empty workflow encodes empty lists", func(t *testing.T) {
		t.Parallel()
		w, err := session.RestoreWorkflow("w", "", []byte(`{}`))
		if err != nil {
			t.Fatalf("RestoreWorkflow: %v", err)
		}
		b, err := session.MarshalDefinition(w)
		if err != nil {
			t.Fatalf("MarshalDefinition: %v", err)
		}
		if got, want := string(b), `{"nodes":[],"edges":[]}`; got != want {
			t.Errorf("encoding: got %s, want %s", got, want)
		}
	})
}

func configOf(t *testing.T, s session.Session, wf, nodeID string) map[string]any {
	t.Helper()
	w, ok := s.Workflow(wf)
	if !ok {
		t.Fatalf("workflow %q: got not found, want found", wf)
	}
	n, ok := w.Node(nodeID)
	if !ok {
		t.Fatalf("node %q: got not found, want found", nodeID)
	}
	return n.Config()
}

// rebuild writes a session back as a document.
func rebuild(s session.Session) obj {
	d := obj{
		"sessionId":   s.ID(),
		"name":        s.Name(),
		"description": s.Description(),
		"initiator":   s.Initiator(),
		"projectPath": s.ProjectPath(),
	}
	if tags := s.Tags(); tags != nil {
		d["tags"] = tags
	}
	if r := s.Retention(); !r.IsZero() {
		ro := obj{}
		if days, set := r.Days(); set {
			ro["days"] = days
		}
		if j := r.Journals(); j != "" {
			ro["journals"] = string(j)
		}
		d["retention"] = ro
	}
	var wfs arr
	for _, w := range s.Workflows() {
		var nodes, edges arr
		for _, n := range w.Nodes() {
			nd := obj{"nodeId": n.ID(), "type": n.Type(), "config": n.Config()}
			if n.Name() != "" {
				nd["name"] = n.Name()
			}
			nodes = append(nodes, nd)
		}
		for _, e := range w.Edges() {
			edges = append(edges, portEdge(e.Source(), e.Target(), e.SourcePort()))
		}
		wd := obj{"workflowId": w.ID(), "description": w.Description(), "nodes": nodes}
		if edges != nil {
			wd["edges"] = edges
		}
		wfs = append(wfs, wd)
	}
	d["workflows"] = wfs
	return d
}
