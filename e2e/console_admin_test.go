package e2e

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"
)

// acceptDialogs answers every confirm() of the page with OK, as a user who
// reads the question and agrees (a revoke, a rotation).
func (b *browser) acceptDialogs() {
	chromedp.ListenTarget(b.ctx, func(ev any) {
		if _, ok := ev.(*page.EventJavascriptDialogOpening); ok {
			go func() { _ = chromedp.Run(b.ctx, page.HandleJavaScriptDialog(true)) }()
		}
	})
}

// typeInto clears the input at sel and types s.
func (b *browser) typeInto(sel, s string) {
	b.t.Helper()
	b.setValue(sel, "")
	b.run("type into "+sel, chromedp.SendKeys(sel, s, chromedp.ByQuery))
}

// setValue sets a form control's value as an input event would (the page's
// state follows it).
func (b *browser) setValue(sel, v string) {
	b.t.Helper()
	b.run("wait for "+sel, chromedp.WaitVisible(sel, chromedp.ByQuery))
	var done bool
	b.eval(fmt.Sprintf(`(el => { el.value = %q; el.dispatchEvent(new Event("input", {bubbles: true})); el.dispatchEvent(new Event("change", {bubbles: true})); return true })(document.querySelector(%q))`, v, sel), &done)
}

func (b *browser) click(sel string) {
	b.t.Helper()
	b.run("click "+sel, chromedp.WaitVisible(sel, chromedp.ByQuery), chromedp.Click(sel, chromedp.ByQuery))
}

// narrow sets the window to a phone's width (420 px), or back to 1280×800.
func (b *browser) narrow(on bool) {
	b.t.Helper()
	w, h := int64(1280), int64(800)
	if on {
		w, h = 420, 900
	}
	b.run("resize", emulation.SetDeviceMetricsOverride(w, h, 1, on))
}

// dark switches the page to the dark colour scheme (prefers-color-scheme), or back.
func (b *browser) dark(on bool) {
	b.t.Helper()
	v := "light"
	if on {
		v = "dark"
	}
	b.run("colour scheme "+v, emulation.SetEmulatedMedia().WithFeatures([]*emulation.MediaFeature{{Name: "prefers-color-scheme", Value: v}}))
	var is bool
	b.eval(`matchMedia("(prefers-color-scheme: dark)").matches`, &is)
	if is != on {
		b.t.Fatalf("the page's colour scheme is not %s", v)
	}
}

// selfAs is GET /api/self with key: the status and the key's name.
func selfAs(t *testing.T, s *server, key string) (int, string) {
	t.Helper()
	st, body, _ := call(t, s, "GET", "/api/self", key, nil)
	var self struct{ Name string }
	_ = json.Unmarshal(body, &self)
	return st, self.Name
}

// TestConsoleWorkers: a TASK node's task no worker has taken shows as a
// waiting task on its queue, with its age; once a worker polls through the
// worker API, the page (refreshing itself) shows the task leased and the
// worker seen. A session-limited key gets the server's 403 words.
func TestConsoleWorkers(t *testing.T) {
	e := newConsoleEnv(t)
	b := e.b
	e.apply("jobs", wf("build", []string{nd("in", "MANUAL", ""), nd("work", "TASK", `{"queue":"console","heartbeatTimeout":"60s","timeout":"120s"}`),
		nd("out", "RESULT", "")}, []string{ed("in", "work", ""), ed("work", "out", "")}))
	eid := e.start("jobs", "build", map[string]any{"n": 1})

	b.open("/workers")
	b.signIn(testKeys["admin"], "admin")
	start := time.Now()
	b.waitJS(`(() => { const r = document.querySelector('[data-queue="console"]');
	  return !!r && r.querySelector('[data-testid=waiting]').textContent === "1" && r.querySelector('[data-testid=leased]').textContent === "0" })()`,
		"the queue console with one waiting task")
	t.Logf("the waiting task shown %d ms after the sign-in", time.Since(start).Milliseconds())
	var row string
	b.eval(`document.querySelector('[data-queue="console"]').innerText`, &row)
	if !strings.Contains(row, "none has polled") || !strings.Contains(row, "since") {
		t.Fatalf("the queue's row before any poll: %q", row)
	}
	b.waitText("Run slots")
	b.axe("workers")

	// A real worker poll through the worker API takes the task.
	st, body, _ := call(t, e.s, "POST", "/api/worker/v1/poll", testKeys["worker"], []byte(`{"queues":["console"],"wait":10}`))
	var polled struct {
		Tasks []struct{ TaskID, LeaseToken string }
	}
	if st != 200 || json.Unmarshal(body, &polled) != nil || len(polled.Tasks) != 1 {
		t.Fatalf("poll: %d %s", st, body)
	}
	polledAt := time.Now()
	b.waitJS(`(() => { const r = document.querySelector('[data-queue="console"]');
	  return !!r && !!r.querySelector('[data-worker="worker:worker"]') && r.querySelector('[data-testid=leased]').textContent === "1" &&
	    r.querySelector('[data-testid=waiting]').textContent === "0" })()`, "the worker seen and the task leased")
	t.Logf("the worker shown %d ms after its poll (the page refreshes every 5 s)", time.Since(polledAt).Milliseconds())
	b.axe("workers with a worker")
	b.shot("workers")
	b.dark(true)
	b.axe("workers, dark")
	b.dark(false)
	if lt := b.longTasks(); len(lt) > 0 {
		t.Logf("long tasks on the workers page: %v ms", lt)
	} else {
		t.Log("no long task (≥ 50 ms) on the workers page's main thread")
	}

	// The manual refresh asks again at once: the button is busy, then not.
	b.click(`[data-testid=refresh]`)
	b.waitJS(`!document.querySelector('[data-testid=refresh]')?.disabled && (document.querySelector('[data-testid=refreshed]')?.textContent ?? "").startsWith("as of")`, "the refresh answered")

	done := fmt.Sprintf(`{"leaseToken":%q,"output":2}`, polled.Tasks[0].LeaseToken)
	if st, b, _ := call(t, e.s, "POST", "/api/worker/v1/tasks/"+polled.Tasks[0].TaskID+"/complete", testKeys["worker"], []byte(done)); st != 200 {
		t.Fatalf("complete: %d %s", st, b)
	}
	e.waitStatus("jobs", eid, "SUCCESS")

	// A session-limited key: the server refuses the scheduler, the page
	// says what the server said.
	st, body, _ = call(t, e.s, "GET", "/api/scheduler", testKeys["limited"], nil)
	var refusal struct{ Detail string }
	if st != 403 || json.Unmarshal(body, &refusal) != nil || refusal.Detail == "" {
		t.Fatalf("the limited key on /api/scheduler: %d %s", st, body)
	}
	b.click(`[data-testid=who] button`)
	b.signIn(testKeys["limited"], "limited")
	b.waitText(refusal.Detail)
	b.waitText("(403)")
	b.axe("workers refused")
	b.cspClean()
}

// TestConsoleKeys: an ADMIN creates a key whose secret is shown once and
// works, rotates it (the old secret refused, the new one taken), sets a
// short expiry and sees it expire, sets an expiry time and reads it back,
// and revokes a key (refused afterwards). The secret is in no list, no
// storage and gone once the page is left. OPERATOR and VIEWER are not
// offered the page; a request forced from the page is refused.
func TestConsoleKeys(t *testing.T) {
	e := newConsoleEnv(t)
	b := e.b
	b.acceptDialogs()
	b.open("/keys")
	b.signIn(testKeys["admin"], "admin")
	shown := time.Now()
	b.waitJS(`!!document.querySelector('table[data-testid=keys] tr[data-key="worker-q"]')`, "the key list")
	t.Logf("the key list drawn %d ms after the sign-in", time.Since(shown).Milliseconds())
	b.axe("keys")

	create := func(name, role, sessions, expires string) string {
		t.Helper()
		b.typeInto(`#k-name`, name)
		b.setValue(`#k-role`, role)
		if sessions != "" {
			b.typeInto(`#k-sessions`, sessions)
		}
		if expires != "" {
			b.typeInto(`#k-expires`, expires)
		}
		b.click(`[data-testid=create]`)
		b.waitJS(fmt.Sprintf(`!!document.querySelector('[data-testid=secret-once]') && document.querySelector('[data-testid=secret-once]').innerText.includes(%q)`, name), "the secret of "+name)
		var secret string
		b.eval(`document.querySelector('[data-testid=secret]').value`, &secret)
		if !strings.HasPrefix(secret, "yk_") {
			t.Fatalf("the secret shown for %s: %q", name, secret)
		}
		b.waitJS(fmt.Sprintf(`!!document.querySelector('tr[data-key=%q]')`, name), name+" in the list")
		return secret
	}

	ci := create("ci-bot", "OPERATOR", "alpha", "720h")
	if st, name := selfAs(t, e.s, ci); st != 200 || name != "ci-bot" {
		t.Fatalf("the created secret through the API: %d %q", st, name)
	}
	var row string
	b.eval(`document.querySelector('tr[data-key="ci-bot"]').innerText`, &row)
	if strings.Contains(row, ci) || !strings.Contains(row, "OPERATOR") || !strings.Contains(row, "alpha") || !strings.Contains(row, ci[:9]) || !strings.Contains(row, "key:admin") {
		t.Fatalf("the list's row: %q", row)
	}
	// A bad input: the server's words, naming the field.
	b.typeInto(`#k-name`, "bad name")
	b.click(`[data-testid=create]`)
	b.waitText("name")
	b.waitJS(`!!document.querySelector('form[data-testid=create-key] .problem')`, "the create's problem")
	b.setValue(`#k-name`, "")

	// The last use, with its address, once the key was used (written off
	// the request path within a second).
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		_, body, _ := call(t, e.s, "GET", "/api/keys/ci-bot", testKeys["admin"], nil)
		if strings.Contains(string(body), `"lastUsedAt"`) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("ci-bot's last use is not recorded: %s", body)
		}
	}
	b.open("/keys")
	b.waitJS(`(document.querySelector('tr[data-key="ci-bot"] [data-testid=last-used]')?.innerText ?? "").includes("from 127.0.0.1")`, "ci-bot's last use")
	var html, stored string
	b.eval(`document.documentElement.outerHTML`, &html)
	b.eval(`JSON.stringify(localStorage) + JSON.stringify(sessionStorage) + location.href`, &stored)
	if strings.Contains(html, ci) || strings.Contains(stored, ci) {
		t.Fatal("the secret is still in the page or the storage after leaving the page")
	}

	// Rotate: a new secret, shown once; the old one is refused at once.
	b.click(`[data-testid="rotate-ci-bot"]`)
	b.waitText("rotated by key:admin")
	var rotated string
	b.waitJS(fmt.Sprintf(`(document.querySelector('[data-testid=secret]') || {}).value?.startsWith("yk_") && document.querySelector('[data-testid=secret]').value !== %q`, ci), "the new secret")
	b.eval(`document.querySelector('[data-testid=secret]').value`, &rotated)
	if st, _ := selfAs(t, e.s, ci); st != 401 {
		t.Fatalf("the rotated-out secret: %d, want 401", st)
	}
	if st, name := selfAs(t, e.s, rotated); st != 200 || name != "ci-bot" {
		t.Fatalf("the new secret: %d %q", st, name)
	}
	b.click(`[data-testid=secret-once] button:last-of-type`)
	b.waitJS(`!document.querySelector('[data-testid=secret-once]')`, "the secret hidden")

	// Expire: a short ttl, and the key stops working then.
	b.typeInto(`[data-testid="expiry-ci-bot"]`, "3s")
	b.click(`[data-testid="expire-ci-bot"]`)
	b.waitText("set by key:admin")
	setAt := time.Now()
	for {
		st, _ := selfAs(t, e.s, rotated)
		if st == 401 {
			break
		}
		if st != 200 || time.Since(setAt) > 20*time.Second {
			t.Fatalf("ci-bot after its 3 s expiry: %d after %s", st, time.Since(setAt))
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Logf("the key was refused %d ms after its expiry was set to 3s", time.Since(setAt).Milliseconds())
	b.open("/keys")
	b.waitJS(`(document.querySelector('tr[data-key="ci-bot"] [data-testid=expires]')?.innerText ?? "").includes("expired")`, "ci-bot listed expired")
	// An expired key gets no new expiry: the server's 409 words.
	b.typeInto(`[data-testid="expiry-ci-bot"]`, "1h")
	b.click(`[data-testid="expire-ci-bot"]`)
	b.waitText("revoke it and create it again")

	// An expiry time, read back through the API.
	reader := create("reader", "VIEWER", "", "")
	when := time.Now().Add(48 * time.Hour).UTC().Truncate(time.Second)
	b.typeInto(`[data-testid="expiry-reader"]`, when.Format(time.RFC3339))
	b.click(`[data-testid="expire-reader"]`)
	b.waitText("set by key:admin")
	st, body, _ := call(t, e.s, "GET", "/api/keys/reader", testKeys["admin"], nil)
	var got struct{ ExpiresAt time.Time }
	if st != 200 || json.Unmarshal(body, &got) != nil || !got.ExpiresAt.Equal(when) {
		t.Fatalf("reader's expiry read back: %d %s, want %s", st, body, when)
	}
	if st, _ := selfAs(t, e.s, reader); st != 200 {
		t.Fatalf("reader before its expiry: %d", st)
	}
	b.shot("keys")
	b.dark(true)
	b.axe("keys with a secret shown, an answer and a problem, dark")
	b.dark(false)
	b.narrow(true)
	b.axe("keys, narrow")
	b.shot("keys-narrow")
	var overflow bool
	b.eval(`document.documentElement.scrollWidth > window.innerWidth + 1`, &overflow)
	if overflow {
		t.Log("the keys page scrolls sideways at 420 px (its table scrolls in its own box)")
	}
	b.narrow(false)
	if lt := b.longTasks(); len(lt) > 0 {
		t.Logf("long tasks on the keys page: %v ms", lt)
	} else {
		t.Log("no long task (≥ 50 ms) on the keys page's main thread")
	}

	// Revoke (after a confirm): refused from then on, and gone from the list.
	b.click(`[data-testid="revoke-reader"]`)
	b.waitText("Key reader revoked by key:admin")
	b.waitJS(`!document.querySelector('tr[data-key="reader"]')`, "reader gone from the list")
	if st, _ := selfAs(t, e.s, reader); st != 401 {
		t.Fatalf("the revoked key: %d, want 401", st)
	}
	b.cspClean()

	// OPERATOR and VIEWER: no Keys in the navigation, /keys is not found,
	// and a request forced from the page is refused by the server.
	for _, who := range []string{"operator", "viewer"} {
		b.click(`[data-testid=who] button`)
		b.signIn(testKeys[who], who)
		var nav string
		b.eval(`document.querySelector('nav[aria-label=Main]').innerText`, &nav)
		if strings.Contains(nav, "Keys") || !strings.Contains(nav, "Workers") {
			t.Fatalf("%s's navigation: %q", who, nav)
		}
		b.open("/keys")
		b.waitText("Not found")
		var forced int
		b.eval(`fetch("/api/keys", {headers: {Authorization: "Bearer " + sessionStorage.getItem("yukta.key")}}).then(r => r.status)`, &forced)
		if forced != 403 {
			t.Fatalf("%s forcing GET /api/keys from the page: %d, want 403", who, forced)
		}
		b.eval(`fetch("/api/keys", {method: "POST", headers: {Authorization: "Bearer " + sessionStorage.getItem("yukta.key"), "Content-Type": "application/json"},
		  body: JSON.stringify({name: "sneaky", role: "ADMIN"})}).then(r => r.status)`, &forced)
		if forced != 403 {
			t.Fatalf("%s forcing POST /api/keys from the page: %d, want 403", who, forced)
		}
		b.axe("not found for " + who)
	}
	if st, _, _ := call(t, e.s, "GET", "/api/keys/sneaky", testKeys["admin"], nil); st != 404 {
		t.Fatalf("a forced create made a key: %d", st)
	}
}
