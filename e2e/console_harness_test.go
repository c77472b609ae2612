package e2e

// The browser tests' harness: a real headless Chromium (Debian's chromium)
// driven over the DevTools protocol with chromedp, against the real binary.
// It fails a test when the page throws, when the Content-Security-Policy
// refuses something (the console must never need an exception), and when
// the page asks any host but the server's. axe-core runs in the page
// through the protocol (a <script> tag would be refused by the policy);
// long tasks are collected from the first script on.

import (
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"

	"github.com/yukta/yukta/tools/npmci"
)

type browser struct {
	t    *testing.T
	ctx  context.Context
	base string

	mu       sync.Mutex
	problems []string
}

// chromiumPath finds Debian's chromium, or fails the test saying how to get it.
func chromiumPath(t *testing.T) string {
	t.Helper()
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	t.Fatal("the console's browser tests need a real Chromium and none is on PATH: install Debian's chromium " +
		"(apt-get install chromium; .ci/run does)")
	return ""
}

// newBrowser starts a headless Chromium at 1280×800 for the server at base.
func newBrowser(t *testing.T, base string) *browser {
	t.Helper()
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(chromiumPath(t)),
		chromedp.UserDataDir(t.TempDir()),
		chromedp.WindowSize(1280, 800),
		chromedp.NoSandbox, // as root Chromium refuses to start with its sandbox
		chromedp.DisableGPU,
		chromedp.Flag("disable-quic", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-features", "MediaRouter,OptimizationHints,Translate"),
	)
	actx, cancelA := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancel := chromedp.NewContext(actx)
	b := &browser{t: t, ctx: ctx, base: base}
	t.Cleanup(func() {
		cancel()
		cancelA()
		b.mu.Lock()
		defer b.mu.Unlock()
		for _, p := range b.problems {
			t.Errorf("browser: %s", p)
		}
	})
	host := mustHost(t, base)
	chromedp.ListenTarget(ctx, func(ev any) {
		switch e := ev.(type) {
		case *runtime.EventExceptionThrown:
			b.problem("uncaught exception: " + e.ExceptionDetails.Error())
		case *runtime.EventConsoleAPICalled:
			if e.Type == runtime.APITypeError {
				var parts []string
				for _, a := range e.Args {
					parts = append(parts, strings.Trim(string(a.Value), `"`)+a.Description)
				}
				msg := strings.Join(parts, " ")
				if !strings.Contains(msg, "Failed to load resource") {
					b.problem("console.error: " + msg)
				}
			}
		case *network.EventRequestWillBeSent:
			u, err := url.Parse(e.Request.URL)
			if err == nil && (u.Scheme == "http" || u.Scheme == "https" || u.Scheme == "ws" || u.Scheme == "wss") && u.Host != host {
				b.problem("the page asked another host: " + e.Request.URL)
			}
		case *network.EventLoadingFailed:
			if e.BlockedReason == network.BlockedReasonCsp {
				b.problem("the Content-Security-Policy blocked a request")
			}
		}
	})
	// Long tasks from the first script on, and CSP violations the page sees.
	const observe = `(() => {
  window.__longTasks = [];
  window.__cspViolations = [];
  new PerformanceObserver((l) => { for (const e of l.getEntries()) window.__longTasks.push(e.duration); })
    .observe({ type: "longtask", buffered: true });
  document.addEventListener("securitypolicyviolation", (e) => window.__cspViolations.push(e.violatedDirective + " " + e.blockedURI));
})();`
	if err := chromedp.Run(ctx, network.Enable(), runtime.Enable(), chromedp.ActionFunc(func(ctx context.Context) error {
		_, err := page.AddScriptToEvaluateOnNewDocument(observe).Do(ctx)
		return err
	})); err != nil {
		t.Fatalf("start Chromium: %v", err)
	}
	return b
}

func mustHost(t *testing.T, base string) string {
	u, err := url.Parse(base)
	if err != nil {
		t.Fatal(err)
	}
	return u.Host
}

func (b *browser) problem(s string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.problems = append(b.problems, s)
}

// run runs actions with a deadline, failing the test with what was being done.
func (b *browser) run(what string, actions ...chromedp.Action) {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, 30*time.Second)
	defer cancel()
	if err := chromedp.Run(ctx, actions...); err != nil {
		var text string
		_ = chromedp.Run(b.ctx, chromedp.Evaluate(`document.body ? document.body.innerText.slice(0, 2000) : ""`, &text))
		b.t.Fatalf("%s: %v\nthe page shows:\n%s", what, err, text)
	}
}

// open loads path (a console location) and waits for the page to draw.
func (b *browser) open(path string) {
	b.t.Helper()
	b.run("open "+path, chromedp.Navigate(b.base+path), chromedp.WaitVisible(`#app > *`, chromedp.ByQuery))
	b.cspClean()
}

// signIn pastes key into the sign-in form and waits for the key's name.
func (b *browser) signIn(key, name string) {
	b.t.Helper()
	b.run("sign in as "+name,
		chromedp.WaitVisible(`#key`, chromedp.ByID),
		chromedp.SendKeys(`#key`, key, chromedp.ByID),
		chromedp.Click(`form[aria-label="Sign in"] button[type=submit]`, chromedp.ByQuery),
		chromedp.WaitVisible(`[data-testid=who]`, chromedp.ByQuery),
	)
	var who string
	b.run("read who is signed in", chromedp.Text(`[data-testid=who] .name`, &who, chromedp.ByQuery))
	if who != name {
		b.t.Fatalf("signed in as %q, want %q", who, name)
	}
}

// waitText waits until the page's text contains s.
func (b *browser) waitText(s string) {
	b.t.Helper()
	b.waitJS(fmt.Sprintf("document.body.innerText.includes(%q)", s), "the page to show "+s)
}

// waitJS waits until the expression is true (polling every 50 ms).
func (b *browser) waitJS(expr, what string) {
	b.t.Helper()
	b.run("wait for "+what, chromedp.Poll(expr, nil, chromedp.WithPollingInterval(50*time.Millisecond), chromedp.WithPollingTimeout(25*time.Second)))
}

// eval evaluates expr in the page (awaiting a promise) into out.
func (b *browser) eval(expr string, out any) {
	b.t.Helper()
	b.run("evaluate "+expr[:min(len(expr), 60)], chromedp.Evaluate(expr, out, func(p *runtime.EvaluateParams) *runtime.EvaluateParams {
		return p.WithAwaitPromise(true)
	}))
}

func (b *browser) cspClean() {
	b.t.Helper()
	var v []string
	b.eval(`window.__cspViolations || []`, &v)
	for _, s := range v {
		b.problem("CSP violation: " + s)
	}
}

// longTasks returns the durations (ms) of the main thread's long tasks so far.
func (b *browser) longTasks() []float64 {
	b.t.Helper()
	var v []float64
	b.eval(`window.__longTasks || []`, &v)
	return v
}

var axeSource struct {
	once sync.Once
	src  string
	err  error
}

// axe runs axe-core (web/node_modules, pinned) in the page and fails the
// test on any serious or critical violation (WCAG 2.x A and AA rules).
func (b *browser) axe(page string) {
	b.t.Helper()
	axeSource.once.Do(func() {
		dir := filepath.Join("..", "web")
		npmci.Node(b.t, dir)
		var raw []byte
		raw, axeSource.err = os.ReadFile(filepath.Join(dir, "node_modules", "axe-core", "axe.min.js"))
		axeSource.src = string(raw)
	})
	if axeSource.err != nil {
		b.t.Fatal(axeSource.err)
	}
	var loaded bool
	b.eval(axeSource.src+";typeof axe === 'object'", &loaded)
	var res []struct {
		ID     string `json:"id"`
		Impact string `json:"impact"`
		Help   string `json:"help"`
		Nodes  []struct {
			Target []any `json:"target"`
		} `json:"nodes"`
	}
	b.eval(`axe.run(document, {runOnly: {type: "tag", values: ["wcag2a", "wcag2aa", "wcag21a", "wcag21aa"]}}).then(r => r.violations)`, &res)
	for _, v := range res {
		if v.Impact == "serious" || v.Impact == "critical" {
			targets, _ := json.Marshal(v.Nodes)
			b.t.Errorf("axe on %s: %s (%s): %s at %s", page, v.ID, v.Impact, v.Help, targets)
		}
	}
}

// shot saves a screenshot of the whole page as name.png: into docs/console
// when YUKTA_UPDATE_SCREENSHOTS=1 (the pictures docs/console.md shows are
// taken here), else into the test's temporary directory.
func (b *browser) shot(name string) {
	b.t.Helper()
	var png []byte
	b.run("screenshot "+name, chromedp.FullScreenshot(&png, 100))
	if len(png) < 1000 {
		b.t.Fatalf("screenshot %s is %d bytes", name, len(png))
	}
	dir := b.t.TempDir()
	if os.Getenv("YUKTA_UPDATE_SCREENSHOTS") == "1" {
		dir = filepath.Join("..", "docs", "console")
	}
	if err := os.WriteFile(filepath.Join(dir, name+".png"), png, 0o644); err != nil {
		b.t.Fatal(err)
	}
}
