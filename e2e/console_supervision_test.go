package e2e

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/chromedp"

	"github.com/yukta/yukta/api/apiclient"
)

// The console's supervision pages: the inputs inbox, the approvals queue,
// the supervisors and a run's holds, driven in a real Chromium against the
// real binary.

// askSchema is the schema of the input the form is drawn from: a string, an
// enum, an integer with bounds and a boolean.
const askSchema = `{"type":"object","required":["name","color","count","urgent"],"properties":{
	"name":{"type":"string","minLength":2,"description":"who receives it"},
	"color":{"type":"string","enum":["red","green","blue"]},
	"count":{"type":"integer","minimum":1,"maximum":10},
	"urgent":{"type":"boolean"}}}`

// richSchema has the parts the form draws besides fields (an array of
// strings, a nested object with a pattern, a date-time, an optional nested
// object left out) and one it cannot (oneOf), which gets a JSON editor.
const richSchema = `{"type":"object","required":["tags","to"],"properties":{
	"tags":{"type":"array","minItems":1,"items":{"type":"string","minLength":1}},
	"to":{"type":"object","required":["city"],"properties":{"city":{"type":"string"},"zip":{"type":"string","pattern":"^[0-9]{6}$"}}},
	"when":{"type":"string","format":"date-time"},
	"gift":{"type":"object","required":["note"],"properties":{"note":{"type":"string"}}},
	"extra":{"oneOf":[{"type":"integer"},{"type":"string"}]}}}`

// supervisionWorld is the console's server (keys, sessions alpha and beta
// with a finished run each) with the session "forms" (a run asks for an
// input), the session "naps" (runs that wait two minutes), a rules
// supervisor "approver" that parks every STOP on naps for an ADMIN and an
// agent supervisor "holder" that may Hold runs of naps.
type supervisionWorld struct {
	*consoleEnv
	w *holdsWorld
}

func newSupervisionWorld(t *testing.T) *supervisionWorld {
	e := newConsoleEnv(t)
	rw := &reviewWorld{t: t, s: e.s, db: e.db, key: testKeys["admin"]}
	w := &holdsWorld{&agentWorld{reviewWorld: rw}}
	e.apply("forms", wf("ask", []string{
		nd("start", "MANUAL", ""),
		nd("ask", "INPUT_REQUEST", `{"prompt":"Ship the parcel?","mode":"answer","schema":`+askSchema+`}`),
		nd("done", "RESULT", ""),
	}, []string{ed("start", "ask", ""), ed("ask", "done", "")}), wf("rich", []string{
		nd("start", "MANUAL", ""),
		nd("ask", "INPUT_REQUEST", `{"prompt":"Where to, and when?","mode":"answer","schema":`+richSchema+`}`),
		nd("done", "RESULT", ""),
	}, []string{ed("start", "ask", ""), ed("ask", "done", "")}))
	w.put("/api/sessions/naps", napSession("naps"))
	w.put("/api/supervisors/approver", []byte(`{"name":"Approver","owns":["session:naps"],
		"engine":{"type":"rules","settings":{"schemaVersion":1,"rules":[
		{"id":"ask-a-person","requireApproval":{"command":"StopWorkflow","reason":"a person decides stops"}}]}}}`))
	w.put("/api/supervisors/holder", []byte(`{"name":"Holder","owns":["session:naps"],"allowedCommands":["Hold","Release"],
		"engine":{"type":"http","settings":{}}}`))
	st, b, _ := call(t, e.s, "POST", "/api/supervisors/holder/credential", testKeys["admin"], nil)
	var c struct{ Token string }
	if st != 201 || json.Unmarshal(b, &c) != nil {
		t.Fatalf("issue the holder's credential: %d %s", st, b)
	}
	w.token = c.Token
	return &supervisionWorld{consoleEnv: e, w: w}
}

// parkedStop has an OPERATOR stop a napping run of naps and waits until the
// approver parked the STOP for an ADMIN; it returns the run and the review.
func (sw *supervisionWorld) parkedStop(reason string) (run, review string) {
	t := sw.t
	t.Helper()
	run = sw.w.napping("naps")
	body, _ := json.Marshal(map[string]any{"action": "STOP", "mode": "CANCEL", "reason": reason})
	st, b, _ := call(t, sw.s, "POST", "/api/sessions/naps/executions/"+run+"/control", testKeys["operator"], body)
	var out struct{ ReviewId string }
	if st != 202 || json.Unmarshal(b, &out) != nil || out.ReviewId == "" {
		t.Fatalf("an OPERATOR's STOP of %s: %d %s, want 202 under review", run, st, b)
	}
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		if sw.w.review(out.ReviewId)["status"] == "AWAITING_APPROVAL" {
			return run, out.ReviewId
		}
		if time.Now().After(deadline) {
			t.Fatalf("review %s never waited for approval: %v", out.ReviewId, sw.w.review(out.ReviewId))
		}
	}
}

// fill sets a field's value as a user's typing would (an input event; a
// change event for a select), so the page's handlers see it.
func (b *browser) fill(sel, value string) {
	b.t.Helper()
	var ok bool
	b.eval(fmt.Sprintf(`(() => {
  const el = document.querySelector(%q);
  if (!el) return false;
  const proto = el instanceof HTMLTextAreaElement ? HTMLTextAreaElement.prototype : el instanceof HTMLSelectElement ? HTMLSelectElement.prototype : HTMLInputElement.prototype;
  Object.getOwnPropertyDescriptor(proto, "value").set.call(el, %q);
  el.dispatchEvent(new Event(el instanceof HTMLSelectElement ? "change" : "input", { bubbles: true }));
  return true;
})()`, sel, value), &ok)
	if !ok {
		b.t.Fatalf("no field %s on the page", sel)
	}
}

// forced sends a request from the page with the tab's key, as a user could
// from the developer tools, and returns the status.
func (b *browser) forced(method, path, body string) int {
	b.t.Helper()
	var st int
	b.eval(fmt.Sprintf(`fetch(%q, {method: %q, headers: {"Authorization": "Bearer " + sessionStorage.getItem("yukta.key"), "Content-Type": "application/json"}, body: %s}).then(r => r.status)`,
		path, method, map[bool]string{true: "undefined", false: fmt.Sprintf("%q", body)}[body == ""]), &st)
	return st
}

func (b *browser) signOut() {
	b.t.Helper()
	b.run("sign out", chromedp.Click(`[data-testid=who] button`, chromedp.ByQuery), chromedp.WaitVisible(`#key`, chromedp.ByID))
}

// TestConsoleSupervision: an OPERATOR answers an input through the form
// drawn from its schema (a value below the minimum is refused in the form
// before anything is sent, and when sent anyway the server's 400 names the
// field) and the run finishes SUCCESS with the answer; an ADMIN approves a
// parked STOP (the run stops) and denies another with a reason (recorded
// in the review); a supervisor's page shows its engine, state, credential
// metadata and refusals; a dry run reports what the rules would have sent;
// an ADMIN releases a hold from the run's holds page and the run resumes; a
// VIEWER sees every page without a control, and a decision it forces from
// the page is refused with 403. axe finds nothing serious on any page.
func TestConsoleSupervision(t *testing.T) {
	sw := newSupervisionWorld(t)
	b := sw.b

	// The world: an input waiting, two parked STOPs, a held run and a
	// refused directive.
	ask := sw.start("forms", "ask", map[string]any{"order": 7})
	inputID := inputOf(t, sw, ask)
	approveRun, approveID := sw.parkedStop("stop the first nap")
	denyRun, denyID := sw.parkedStop("stop the second nap")
	held := sw.w.napping("naps")
	sw.w.hold("hold-1", held)
	waitUntil(t, "the held run to pause", func() bool { return sw.w.status("naps", held) == "PAUSED" })
	st, body, _ := sw.w.agent("POST", "/directives", fmt.Appendf(nil, `{"key":"not-mine","reason":"try a stop","command":{"type":"StopWorkflow","target":"execution:%s","mode":"KILL"}}`, held))
	if st < 400 {
		t.Fatalf("a StopWorkflow the holder may not send: %d %s, want refused", st, body)
	}

	// A VIEWER sees every page without a control; what it forces is refused.
	{
		b.open("/inputs")
		b.signIn(testKeys["viewer"], "viewer")
		b.waitText("Ship the parcel?")
		if n := b.count(`[data-testid=answer-form]`); n != 0 {
			t.Errorf("a VIEWER is offered %d answer forms", n)
		}
		b.axe("inputs (viewer)")
		b.open("/approvals")
		b.waitText("stop the first nap")
		if n := b.count(`[data-testid=approve], [data-testid=deny]`); n != 0 {
			t.Errorf("a VIEWER is offered %d approve/deny buttons", n)
		}
		b.axe("approvals (viewer)")
		if st := b.forced("POST", "/api/approvals/"+approveID, `{"decision":"APPROVE","reason":"a viewer tries"}`); st != 403 {
			t.Errorf("a VIEWER's approve forced from the page: %d, want 403", st)
		}
		if st := b.forced("POST", "/api/inputs/"+inputID, `{"answer":{}}`); st != 403 {
			t.Errorf("a VIEWER's answer forced from the page: %d, want 403", st)
		}
		b.open("/sessions/naps/executions/" + held + "/holds")
		b.waitText("the holder looks at it")
		if n := b.count(`[data-testid=release]`); n != 0 {
			t.Errorf("a VIEWER is offered %d release buttons", n)
		}
		if st := b.forced("DELETE", "/api/sessions/naps/executions/"+held+"/holds/holder", ""); st != 403 {
			t.Errorf("a VIEWER's release forced from the page: %d, want 403", st)
		}
		b.open("/supervisors/holder")
		b.waitText("An ADMIN reads the refusals")
		if n := b.count(`[data-testid=dry-run]`); n != 0 {
			t.Errorf("a VIEWER is offered the dry run")
		}
		if s := sw.w.review(approveID)["status"]; s != "AWAITING_APPROVAL" {
			t.Fatalf("after the VIEWER's attempt the review is %v", s)
		}
		b.signOut()
	}

	// An OPERATOR answers through the form.
	{
		b.signIn(testKeys["operator"], "operator")
		began := time.Now()
		b.open("/inputs")
		b.waitText("Ship the parcel?")
		t.Logf("inputs page: drawn %d ms after navigation", time.Since(began).Milliseconds())
		card := fmt.Sprintf(`[data-input=%q]`, inputID)
		field := func(name string) string { return card + ` [id$="-` + name + `"]` }
		// Four labelled fields, the required ones marked.
		for _, f := range []string{"name", "color", "count", "urgent"} {
			var labelled bool
			b.eval(fmt.Sprintf(`(() => { const el = document.querySelector(%q); return !!el && !!document.querySelector('label[for="' + el.id + '"]') && el.closest(".sf-field").querySelector(".req") !== null; })()`, field(f)), &labelled)
			if !labelled {
				t.Errorf("field %s is missing, unlabelled or not marked required", f)
			}
		}
		var kinds string
		b.eval(fmt.Sprintf(`[%q,%q,%q,%q].map(s => { const el = document.querySelector(s); return el.tagName + ":" + (el.type || ""); }).join(" ")`,
			field("name"), field("color"), field("count"), field("urgent")), &kinds)
		if kinds != "INPUT:text SELECT:select-one INPUT:number INPUT:checkbox" {
			t.Errorf("the fields drawn: %s, want a text input, a select, a number input and a checkbox", kinds)
		}
		b.run("fill the form",
			chromedp.SendKeys(field("name"), "Ada", chromedp.ByQuery),
			chromedp.SendKeys(field("count"), "0", chromedp.ByQuery),
			chromedp.Click(field("urgent"), chromedp.ByQuery))
		b.fill(field("color"), "1") // green
		b.axe("inputs")
		b.shot("inputs")

		// Below the minimum: refused in the form, nothing sent.
		b.run("send", chromedp.Click(card+` [data-testid=send-answer]`, chromedp.ByQuery))
		b.waitJS(fmt.Sprintf(`(document.querySelector(%q) || {}).innerText?.includes("must be at least 1")`, card+` [data-field-error="count"]`), "the form to refuse count")
		if _, body, _ := call(t, sw.s, "GET", "/api/inputs?sessionId=forms&executionId="+ask, testKeys["viewer"], nil); !strings.Contains(string(body), `"status":"open"`) {
			t.Fatalf("the refused answer reached the server: %s", body)
		}
		// Sent anyway: the server's 400 names the field.
		b.run("send unchecked", chromedp.Click(card+` [data-testid=send-unchecked]`, chromedp.ByQuery))
		b.waitJS(fmt.Sprintf(`(() => { const p = document.querySelector(%q); return !!p && p.innerText.includes("400") && p.innerText.includes("count"); })()`, card+` .problem[role=alert]:not([data-testid])`), "the server's 400 naming count")
		b.waitJS(fmt.Sprintf(`(document.querySelector(%q) || {}).innerText?.includes("the server says: minimum")`, card+` [data-field-error="count"]`), "the server's word beside the count field")
		var problem string
		b.eval(fmt.Sprintf(`document.querySelector(%q).innerText`, card+` .problem[role=alert]:not([data-testid])`), &problem)
		if !strings.Contains(problem, "answer.count") || strings.Contains(problem, "answer.name") || strings.Contains(problem, "file:") {
			t.Errorf("the server's 400 as shown: %q, want answer.count alone, no file names", problem)
		}

		// Over the API the 400 lists each value at fault by its path.
		bad := []byte(`{"answer":{"name":"A","color":"pink","count":0}}`)
		st, body, hdr := call(t, sw.s, "POST", "/api/inputs/"+inputID, testKeys["operator"], bad)
		checkAnswer(t, "POST", "/api/inputs/"+inputID, st, hdr, body)
		var prob struct {
			Errors []struct{ Path, Message string }
		}
		_ = json.Unmarshal(body, &prob)
		paths := map[string]bool{}
		for _, e := range prob.Errors {
			paths[e.Path] = true
		}
		if st != 400 || len(paths) != 4 || !paths["answer.name"] || !paths["answer.color"] || !paths["answer.count"] || !paths["answer.urgent"] {
			t.Errorf("a bad answer over the API: %d %s, want a 400 naming answer.name, .color, .count and .urgent", st, body)
		}

		// Corrected: the answer is taken and the run goes on.
		b.fill(field("count"), "3")
		b.run("send", chromedp.Click(card+` [data-testid=send-answer]`, chromedp.ByQuery))
		b.waitJS(fmt.Sprintf(`(document.querySelector(%q) || {}).innerText?.includes("key:operator")`, card+` [data-testid=answered]`), "the answer by key:operator")
		x := sw.waitStatus("forms", ask, apiclient.ExecutionStatusSUCCESS)
		res, _ := json.Marshal(x.Result)
		var got map[string]any
		_ = json.Unmarshal(res, &got)
		if got["name"] != "Ada" || got["color"] != "green" || got["count"] != float64(3) || got["urgent"] != true || got["order"] != float64(7) {
			t.Fatalf("the run's result: %s, want the answer merged into the payload", res)
		}

		// The richer schema: an array, a nested object, a date-time and a
		// part answered as JSON.
		rich := sw.start("forms", "rich", map[string]any{})
		richID := inputOf(t, sw, rich)
		b.open("/inputs?sessionId=forms")
		card = fmt.Sprintf(`[data-input=%q]`, richID)
		b.waitJS(fmt.Sprintf(`!!document.querySelector(%q)`, card+` [id$="-to-city"]`), "the rich input's form")
		var parts string
		b.eval(fmt.Sprintf(`(() => { const c = document.querySelector(%q); const q = (s) => c.querySelector(s);
			return [q('[id$="-when"]').type, q('[id$="-extra"]').tagName, [...c.querySelectorAll("legend")].map(l => l.textContent).sort().join("/")].join(" "); })()`, card), &parts)
		if parts != "datetime-local TEXTAREA gift/tags */to *" {
			t.Errorf("the rich form's parts: %q, want a datetime-local, a JSON textarea and the fieldsets gift, tags and to (required marked)", parts)
		}
		b.run("add a tag", chromedp.Click(card+` .sf-array > button`, chromedp.ByQuery))
		b.run("fill the rich form",
			chromedp.SendKeys(card+` [id$="-tags-0"]`, "fragile", chromedp.ByQuery),
			chromedp.SendKeys(card+` [id$="-to-city"]`, "Pune", chromedp.ByQuery),
			chromedp.SendKeys(card+` [id$="-to-zip"]`, "41100", chromedp.ByQuery))
		b.fill(card+` [id$="-when"]`, "2026-12-24T10:30")
		b.fill(card+` [id$="-extra"]`, "{bad")
		b.run("send", chromedp.Click(card+` [data-testid=send-answer]`, chromedp.ByQuery))
		b.waitJS(fmt.Sprintf(`(() => { const z = document.querySelector(%q), x = document.querySelector(%q);
			return !!z && z.innerText.includes("pattern") && !!x && x.innerText.includes("not JSON"); })()`,
			card+` [data-field-error="to.zip"]`, card+` [data-field-error="extra"]`), "the form to refuse the zip and the JSON")
		b.fill(card+` [id$="-to-zip"]`, "411001")
		b.fill(card+` [id$="-extra"]`, "42")
		b.run("send", chromedp.Click(card+` [data-testid=send-answer]`, chromedp.ByQuery))
		b.waitJS(fmt.Sprintf(`!!document.querySelector(%q)`, card+` [data-testid=answered]`), "the rich answer taken")
		x = sw.waitStatus("forms", rich, apiclient.ExecutionStatusSUCCESS)
		res, _ = json.Marshal(x.Result)
		var r struct {
			Tags  []string
			To    struct{ City, Zip string }
			When  time.Time
			Extra any
			Gift  any
		}
		var tz int
		b.eval(`new Date("2026-12-24T10:30").getTimezoneOffset()`, &tz)
		want := time.Date(2026, 12, 24, 10, 30, 0, 0, time.UTC).Add(time.Duration(tz) * time.Minute)
		if json.Unmarshal(res, &r) != nil || len(r.Tags) != 1 || r.Tags[0] != "fragile" || r.To.City != "Pune" || r.To.Zip != "411001" ||
			!r.When.Equal(want) || r.Extra != float64(42) || r.Gift != nil {
			t.Fatalf("the rich run's result: %s, want the form's answer (when %s)", res, want)
		}
		b.signOut()
	}

	// An ADMIN approves, denies with a reason, dry-runs and releases.
	{
		b.signIn(testKeys["admin"], "admin")
		b.open("/approvals")
		b.waitText("stop the second nap")
		b.axe("approvals")
		b.shot("approvals")
		ap := fmt.Sprintf(`[data-review=%q]`, approveID)
		b.fill(ap+` input`, "fine by me")
		b.run("approve", chromedp.Click(ap+` [data-testid=approve]`, chromedp.ByQuery))
		b.waitJS(fmt.Sprintf(`(document.querySelector(%q) || {}).innerText?.includes("APPLIED")`, ap+` [data-testid=decided]`), "the approval applied")
		waitUntil(t, "the approved STOP to stop the run", func() bool { return sw.w.status("naps", approveRun) == "STOPPED" })

		dn := fmt.Sprintf(`[data-review=%q]`, denyID)
		b.fill(dn+` input`, "not during the sale")
		b.run("deny", chromedp.Click(dn+` [data-testid=deny]`, chromedp.ByQuery))
		b.waitJS(fmt.Sprintf(`(document.querySelector(%q) || {}).innerText?.includes("DENIED")`, dn+` [data-testid=decided]`), "the denial")
		r := sw.w.review(denyID)
		steps, _ := r["steps"].([]any)
		last, _ := steps[len(steps)-1].(map[string]any)
		if r["status"] != "DENIED" || last["move"] != "REJECT" || last["by"] != "key:admin" || last["reason"] != "not during the sale" {
			t.Fatalf("the denied review: %v, want a REJECT by key:admin with the reason", r)
		}
		if s := sw.w.status("naps", denyRun); s != "RUNNING" {
			t.Fatalf("after the denial the run is %s, want RUNNING", s)
		}
		b.waitJS(fmt.Sprintf(`document.querySelector(%q).innerText.includes("not during the sale")`, dn+` table.steps`), "the reason in the review's steps")

		// The supervisors and one of them.
		b.open("/supervisors")
		b.waitText("Holder")
		b.axe("supervisors")
		b.shot("supervisors")
		b.open("/supervisors/holder")
		b.waitJS(`(document.querySelector("[data-testid=refusals]") || {}).innerText?.includes("not-mine")`, "the holder's refusal")
		b.waitJS(`!!document.querySelector("[data-testid=supervisor-facts]") && !!document.querySelector("[data-testid=credential]")`, "the holder's facts and credential")
		var facts, cred string
		b.eval(`document.querySelector("[data-testid=supervisor-facts]").innerText`, &facts)
		b.eval(`document.querySelector("[data-testid=credential]").innerText`, &cred)
		if !strings.Contains(facts, "http") || !strings.Contains(facts, "enabled") || !strings.Contains(facts, "session:naps") || !strings.Contains(facts, "Hold, Release") {
			t.Errorf("the holder's facts: %q", facts)
		}
		if !strings.Contains(cred, "yks_") || !strings.Contains(cred, "key:admin") || strings.Contains(cred, sw.w.token) {
			t.Errorf("the holder's credential metadata: %q", cred)
		}
		// At work: its engine runs on this server, and its ledger lists the
		// accepted Hold and the refused stop, newest first.
		b.waitJS(`(document.querySelector("[data-testid=runtime-state]") || {}).textContent === "running"`, "the holder to be running")
		var ledger string
		b.eval(`document.querySelector("[data-testid=last-directives]").innerText`, &ledger)
		if i, j := strings.Index(ledger, "not-mine"), strings.Index(ledger, "hold-1"); i < 0 || j < 0 || i > j || !strings.Contains(ledger, "accepted") || !strings.Contains(ledger, "rejected") {
			t.Errorf("the holder's last directives: %q", ledger)
		}
		st, body, hdr := call(t, sw.s, "GET", "/api/supervisors/holder/status", testKeys["admin"], nil)
		checkAnswer(t, "GET", "/api/supervisors/holder/status", st, hdr, body)
		var status struct {
			State          string
			Lease          struct{ Live bool }
			LastDirectives []struct{ Key, Status, Channel string }
		}
		if st != 200 || json.Unmarshal(body, &status) != nil || status.State != "running" || !status.Lease.Live || len(status.LastDirectives) != 2 ||
			status.LastDirectives[0].Key != "not-mine" || status.LastDirectives[0].Status != "rejected" || status.LastDirectives[1].Status != "accepted" ||
			status.LastDirectives[1].Channel != "agent" {
			t.Errorf("GET the holder's status: %d %s", st, body)
		}
		for _, c := range []struct {
			key, query string
			want       int
			says       string
		}{
			{"operator", "", 403, "key:operator"},
			{"limited", "", 403, "limited to the sessions"},
			{"admin", "?directives=0", 400, "directives"},
			{"admin", "?directives=1", 200, "not-mine"},
		} {
			st, body, hdr := call(t, sw.s, "GET", "/api/supervisors/holder/status"+c.query, testKeys[c.key], nil)
			checkAnswer(t, "GET", "/api/supervisors/holder/status"+c.query, st, hdr, body)
			if st != c.want || !strings.Contains(string(body), c.says) {
				t.Errorf("%s GET status%s: %d %s, want %d saying %q", c.key, c.query, st, body, c.want, c.says)
			}
		}

		b.axe("supervisor")
		b.shot("supervisor")

		// A dry run of rules that fire on every node that succeeds, against
		// alpha's finished run.
		b.open("/supervisors/approver")
		b.waitText("Dry run")
		b.fill(`#dry-doc`, `{"schemaVersion":1,"rules":[{"id":"on-success","when":{"event":"NodeStatusChanged","status":"SUCCESS"},"then":{"command":"PauseWorkflow","reason":"a node succeeded"}}]}`)
		b.waitJS(`!!document.querySelector('#dry-session option[value=alpha]')`, "the sessions to choose from")
		b.fill(`#dry-session`, "alpha")
		b.waitJS(fmt.Sprintf(`!!document.querySelector('#dry-run option[value=%q]')`, sw.execs["alpha"]), "alpha's runs to choose from")
		b.fill(`#dry-run`, sw.execs["alpha"])
		b.run("dry run", chromedp.Click(`[data-testid=dry-run]`, chromedp.ByQuery))
		b.waitJS(`Number((document.querySelector("[data-testid=fired-count]") || {}).textContent) >= 2`, "the dry run to report a firing per node that succeeded")
		b.axe("supervisor (dry run)")

		// The holds page: the ADMIN releases the hold, the run resumes.
		b.open("/sessions/naps/executions/" + held + "/holds")
		b.waitText("the holder looks at it")
		var current string
		b.eval(`document.querySelector('.tabs a[aria-current=page]').textContent`, &current)
		if current != "Holds" {
			t.Errorf("the run tab marked current: %q, want Holds", current)
		}
		b.axe("holds")
		b.shot("holds")
		b.fill(`[data-hold=holder] input`, "the console releases it")
		b.run("release", chromedp.Click(`[data-hold=holder] [data-testid=release]`, chromedp.ByQuery))
		b.waitJS(`(document.querySelector("[data-testid=released]") || {}).innerText?.includes("resumed")`, "the release's answer")
		b.waitJS(`!!document.querySelector("[data-testid=no-holds]")`, "the ledger to be empty")
		waitUntil(t, "the released run to resume", func() bool { return sw.w.status("naps", held) == "RUNNING" })
		j := sw.w.journalHas("naps", held, false, "HoldReleased", "the console releases it", `"actor":"key:admin"`)
		if !strings.Contains(j, `"channel":"rest"`) {
			t.Errorf("the release is not journaled over rest: %.2000s", j)
		}
		// Dark and narrow: axe again in the dark colour scheme, and at
		// 400 px wide nothing but a table's own scroller is wider than the
		// screen.
		pages := []string{"/inputs?status=all", "/approvals?status=ALL", "/supervisors", "/supervisors/holder", "/sessions/naps/executions/" + held + "/holds"}
		b.run("dark and narrow", emulation.SetEmulatedMedia().WithFeatures([]*emulation.MediaFeature{{Name: "prefers-color-scheme", Value: "dark"}}),
			emulation.SetDeviceMetricsOverride(400, 800, 1, false))
		for _, p := range pages {
			began := time.Now()
			b.open(p)
			b.waitJS(`!document.body.innerText.includes("Loading")`, p+" to load")
			t.Logf("%s: loaded and drawn %d ms after navigation (400 px, dark)", p, time.Since(began).Milliseconds())
			b.axe(p + " (dark, 400 px)")
			var wide int
			b.eval(`document.documentElement.scrollWidth`, &wide)
			if wide > 400 {
				t.Errorf("%s is %d px wide on a 400 px screen", p, wide)
			}
			if p == "/approvals?status=ALL" {
				b.shot("approvals-narrow-dark")
			}
		}
		if lt := b.longTasks(); len(lt) > 0 {
			t.Logf("long tasks on the supervision pages: %v ms", lt)
		} else {
			t.Logf("long tasks on the supervision pages: none")
		}
	}
}

// waitUntil polls cond until it holds (20 s at most).
func waitUntil(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(20 * time.Second); !cond(); time.Sleep(50 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
	}
}

// inputOf waits until run (of session forms) asks for its input, and
// returns the input's id.
func inputOf(t *testing.T, sw *supervisionWorld, run string) string {
	t.Helper()
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		_, body, _ := call(t, sw.s, "GET", "/api/inputs?sessionId=forms&executionId="+run, testKeys["viewer"], nil)
		var l struct{ Inputs []struct{ InputId string } }
		if json.Unmarshal(body, &l) == nil && len(l.Inputs) == 1 {
			return l.Inputs[0].InputId
		}
		if time.Now().After(deadline) {
			t.Fatalf("run %s never asked for its input: %s", run, body)
		}
	}
}
