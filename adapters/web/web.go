// Package web serves the web console: the bundle web/build.mjs builds from
// web/src into dist/ (committed, so `go run . serve` needs no Node.js),
// embedded in the binary. Every answer carries a Content-Security-Policy
// that allows only this origin's own scripts, styles and connections (no
// inline script, no remote origin, no eval), so a value shown on a page can
// never run as code. The console is a client of the public REST API like
// any other: it has no endpoint of its own and no privilege.
package web

import (
	"bytes"
	"embed"
	"io/fs"
	"net/http"
	"path"
	"strings"
	"time"
)

//go:embed all:dist
var dist embed.FS

// ContentSecurityPolicy is sent with every console answer.
const ContentSecurityPolicy = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; " +
	"connect-src 'self'; font-src 'self'; worker-src 'self'; manifest-src 'self'; base-uri 'none'; " +
	"form-action 'self'; frame-ancestors 'none'"

// Handler serves the console: /assets/<file> from the bundle (named by
// content hash, so cached for a year), and index.html for every other path
// so that a deep link (/sessions/{sessionId}/executions/{executionId})
// survives a reload; the page's router picks the page.
type Handler struct {
	assets fs.FS
	index  []byte
}

// New returns the console's handler over the embedded bundle.
func New() (*Handler, error) {
	return NewFS(dist)
}

// NewFS returns the console's handler over a bundle laid out like dist/
// (index.html, assets/), for tests.
func NewFS(bundle fs.FS) (*Handler, error) {
	sub, err := fs.Sub(bundle, "dist")
	if err != nil {
		return nil, err
	}
	index, err := fs.ReadFile(sub, "index.html")
	if err != nil {
		return nil, err
	}
	return &Handler{assets: sub, index: index}, nil
}

// modTime is the bundle's time for conditional requests: embedded files
// have none, and the content hashes in the names already change with it.
var modTime = time.Unix(0, 0)

func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	hd := w.Header()
	hd.Set("Content-Security-Policy", ContentSecurityPolicy)
	hd.Set("X-Content-Type-Options", "nosniff")
	hd.Set("Referrer-Policy", "no-referrer")
	hd.Set("X-Frame-Options", "DENY")
	hd.Set("Cross-Origin-Opener-Policy", "same-origin")
	hd.Set("Cross-Origin-Resource-Policy", "same-origin")
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		hd.Set("Allow", "GET, HEAD")
		http.Error(w, "the console answers GET and HEAD only", http.StatusMethodNotAllowed)
		return
	}
	p := path.Clean("/" + r.URL.Path)
	if name, ok := strings.CutPrefix(p, "/assets/"); ok {
		b, err := fs.ReadFile(h.assets, "assets/"+name)
		if err != nil {
			http.Error(w, "no such console asset: "+name, http.StatusNotFound)
			return
		}
		if strings.HasPrefix(name, "app-") {
			hd.Set("Cache-Control", "public, max-age=31536000, immutable")
		} else {
			hd.Set("Cache-Control", "public, max-age=3600")
		}
		http.ServeContent(w, r, name, modTime, bytes.NewReader(b))
		return
	}
	if path.Ext(p) != "" {
		// A file the bundle does not have (/robots.txt, /x.js): a page
		// path never has an extension, so this is not a deep link.
		http.Error(w, "not found", http.StatusNotFound)
		return
	}
	hd.Set("Cache-Control", "no-cache")
	http.ServeContent(w, r, "index.html", modTime, bytes.NewReader(h.index))
}
