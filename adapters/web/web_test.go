package web_test

import (
	"bytes"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/yukta/yukta/adapters/web"
	"github.com/yukta/yukta/adapters/web/webtest"
)

// TestBundleMatchesSources rebuilds the console from web/src with the
// pinned packages and compares it, file by file, with the committed bundle
// the binary embeds: a change to the sources without `task web` fails here,
// and so does a hand edit of dist/. It also regenerates the client types
// from api/openapi.yaml and type-checks the sources against them, so a
// change to the spec the console no longer fits fails too.
func TestBundleMatchesSources(t *testing.T) {
	dir, node := webtest.Prepare(t)
	out := t.TempDir()
	run(t, dir, node, "build.mjs", "--outdir", out)
	want := files(t, os.DirFS(out))
	got := files(t, os.DirFS("dist"))
	for name, b := range want {
		if g, ok := got[name]; !ok {
			t.Errorf("the committed bundle lacks %s: run `task web` and commit adapters/web/dist", name)
		} else if !bytes.Equal(g, b) {
			t.Errorf("the committed %s differs from a rebuild of web/src: run `task web` and commit adapters/web/dist", name)
		}
	}
	for name := range got {
		if _, ok := want[name]; !ok {
			t.Errorf("the committed bundle has %s, which a rebuild does not make: run `task web`", name)
		}
	}

	types := filepath.Join(t.TempDir(), "schema.d.ts")
	run(t, dir, node, filepath.Join("node_modules", "openapi-typescript", "bin", "cli.js"), filepath.Join("..", "api", "openapi.yaml"), "-o", types)
	gen, err := os.ReadFile(types)
	if err != nil {
		t.Fatal(err)
	}
	committed, err := os.ReadFile(filepath.Join(dir, "src", "api", "schema.d.ts"))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(gen, committed) {
		t.Errorf("web/src/api/schema.d.ts differs from the types generated from api/openapi.yaml: run `task web`")
	}
	run(t, dir, node, filepath.Join("node_modules", "typescript", "bin", "tsc"), "-p", "tsconfig.json")
}

func run(t *testing.T, dir, node string, args ...string) {
	t.Helper()
	cmd := exec.Command(node, args...)
	cmd.Dir = dir
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("node %s: %v\n%s", strings.Join(args, " "), err, out)
	}
}

func files(t *testing.T, fsys fs.FS) map[string][]byte {
	t.Helper()
	out := map[string][]byte{}
	err := fs.WalkDir(fsys, ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := fs.ReadFile(fsys, p)
		out[p] = b
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func TestServesPagesAssetsAndThePolicy(t *testing.T) {
	h, err := web.New()
	if err != nil {
		t.Fatal(err)
	}
	get := func(path string) *httptest.ResponseRecorder {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, path, nil))
		return rec
	}
	index := get("/")
	if index.Code != 200 || !strings.Contains(index.Body.String(), `<script type="module" src="/assets/app-`) {
		t.Fatalf("GET / = %d %q", index.Code, index.Body.String())
	}
	for _, deep := range []string{"/sessions", "/sessions/etl/executions/0190a2b4-0000-7000-8000-000000000000", "/keys"} {
		if rec := get(deep); rec.Code != 200 || rec.Body.String() != index.Body.String() {
			t.Errorf("GET %s = %d: a deep link must answer the page so that a reload keeps it", deep, rec.Code)
		}
	}
	for _, rec := range []*httptest.ResponseRecorder{index, get("/sessions")} {
		csp := rec.Header().Get("Content-Security-Policy")
		for _, want := range []string{"default-src 'none'", "script-src 'self'", "style-src 'self'", "connect-src 'self'", "frame-ancestors 'none'", "base-uri 'none'"} {
			if !strings.Contains(csp, want) {
				t.Errorf("CSP %q lacks %q", csp, want)
			}
		}
		if strings.Contains(csp, "unsafe") || strings.Contains(csp, "http") {
			t.Errorf("CSP %q allows inline code or a remote origin", csp)
		}
		if rec.Header().Get("X-Content-Type-Options") != "nosniff" || rec.Header().Get("Cache-Control") != "no-cache" {
			t.Errorf("headers %v", rec.Header())
		}
	}
	// Every asset index.html names is served, immutable, with its type.
	body := index.Body.String()
	for _, ext := range []string{".js", ".css"} {
		i := strings.Index(body, "/assets/app-")
		for i >= 0 {
			end := strings.IndexAny(body[i:], `"`)
			name := body[i : i+end]
			if strings.HasSuffix(name, ext) {
				rec := get(name)
				if rec.Code != 200 || !strings.Contains(rec.Header().Get("Cache-Control"), "immutable") || rec.Body.Len() == 0 {
					t.Errorf("GET %s = %d %v", name, rec.Code, rec.Header())
				}
				if ext == ".js" && !strings.HasPrefix(rec.Header().Get("Content-Type"), "text/javascript") {
					t.Errorf("GET %s Content-Type %q", name, rec.Header().Get("Content-Type"))
				}
			}
			next := strings.Index(body[i+1:], "/assets/app-")
			if next < 0 {
				break
			}
			i += 1 + next
		}
	}
	if rec := get("/assets/app-000000000000.js"); rec.Code != 404 {
		t.Errorf("a missing asset = %d, want 404", rec.Code)
	}
	if rec := get("/robots.txt"); rec.Code != 404 {
		t.Errorf("a file the bundle lacks = %d, want 404 (not the page)", rec.Code)
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodPost, "/sessions", nil))
	if rec.Code != http.StatusMethodNotAllowed {
		t.Errorf("POST a page = %d, want 405", rec.Code)
	}
}

// TestBundleRunsUnderTheCSP: the policy forbids eval and inline code, so
// the bundle must not need them (a dependency that compiles code at run
// time, like a JSON Schema compiler, would break in the browser only).
func TestBundleRunsUnderTheCSP(t *testing.T) {
	got := files(t, os.DirFS("dist"))
	for name, b := range got {
		s := string(b)
		switch {
		case strings.HasSuffix(name, ".js"):
			for _, bad := range []string{"eval(", "new Function(", "Function(\"", "setTimeout(\"", "setInterval(\""} {
				if strings.Contains(s, bad) {
					t.Errorf("%s contains %q, which the Content-Security-Policy refuses", name, bad)
				}
			}
		case strings.HasSuffix(name, ".html"):
			if strings.Contains(s, "<script>") || strings.Contains(s, " style=") || strings.Contains(s, "<style") || strings.Contains(s, "http://") || strings.Contains(s, "https://") {
				t.Errorf("%s has inline script or style, or a remote address", name)
			}
		}
	}
}
