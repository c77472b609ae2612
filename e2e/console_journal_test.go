package e2e

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"
	"github.com/jackc/pgx/v5"

	"github.com/yukta/yukta/api/apiclient"
)

// TestConsoleJournal: the journal tab verifies the run's export in the
// browser (WebCrypto, canonical JSON) and shows the server's own answer
// beside it. A finished run is VALID; a record edited in the database
// (triggers off, as an attacker who owns the database would) is INVALID at
// that sequence, in the browser as on the server; the run verifies VALID
// again once the record is put back; a run still going has no checkpoint
// yet and is UNANCHORED. The download is the export byte for byte.
func TestConsoleJournal(t *testing.T) {
	e := newConsoleEnv(t)
	b := e.b
	sid, id := "alpha", e.execs["alpha"]
	if v := e.verifyJournalIn(sid, id); v.Result != apiclient.VALID {
		t.Fatalf("the server does not verify the finished run's journal: %+v", v)
	}
	b.open("/sessions/" + sid + "/executions/" + id + "/journal")
	b.signIn(testKeys["viewer"], "viewer")
	browserResult(b, "VALID", "")
	var server, agreement string
	b.eval(`document.querySelector("[data-testid=server-result]").dataset.result`, &server)
	b.eval(`document.querySelector("[data-testid=agreement]").textContent`, &agreement)
	if server != "VALID" || !strings.Contains(agreement, "agree.") {
		t.Fatalf("the server's answer %q, agreement %q", server, agreement)
	}

	// The page read as many records as the export holds, and offers the
	// export's exact bytes (their SHA-256 is shown beside the download).
	code, export, _ := call(t, e.s, http.MethodGet, "/api/sessions/"+sid+"/executions/"+id+"/journal", testKeys["viewer"], nil)
	if code != http.StatusOK {
		t.Fatalf("export: %d %s", code, export)
	}
	lines := strings.Split(strings.TrimSuffix(string(export), "\n"), "\n")
	sum := sha256.Sum256(export)
	var records, fileSum string
	b.eval(`document.querySelector("[data-testid=browser-result]").dataset.records`, &records)
	b.eval(`document.querySelector("[data-testid=file-sha256]").textContent`, &fileSum)
	if records != strconv.Itoa(len(lines)-1) || fileSum != hex.EncodeToString(sum[:]) {
		t.Fatalf("the page has %s records and file sha256 %s; the export has %d lines (one the checkpoint) and sha256 %x", records, fileSum, len(lines), sum)
	}
	var download string
	b.eval(`document.querySelector("[data-testid=download-journal]").getAttribute("download")`, &download)
	if download != "journal-"+id+".ndjson" {
		t.Fatalf("download name %q", download)
	}
	// A record opens to its JSON and the exact line that was verified.
	b.run("open record 1", chromedp.Click(`#rec-1`, chromedp.ByID))
	b.waitJS(`document.querySelector("#rec-1-json pre.line")?.textContent === `+strconv.Quote(lines[0]), "record 1's exported line")
	// Going to a sequence opens it; one the journal lacks is named as such.
	b.run("go to 99", chromedp.SendKeys(`#goto-seq`, "99", chromedp.ByID), chromedp.Click(`//button[text()="Show"]`, chromedp.BySearch))
	b.waitText("Sequence: the journal has no record 99.")
	b.run("go to 3", chromedp.SetValue(`#goto-seq`, "", chromedp.ByID), chromedp.SendKeys(`#goto-seq`, "3", chromedp.ByID),
		chromedp.Click(`//button[text()="Show"]`, chromedp.BySearch))
	b.waitJS(`!!document.getElementById("rec-3-json") && document.getElementById("goto-seq-error").textContent === ""`, "record 3 opened")
	b.run("open record 1 again", chromedp.Click(`#rec-1`, chromedp.ByID))
	b.waitJS(`!!document.getElementById("rec-1-json")`, "record 1 opened")
	b.axe("journal")
	b.shot("journal")
	// Dark, and narrow: still AA, and nothing wider than the screen.
	b.run("dark", emulation.SetEmulatedMedia().WithFeatures([]*emulation.MediaFeature{{Name: "prefers-color-scheme", Value: "dark"}}))
	b.axe("journal (dark)")
	b.run("narrow", chromedp.EmulateViewport(400, 800))
	var wide int
	b.eval(`document.documentElement.scrollWidth`, &wide)
	if wide > 400 {
		t.Errorf("at 400 px the page is %d px wide", wide)
	}
	b.axe("journal (narrow)")
	b.run("back to 1280×800, light", emulation.ClearDeviceMetricsOverride(), emulation.SetEmulatedMedia().WithFeatures([]*emulation.MediaFeature{}))

	// Tamper with record 2 in the database, as its owner could.
	const bad = 2
	original := tamperJournal(t, e.accessEnv, id, bad, func(l string) string { return strings.Replace(l, `"actor":"`, `"actor":"x`, 1) })
	b.run("verify again", chromedp.Click(`//button[text()="Verify again"]`, chromedp.BySearch))
	browserResult(b, "INVALID", strconv.Itoa(bad))
	var reason, serverBad string
	b.eval(`document.querySelector("[data-testid=browser-result] .reason").textContent`, &reason)
	b.waitJS(`document.querySelector("[data-testid=server-result]")?.dataset.result === "INVALID"`, "the server to answer INVALID")
	b.eval(`document.querySelector("[data-testid=server-result]").dataset.firstBad`, &serverBad)
	if reason != "digest_mismatch" || serverBad != strconv.Itoa(bad) {
		t.Fatalf("browser reason %q, server first bad %q; want digest_mismatch at %d on both", reason, serverBad, bad)
	}
	// The sequence named is a link to the record, highlighted.
	b.run("show the bad record", chromedp.Click(`[data-testid=browser-result] button.link`, chromedp.ByQuery))
	b.waitJS(fmt.Sprintf(`document.querySelector("tr.bad")?.dataset.seq === "%d" && !!document.getElementById("rec-%d-json")`, bad, bad), "the bad record shown")
	b.axe("journal (invalid)")
	b.shot("journal-invalid")

	// Put it back: VALID again.
	tamperJournal(t, e.accessEnv, id, bad, func(string) string { return original })
	b.run("verify again", chromedp.Click(`//button[text()="Verify again"]`, chromedp.BySearch))
	browserResult(b, "VALID", "")

	// A run still going: its journal has no checkpoint yet.
	e.apply(sid, wf("wf", []string{nd("start", "MANUAL", ""), nd("log", "LOG", `{"message":"hello"}`)}, []string{ed("start", "log", "")}),
		line("slow", nd("start", "MANUAL", ""), nd("wait", "DELAY", `{"duration":"30s"}`), nd("out", "RESULT", "")))
	slow := e.start(sid, "slow", nil)
	e.waitNode(sid, slow, "start", "done", func(n apiclient.ExecutionNode) bool { return n.Status == apiclient.NodeStatusSUCCESS })
	waitRunJournaled(t, e, sid, slow)
	b.open("/sessions/" + sid + "/executions/" + slow + "/journal")
	browserResult(b, "UNANCHORED", "")
	b.eval(`document.querySelector("[data-testid=browser-result] .reason").textContent`, &reason)
	b.eval(`document.querySelector("[data-testid=server-result]").dataset.result`, &server)
	if reason != "no_checkpoint" || server != "UNANCHORED" {
		t.Fatalf("a running run: browser reason %q, server %q", reason, server)
	}
	b.axe("journal (unanchored)")
	if r, err := e.c.ControlExecutionWithResponse(e.ctx, sid, slow, nil, apiclient.ExecutionCommand{Action: apiclient.ExecutionCommandActionSTOP}); err != nil || r.JSON200 == nil {
		t.Fatalf("stop: %v %v", err, r)
	}
	e.waitExec(sid, slow, "the end", func(x apiclient.Execution) bool { return x.EndedAt != nil })
	b.cspClean()

	// An answer that holds an integer no double holds, a float and text that
	// encoders escape differently: the journal keeps the integer's digits,
	// its digest covers them, and Chromium's verifier (JSON source text, not
	// a rounded double) finds the run VALID and shows the digits.
	e.apply(sid, wf("wf", []string{nd("start", "MANUAL", ""), nd("log", "LOG", `{"message":"hello"}`)}, []string{ed("start", "log", "")}),
		wf("ask", []string{nd("start", "MANUAL", ""), nd("q", "INPUT_REQUEST", `{"prompt":"how many?","mode":"answer"}`), nd("out", "RESULT", "")},
			[]string{ed("start", "q", ""), ed("q", "out", "")}))
	asked := e.start(sid, "ask", nil)
	inputID := openInputIn(t, e, sid, asked)
	const exact = `9007199254740993`
	answer := `{"answer":{"count":` + exact + `,"ratio":0.1,"big":-123456789012345678901234567890,"note":"<b>&\u2028 \ud83d\ude00"}}`
	if code, body, _ := call(t, e.s, http.MethodPost, "/api/inputs/"+inputID, testKeys["operator"], []byte(answer)); code != http.StatusOK {
		t.Fatalf("answer: %d %s", code, body)
	}
	e.waitStatus(sid, asked, apiclient.ExecutionStatusSUCCESS)
	if v := e.verifyJournalIn(sid, asked); v.Result != apiclient.VALID {
		t.Fatalf("server: %+v", v)
	}
	code, export, _ = call(t, e.s, http.MethodGet, "/api/sessions/"+sid+"/executions/"+asked+"/journal", testKeys["viewer"], nil)
	if code != http.StatusOK || !strings.Contains(string(export), `"count":`+exact) {
		t.Fatalf("the export does not hold %s exactly (%d):\n%s", exact, code, export)
	}
	b.open("/sessions/" + sid + "/executions/" + asked + "/journal")
	browserResult(b, "VALID", "")
	var answered string
	b.eval(`(() => { const r = [...document.querySelectorAll(".records tbody tr")].find(r => r.textContent.includes("InputAnswered")); return r ? r.dataset.seq : ""; })()`, &answered)
	if answered == "" {
		t.Fatal("no InputAnswered record in the list")
	}
	b.run("open the answer", chromedp.Click(`#rec-`+answered, chromedp.ByID))
	b.waitJS(`document.getElementById("rec-`+answered+`-json")?.querySelector("pre.json")?.textContent.includes('"count": `+exact+`')`, "the answer's integer shown exactly")

	// Where the page gets no WebCrypto (plain HTTP on a LAN address is not a
	// secure context), it says so and claims nothing; the server's answer is
	// still shown, labelled as the server's.
	nb := newBrowser(t, e.s.URL)
	nb.run("take WebCrypto away", chromedp.ActionFunc(func(ctx context.Context) error {
		_, err := page.AddScriptToEvaluateOnNewDocument(`Object.defineProperty(Crypto.prototype, "subtle", { get() { return undefined; } });`).Do(ctx)
		return err
	}))
	nb.open("/sessions/" + sid + "/executions/" + id + "/journal")
	nb.signIn(testKeys["viewer"], "viewer")
	browserResult(nb, "UNAVAILABLE", "")
	nb.waitText("not a secure context")
	nb.eval(`document.querySelector("[data-testid=server-result]").dataset.result`, &server)
	if server != "VALID" {
		t.Fatalf("without WebCrypto the server's answer is %q", server)
	}
	nb.axe("journal (no WebCrypto)")
}

// TestConsoleJournalLong measures the in-browser verification of a long
// journal (a 500-node chain, the most a workflow may have: a record per node and a few more) for docs/benchmarks.md, and the main thread's
// long tasks meanwhile.
func TestConsoleJournalLong(t *testing.T) {
	e := newConsoleEnv(t)
	b := e.b
	const sid, n = "alpha", 500 // the most nodes a workflow may have
	nodes := []string{nd("start", "MANUAL", "")}
	for i := range n - 1 {
		nodes = append(nodes, nd(fmt.Sprintf("n%03d", i), "LOG", `{"message":"step"}`))
	}
	e.apply(sid, line("long", nodes...))
	id := e.start(sid, "long", map[string]any{"n": 1})
	e.waitStatus(sid, id, apiclient.ExecutionStatusSUCCESS)
	if v := e.verifyJournalIn(sid, id); v.Result != apiclient.VALID {
		t.Fatalf("server: %+v", v)
	}
	b.open("/sessions/" + sid + "/executions/" + id + "/journal")
	b.waitText("API key")
	atSignIn := len(b.longTasks())
	b.signIn(testKeys["viewer"], "viewer")
	browserResult(b, "VALID", "")
	var records, ms string
	b.eval(`document.querySelector("[data-testid=browser-result]").dataset.records`, &records)
	b.eval(`document.querySelector("[data-testid=browser-result]").dataset.ms`, &ms)
	var rows int
	b.eval(`document.querySelectorAll(".records tbody tr").length`, &rows)
	if rows > 100 {
		t.Fatalf("%d rows drawn at once: the records are not paged", rows)
	}
	lt := b.longTasks()
	t.Logf("journal of a %d-node run: %s records verified in the browser in %s ms; long tasks while the console loaded %v ms, "+
		"while the journal loaded, was verified and drawn %v ms", n, records, ms, lt[:atSignIn], lt[atSignIn:])
	atAgain := len(lt)
	for run := 2; run <= 4; run++ { // again, warm
		b.run("verify again", chromedp.Click(`//button[text()="Verify again"]`, chromedp.BySearch))
		b.waitJS(fmt.Sprintf(`document.querySelector("[data-testid=browser-result]")?.dataset.run === "%d"`, run), "verification to end")
		browserResult(b, "VALID", "")
		b.eval(`document.querySelector("[data-testid=browser-result]").dataset.ms`, &ms)
		t.Logf("again: %s ms", ms)
	}
	t.Logf("long tasks while verifying again: %v ms", b.longTasks()[atAgain:])
}

// browserResult waits for the badge computed in the browser to read result
// (and, when firstBad is set, to name that sequence).
func browserResult(b *browser, result, firstBad string) {
	b.t.Helper()
	cond := fmt.Sprintf(`(() => { const r = document.querySelector("[data-testid=browser-result]");
  return !!r && !document.querySelector(".verdict[aria-busy=true]") && r.dataset.result === %q && (%q === "" || r.dataset.firstBad === %q); })()`, result, firstBad, firstBad)
	b.waitJS(cond, "the browser's verdict "+result+" "+firstBad)
}

// tamperJournal rewrites one stored record line with the append-only
// triggers off and returns the line it had.
func tamperJournal(t *testing.T, e *accessEnv, id string, seq int, edit func(string) string) string {
	t.Helper()
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, e.db.Config().ConnConfig.ConnString())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	var before string
	if err := conn.QueryRow(ctx, `SELECT line FROM journal_records WHERE execution_id = $1 AND sequence = $2`, id, seq).Scan(&before); err != nil {
		t.Fatal(err)
	}
	after := edit(before)
	if after == before {
		t.Fatalf("the edit changes nothing in record %d: %s", seq, before)
	}
	if _, err := conn.Exec(ctx, `SET session_replication_role = replica`); err != nil { // triggers off
		t.Fatal(err)
	}
	if tag, err := conn.Exec(ctx, `UPDATE journal_records SET line = $3 WHERE execution_id = $1 AND sequence = $2`, id, seq, after); err != nil || tag.RowsAffected() != 1 {
		t.Fatalf("tamper with record %d: %v %v", seq, tag, err)
	}
	return before
}

// waitRunJournaled waits until the observer has journaled every event of the run so far.
func waitRunJournaled(t *testing.T, e *consoleEnv, sid, id string) {
	t.Helper()
	deadline := time.Now().Add(waitLimit)
	for {
		r, err := e.c.VerifyJournalWithResponse(e.ctx, sid, id)
		if err != nil || r.JSON200 == nil {
			t.Fatalf("verify: %v %v", err, r)
		}
		if r.JSON200.LagEvents == 0 && r.JSON200.Sequence > 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the observer did not catch up: %+v", *r.JSON200)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// openInputIn waits for the run's open input and returns its id.
func openInputIn(t *testing.T, e *consoleEnv, sid, execID string) string {
	t.Helper()
	deadline := time.Now().Add(waitLimit)
	for {
		r, err := e.c.ListInputsWithResponse(e.ctx, &apiclient.ListInputsParams{SessionId: ptr(sid)})
		if err != nil || r.JSON200 == nil {
			t.Fatalf("inputs: %v %v", err, r)
		}
		for _, in := range r.JSON200.Inputs {
			if in.ExecutionId == execID {
				return in.InputId
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("execution %s asked for no input", execID)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
