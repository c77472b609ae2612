package e2e

// The run view in a real Chromium against the real binary: nodes turn
// SUCCESS live, node pause / step / resume, a breakpoint with a condition,
// the log filter and follow, restart from a node, stop-all, a dropped event
// stream that resumes without losing an event, a VIEWER who is offered no
// control and refused when forcing one, and 10,000 node events with the
// page kept responsive.

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/chromedp"

	"github.com/yukta/yukta/api/apiclient"
)

// runLocation is the console's location of a run.
func runLocation(sid, eid string) string { return "/sessions/" + sid + "/executions/" + eid }

// press clicks the element sel matches (CSS) once it is visible and
// enabled. The click is dispatched to the element itself, so a page that
// moves while it is live (an answer appearing above) cannot send it
// elsewhere; click (console_admin_test.go) clicks with the mouse.
func (b *browser) press(sel string) {
	b.t.Helper()
	b.run("wait for "+sel, chromedp.WaitVisible(sel, chromedp.ByQuery), chromedp.WaitEnabled(sel, chromedp.ByQuery))
	b.eval(fmt.Sprintf(`document.querySelector(%q).dispatchEvent(new MouseEvent("click", {bubbles: true, cancelable: true, button: 0})), true`, sel), nil)
}

// waitRow waits until the node table's row of node has status and, when
// received ≥ 0, that many messages received.
func (b *browser) waitRow(node, status string, received int) {
	b.t.Helper()
	cond := fmt.Sprintf(`!!document.querySelector('tr[data-node-row=%q]')`, node)
	if status != "" {
		cond += fmt.Sprintf(` && document.querySelector('tr[data-node-row=%q]').dataset.status === %q`, node, status)
	}
	if received >= 0 {
		cond += fmt.Sprintf(` && document.querySelector('tr[data-node-row=%q]').dataset.received === "%d"`, node, received)
	}
	b.waitJS(cond, fmt.Sprintf("node %s %s received %d", node, status, received))
}

// answerOf waits for the answer of the Action named testid and returns it.
func (b *browser) answerOf(testid string) string {
	b.t.Helper()
	// The answer, or the problem, beside the button.
	expr := fmt.Sprintf(`(b => b && b.closest(".action").querySelector(".answer, .problem"))(document.querySelector('[data-testid=%q]'))`, testid)
	b.waitJS("!!"+expr, "the answer of "+testid)
	var s string
	b.eval(expr+".textContent", &s)
	return s
}

// eventCount is how many events the server holds for the execution.
func (e *accessEnv) eventCount(eid string) int {
	e.t.Helper()
	var n int
	if err := e.db.QueryRow(context.Background(), `SELECT count(*) FROM events WHERE execution_id = $1`, eid).Scan(&n); err != nil {
		e.t.Fatal(err)
	}
	return n
}

// pageMatchesServer waits until the page has seen every event the server
// holds for the run and shows every node's status and counters as the
// server reads them.
func (e *consoleEnv) pageMatchesServer(sid, eid string) {
	e.t.Helper()
	want := e.eventCount(eid)
	e.b.waitJS(fmt.Sprintf(`document.querySelector('[data-testid=run-view]').dataset.events === "%d"`, want),
		fmt.Sprintf("the page to have seen all %d events", want))
	x := e.get(sid, eid)
	var conds []string
	for _, n := range x.Nodes {
		attempts := ""
		if n.Attempts != nil {
			attempts = fmt.Sprint(*n.Attempts)
		}
		conds = append(conds, fmt.Sprintf(`(r => r && r.dataset.status === %q && r.dataset.received === "%d" && r.dataset.emitted === "%d" && r.dataset.attempts === %q)(document.querySelector('tr[data-node-row=%q]'))`,
			n.Status, n.Received, n.Emitted, attempts, n.NodeId))
	}
	conds = append(conds, fmt.Sprintf(`document.querySelector('[data-testid=run-view]').dataset.status === %q`, x.Status))
	e.b.waitJS(strings.Join(conds, " && "), "the page's nodes to equal the server's")
}

// TestConsoleRunOperator drives every control of the run view as an OPERATOR.
func TestConsoleRunOperator(t *testing.T) {
	e := newConsoleEnv(t)
	b := e.b
	b.acceptDialogs()
	e.apply("ops", splitFlow("w", "6s",
		nd("gate", "LOG", `{"message":"gate passed"}`),
		nd("a", "LOG", `{"message":"a passed"}`),
		nd("out", "RESULT", "")))
	items := []any{map[string]any{"id": "x"}, map[string]any{"id": "stop"}, map[string]any{"id": "y"}}
	id := e.start("ops", "w", map[string]any{"items": items})

	b.open(runLocation("ops", id))
	b.signIn(testKeys["operator"], "operator")
	b.waitJS(`document.querySelector('[data-testid=stream]')?.dataset.state === "live"`, "the stream to be live")
	b.eval(`window.__sameDocument = true`, nil)
	// start turns SUCCESS in the DAG while out is still PENDING.
	b.waitJS(`document.querySelector('g[data-node=start]')?.dataset.status === "SUCCESS"`, "start SUCCESS in the DAG")
	var outStatus string
	b.eval(`document.querySelector('g[data-node=out]').dataset.status`, &outStatus)
	if outStatus == "SUCCESS" {
		t.Fatal("out is SUCCESS before the delay passed")
	}
	var startedBy string
	b.eval(`document.querySelector('[data-testid=started-by]').textContent`, &startedBy)
	if !strings.Contains(startedBy, "key:admin") || !strings.Contains(startedBy, "rest") {
		t.Fatalf("started by %q, want key:admin via rest", startedBy)
	}

	// Pause gate, put it in step mode: the split's three messages wait at it.
	b.click(`g[data-node=gate]`)
	b.waitJS(`document.querySelector('[data-testid=node-panel]')?.dataset.node === "gate"`, "gate's panel")
	var where string
	b.eval(`location.search`, &where)
	if where != "?node=gate" {
		t.Fatalf("the selected node is not in the location: %q", where)
	}
	b.press(`[data-testid=node-pause]`)
	if a := b.answerOf("node-pause"); !strings.Contains(a, "applied") || !strings.Contains(a, "PAUSE") {
		t.Fatalf("node PAUSE answered %q", a)
	}
	b.waitRow("gate", "PAUSED", 0)
	b.waitText("PAUSE gate by key:operator via rest")
	b.press(`[data-testid=node-step-enable]`)
	if a := b.answerOf("node-step-enable"); !strings.Contains(a, "STEP_ENABLE applied") {
		t.Fatalf("STEP_ENABLE answered %q", a)
	}
	b.waitJS(`document.querySelector('tr[data-node-row=split]')?.dataset.emitted === "3"`, "split to emit 3")
	b.axe("run (running)")
	b.shot("run")
	b.waitRow("gate", "PAUSED", 0)
	b.press(`[data-testid=node-resume]`)
	if a := b.answerOf("node-resume"); !strings.Contains(a, "RESUME applied") {
		t.Fatalf("node RESUME answered %q", a)
	}
	b.waitRow("gate", "WAITING", 0)

	// The log: a bad pattern is refused with the server's sentence.
	b.setValue(`#log-pattern`, `(`)
	b.press(`[data-testid=log-apply]`)
	b.waitJS(`[...document.querySelectorAll('.logs .problem')].some(p => p.textContent.includes("400"))`, "the server's 400 for a bad regex")
	b.setValue(`#log-pattern`, `gate pass(ed|ing)`)
	b.press(`[data-testid=log-apply]`)
	b.waitJS(`document.querySelector('[data-testid=log-lines]')?.children.length === 0 && !document.querySelector('.logs .problem')`, "no gate lines yet")

	// One step, one message: gate and out received 1, the rest wait.
	b.press(`[data-testid=node-step]`)
	if a := b.answerOf("node-step"); !strings.Contains(a, "STEP applied") {
		t.Fatalf("STEP answered %q", a)
	}
	b.waitRow("out", "", 1)
	b.waitRow("gate", "WAITING", 1)
	// Follow shows the new line without another Apply.
	b.waitJS(`document.querySelector('[data-testid=log-lines]')?.children.length === 1`, "the followed log to show gate's line")

	// A breakpoint with a condition on a: the next message (id stop) hits it.
	b.press(`g[data-node=a]`)
	b.waitJS(`document.querySelector('[data-testid=node-panel]')?.dataset.node === "a"`, "a's panel")
	b.setValue(`#bp-condition`, `payload.id == "stop"`)
	b.press(`[data-testid=bp-set]`)
	if a := b.answerOf("bp-set"); !strings.Contains(a, "BREAKPOINT applied") {
		t.Fatalf("set breakpoint answered %q", a)
	}
	b.waitJS(`document.querySelector('[data-testid=node-breakpoint]')?.textContent.includes('payload.id == "stop"')`, "the breakpoint shown")
	b.press(`g[data-node=gate]`)
	b.press(`[data-testid=node-step]`)
	b.waitRow("gate", "WAITING", 2)
	b.waitRow("a", "PAUSED", -1)
	b.waitJS(`document.querySelector('tr[data-node-row=a]').textContent.includes("breakpoint hit")`, "a's breakpoint hit")
	b.waitJS(`document.querySelector('[data-testid=log-lines]')?.children.length === 2`, "the followed log to show the second gate line")
	// Clear it, resume a, leave step mode: the run ends SUCCESS.
	b.press(`g[data-node=a]`)
	b.waitJS(`!!document.querySelector('[data-testid=node-hit]')`, "the hit in a's panel")
	b.press(`[data-testid=bp-clear]`)
	if a := b.answerOf("bp-clear"); !strings.Contains(a, "BREAKPOINT_CLEAR applied") {
		t.Fatalf("clear breakpoint answered %q", a)
	}
	b.press(`[data-testid=node-resume]`)
	if a := b.answerOf("node-resume"); !strings.Contains(a, "node a: RESUME applied") {
		t.Fatalf("RESUME of a answered %q", a)
	}
	b.waitRow("out", "", 2)
	b.press(`g[data-node=gate]`)
	b.press(`[data-testid=node-step-disable]`)
	b.waitJS(`document.querySelector('[data-testid=run-view]').dataset.status === "SUCCESS"`, "the run SUCCESS")
	e.pageMatchesServer("ops", id)
	var same bool
	b.eval(`window.__sameDocument === true`, &same)
	if !same {
		t.Fatal("the page reloaded: the run view must update in place")
	}
	for _, cmd := range []string{"STEP_ENABLE gate", "BREAKPOINT a", "BREAKPOINT_CLEAR a", "RESUME a", "STEP_DISABLE gate"} {
		b.waitText(cmd)
	}
	b.axe("run (finished)")

	// Restart from gate: a new run that starts at gate, linked both ways.
	b.press(`[data-testid=run-restart-from]`)
	a := b.answerOf("run-restart-from")
	if !strings.Contains(a, "restarted from node gate") {
		t.Fatalf("RESTART_FROM_NODE answered %q", a)
	}
	b.waitJS(`!!document.querySelector('[data-testid=result-run]')`, "the new run's link in the commands")
	var newID string
	b.eval(`document.querySelector('[data-testid=result-run]').textContent`, &newID)
	b.press(`[data-testid=result-run]`)
	b.waitJS(fmt.Sprintf(`location.pathname === %q`, runLocation("ops", newID)), "the new run's page")
	b.waitJS(`document.querySelector('[data-testid=run-view]')?.dataset.status === "SUCCESS"`, "the restarted run SUCCESS")
	b.waitJS(fmt.Sprintf(`document.querySelector('[data-testid=restart-of]')?.textContent === %q`, id), "restart of the first run")
	b.waitText("from node gate")
	b.waitRow("start", "SKIPPED", -1)
	b.waitRow("out", "SUCCESS", 3)
	// A plain restart of a run that started at a node is refused: the
	// server's 409 and its sentence are shown beside the button.
	b.press(`[data-testid=run-restart]`)
	if a := b.answerOf("run-restart"); !strings.Contains(a, "409") || !strings.Contains(a, "has no trigger that received its payload") {
		t.Fatalf("RESTART of a restart-from-node run answered %q", a)
	}
	b.waitJS(`[...document.querySelectorAll('[data-testid=commands] li')].some(li => li.dataset.action === "RESTART" && li.dataset.outcome === "rejected")`,
		"the rejected RESTART in the commands")
	// Back to the first run, whose restart is applied.
	b.press(`[data-testid=restart-of]`)
	b.waitJS(fmt.Sprintf(`location.pathname === %q && document.querySelector('[data-testid=run-view]')?.dataset.status === "SUCCESS"`, runLocation("ops", id)), "the first run again")
	b.press(`[data-testid=run-restart]`)
	if a := b.answerOf("run-restart"); !strings.Contains(a, "applied: restarted as execution") {
		t.Fatalf("RESTART answered %q", a)
	}
	b.waitJS(`[...document.querySelectorAll('[data-testid=commands] li')].some(li => li.dataset.action === "RESTART" && li.dataset.outcome === "applied" && li.textContent.includes("key:operator"))`,
		"the applied RESTART in the commands")
}

// TestConsoleRunStopAllAndResume: the event stream dropped mid-run (the
// browser offline) resumes with Last-Event-ID and misses nothing; stop-all
// from the page stops every run of the workflow.
func TestConsoleRunStopAllAndResume(t *testing.T) {
	ae := newAccessEnv(t)
	cut := newCutProxy(t, ae.s.URL)
	e := &consoleEnv{accessEnv: ae, b: newBrowser(t, cut.url)}
	b := e.b
	b.acceptDialogs()
	e.apply("halt", heldFlow("w", "60s"))
	first := e.startHeld("halt", "w", map[string]any{"n": 1})
	second := e.startHeld("halt", "w", map[string]any{"n": 2})

	b.open(runLocation("halt", first))
	b.signIn(testKeys["operator"], "operator")
	b.waitJS(`document.querySelector('[data-testid=stream]')?.dataset.state === "live"`, "the stream to be live")
	e.pageMatchesServer("halt", first)

	// The connection is cut and the browser offline: commands sent
	// meanwhile write events the page has not seen.
	b.run("go offline", network.EmulateNetworkConditions(true, 0, -1, -1))
	cut.cutAll()
	b.waitJS(`document.querySelector('[data-testid=stream]').dataset.state === "reconnecting"`, "the stream to drop")
	e.mustCtlNode("halt", first, "mid", apiclient.NodeCommand{Action: apiclient.NodeCommandActionPAUSE, Reason: ptr("while offline")})
	e.mustCtlNode("halt", first, "out", apiclient.NodeCommand{Action: apiclient.NodeCommandActionSTEPENABLE})
	b.run("go online", network.EmulateNetworkConditions(false, 0, -1, -1))
	b.waitJS(`document.querySelector('[data-testid=stream]').dataset.reconnects === "1" && document.querySelector('[data-testid=stream]').dataset.state === "live"`,
		"the stream to resume")
	e.pageMatchesServer("halt", first)
	b.waitText("PAUSE mid by key:admin via rest")
	b.waitText("reason: while offline")

	// Run pause and resume; node skip and unskip: each answered, each listed with who sent it.
	b.press(`[data-testid=run-pause]`)
	if a := b.answerOf("run-pause"); !strings.Contains(a, "applied: execution paused") {
		t.Fatalf("run PAUSE answered %q", a)
	}
	b.waitJS(`document.querySelector('[data-testid=run-view]').dataset.status === "PAUSED"`, "the run PAUSED")
	b.press(`[data-testid=run-resume]`)
	if a := b.answerOf("run-resume"); !strings.Contains(a, "applied") {
		t.Fatalf("run RESUME answered %q", a)
	}
	b.waitJS(`document.querySelector('[data-testid=run-view]').dataset.status === "RUNNING"`, "the run RUNNING again")
	b.press(`g[data-node=mid]`)
	b.press(`[data-testid=node-skip]`)
	if a := b.answerOf("node-skip"); !strings.Contains(a, "SKIP applied") {
		t.Fatalf("node SKIP answered %q", a)
	}
	b.waitJS(`document.querySelector('[data-testid=node-flags]')?.textContent.includes("skipped")`, "mid skipped")
	b.press(`[data-testid=node-unskip]`)
	if a := b.answerOf("node-unskip"); !strings.Contains(a, "UNSKIP applied") {
		t.Fatalf("node UNSKIP answered %q", a)
	}
	b.waitText("UNSKIP mid by key:operator via rest")
	// A refusal is shown as the server wrote it: STEP without step mode.
	if code, body, _ := call(t, e.s, http.MethodPost, "/api/sessions/halt/executions/"+first+"/nodes/mid/control", testKeys["operator"], []byte(`{"action":"STEP"}`)); code != http.StatusConflict {
		t.Fatalf("STEP without step mode: %d %s", code, body)
	}
	b.waitJS(`[...document.querySelectorAll('[data-testid=commands] li')].some(li => li.dataset.action === "STEP" && li.dataset.outcome === "rejected")`,
		"the rejected STEP in the commands")

	// A breakpoint by field and value; equals that is not JSON is named
	// before anything is sent; a condition that does not compile is the
	// server's 400.
	b.press(`g[data-node=out]`)
	b.waitJS(`document.querySelector('[data-testid=node-panel]')?.dataset.node === "out"`, "out's panel")
	b.setValue(`#bp-field`, "n")
	b.setValue(`#bp-equals`, "{")
	b.waitJS(`document.querySelector('#bp-equals-error')?.textContent.includes("not JSON") && document.querySelector('[data-testid=bp-set]').disabled`, "equals named as not JSON")
	b.setValue(`#bp-equals`, "1")
	b.press(`[data-testid=bp-set]`)
	if a := b.answerOf("bp-set"); !strings.Contains(a, "node out: BREAKPOINT applied") {
		t.Fatalf("set breakpoint answered %q", a)
	}
	b.waitJS(`document.querySelector('[data-testid=node-breakpoint]')?.textContent === "n = 1"`, "the breakpoint n = 1")
	b.setValue(`#bp-condition`, "payload.n ==")
	b.press(`[data-testid=bp-set]`)
	if a := b.answerOf("bp-set"); !strings.Contains(a, "400") || !strings.Contains(a, "condition") {
		t.Fatalf("a condition that does not compile answered %q", a)
	}
	b.waitJS(`document.querySelector('[data-testid=node-breakpoint]')?.textContent === "n = 1"`, "the breakpoint unchanged")

	// Stop-all with KILL from the page.
	b.setValue(`#stop-mode`, "KILL")
	b.press(`[data-testid=stop-all]`)
	a := b.answerOf("stop-all")
	if !strings.Contains(a, "KILL sent to 2 execution(s) of workflow w") {
		t.Fatalf("stop-all answered %q", a)
	}
	b.waitJS(`document.querySelector('[data-testid=run-view]').dataset.status === "STOPPED"`, "the run STOPPED")
	for _, id := range []string{first, second} {
		if x := e.get("halt", id); x.Status != apiclient.ExecutionStatusSTOPPED {
			t.Fatalf("run %s is %s after stop-all", id, x.Status)
		}
	}
	e.pageMatchesServer("halt", first)
	b.waitText("STOP_ALL (workflow) KILL by key:operator via rest")
}

// cutProxy forwards TCP connections to a server and can cut every open
// one, as a network that drops does: the browser's event stream then ends
// mid-run and the page must resume it.
type cutProxy struct {
	url   string
	mu    sync.Mutex
	conns map[net.Conn]bool
}

func newCutProxy(t *testing.T, target string) *cutProxy {
	t.Helper()
	u, err := url.Parse(target)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &cutProxy{url: "http://" + ln.Addr().String(), conns: map[net.Conn]bool{}}
	t.Cleanup(func() { ln.Close(); p.cutAll() })
	go func() {
		for {
			in, err := ln.Accept()
			if err != nil {
				return
			}
			out, err := net.Dial("tcp", u.Host)
			if err != nil {
				in.Close()
				continue
			}
			p.mu.Lock()
			p.conns[in], p.conns[out] = true, true
			p.mu.Unlock()
			go func() { _, _ = io.Copy(out, in); out.Close() }()
			go func() { _, _ = io.Copy(in, out); in.Close() }()
		}
	}()
	return p
}

// cutAll closes every connection open through the proxy.
func (p *cutProxy) cutAll() {
	p.mu.Lock()
	defer p.mu.Unlock()
	for c := range p.conns {
		c.Close()
	}
	clear(p.conns)
}

// TestConsoleRunViewer: a VIEWER sees the run but no control, and a control
// forced from the page with the tab's key is refused and changes nothing.
func TestConsoleRunViewer(t *testing.T) {
	e := newConsoleEnv(t)
	b := e.b
	e.apply("look", heldFlow("w", "60s"))
	id := e.startHeld("look", "w", map[string]any{"n": 1})
	b.open(runLocation("look", id) + "?node=mid")
	b.signIn(testKeys["viewer"], "viewer")
	b.waitJS(`document.querySelector('[data-testid=node-panel]')?.dataset.node === "mid"`, "mid's panel")
	b.waitJS(`document.querySelector('[data-testid=stream]')?.dataset.state === "live"`, "the stream to be live")
	var controls int
	b.eval(`document.querySelectorAll('.run-view button[data-testid]:not([data-testid^=log-]), .run-controls, .node-controls, #bp-condition').length`, &controls)
	if controls != 0 {
		t.Fatalf("a VIEWER is offered %d control(s)", controls)
	}
	before := e.counts()
	var status int
	b.eval(fmt.Sprintf(`fetch(%q, {method: "POST", headers: {"Authorization": "Bearer " + sessionStorage.getItem("yukta.key"), "Content-Type": "application/json"},
		body: JSON.stringify({action: "STOP", mode: "KILL"})}).then(r => r.status)`, "/api/sessions/look/executions/"+id+"/control"), &status)
	if status != http.StatusForbidden {
		t.Fatalf("a VIEWER's forced STOP answered %d, want 403", status)
	}
	b.eval(fmt.Sprintf(`fetch(%q, {method: "POST", headers: {"Authorization": "Bearer " + sessionStorage.getItem("yukta.key"), "Content-Type": "application/json"},
		body: JSON.stringify({})}).then(r => r.status)`, "/api/sessions/look/workflows/w/stop"), &status)
	if status != http.StatusForbidden {
		t.Fatalf("a VIEWER's forced stop-all answered %d, want 403", status)
	}
	e.assertUnchanged("a VIEWER's forced controls", before)
	if x := e.get("look", id); x.Status != apiclient.ExecutionStatusRUNNING {
		t.Fatalf("after the VIEWER's refused STOP the run is %s", x.Status)
	}
	// The run is drawn with its own edges: a session applied since that
	// drops mid changes the workflow, not the run.
	e.apply("look", line("w", nd("start", "MANUAL", ""), nd("out", "RESULT", "")))
	if x := e.get("look", id); x.Edges == nil || len(*x.Edges) != 3 {
		t.Fatalf("the run's edges after the session changed: %+v, want its three", x.Edges)
	}
	b.run("reload", chromedp.Reload())
	b.waitJS(`document.querySelectorAll('.dag .edge').length === 3 && !!document.querySelector('g[data-node=mid]')`, "the run's own three edges")
	b.axe("run (viewer)")
	// Narrow (400 px): nothing but the DAG and the tables (which scroll in
	// their own boxes) is wider than the screen.
	b.run("narrow", emulation.SetDeviceMetricsOverride(400, 800, 1, true))
	var wide int
	b.eval(`document.documentElement.scrollWidth`, &wide)
	if wide > 400 {
		t.Fatalf("at 400 px the page is %d px wide", wide)
	}
	b.axe("run (narrow)")
	b.run("wide again", emulation.ClearDeviceMetricsOverride())
	// Dark: the same page with prefers-color-scheme: dark.
	b.run("emulate dark", emulation.SetEmulatedMedia().WithFeatures([]*emulation.MediaFeature{{Name: "prefers-color-scheme", Value: "dark"}}))
	b.axe("run (dark)")
	b.shot("run-dark")
}

// TestConsoleRunManyEvents: a run writing 10,000 node events while the run
// view is open. A node event is written when a node's status changes, not
// per message, so the events come from steering: eight idle nodes are paused
// and resumed 5,000 times in all (PENDING → PAUSED → PENDING, two node
// events and four command events per cycle), then the run is let through
// to SUCCESS. It measures the main thread's long tasks and the time from the
// run's end to the page showing SUCCESS with the server's counters.
func TestConsoleRunManyEvents(t *testing.T) {
	e := newConsoleEnv(t, "YUKTA_RATE_LIMIT_KEY=off", "YUKTA_RATE_LIMIT_SOURCE=off")
	b := e.b
	const fan, cycles = 8, 5000
	nodes := []string{nd("start", "MANUAL", ""), nd("wait", "DELAY", `{"duration":"2s"}`), nd("hold", "LOG", `{"message":"hold"}`), nd("out", "RESULT", "")}
	edges := []string{ed("start", "wait", ""), ed("wait", "hold", "")}
	for i := range fan {
		id := fmt.Sprintf("n%d", i)
		nodes = append(nodes, nd(id, "LOG", `{"message":"fan"}`))
		edges = append(edges, ed("hold", id, ""), ed(id, "out", ""))
	}
	e.apply("many", wf("w", nodes, edges))
	id := e.start("many", "w", map[string]any{"k": 1})
	e.mustCtlNode("many", id, "hold", apiclient.NodeCommand{Action: apiclient.NodeCommandActionPAUSE})
	b.open(runLocation("many", id))
	b.signIn(testKeys["viewer"], "viewer")
	b.waitJS(`document.querySelector('[data-testid=stream]')?.dataset.state === "live"`, "the stream to be live")
	e.pageMatchesServer("many", id)
	before := len(b.longTasks())

	began := time.Now()
	ctlPath := func(node string) string { return "/api/sessions/many/executions/" + id + "/nodes/" + node + "/control" }
	var wg sync.WaitGroup
	for i := range fan {
		node := fmt.Sprintf("n%d", i)
		wg.Go(func() {
			for range cycles / fan {
				for _, action := range []string{"PAUSE", "RESUME"} {
					if code, body, _ := call(t, e.s, http.MethodPost, ctlPath(node), testKeys["admin"], []byte(`{"action":"`+action+`"}`)); code != http.StatusOK {
						t.Errorf("%s %s: %d %s", action, node, code, body)
						return
					}
				}
			}
		})
	}
	wg.Wait()
	if t.Failed() {
		t.FailNow()
	}
	steering := time.Since(began)
	e.mustCtlNode("many", id, "hold", apiclient.NodeCommand{Action: apiclient.NodeCommandActionRESUME})
	x := e.waitStatus("many", id, apiclient.ExecutionStatusSUCCESS)
	ended := time.Now()
	e.pageMatchesServer("many", id)
	shown := time.Since(ended)
	lt := b.longTasks()[before:]
	total, worst := 0.0, 0.0
	for _, d := range lt {
		total += d
		worst = max(worst, d)
	}
	events := e.eventCount(id)
	nodeEvents := 0
	if err := e.db.QueryRow(context.Background(), `SELECT count(*) FROM events WHERE execution_id = $1 AND type = 'NodeStatusChanged'`, id).Scan(&nodeEvents); err != nil {
		t.Fatal(err)
	}
	t.Logf("run view open through %d events (%d NodeStatusChanged) written in %s (%.0f events/s): %d long task(s), %.0f ms in all, worst %.0f ms; "+
		"SUCCESS with the server's counters shown %s after the run ended (run took %s)",
		events, nodeEvents, steering.Round(time.Millisecond), float64(events)/steering.Seconds(), len(lt), total, worst,
		shown.Round(time.Millisecond), x.EndedAt.Sub(x.StartedAt).Round(time.Millisecond))
	if nodeEvents < 10000 {
		t.Fatalf("the run wrote %d node events, want at least 10,000", nodeEvents)
	}
	// A reload replays every event from the start.
	b.run("reload", chromedp.Reload())
	b.run("wait", chromedp.WaitVisible(`[data-testid=run-view]`, chromedp.ByQuery))
	began = time.Now()
	e.pageMatchesServer("many", id)
	lt = b.longTasks()
	t.Logf("a reload replayed %d events and showed the final counters in %s; %d long task(s) (long tasks restart with the document: %v ms)",
		events, time.Since(began).Round(time.Millisecond), len(lt), lt)
}

// TestConsoleRunSpendErrorRetry: the spend workers reported, a floor and
// its gap named where one did not report; a failed run's error, and a node
// RETRY from the page that starts a new run.
func TestConsoleRunSpendErrorRetry(t *testing.T) {
	e := newConsoleEnv(t)
	b := e.b
	w := &workerEnv{env: e.env, w: keyedClient(t, e.s, testKeys["worker"])}
	e.apply("pay",
		line("w", nd("start", "MANUAL", ""), nd("split", "SPLIT", `{"field":"items"}`), nd("ask", "TASK", taskFlow), nd("out", "RESULT", "")),
		line("bad", nd("start", "MANUAL", ""), nd("boom", "FAIL", `{"message":"card declined"}`), nd("out", "RESULT", "")))
	id := e.start("pay", "w", map[string]any{"items": []int{1, 2}})
	b.open(runLocation("pay", id))
	b.signIn(testKeys["operator"], "operator")
	b.waitJS(`document.querySelector('[data-testid=stream]')?.dataset.state === "live"`, "the stream to be live")
	// One task reports its usage and cost, the other nothing.
	first := w.pollOne("q1")
	res, err := w.w.CompleteTaskWithResponse(w.ctx, first.TaskId, apiclient.CompleteTaskJSONRequestBody{LeaseToken: first.LeaseToken, Output: map[string]any{"ok": 1},
		Usage: &apiclient.TaskUsage{Input: 1200, Output: 300, TokensKnown: true},
		Cost:  &apiclient.TaskCost{Usd: 0.0125, UsdKnown: true, Provenance: apiclient.TaskCostProvenanceReported}})
	if err != nil || res.StatusCode() != http.StatusOK {
		t.Fatalf("complete with usage: %v %s", err, res.Body)
	}
	second := w.pollOne("q1")
	if code, body := w.complete(second, map[string]any{"ok": 2}); code != http.StatusOK {
		t.Fatalf("complete: %d %s", code, body)
	}
	b.waitJS(`document.querySelector('[data-testid=run-view]')?.dataset.status === "SUCCESS"`, "the run SUCCESS")
	e.pageMatchesServer("pay", id)
	b.waitJS(`!!document.querySelector('[data-testid=spend]')`, "the spend")
	var spend string
	b.eval(`document.querySelector('[data-testid=spend]').innerText`, &spend)
	for _, want := range []string{"1200 / 300 (floor)", "$0.0125 reported (floor)", "Usage missing for: ask", "Cost missing for: ask"} {
		if !strings.Contains(spend, want) {
			t.Fatalf("the spend shows:\n%s\nwant %q", spend, want)
		}
	}
	b.axe("run (spend)")

	// A failed run: its error, and a RETRY of the failed node.
	bad := e.start("pay", "bad", map[string]any{"card": "x"})
	e.waitStatus("pay", bad, apiclient.ExecutionStatusFAILURE)
	b.open(runLocation("pay", bad) + "?node=boom")
	b.waitJS(`document.querySelector('[data-testid=run-view]')?.dataset.status === "FAILURE"`, "the run FAILURE")
	b.waitJS(`document.querySelector('[data-testid=run-error]')?.textContent.includes("card declined")`, "the run's error")
	e.pageMatchesServer("pay", bad)
	if x := e.get("pay", bad); x.Nodes[1].Attempts == nil || *x.Nodes[1].Attempts != 1 {
		t.Fatalf("boom's attempts: %v, want 1", x.Nodes[1].Attempts)
	}
	// MCP's status read counts the same attempts.
	if st := waitTerminal(t, mustConnect(t, e.s.URL, testKeys["viewer"]), "pay", bad); st.Nodes[1].Attempts == nil || *st.Nodes[1].Attempts != 1 {
		t.Fatalf("get_workflow_status: boom's attempts %v, want 1", st.Nodes[1].Attempts)
	}
	b.press(`[data-testid=node-retry]`)
	if a := b.answerOf("node-retry"); !strings.Contains(a, "applied: node boom retried in new execution") {
		t.Fatalf("RETRY answered %q", a)
	}
	b.waitJS(`[...document.querySelectorAll('[data-testid=commands] li')].some(li => li.dataset.action === "RETRY" && li.dataset.outcome === "applied" && li.querySelector('[data-testid=result-run]'))`,
		"the RETRY and its new run in the commands")
}
