package httpapi

import (
	"fmt"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strings"

	"github.com/labstack/echo/v4"
)

// hostGate refuses, before anything else runs, requests whose Host is not one
// of ours (DNS rebinding: a hostile page resolving its own name to 127.0.0.1)
// and browser requests from another origin (CSRF), in open and keyed mode
// alike:
//
//   - An Origin must be the server's own (the scheme, host and port of the
//     request's Host, or any loopback name for the same port when the Host is
//     a loopback one) or one of Config.AllowedOrigins. A page on another port
//     of this machine (a dev server on localhost:3000) is another origin.
//   - Unless the Origin is an allowed one, Sec-Fetch-Site cross-site is
//     refused on every method, and same-site on every method but GET, HEAD
//     and OPTIONS: the browser's own word that another site sent it.
//
// Clients that are not browsers (the CLI, curl, MCP agents) send neither
// header and pass; a key does not exempt a browser request, since a page of
// another origin holding a key is still a cross-origin write.
func (s *Server) hostGate(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		req := c.Request()
		if !s.hostAllowed(req.Host) {
			return echo.NewHTTPError(http.StatusForbidden,
				"Host "+quote(req.Host)+" is not served here; add it to YUKTA_ALLOWED_HOSTS if this server is reached under that name")
		}
		trusted := false
		if o := req.Header.Get("Origin"); o != "" {
			origin, err := ParseOrigin(o)
			switch {
			case err == nil && slices.Contains(s.cfg.AllowedOrigins, origin.String()):
				trusted = true
			case err != nil || !origin.sameAs(req.Host):
				return echo.NewHTTPError(http.StatusForbidden, "cross-origin request from "+quote(o)+
					" refused; only pages of this server's own origin may call it, or add the origin to YUKTA_ALLOWED_ORIGINS")
			}
		}
		if !trusted {
			switch site := req.Header.Get("Sec-Fetch-Site"); {
			case site == "cross-site", site == "same-site" && !safeMethod(req.Method):
				return echo.NewHTTPError(http.StatusForbidden, "cross-site request refused (Sec-Fetch-Site: "+site+
					"); only pages of this server's own origin may call it, or add the origin to YUKTA_ALLOWED_ORIGINS")
			}
		}
		return next(c)
	}
}

// safeMethod reports whether method changes nothing by HTTP's definition.
func safeMethod(method string) bool {
	return method == http.MethodGet || method == http.MethodHead || method == http.MethodOptions
}

func (s *Server) hostAllowed(hostport string) bool {
	host, _ := splitHost(hostport)
	if host == "" {
		return false
	}
	if loopbackName(host) {
		return true
	}
	if ip := net.ParseIP(host); ip != nil && s.ln != nil {
		if ta, ok := s.ln.Addr().(*net.TCPAddr); ok && ta.IP.Equal(ip) {
			return true
		}
	}
	return slices.ContainsFunc(s.cfg.AllowedHosts, func(a string) bool { return strings.EqualFold(a, host) })
}

// splitHost splits a Host header into its lower-case host, without the
// brackets of an IPv6 address, and its port ("" when none is given). A
// trailing dot ("localhost.") is kept: it is a different name to a
// resolver, one DNS can answer for, so it is not folded onto the allowed one.
func splitHost(hostport string) (host, port string) {
	host = hostport
	if h, p, err := net.SplitHostPort(hostport); err == nil {
		host, port = h, p
	}
	return strings.ToLower(strings.Trim(host, "[]")), port
}

// loopbackName reports whether host (lower case, no brackets) names this
// machine whatever DNS says: localhost, a name under .localhost (which
// browsers and resolvers keep on loopback) or a loopback IP.
func loopbackName(host string) bool {
	if host == "localhost" || strings.HasSuffix(host, ".localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// Origin is a browser origin: scheme, host and port, normalised so that two
// spellings of one origin compare equal.
type Origin struct {
	Scheme string // "http" or "https"
	Host   string // lower case; an IPv6 address without brackets
	Port   string // "" for the scheme's default port
}

// String is the origin as a browser serialises it ("http://localhost:3000",
// "https://[::1]").
func (o Origin) String() string {
	h := o.Host
	if strings.Contains(h, ":") {
		h = "[" + h + "]"
	}
	if o.Port != "" {
		h += ":" + o.Port
	}
	return o.Scheme + "://" + h
}

// port is the origin's port, the scheme's default when none is written.
func (o Origin) port() string {
	if o.Port != "" {
		return o.Port
	}
	return defaultPort[o.Scheme]
}

var defaultPort = map[string]string{"http": "80", "https": "443"}

// ParseOrigin reads an Origin header value or a configured origin: http or
// https, a host, an optional port, and nothing else (no path, query, user or
// wildcard). "null" and anything else are errors.
func ParseOrigin(s string) (Origin, error) {
	u, err := url.Parse(s)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.Opaque != "" || u.User != nil ||
		(u.Path != "" && u.Path != "/") || u.RawQuery != "" || u.Fragment != "" || strings.HasSuffix(s, "?") || strings.HasSuffix(s, "#") {
		return Origin{}, fmt.Errorf("%s is not an origin: want http:// or https://, a host and an optional port, such as http://localhost:3000", quote(s))
	}
	o := Origin{Scheme: u.Scheme, Host: strings.ToLower(u.Hostname()), Port: u.Port()}
	if o.Host == "" || strings.ContainsAny(o.Host, "*%") || (u.Port() == "" && strings.HasSuffix(u.Host, ":")) {
		return Origin{}, fmt.Errorf("%s is not an origin: want http:// or https://, a host and an optional port, such as http://localhost:3000", quote(s))
	}
	if o.Port == defaultPort[o.Scheme] {
		o.Port = ""
	}
	return o, nil
}

// sameAs reports whether o is the origin of the server as reached through
// hostport, the request's Host: the same host and port, or, when both are
// loopback names, any loopback name with the same port (a browser may call
// this server 127.0.0.1, localhost or [::1]). The scheme is not compared:
// the server cannot tell whether a TLS proxy is in front of it, and no other
// program can answer on its own host and port.
func (o Origin) sameAs(hostport string) bool {
	host, port := splitHost(hostport)
	if port == "" {
		port = defaultPort[o.Scheme]
	}
	if o.port() != port {
		return false
	}
	return o.Host == host || loopbackName(o.Host) && loopbackName(host)
}

func quote(s string) string {
	if len(s) > 100 {
		s = s[:100] + "…"
	}
	return `"` + strings.Map(func(r rune) rune {
		if r < 0x20 || r == 0x7f || r == '"' {
			return '?'
		}
		return r
	}, s) + `"`
}
