package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/url"
	"os"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/getkin/kin-openapi/openapi3"

	"github.com/yukta/yukta/api"
)

// The barrage's bounds, declared once.
const (
	// hostileRequests is how many requests the barrage sends in all: the
	// fixed corpus first, then seeded mutations of valid requests.
	hostileRequests = 4000
	// hostileBudget bounds the mutation phase in time (the fixed corpus
	// always runs whole).
	hostileBudget = 35 * time.Second
	// hostileRequestTimeout bounds one request; every query the corpus
	// sends keeps long polls short (wait=0), so only a hung server reaches it.
	hostileRequestTimeout = 10 * time.Second
	// hostileSeedEnv replays a run: YUKTA_HOSTILE_SEED=<seed printed on failure>.
	hostileSeedEnv = "YUKTA_HOSTILE_SEED"
	// The body caps the server enforces (docs/configuration.md, limits).
	restBodyCap  = 1 << 20
	agentBodyCap = 64 << 10
	// scratchSupervisor is the id the corpus may create, rotate, revoke and
	// delete (every request but GET names it); the supervisor "agent" must
	// come out of the barrage as it went in.
	scratchSupervisor = "fuzz-scratch"
)

// leakText are fragments of Go's and PostgreSQL's own texts that no answer
// may hold (wholeLeak: texts that leak when they are the entire message).
var leakText = []string{"json: ", "cannot unmarshal", "invalid character", "unexpected end of JSON input", "Go value",
	"interface {}", "SQLSTATE", "pq:", "pgx", "ERROR:", "runtime error", "goroutine", "panic", "context canceled",
	"context deadline exceeded", "%!", "unsupported Unicode", "invalid byte sequence", "jsonb", "strconv.", "reflect:",
	"nil pointer", "invalid memory address", "<nil>", "map[", "echo:", "code=", "message=", "unexpected EOF"}

var wholeLeak = []string{"EOF", "unexpected EOF", "Bad Request", "Internal Server Error"}

// hostileOp is one operation the barrage drives.
type hostileOp struct {
	id, method, path string
	group            string            // supervisors, engines, approvals, holds, agent, agent-mcp
	pathParams       []string          // names, in order
	query            []string          // declared query parameter names
	valid            map[string]string // path parameter values that reach the handler
	baseQuery        url.Values        // added to every request (keeps long polls short)
	body             string            // a well-formed body ("" when the operation takes none)
	agent            bool              // sent with the supervisor credential
}

// hostileAnswer is what one request got.
type hostileAnswer struct {
	status int
	ctype  string
	body   []byte
	err    error
}

type hostileEnv struct {
	*agentWorld
	t        *testing.T
	seed     uint64
	rng      *rand.Rand
	sent     map[string]int // by group
	statuses map[string]map[int]int
	offenses []string
	changes  []string // accepted requests that changed what the snapshot watches
	baseline string
	mcpID    int
	// mcpRefused counts the agent MCP's refusals (JSON-RPC errors and
	// isError results, most of them HTTP 200).
	mcpRefused int
}

// TestHostileInputOnEverySupervisionEndpoint sends a seeded barrage of
// hostile input to every supervisor, engine, approval and hold operation
// of api/openapi.yaml, every agent API route and every agent MCP tool:
// bad path parameters (too long, NUL, lone surrogates, invalid UTF-8,
// ../, unicode), bad query values (negative, huge, float, strings,
// repeated), hostile bodies (repeated keys, 1e400, -0, nesting 200 deep,
// trailing data, NUL, lone surrogates, invalid UTF-8, wrong types for every
// member, strings near and over the body cap, empty, wrong content type)
// and seeded mutations of valid requests. Every answer is below 500 and is
// problem details (or an MCP error) in our words: no Go or PostgreSQL
// text, and a 4xx says what is wrong. A refused request changes nothing;
// the server logs no error and is ready at the end.
func TestHostileInputOnEverySupervisionEndpoint(t *testing.T) {
	t.Parallel()
	seed := uint64(time.Now().UnixNano())
	if s := os.Getenv(hostileSeedEnv); s != "" {
		v, err := strconv.ParseUint(s, 10, 64)
		if err != nil {
			t.Fatalf("%s=%q: %v", hostileSeedEnv, s, err)
		}
		seed = v
	}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("hostile barrage seed %d: replay with %s=%d go test ./e2e -run TestHostileInputOnEverySupervisionEndpoint", seed, hostileSeedEnv, seed)
		}
	})
	w := newAgentWorld(t, "YUKTA_API_KEYS="+writeKeyFile(t), "YUKTA_AGENT_RATE_LIMIT=off")
	w.key = testKeys["admin"]
	w.setup()
	h := &hostileEnv{agentWorld: w, t: t, seed: seed, rng: rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15)),
		sent: map[string]int{}, statuses: map[string]map[int]int{}}
	run := w.napping("ci")
	w.put("/api/sessions/other", napSession("other"))
	foreign := w.napping("other")
	w.put("/api/supervisors/"+scratchSupervisor, []byte(`{"name":"Scratch","owns":["session:other"],"engine":{"type":"http","settings":{}}}`))

	ops := h.operations(run, foreign)
	before := h.snapshot()
	logStart := len(w.s.logs.String())
	h.baseline = before

	start := time.Now()
	for _, o := range ops {
		h.fixedCorpus(o)
	}
	h.mcpCorpus(run, foreign)
	fixed := h.total()
	deadline := time.Now().Add(hostileBudget)
	for h.total() < hostileRequests && time.Now().Before(deadline) {
		h.mutate(ops[h.rng.IntN(len(ops))])
	}
	elapsed := time.Since(start)

	// The report.
	groups := slices.Sorted(func(yield func(string) bool) {
		for g := range h.sent {
			if !yield(g) {
				return
			}
		}
	})
	for _, g := range groups {
		var four, five int
		for st, n := range h.statuses[g] {
			switch {
			case st >= 500:
				five += n
			case st >= 400:
				four += n
			}
		}
		t.Logf("%-12s %4d requests: %4d 4xx, %d 5xx, statuses %v", g, h.sent[g], four, five, h.statuses[g])
	}
	t.Logf("agent-mcp: %d of the calls refused (JSON-RPC error or isError result)", h.mcpRefused)
	t.Logf("%d requests (%d fixed corpus, %d seeded mutations, seed %d) in %s; %d offending answers",
		h.total(), fixed, h.total()-fixed, seed, elapsed.Round(time.Millisecond), len(h.offenses))
	for i, o := range h.offenses {
		if i == 40 {
			t.Errorf("... and %d more", len(h.offenses)-40)
			break
		}
		t.Error(o)
	}

	// The server is well and logged no error because of the barrage.
	if err := w.s.waitReady(10 * time.Second); err != nil {
		t.Errorf("after the barrage: %v", err)
	}
	for _, l := range strings.Split(w.s.logs.String()[logStart:], "\n") {
		if strings.Contains(l, `"level":"error"`) || strings.Contains(l, `"level":"dpanic"`) || strings.Contains(l, `"level":"panic"`) {
			t.Errorf("the barrage made the server log an error: %s", l)
		}
	}
	// Nothing outside the scratch supervisor changed: the supervisors, the
	// credential, the runs, their commands, holds, reviews and delegations.
	for _, c := range h.changes {
		t.Errorf("an accepted request of the barrage changed what it must leave alone: %s", c)
	}
	if after := h.snapshot(); after != before {
		t.Errorf("the barrage changed state:\nbefore %s\nafter  %s", before, after)
	}
	if st, b, _ := w.agent("GET", "/self", nil); st != 200 {
		t.Errorf("the credential no longer works after the barrage: %d %s", st, b)
	}
	if s := w.status("ci", run); s != "RUNNING" {
		t.Errorf("the owned run is %s after the barrage, want RUNNING", s)
	}
}

func (h *hostileEnv) total() int {
	n := 0
	for _, c := range h.sent {
		n += c
	}
	return n
}

// knownAgentOps are the agent API operations the barrage has valid requests
// for; the spec naming another (or the MCP listing another tool) fails, so a
// route added to the agent doors is added here too.
var knownAgentOps = []string{"agentSelf", "agentSnapshot", "agentSignals", "agentEvents", "agentExecutions", "agentExecution",
	"agentExecutionLogs", "agentWorkflow", "agentScheduler", "agentMCP", "agentInputs", "agentRefusals", "agentDirective",
	"agentReview", "agentDelegate", "agentAnswerDelegation"}

// operations reads every supervision operation from api/openapi.yaml.
func (h *hostileEnv) operations(run, foreign string) []hostileOp {
	t := h.t
	doc, err := openapi3.NewLoader().LoadFromData(api.Spec)
	if err != nil {
		t.Fatal(err)
	}
	unknownUUID := "0193b7a0-0000-7000-8000-00000000f00d"
	// Valid bodies: well formed, and refused by what they mean or harmless
	// (the scratch supervisor), so a mutation that still parses changes
	// nothing the snapshot watches.
	bodies := map[string]string{
		"putSupervisor":         `{"name":"Scratch","owns":["session:other"],"engine":{"type":"http","settings":{}},"enabled":true}`,
		"dryRunRules":           `{"sessionId":"ci","executionId":"` + run + `","preset":"failure-guard","parameters":{}}`,
		"decideApproval":        `{"decision":"APPROVE","reason":"looks fine"}`,
		"agentDirective":        `{"key":"k-1","reason":"fuzz","command":{"type":"PauseWorkflow","target":"execution:` + foreign + `"}}`,
		"agentReview":           `{"verdict":"ALLOW","reason":"fine"}`,
		"agentDelegate":         `{"kind":"CONSULT","key":"d-1","to":"nosuch","payload":{"q":1}}`,
		"agentAnswerDelegation": `{"answer":{"ok":true}}`,
	}
	var ops []hostileOp
	seenAgent := map[string]bool{}
	for path, item := range doc.Paths.Map() {
		for method, op := range item.Operations() {
			group := ""
			switch {
			case slices.Contains(op.Tags, "agent"):
				group = "agent"
			case strings.HasPrefix(path, "/api/supervisor-engines"):
				group = "engines"
			case strings.Contains(path, "/holds"):
				group = "holds"
			case slices.Contains(op.Tags, "supervisors"):
				group = "supervisors"
			case slices.Contains(op.Tags, "approvals"):
				group = "approvals"
			default:
				continue
			}
			o := hostileOp{id: op.OperationID, method: method, path: path, group: group, agent: group == "agent",
				valid: map[string]string{}, baseQuery: url.Values{}}
			if o.agent {
				seenAgent[o.id] = true
				if !slices.Contains(knownAgentOps, o.id) {
					t.Errorf("the spec has agent operation %s (%s %s) the barrage does not know: add it to knownAgentOps", o.id, method, path)
				}
			}
			params := append(openapi3.Parameters{}, item.Parameters...)
			params = append(params, op.Parameters...)
			for _, p := range params {
				switch p.Value.In {
				case "path":
					if !slices.Contains(o.pathParams, p.Value.Name) {
						o.pathParams = append(o.pathParams, p.Value.Name)
					}
				case "query":
					o.query = append(o.query, p.Value.Name)
				}
			}
			// Order path parameters as they appear in the path.
			sort.Slice(o.pathParams, func(i, j int) bool {
				return strings.Index(path, "{"+o.pathParams[i]+"}") < strings.Index(path, "{"+o.pathParams[j]+"}")
			})
			mutating := method != http.MethodGet
			for _, p := range o.pathParams {
				switch p {
				case "supervisorId":
					o.valid[p] = "agent"
					if mutating {
						o.valid[p] = scratchSupervisor
					}
				case "sessionId":
					o.valid[p] = "ci"
				case "workflowId":
					o.valid[p] = "nap"
				case "executionId":
					o.valid[p] = run
				case "type":
					o.valid[p] = "rules"
				default:
					o.valid[p] = unknownUUID
				}
			}
			for _, q := range o.query {
				if q == "wait" {
					o.baseQuery.Set("wait", "0")
				}
			}
			if o.id == "agentMCP" {
				continue // the MCP corpus drives it
			}
			if op.RequestBody != nil {
				b, ok := bodies[o.id]
				if !ok {
					t.Errorf("%s (%s %s) takes a body the barrage has no valid example of: add one", o.id, method, path)
					continue
				}
				o.body = b
			}
			ops = append(ops, o)
		}
	}
	for _, id := range knownAgentOps {
		if !seenAgent[id] {
			t.Errorf("knownAgentOps names %s, which the spec no longer has", id)
		}
	}
	slices.SortFunc(ops, func(a, b hostileOp) int { return strings.Compare(a.path+a.method, b.path+b.method) })
	if len(ops) < 30 {
		t.Fatalf("only %d supervision operations in the spec", len(ops))
	}
	return ops
}

// hostilePathValues are path parameter values, as sent (already escaped).
var hostilePathValues = []string{
	strings.Repeat("a", 65), strings.Repeat("x", 4000), "%00", "a%00b", "%ED%A0%80", "%ED%BF%BF", "%FF%FE", "%C3%28",
	"..%2F..%2Fetc", "..", "%2E%2E", url.PathEscape("ünïcödé"), "%E2%80%AE", "%E2%80%8B", url.PathEscape("𝔘"),
	"%20", "UPPER", "-lead", "_x", "0193b7a0-0000-7000-8000-00000000000", "00000000-0000-0000-0000-000000000000",
	"%25", "'%20OR%201=1--", "%7B%7D", "null", "1e400", "-1", "%5C", "a%2Fb",
}

// hostileQueryValues are query values, as sent (already escaped).
var hostileQueryValues = []string{
	"-1", "0", "99999999999999999999", "1.5", "1e3", "abc", "", "%00", "%ED%A0%80", "%FF", strings.Repeat("9", 400),
	"NaN", "0x10", "+5", "%205", "-0", "1e400", url.QueryEscape("ünï"), strings.Repeat("z", 3000), "true", "null", "%7B%7D",
}

func (h *hostileEnv) pathFor(o hostileOp, hostile map[string]string) string {
	p := o.path
	for _, name := range o.pathParams {
		v, ok := hostile[name]
		if !ok {
			v = url.PathEscape(o.valid[name])
		}
		p = strings.ReplaceAll(p, "{"+name+"}", v)
	}
	return p
}

func (h *hostileEnv) withQuery(o hostileOp, path, extra string) string {
	q := o.baseQuery.Encode()
	switch {
	case q != "" && extra != "":
		return path + "?" + q + "&" + extra
	case q != "":
		return path + "?" + q
	case extra != "":
		return path + "?" + extra
	}
	return path
}

// fixedCorpus sends o the corpus that does not depend on the seed.
func (h *hostileEnv) fixedCorpus(o hostileOp) {
	// Path parameters, one at a time.
	for _, name := range o.pathParams {
		for _, v := range hostilePathValues {
			h.send(o, h.withQuery(o, h.pathFor(o, map[string]string{name: v}), ""), "application/json", o.body, "path."+name+"="+v)
		}
	}
	// Query parameters, one at a time, and repeated.
	valid := h.pathFor(o, nil)
	for _, q := range o.query {
		for _, v := range hostileQueryValues {
			h.send(o, h.withQuery(o, valid, q+"="+v), "application/json", o.body, "query."+q+"="+v)
		}
		h.send(o, h.withQuery(o, valid, q+"=1&"+q+"=2"), "application/json", o.body, "query."+q+" repeated")
	}
	h.send(o, h.withQuery(o, valid, "nosuch=1&limit=-1&after=%00"), "application/json", o.body, "undeclared query")
	if o.body == "" {
		// A body where none is taken.
		if o.method != http.MethodGet {
			h.send(o, h.withQuery(o, valid, ""), "application/json", `{"x":1e400,"x":"\ud800"}`, "unexpected body")
		}
		return
	}
	for name, b := range hostileBodies(o) {
		ctype := "application/json"
		if strings.HasPrefix(name, "content-type ") {
			ctype = strings.TrimPrefix(name, "content-type ")
		}
		h.send(o, h.withQuery(o, valid, ""), ctype, b, "body: "+name)
	}
}

// hostileBodies derives the body corpus from o's valid body.
func hostileBodies(o hostileOp) map[string]string {
	limit := restBodyCap
	if o.agent {
		limit = agentBodyCap
	}
	var base map[string]any
	if err := json.Unmarshal([]byte(o.body), &base); err != nil {
		panic(o.id + ": " + err.Error())
	}
	keys := slices.Sorted(func(yield func(string) bool) {
		for k := range base {
			if !yield(k) {
				return
			}
		}
	})
	first := keys[0]
	inner := strings.TrimSuffix(strings.TrimPrefix(o.body, "{"), "}")
	with := func(member, raw string) string { // the base with member's value replaced by raw JSON text
		rest := map[string]json.RawMessage{}
		_ = json.Unmarshal([]byte(o.body), &rest)
		var b strings.Builder
		b.WriteString("{")
		b.WriteString(strconv.Quote(member) + ":" + raw)
		for _, k := range keys {
			if k != member {
				b.WriteString("," + strconv.Quote(k) + ":" + string(rest[k]))
			}
		}
		b.WriteString("}")
		return b.String()
	}
	deep := strings.Repeat(`{"a":`, 200) + "1" + strings.Repeat("}", 200)
	out := map[string]string{
		"empty":                   "",
		"whitespace":              "  \n ",
		"empty object":            "{}",
		"null":                    "null",
		"array":                   "[" + o.body + "]",
		"string":                  `"x"`,
		"number":                  "5",
		"repeated first member":   "{" + inner + "," + inner + "}",
		"1e400":                   with(first, "1e400"),
		"-0":                      with(first, "-0"),
		"nesting 200":             with(first, deep),
		"nesting 200 arrays":      with(first, strings.Repeat("[", 200)+strings.Repeat("]", 200)),
		"trailing object":         o.body + ` {}`,
		"trailing garbage":        o.body + `x`,
		"truncated":               o.body[:len(o.body)/2],
		"BOM":                     "\xef\xbb\xbf" + o.body,
		"unknown member":          with("zzUnknown", `1`),
		"long member name":        with(strings.Repeat("k", 5000), `1`),
		"NUL in a member name":    with("a\u0000b", `1`),
		"content-type text/plain": o.body,
		"content-type application/x-www-form-urlencoded": "a=1&b=2",
		"content-type application/json; charset=utf-16":  o.body,
		"content-type multipart/form-data; boundary=x":   "--x\r\n\r\n" + o.body + "\r\n--x--",
		"content-type ":                 o.body,
		"near the body cap":             with(first, `"`+strings.Repeat("a", limit-len(o.body)-64)+`"`),
		"over the body cap":             with(first, `"`+strings.Repeat("a", limit+1)+`"`),
		"a million commas":              "[" + strings.Repeat("1,", 20000) + "1]",
		"invalid UTF-8 outside strings": "{\xff}",
		"raw control characters":        "{\x01\x02}",
	}
	// Every member, whatever its depth, with hostile strings and wrong types.
	var walk func(prefix []string, v any)
	walk = func(prefix []string, v any) {
		name := strings.Join(prefix, ".")
		for label, raw := range map[string]string{
			"NUL escaped": `"a\u0000b"`, "NUL raw": "\"a\x00b\"", "lone surrogate": `"\ud800"`, "lone low surrogate": `"x\udfff"`,
			"invalid UTF-8": "\"\xff\xfe\"", "overlong UTF-8": "\"\xc0\xaf\"", "surrogate as UTF-8": "\"\xed\xa0\x80\"",
			"number": "5", "negative": "-1", "float": "1.5", "huge number": "1e400", "-0": "-0", "true": "true", "null": "null",
			"array": "[]", "object": "{}", "string": `"s"`, "empty string": `""`, "long string": `"` + strings.Repeat("é", 3000) + `"`,
		} {
			out[name+" "+label] = replaceAt(o.body, prefix, raw)
		}
		if m, ok := v.(map[string]any); ok {
			for k, c := range m {
				walk(append(slices.Clone(prefix), k), c)
			}
		}
	}
	for _, k := range keys {
		walk([]string{k}, base[k])
	}
	return out
}

// replaceAt is body with the value at path replaced by raw JSON text (which
// may be invalid on purpose).
func replaceAt(body string, path []string, raw string) string {
	const marker = "\x00HOSTILE\x00"
	var v map[string]any
	_ = json.Unmarshal([]byte(body), &v)
	m := v
	for _, k := range path[:len(path)-1] {
		m = m[k].(map[string]any)
	}
	m[path[len(path)-1]] = marker
	b, _ := json.Marshal(v)
	q, _ := json.Marshal(marker)
	return strings.Replace(string(b), string(q), raw, 1)
}

// mutate sends a seeded mutation of one of o's valid requests.
func (h *hostileEnv) mutate(o hostileOp) {
	path := h.pathFor(o, nil)
	body := o.body
	extra := ""
	what := ""
	switch k := h.rng.IntN(4); {
	case k == 0 && len(o.pathParams) > 0:
		name := o.pathParams[h.rng.IntN(len(o.pathParams))]
		v := h.mutateString(url.PathEscape(o.valid[name]), true)
		path = h.pathFor(o, map[string]string{name: v})
		what = "mutated path." + name + "=" + v
	case k == 1 && len(o.query) > 0:
		q := o.query[h.rng.IntN(len(o.query))]
		v := h.mutateString(hostileQueryValues[h.rng.IntN(len(hostileQueryValues))]+"1", true)
		extra = q + "=" + v
		what = "mutated query " + extra
	case body != "":
		body = h.mutateString(body, false)
		what = "mutated body " + strconv.Quote(body)
	default:
		extra = "limit=" + strconv.Itoa(h.rng.IntN(1<<20)-1<<19)
		what = "random limit " + extra
	}
	h.send(o, h.withQuery(o, path, extra), "application/json", body, what)
}

var mutationBytes = []byte("{}[]\",:\\0-.eE+ \x00\x7f\xff\xc3\xed\ta")

// mutateString applies 1 to 4 seeded byte edits to s; escaped edits keep
// it sendable in a URL.
func (h *hostileEnv) mutateString(s string, escaped bool) string {
	b := []byte(s)
	for range 1 + h.rng.IntN(4) {
		c := mutationBytes[h.rng.IntN(len(mutationBytes))]
		ins := []byte{c}
		if escaped {
			ins = []byte(fmt.Sprintf("%%%02X", c))
		}
		i := 0
		if len(b) > 0 {
			i = h.rng.IntN(len(b))
		}
		switch h.rng.IntN(4) {
		case 0: // insert
			b = slices.Insert(b, i, ins...)
		case 1: // replace
			if len(b) > 0 && !escaped {
				b[i] = c
			} else {
				b = slices.Insert(b, i, ins...)
			}
		case 2: // delete
			if len(b) > 0 {
				b = slices.Delete(b, i, i+1)
			}
		default: // duplicate a span
			if len(b) > 1 {
				j := i + h.rng.IntN(len(b)-i)
				b = slices.Insert(b, j, b[i:j]...)
			}
		}
	}
	if escaped {
		// A lone % or a byte the URL cannot carry would be the client's
		// refusal, not the server's: escape what is left unescaped.
		var out strings.Builder
		for i := 0; i < len(b); i++ {
			c := b[i]
			if c == '%' && i+2 < len(b) && isHex(b[i+1]) && isHex(b[i+2]) {
				out.WriteByte(c)
				continue
			}
			if c <= ' ' || c >= 0x7f || c == '%' || c == '#' || c == '?' || c == '&' || c == '/' {
				fmt.Fprintf(&out, "%%%02X", c)
				continue
			}
			out.WriteByte(c)
		}
		return out.String()
	}
	return string(b)
}

func isHex(c byte) bool { return strings.IndexByte("0123456789abcdefABCDEF", c) >= 0 }

// principals: the agent routes take the credential; every other route is
// sent as the ADMIN mostly (to reach the handlers), and as the OPERATOR,
// the VIEWER and the session-limited key now and then.
func (h *hostileEnv) principal(o hostileOp) string {
	if o.agent {
		return h.token
	}
	switch n := h.total() % 10; n {
	case 7:
		return testKeys["operator"]
	case 8:
		return testKeys["viewer"]
	case 9:
		return testKeys["limited"]
	}
	return testKeys["admin"]
}

// do sends one request and reads the whole answer (an event stream only to
// its headers).
func (h *hostileEnv) do(method, path, key, ctype string, body []byte) hostileAnswer {
	ctx, cancel := context.WithTimeout(context.Background(), hostileRequestTimeout)
	defer cancel()
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, h.s.URL+path, rd)
	if err != nil {
		return hostileAnswer{err: fmt.Errorf("the client cannot send it: %w", err)}
	}
	if ctype != "" && body != nil {
		req.Header.Set("Content-Type", ctype)
	}
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	if strings.HasSuffix(req.URL.Path, "/mcp") {
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set("Mcp-Protocol-Version", "2025-06-18")
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		return hostileAnswer{err: err}
	}
	defer res.Body.Close()
	a := hostileAnswer{status: res.StatusCode, ctype: res.Header.Get("Content-Type")}
	if strings.HasPrefix(a.ctype, "text/event-stream") && !strings.HasSuffix(req.URL.Path, "/mcp") {
		return a
	}
	a.body, a.err = io.ReadAll(res.Body)
	return a
}

// send sends one REST request and checks its answer.
func (h *hostileEnv) send(o hostileOp, path, ctype, body, what string) {
	var b []byte
	if body != "" || o.body != "" || ctype != "application/json" {
		b = []byte(body)
	}
	if o.method == http.MethodGet {
		b = nil
	}
	a := h.do(o.method, path, h.principal(o), ctype, b)
	h.count(o.group, a.status)
	where := fmt.Sprintf("%s %s %s (%s)", o.id, o.method, clipText(path, 160), clipText(what, 160))
	if a.err != nil {
		if strings.Contains(a.err.Error(), "the client cannot send it") {
			h.sent[o.group]-- // not sent
			return
		}
		h.offend("%s: no answer: %v", where, a.err)
		return
	}
	h.check(where, a)
	h.unchanged(where, a.status)
}

func (h *hostileEnv) count(group string, status int) {
	h.sent[group]++
	if h.statuses[group] == nil {
		h.statuses[group] = map[int]int{}
	}
	h.statuses[group][status]++
}

func (h *hostileEnv) offend(format string, args ...any) {
	h.offenses = append(h.offenses, fmt.Sprintf(format, args...))
}

// check holds a REST answer to the rules: below 500; an error is problem
// details that says what is wrong, in our words.
func (h *hostileEnv) check(where string, a hostileAnswer) {
	if a.status >= 500 {
		h.offend("%s: answered %d: %s", where, a.status, clipText(string(a.body), 400))
		return
	}
	h.leaks(where, a.body)
	if a.status < 400 {
		return
	}
	if !strings.HasPrefix(a.ctype, "application/problem+json") {
		h.offend("%s: a %d that is not problem details (%q): %s", where, a.status, a.ctype, clipText(string(a.body), 300))
		return
	}
	var p struct {
		Title, Detail string
		Status        int
		Errors        []struct{ Path, Message string }
	}
	if err := json.Unmarshal(a.body, &p); err != nil {
		h.offend("%s: a %d whose problem does not parse: %s", where, a.status, clipText(string(a.body), 300))
		return
	}
	if p.Status != a.status || p.Title == "" {
		h.offend("%s: a %d whose problem says status %d, title %q", where, a.status, p.Status, p.Title)
	}
	said := strings.TrimSpace(p.Detail)
	for _, e := range p.Errors {
		if e.Message == "" {
			h.offend("%s: a violation of %q with no message: %s", where, e.Path, clipText(string(a.body), 300))
		}
		said += " " + e.Path + " " + e.Message
	}
	if len(strings.TrimSpace(said)) < 12 {
		h.offend("%s: a %d that does not say what is wrong: %s", where, a.status, clipText(string(a.body), 300))
	}
	if a.status == 400 && len(p.Errors) == 0 && !namesSomething(said) {
		h.offend("%s: a 400 that names no field, parameter or next step: %s", where, clipText(string(a.body), 300))
	}
}

// namesSomething: a text that points at a member, a parameter or a next step.
func namesSomething(s string) bool {
	for _, w := range []string{"body", "query", "path", "parameter", "header", "Content-Type", "member", "field", "GET ", "POST ",
		"PUT ", "DELETE ", "Id", "id ", "limit", "cursor", "after", "wait", "use ", "send ", "give "} {
		if strings.Contains(s, w) {
			return true
		}
	}
	return false
}

// leaks records Go or PostgreSQL text in an answer (its JSON strings, and
// the raw bytes for anything that is not JSON).
func (h *hostileEnv) leaks(where string, body []byte) {
	texts := []string{string(body)}
	var v any
	if json.Unmarshal(body, &v) == nil {
		texts = append(texts, stringsIn(v)...)
	}
	for _, s := range texts {
		for _, bad := range leakText {
			if strings.Contains(s, bad) {
				h.offend("%s: the answer holds %q: %s", where, bad, clipText(string(body), 400))
				return
			}
		}
		for _, bad := range wholeLeak {
			if strings.TrimSpace(s) == bad {
				h.offend("%s: the answer is only %q: %s", where, bad, clipText(string(body), 400))
				return
			}
		}
	}
}

func stringsIn(v any) []string {
	switch x := v.(type) {
	case string:
		return []string{x}
	case []any:
		var out []string
		for _, e := range x {
			out = append(out, stringsIn(e)...)
		}
		return out
	case map[string]any:
		var out []string
		for _, e := range x {
			out = append(out, stringsIn(e)...)
		}
		return out
	}
	return nil
}

// unchanged: a refused request changed nothing; an accepted one moves the
// baseline (it may change the scratch supervisor, which the snapshot
// leaves out, and nothing else).
func (h *hostileEnv) unchanged(where string, status int) {
	now := h.snapshot()
	switch {
	case status >= 400 && now != h.baseline:
		h.offend("%s: refused with %d but changed state:\nbefore %s\nafter  %s", where, status, h.baseline, now)
	case now != h.baseline:
		h.changes = append(h.changes, fmt.Sprintf("%s: %d changed state:\nbefore %s\nafter  %s", where, status, h.baseline, now))
	}
	h.baseline = now
}

// snapshot is a digest of everything the barrage must leave alone: the
// supervisor "agent" and its credential, the runs, their nodes, commands,
// events and holds, the reviews, the delegations, the accepted directives
// and the sessions. Supervisors an accepted PUT creates (any valid id, such
// as "null" or "1e400") and the scratch supervisor are the barrage's own.
func (h *hostileEnv) snapshot() string {
	var s string
	err := h.db.QueryRow(context.Background(), `SELECT concat_ws(' ',
		'supervisors=' || (SELECT md5(coalesce(string_agg(id || spec::text || enabled::text || updated_at::text, ',' ORDER BY id), '')) FROM supervisors WHERE id = 'agent'),
		'credentials=' || (SELECT md5(coalesce(string_agg(supervisor_id || encode(token_hash, 'hex') || expires_at::text || array_to_string(allowed_addresses, ';'), ',' ORDER BY supervisor_id), '')) FROM supervisor_credentials WHERE supervisor_id = 'agent'),
		'runs=' || (SELECT md5(coalesce(string_agg(execution_id::text || status, ',' ORDER BY execution_id), '')) FROM executions),
		'nodes=' || (SELECT md5(coalesce(string_agg(execution_id::text || node_id || status, ',' ORDER BY execution_id, node_id), '')) FROM execution_nodes),
		'commands=' || (SELECT count(*) FROM commands),
		'holds=' || (SELECT md5(coalesce(string_agg(execution_id::text || supervisor_id, ',' ORDER BY execution_id, supervisor_id), '')) FROM supervisor_holds),
		'reviews=' || (SELECT md5(coalesce(string_agg(review_id::text || status, ',' ORDER BY review_id), '')) FROM supervisor_reviews),
		'delegations=' || (SELECT md5(coalesce(string_agg(delegation_id::text || status, ',' ORDER BY delegation_id), '')) FROM supervisor_delegations),
		'directives=' || (SELECT count(*) FROM supervisor_directives WHERE status <> 'rejected'),
		'sessions=' || (SELECT md5(coalesce(string_agg(session_id, ',' ORDER BY session_id), '')) FROM sessions),
		'run events=' || (SELECT count(*) FROM events WHERE execution_id IS NOT NULL))`).Scan(&s)
	if err != nil {
		h.t.Fatalf("snapshot: %v", err)
	}
	return s
}

func clipText(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + fmt.Sprintf("…(%d bytes)", len(s))
}

// mcpBaseArgs are arguments that reach a tool's handler and are refused by
// what they mean (or change nothing); a tool not named here gets arguments
// made from its input schema.
func mcpBaseArgs(run, foreign string) map[string]string {
	return map[string]string{
		"get_self":              `{}`,
		"read_signals":          `{"waitSeconds":0,"limit":5}`,
		"list_owned_executions": `{}`,
		"get_execution":         `{"executionId":"` + run + `"}`,
		"list_open_inputs":      `{}`,
		"send_directive":        `{"key":"m-1","reason":"fuzz","command":{"type":"PauseWorkflow","target":"execution:` + foreign + `"}}`,
		"answer_review":         `{"reviewId":"0193b7a0-0000-7000-8000-00000000f00d","verdict":"ALLOW"}`,
	}
}

// mcpCorpus drives the agent MCP: its envelope, and every tool of its
// tools/list with hostile arguments.
func (h *hostileEnv) mcpCorpus(run, foreign string) {
	const where = "/api/agent/v1/mcp"
	deep := strings.Repeat("[", 200) + strings.Repeat("]", 200)
	envelope := map[string]string{
		"empty": "", "open brace": "{", "empty batch": "[]", "batch of junk": "[{}, 1, null]", "no method": `{"jsonrpc":"2.0","id":1}`,
		"no params":        `{"jsonrpc":"2.0","id":1,"method":"tools/call"}`,
		"params null":      `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":null}`,
		"params array":     `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":[1]}`,
		"no name":          `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"arguments":{}}}`,
		"unknown tool":     `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"nosuch","arguments":{}}}`,
		"NUL tool":         `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"get_self\u0000","arguments":{}}}`,
		"surrogate tool":   `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"\ud800","arguments":{}}}`,
		"invalid UTF-8":    "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/call\",\"params\":{\"name\":\"\xff\",\"arguments\":{}}}",
		"id 1e400":         `{"jsonrpc":"2.0","id":1e400,"method":"tools/list"}`,
		"id object":        `{"jsonrpc":"2.0","id":{},"method":"tools/list"}`,
		"jsonrpc 1.0":      `{"jsonrpc":"1.0","id":1,"method":"tools/list"}`,
		"method surrogate": `{"jsonrpc":"2.0","id":1,"method":"\ud800"}`,
		"repeated method":  `{"jsonrpc":"2.0","id":1,"method":"tools/list","method":"tools/call"}`,
		"trailing data":    `{"jsonrpc":"2.0","id":1,"method":"tools/list"} {}`,
		"nesting 200":      `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"get_self","arguments":{"a":` + deep + `}}}`,
		"batch of 2000":    "[" + strings.Repeat(`{"jsonrpc":"2.0","id":1,"method":"tools/list"},`, 2000) + `{"jsonrpc":"2.0","id":2,"method":"tools/list"}]`,
		"over the cap":     `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"get_self","arguments":{"a":"` + strings.Repeat("a", agentBodyCap) + `"}}}`,
		"initialize junk":  `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":5,"capabilities":[],"clientInfo":"x"}}`,
		"not JSON":         "hello",
	}
	for _, name := range slices.Sorted(mapKeys(envelope)) {
		h.mcpSend("envelope: "+name, "application/json", envelope[name])
	}
	h.mcpSend("envelope: text/plain", "text/plain", `{"jsonrpc":"2.0","id":1,"method":"tools/list"}`)
	for _, m := range []string{http.MethodGet, http.MethodDelete, http.MethodPut} {
		a := h.do(m, where, h.token, "application/json", nil)
		h.count("agent-mcp", a.status)
		h.checkMCP(m+" "+where, a)
	}

	// tools/list: every tool, with its input schema.
	a := h.do(http.MethodPost, where, h.token, "application/json", []byte(`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`))
	var list struct {
		Result struct {
			Tools []struct {
				Name        string
				InputSchema struct {
					Properties map[string]struct {
						Type any
					}
					Required []string
				}
			}
		}
	}
	if a.status != 200 || json.Unmarshal(mcpPayload(a), &list) != nil || len(list.Result.Tools) == 0 {
		h.t.Fatalf("tools/list on the agent MCP: %d %s", a.status, a.body)
	}
	bases := mcpBaseArgs(run, foreign)
	values := []string{`5`, `-1`, `1.5`, `1e400`, `-0`, `true`, `null`, `[]`, `{}`, `""`, `"s"`, `"a\u0000b"`, "\"a\x00b\"", `"\ud800"`,
		`"x\udfff"`, "\"\xff\xfe\"", "\"\xed\xa0\x80\"", deep, `"` + strings.Repeat("é", 3000) + `"`,
		`"` + strings.Repeat("a", agentBodyCap-400) + `"`, `"` + strings.Repeat("a", agentBodyCap+1) + `"`, `"../../etc"`, `"` + strings.Repeat("9", 400) + `"`,
		`99999999999999999999`}
	for _, tool := range list.Result.Tools {
		base, ok := bases[tool.Name]
		if !ok {
			base = schemaArgs(tool.InputSchema.Properties, tool.InputSchema.Required)
		}
		props := slices.Sorted(mapKeys(tool.InputSchema.Properties))
		calls := map[string]string{
			"no arguments":      "",
			"arguments null":    `null`,
			"arguments array":   `[]`,
			"arguments string":  `"x"`,
			"unknown argument":  strings.TrimSuffix(base, "}") + sep(base) + `"zzUnknown":1}`,
			"repeated argument": strings.TrimSuffix(base, "}") + sep(base) + strings.TrimSuffix(strings.TrimPrefix(base, "{"), "}") + "}",
			"trailing":          base + " 1",
		}
		for _, p := range props {
			for i, v := range values {
				calls[fmt.Sprintf("%s=#%d %s", p, i, clipText(v, 24))] = withArg(base, p, v)
			}
		}
		// The nested members of the base (command.type, command.target).
		var b map[string]any
		_ = json.Unmarshal([]byte(base), &b)
		for k, v := range b {
			if m, ok := v.(map[string]any); ok {
				for nk := range m {
					for i, v := range values[:18] {
						calls[fmt.Sprintf("%s.%s=#%d", k, nk, i)] = replaceAt(base, []string{k, nk}, v)
					}
				}
			}
		}
		for _, name := range slices.Sorted(mapKeys(calls)) {
			args := calls[name]
			params := `{"name":` + strconv.Quote(tool.Name)
			if args != "" {
				params += `,"arguments":` + args
			}
			h.mcpSend(tool.Name+" "+name, "application/json", `{"jsonrpc":"2.0","id":`+strconv.Itoa(h.nextID())+`,"method":"tools/call","params":`+params+`}}`)
		}
	}
}

func sep(obj string) string {
	if strings.TrimSpace(obj) == "{}" {
		return ""
	}
	return ","
}

// withArg is the base arguments with p set to raw JSON text.
func withArg(base, p, raw string) string {
	var m map[string]any
	_ = json.Unmarshal([]byte(base), &m)
	if _, ok := m[p]; ok {
		return replaceAt(base, []string{p}, raw)
	}
	return strings.TrimSuffix(base, "}") + sep(base) + strconv.Quote(p) + ":" + raw + "}"
}

// schemaArgs makes arguments from an input schema: each required
// property a plain value of its type.
func schemaArgs(props map[string]struct{ Type any }, required []string) string {
	m := map[string]any{}
	for _, r := range required {
		switch fmt.Sprint(props[r].Type) {
		case "integer", "number":
			m[r] = 1
		case "boolean":
			m[r] = false
		case "object":
			m[r] = map[string]any{}
		case "array":
			m[r] = []any{}
		default:
			m[r] = "x"
		}
	}
	b, _ := json.Marshal(m)
	return string(b)
}

func mapKeys[V any](m map[string]V) func(func(string) bool) {
	return func(yield func(string) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	}
}

func (h *hostileEnv) nextID() int {
	h.mcpID++
	return h.mcpID
}

// mcpSend posts one JSON-RPC message to the agent MCP and checks the answer.
func (h *hostileEnv) mcpSend(what, ctype, body string) {
	a := h.do(http.MethodPost, "/api/agent/v1/mcp", h.token, ctype, []byte(body))
	h.count("agent-mcp", a.status)
	where := "agent MCP " + clipText(what, 120)
	if a.err != nil {
		h.offend("%s: no answer: %v", where, a.err)
		return
	}
	refused := h.checkMCP(where, a)
	status := 200
	if refused {
		status = 400
		h.mcpRefused++
	}
	h.unchanged(where, status)
}

// mcpPayload is the JSON-RPC message of an answer (JSON or one SSE event).
func mcpPayload(a hostileAnswer) []byte {
	if strings.HasPrefix(a.ctype, "text/event-stream") {
		for _, l := range strings.Split(string(a.body), "\n") {
			if d, ok := strings.CutPrefix(l, "data:"); ok {
				return []byte(strings.TrimSpace(d))
			}
		}
	}
	return a.body
}

// checkMCP holds an agent MCP answer to the rules and tells whether it
// refused the call.
func (h *hostileEnv) checkMCP(where string, a hostileAnswer) bool {
	if a.status >= 500 {
		h.offend("%s: answered %d: %s", where, a.status, clipText(string(a.body), 400))
		return true
	}
	h.leaks(where, a.body)
	if a.status >= 400 {
		if len(bytes.TrimSpace(a.body)) == 0 {
			h.offend("%s: a %d with an empty answer", where, a.status)
		}
		return true
	}
	if a.status == http.StatusAccepted || len(bytes.TrimSpace(a.body)) == 0 {
		return false // a notification or a response to none
	}
	var msg struct {
		Error *struct {
			Code    int
			Message string
		}
		Result *struct {
			IsError bool
			Content []struct{ Type, Text string }
		}
	}
	payload := mcpPayload(a)
	if bytes.HasPrefix(bytes.TrimSpace(payload), []byte("[")) {
		return true // a batch answer: checked for leaks above
	}
	if err := json.Unmarshal(payload, &msg); err != nil {
		h.offend("%s: a %d that is not a JSON-RPC message: %s", where, a.status, clipText(string(a.body), 300))
		return true
	}
	switch {
	case msg.Error != nil:
		if len(strings.TrimSpace(msg.Error.Message)) < 8 {
			h.offend("%s: a JSON-RPC error that does not say what is wrong: %s", where, clipText(string(a.body), 300))
		}
		return true
	case msg.Result != nil && msg.Result.IsError:
		var said string
		for _, c := range msg.Result.Content {
			said += c.Text
		}
		if len(strings.TrimSpace(said)) < 12 {
			h.offend("%s: a tool error that does not say what is wrong: %s", where, clipText(string(a.body), 300))
		}
		return true
	}
	return false
}
