package e2e

import (
	"bufio"
	"bytes"
	"encoding/json"
	"io"
	"maps"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/yukta/yukta/adapters/mcpserver"
	"github.com/yukta/yukta/adapters/postgres/pgtest"
	"github.com/yukta/yukta/api/apiclient"
	"github.com/yukta/yukta/domain/journal"
)

// customServerDir is the example a user copies to add their own node
// types and adapters (docs/extending.md).
const customServerDir = "../examples/custom-server"

// docHookURL is where the workflow of docs/extending.md posts; the test
// points it at its loopback service.
const docHookURL = "http://127.0.0.1:9000/hook"

// buildCustomServer builds examples/custom-server as a user would, with
// `go build` in its own module (its go.mod replaces this repository with
// ../..), into a temporary folder. -mod=readonly: the example's committed
// go.sum must list what it needs.
func buildCustomServer(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "custom-server")
	cmd := exec.Command("go", "build", "-mod=readonly", "-o", bin, ".")
	cmd.Dir = customServerDir
	cmd.Env = append(os.Environ(), "GOWORK=off", "GOFLAGS=")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build in %s: %v\n%s", customServerDir, err, out)
	}
	return bin
}

// hookCalls is a loopback service that records each call's Idempotency-Key
// and body, and answers 503 to the first call so the caller's retry shows.
type hookCalls struct {
	mu     sync.Mutex
	keys   []string
	bodies []string
}

func (h *hookCalls) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	h.mu.Lock()
	h.keys = append(h.keys, r.Header.Get("Idempotency-Key"))
	h.bodies = append(h.bodies, string(body))
	first := len(h.keys) == 1
	h.mu.Unlock()
	if first {
		http.Error(w, "try again", http.StatusServiceUnavailable)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

func (h *hookCalls) seen() ([]string, []string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	return slices.Clone(h.keys), slices.Clone(h.bodies)
}

// TestCustomServer builds examples/custom-server, boots it like the real
// binary, and runs a session through the node types it adds: UPPERCASE (a
// processor) and NOTIFY (an outbound call carrying the message's
// idempotency key), with the retry every processor gets; the audit sink it
// adds hears the run's journal records; list_plugins, get_plugin_details
// and GET /api/plugins describe the new types beside the built-ins. The Go
// blocks of docs/extending.md are the example's own code, and its workflow
// block is the workflow run here.
func TestCustomServer(t *testing.T) {
	t.Parallel()
	main, err := os.ReadFile(filepath.Join(customServerDir, "main.go"))
	if err != nil {
		t.Fatal(err)
	}
	workflow := ""
	for _, b := range testedBlocks(t, "docs/extending.md", "TestCustomServer", 4) {
		switch b.Info {
		case "go":
			if !bytes.Contains(main, []byte(b.Body)) {
				t.Errorf("%s: the block is not examples/custom-server/main.go's code; copy it from there:\n%s", b.where(), b.Body)
			}
		case "json":
			workflow = b.Body // the workflow this test runs
		default:
			t.Fatalf("%s: a %q block marked tested-by TestCustomServer; it reads only go and json blocks", b.where(), b.Info)
		}
	}
	if !strings.Contains(workflow, docHookURL) {
		t.Fatalf("docs/extending.md: the workflow block does not call %s, which this test replaces by its loopback service", docHookURL)
	}

	bin := buildCustomServer(t)
	hook := &hookCalls{}
	loop := httptest.NewServer(hook)
	t.Cleanup(loop.Close)
	audit := filepath.Join(t.TempDir(), "audit.jsonl")
	s := startServer(t, serverOptions{DSN: pgtest.NewDatabase(t), Binary: bin, Env: []string{"CUSTOM_SERVER_AUDIT_FILE=" + audit}})
	e := &env{t: t, s: s, c: s.Client, ctx: t.Context()}

	e.apply("custom", strings.ReplaceAll(workflow, docHookURL, loop.URL+"/hook"))
	eid := e.start("custom", "shout", map[string]any{"text": "hello, world"})
	x := e.waitStatus("custom", eid, apiclient.ExecutionStatusSUCCESS)
	if !sameJSON(x.Result, `{"text":"HELLO, WORLD"}`) {
		t.Errorf("result %s, want the text upper-cased", mustJSON(x.Result))
	}
	keys, bodies := hook.seen()
	if len(keys) != 2 || keys[0] != keys[1] || !strings.HasPrefix(keys[0], eid+":tell:") {
		t.Errorf("the loopback service saw Idempotency-Keys %q, want two calls (a 503, then the retry) with one key %s:tell:<item>", keys, eid)
	}
	for _, b := range bodies {
		if !sameJSON(json.RawMessage(b), `{"text":"HELLO, WORLD"}`) {
			t.Errorf("NOTIFY posted %s, want the upper-cased message", b)
		}
	}

	// The audit sink hears the run's journal records, its end among them.
	deadline := time.Now().Add(waitLimit)
	for {
		ended, n := auditedEnd(t, audit, eid)
		if ended {
			t.Logf("the audit sink heard %d records of %s, its end among them", n, eid)
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the audit file %s has %d records of %s and not its end after %s", audit, n, eid, waitLimit)
		}
		time.Sleep(50 * time.Millisecond)
	}

	// Its lines are the journal export's, byte for byte: once the export
	// has the run's checkpoint (signed in the round that journals its end),
	// every record the sink heard is in it, and the sink heard every one.
	var export []byte
	for deadline := time.Now().Add(waitLimit); ; {
		res, body := s.do(t, http.MethodGet, "/api/sessions/custom/executions/"+eid+"/journal", "", nil)
		if res.StatusCode != http.StatusOK {
			t.Fatalf("journal export: %d %s", res.StatusCode, body)
		}
		export = bytes.TrimSpace(body)
		if slices.ContainsFunc(bytes.Split(export, []byte("\n")), journal.IsCheckpointLine) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the journal of %s has no checkpoint after %s:\n%s", eid, waitLimit, export)
		}
		time.Sleep(50 * time.Millisecond)
	}
	journaled := map[string]bool{}
	for _, l := range bytes.Split(export, []byte("\n")) {
		if !journal.IsCheckpointLine(l) {
			journaled[string(l)] = true
		}
	}
	heard := auditedLines(t, audit, eid)
	if !maps.Equal(heard, journaled) {
		t.Errorf("the audit sink heard %d distinct records of the run, the journal has %d; they differ", len(heard), len(journaled))
	}

	// The catalogue describes the new types like the built-ins.
	cs := mustConnect(t, s.URL, "")
	var list mcpserver.PluginList
	mustCall(t, cs, "list_plugins", nil, &list)
	cats := map[string]string{}
	for _, p := range list.Plugins {
		cats[p.Type] = p.Category
	}
	if cats["UPPERCASE"] != "processor" || cats["NOTIFY"] != "processor" || cats["LOG"] != "processor" {
		t.Errorf("list_plugins: UPPERCASE %q, NOTIFY %q, LOG %q; want all three processors", cats["UPPERCASE"], cats["NOTIFY"], cats["LOG"])
	}
	var det mcpserver.PluginDetails
	mustCall(t, cs, "get_plugin_details", map[string]any{"type": "NOTIFY"}, &det)
	var fields []string
	for _, f := range det.ConfigFields {
		fields = append(fields, f.Name)
	}
	for _, want := range []string{"url", "timeout", "retry", "retry.maxAttempts"} {
		if !slices.Contains(fields, want) {
			t.Errorf("get_plugin_details NOTIFY: fields %v, want %s among them (the run fields every processor gets)", fields, want)
		}
	}
	if !strings.Contains(det.Usage, "Idempotency-Key") || !slices.Equal(det.Ports, []string{"default"}) {
		t.Errorf("get_plugin_details NOTIFY: usage %q ports %v", det.Usage, det.Ports)
	}
	// The guide teaches both paths that need no fork.
	var guide mcpserver.PluginGuide
	mustCall(t, cs, "get_plugin_creation_guide", map[string]any{"templateType": "processor"}, &guide)
	for _, want := range []string{"github.com/yukta/yukta/server", "server.WithNodeType", "docs/extending.md", "TASK", "/api/worker/v1", "docs/workers.md"} {
		if !strings.Contains(guide.Architecture+guide.Registration, want) {
			t.Errorf("get_plugin_creation_guide does not mention %s", want)
		}
	}
	if strings.Contains(guide.Architecture, "compiled into the server") || len(guide.Templates) != 2 || guide.Templates[0].File != "main.go" {
		t.Errorf("get_plugin_creation_guide: %q, templates %d; want no \"compiled into the server\" and main.go with the processor", guide.Architecture, len(guide.Templates))
	}

	res, body := s.do(t, http.MethodGet, "/api/plugins", "", nil)
	if res.StatusCode != http.StatusOK || !bytes.Contains(body, []byte(`"UPPERCASE"`)) || !bytes.Contains(body, []byte(`"NOTIFY"`)) {
		t.Errorf("GET /api/plugins: %d %s, want UPPERCASE and NOTIFY listed", res.StatusCode, body)
	}
	res, body = s.do(t, http.MethodGet, "/api/plugins/UPPERCASE", "", nil)
	if res.StatusCode != http.StatusOK || !bytes.Contains(body, []byte(`"field"`)) {
		t.Errorf("GET /api/plugins/UPPERCASE: %d %s, want its field described", res.StatusCode, body)
	}

	// A bad config of an added type is refused when applied, like a
	// built-in's, naming the field.
	res, body = s.do(t, http.MethodPut, "/api/sessions/bad", jsonType, []byte(`{"name":"bad","workflows":[`+
		line("w", nd("start", "MANUAL", ""), nd("tell", "NOTIFY", `{"url":"ftp://x"}`))+`]}`))
	if res.StatusCode != http.StatusBadRequest || !bytes.Contains(body, []byte("config.url")) {
		t.Errorf("NOTIFY with an ftp url: %d %s, want 400 naming config.url", res.StatusCode, body)
	}
}

// auditedLines returns the distinct lines of the audit file that are
// records of execution eid.
func auditedLines(t *testing.T, path, eid string) map[string]bool {
	t.Helper()
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]bool{}
	for _, l := range bytes.Split(bytes.TrimSpace(raw), []byte("\n")) {
		var r struct {
			ExecutionID string `json:"executionId"`
		}
		if err := json.Unmarshal(l, &r); err != nil {
			t.Fatalf("audit line %q: %v", l, err)
		}
		if r.ExecutionID == eid {
			out[string(l)] = true
		}
	}
	return out
}

// auditedEnd reads the audit sink's file: whether it holds the end of
// execution eid (an ExecutionStatusChanged to a final status), and how many
// of its records it holds.
func auditedEnd(t *testing.T, path, eid string) (bool, int) {
	t.Helper()
	f, err := os.Open(path)
	if os.IsNotExist(err) {
		return false, 0
	}
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	n, ended := 0, false
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 0, 64<<10), 4<<20)
	for sc.Scan() {
		var r struct {
			ExecutionID string `json:"executionId"`
			Event       struct {
				Type string         `json:"type"`
				Data map[string]any `json:"data"`
			} `json:"event"`
		}
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			t.Fatalf("audit line %q: %v", sc.Text(), err)
		}
		if r.ExecutionID != eid {
			continue
		}
		n++
		ended = ended || r.Event.Type == "ExecutionStatusChanged" && r.Event.Data["to"] == "SUCCESS"
	}
	return ended, n
}
