package e2e

import (
	"encoding/json"
	"regexp"
	"strings"
	"sync"
	"testing"

	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/chromedp"

	"github.com/yukta/yukta/adapters/web"
)

// TestConsoleAnswersCarryThePolicy: every answer of the console, the page
// and its assets, a deep link, a HEAD, a missing file, carries the
// Content-Security-Policy and the framing and sniffing guards; an /api/
// path no route has answers a problem, never the page; another method on
// a page is 405; the Host/Origin gate refuses a foreign Host on the page
// and a foreign Origin's write with a valid key, and nothing changes.
func TestConsoleAnswersCarryThePolicy(t *testing.T) {
	e := newAccessEnv(t)
	_, index, _ := call(t, e.s, "GET", "/", "", nil)
	assets := regexp.MustCompile(`/assets/app-[0-9a-f]+\.(js|css)`).FindAllString(string(index), -1)
	if len(assets) != 2 {
		t.Fatalf("the page names %v, want its script and stylesheet", assets)
	}
	paths := append([]string{"/", "/sessions", "/keys", "/workers", "/sessions/alpha/executions/" + e.execs["alpha"], "/robots.txt", "/assets/nosuch.js"}, assets...)
	for _, p := range paths {
		for _, m := range []string{"GET", "HEAD"} {
			st, _, h := call(t, e.s, m, p, "", nil)
			want := 200
			if strings.HasSuffix(p, ".txt") || strings.Contains(p, "nosuch") {
				want = 404
			}
			if st != want || h.Get("Content-Security-Policy") != web.ContentSecurityPolicy || h.Get("X-Frame-Options") != "DENY" || h.Get("X-Content-Type-Options") != "nosniff" {
				t.Errorf("%s %s: %d, CSP %q, X-Frame-Options %q, want %d with the console's policy", m, p, st, h.Get("Content-Security-Policy"), h.Get("X-Frame-Options"), want)
			}
		}
	}
	for _, c := range []struct {
		key  string
		want int
	}{{"", 401}, {testKeys["admin"], 404}} {
		st, b, h := call(t, e.s, "GET", "/api/nosuch", c.key, nil)
		if st != c.want || !strings.HasPrefix(h.Get("Content-Type"), "application/problem+json") || strings.Contains(string(b), "<html") {
			t.Errorf("GET /api/nosuch (key %v): %d %q %.100s, want a %d problem", c.key != "", st, h.Get("Content-Type"), b, c.want)
		}
	}
	if st, b, h := call(t, e.s, "POST", "/keys", testKeys["admin"], []byte(`{}`)); st != 405 || h.Get("Allow") == "" || strings.Contains(string(b), "<html") {
		t.Errorf("POST /keys: %d Allow %q %.100s, want 405", st, h.Get("Allow"), b)
	}
	before := e.counts()
	for _, c := range []struct {
		method, path string
		header       []string
	}{
		{"GET", "/", []string{"Host", "evil.example"}},
		{"GET", "/keys", []string{"Host", "127.0.0.1.nip.io"}},
		{"GET", assets[0], []string{"Host", "evil.example"}},
		{"POST", "/api/keys", []string{"Origin", "http://evil.example"}},
		{"POST", "/api/sessions/alpha/workflows/wf/executions", []string{"Origin", "http://localhost:3000"}},
		{"DELETE", "/api/sessions/alpha", []string{"Sec-Fetch-Site", "cross-site"}},
	} {
		st, b, _ := call(t, e.s, c.method, c.path, testKeys["admin"], []byte(`{"name":"evil","role":"ADMIN"}`), c.header...)
		if st != 403 || !strings.Contains(string(b), "YUKTA_ALLOWED_") || strings.Contains(string(b), "<html") {
			t.Errorf("%s %s with %v: %d %.160s, want the gate's 403", c.method, c.path, c.header, st, b)
		}
	}
	e.assertUnchanged("requests the gate refused", before)
	if st, _, _ := call(t, e.s, "GET", "/api/keys/evil", testKeys["admin"], nil); st != 404 {
		t.Fatalf("a refused foreign-Origin create made a key: %d", st)
	}
}

// TestConsoleLimitedKeyAndRevokedTab: a session-limited key sees only its
// session in the console and is refused another's (the server answers as if
// it did not exist), and the scheduler with a 403, in the server's words;
// a key revoked while its tab is open signs the tab out at its next
// request, saying why; no key is ever in a URL the page asked, in
// localStorage, or in the server's log; the pages ran with no policy
// violation.
func TestConsoleLimitedKeyAndRevokedTab(t *testing.T) {
	e := newConsoleEnv(t)
	b := e.b
	var mu sync.Mutex
	var urls []string
	chromedp.ListenTarget(b.ctx, func(ev any) {
		if r, ok := ev.(*network.EventRequestWillBeSent); ok {
			mu.Lock()
			urls = append(urls, r.Request.URL)
			mu.Unlock()
		}
	})

	b.open("/sessions")
	b.signIn(testKeys["limited"], "limited")
	b.waitJS(`!!document.querySelector('a[href="/sessions/alpha"]')`, "alpha in the sessions list")
	var list string
	b.eval(`document.querySelector('main').innerText`, &list)
	if strings.Contains(list, "beta") {
		t.Fatalf("the limited key's sessions list shows beta:\n%s", list)
	}
	// beta's resources, asked from the page as a deep link's page would:
	// the server refuses them (a session the key may not see does not exist
	// for it: 404, so a limited key cannot even probe names).
	st, body, _ := call(t, e.s, "GET", "/api/sessions/beta/executions/"+e.execs["beta"], testKeys["limited"], nil)
	var refusal struct{ Detail string }
	if (st != 403 && st != 404) || json.Unmarshal(body, &refusal) != nil || refusal.Detail == "" {
		t.Fatalf("beta's run as limited: %d %s", st, body)
	}
	var forced struct {
		Status int
		Detail string
	}
	b.eval(`fetch("/api/sessions/beta/executions/`+e.execs["beta"]+`", {headers: {Authorization: "Bearer " + sessionStorage.getItem("yukta.key")}})
	  .then(async r => ({status: r.status, detail: (await r.json()).detail}))`, &forced)
	if forced.Status != st || forced.Detail != refusal.Detail {
		t.Fatalf("beta's run asked from the page as limited: %+v", forced)
	}
	// beta's deep links show the server's words, and nothing of beta.
	b.open("/sessions/beta")
	b.waitText(refusal.Detail)
	b.open("/sessions/beta/executions/" + e.execs["beta"])
	b.waitText(refusal.Detail)
	b.open("/workers") // a deep link the server refuses this key: its words, not a broken page
	b.waitText("(403)")
	b.axe("workers refused to a limited key")
	b.cspClean()

	// A stored key, revoked while its tab is open.
	st, body, _ = call(t, e.s, "POST", "/api/keys", testKeys["admin"], []byte(`{"name":"tab","role":"OPERATOR"}`))
	var tab struct{ Secret string }
	if st != 201 || json.Unmarshal(body, &tab) != nil {
		t.Fatalf("create the tab's key: %d %s", st, body)
	}
	b.click(`[data-testid=who] button`)
	b.signIn(tab.Secret, "tab")
	b.open("/sessions")
	b.waitJS(`!!document.querySelector('a[href="/sessions/beta"]')`, "the sessions")
	if st, _, _ := call(t, e.s, "DELETE", "/api/keys/tab", testKeys["admin"], nil); st != 204 {
		t.Fatalf("revoke the tab's key: %d", st)
	}
	st, body, _ = call(t, e.s, "GET", "/api/self", tab.Secret, nil)
	var why struct{ Detail string }
	if st != 401 || json.Unmarshal(body, &why) != nil || why.Detail == "" {
		t.Fatalf("the revoked key: %d %s", st, body)
	}
	// The workers page refreshes itself: its next request is refused, and
	// the tab signs out with the server's words.
	b.click(`nav[aria-label=Main] a[href="/workers"]`)
	b.waitJS(`!!document.querySelector('[data-testid=signed-out]') && !!document.querySelector('#key')`, "the sign-in again")
	var said, stored string
	b.eval(`document.querySelector('[data-testid=signed-out]').textContent`, &said)
	b.eval(`JSON.stringify(sessionStorage) + JSON.stringify(localStorage)`, &stored)
	if !strings.Contains(said, why.Detail) || strings.Contains(stored, tab.Secret) {
		t.Fatalf("signed out saying %q (the server said %q); storage %s", said, why.Detail, stored)
	}
	b.axe("signed out")
	// Signing in again clears the reason.
	b.signIn(testKeys["admin"], "admin")
	b.click(`[data-testid=who] button`)
	b.waitText("API key")
	var left bool
	b.eval(`!!document.querySelector('[data-testid=signed-out]')`, &left)
	if left {
		t.Fatal("a sign-out by hand still shows the last refusal")
	}
	b.cspClean()

	// No key in any URL the page asked, in storage, or in the server's log.
	mu.Lock()
	asked := append([]string(nil), urls...)
	mu.Unlock()
	if len(asked) < 10 {
		t.Fatalf("only %d requests seen", len(asked))
	}
	logs := e.s.logs.String()
	for _, k := range []string{testKeys["limited"], testKeys["admin"], tab.Secret} {
		for _, u := range asked {
			if strings.Contains(u, k) {
				t.Fatalf("the page asked a URL with a key: %s", u)
			}
		}
		if strings.Contains(logs, k) {
			t.Fatalf("the server's log holds a key (%.8s…)", k)
		}
	}
	if !strings.Contains(logs, `"path":"/api/sessions"`) {
		t.Fatal("the server's log has no access line of the console's requests: the check above saw nothing")
	}
	t.Logf("%d requests of the page, none with a key in its URL; %d bytes of server log, no key in it", len(asked), len(logs))
}
