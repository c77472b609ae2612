package e2e

import (
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/yukta/yukta/adapters/postgres/pgtest"
)

// consoleEnv is a server with the test keys (writeKeyFile) and a Chromium.
type consoleEnv struct {
	*accessEnv
	b *browser
}

func newConsoleEnv(t *testing.T, extra ...string) *consoleEnv {
	t.Helper()
	e := newAccessEnv(t, extra...)
	return &consoleEnv{accessEnv: e, b: newBrowser(t, e.s.URL)}
}

// TestConsoleSignIn: with keys configured the console asks for one, keeps
// it for the tab (a reload stays signed in, the key is in no URL and not in
// localStorage), shows the key's name and role, and signs out.
func TestConsoleSignIn(t *testing.T) {
	e := newConsoleEnv(t)
	b := e.b
	b.open("/sessions")
	b.waitText("API key")
	b.axe("sign-in")
	b.shot("sign-in")
	// A wrong key is refused with the server's words and stays signed out.
	b.run("send a wrong key", chromedp.SendKeys(`#key`, "yk_wrong", chromedp.ByID), chromedp.Click(`form[aria-label="Sign in"] button`, chromedp.ByQuery))
	b.waitText("not valid")
	b.signIn(testKeys["viewer"], "viewer")
	b.waitText("alpha")
	var role, where, stored string
	b.eval(`document.querySelector("[data-testid=who] .role").textContent`, &role)
	b.eval(`location.href`, &where)
	b.eval(`JSON.stringify(localStorage)`, &stored)
	if role != "VIEWER" || strings.Contains(where, testKeys["viewer"]) || strings.Contains(stored, testKeys["viewer"]) {
		t.Fatalf("role %q, location %q, localStorage %q", role, where, stored)
	}
	b.axe("sessions")
	b.run("reload", chromedp.Reload())
	b.run("wait", chromedp.WaitVisible(`[data-testid=who]`, chromedp.ByQuery))
	b.run("sign out", chromedp.Click(`[data-testid=who] button`, chromedp.ByQuery))
	b.waitText("API key")
	b.cspClean()
}

// TestConsoleOpenMode: without keys the console says so in a banner and the
// anonymous ADMIN is signed in at once.
func TestConsoleOpenMode(t *testing.T) {
	s := startServer(t, serverOptions{DSN: pgtest.NewDatabase(t)})
	b := newBrowser(t, s.URL)
	b.open("/")
	b.waitText("Open mode")
	var path string
	b.eval(`location.pathname`, &path)
	if path != "/sessions" {
		t.Fatalf("/ went to %q, want /sessions", path)
	}
	b.axe("open mode")
	// Loading the console is no long task (≥ 50 ms) on the main thread.
	if lt := b.longTasks(); len(lt) > 0 {
		t.Logf("long tasks while loading: %v ms", lt)
	}
}
