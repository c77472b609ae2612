package httpapi

import (
	"net"
	"net/http"
	"net/url"
	"slices"
	"strings"

	"github.com/labstack/echo/v4"
)

// hostGate refuses, before anything else runs, requests whose Host is not one
// of ours (DNS rebinding: a hostile page resolving its own name to 127.0.0.1)
// and browser requests from another origin (CSRF).
func (s *Server) hostGate(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		req := c.Request()
		if !s.hostAllowed(req.Host) {
			return echo.NewHTTPError(http.StatusForbidden,
				"Host "+quote(req.Host)+" is not served here; add it to YUKTA_ALLOWED_HOSTS if this server is reached under that name")
		}
		if o := req.Header.Get("Origin"); o != "" {
			u, err := url.Parse(o)
			if err != nil || !strings.EqualFold(u.Host, req.Host) && !s.hostAllowed(u.Host) {
				return echo.NewHTTPError(http.StatusForbidden, "cross-origin request from "+quote(o)+" refused")
			}
		} else if req.Header.Get("Sec-Fetch-Site") == "cross-site" {
			return echo.NewHTTPError(http.StatusForbidden, "cross-site request refused")
		}
		return next(c)
	}
}

func (s *Server) hostAllowed(hostport string) bool {
	host := hostport
	if h, _, err := net.SplitHostPort(hostport); err == nil {
		host = h
	}
	// A trailing dot ("localhost.") is a different name to a resolver, one
	// DNS can answer for, so it is not folded onto the allowed one.
	host = strings.ToLower(strings.Trim(host, "[]"))
	if host == "" {
		return false
	}
	if host == "localhost" || strings.HasSuffix(host, ".localhost") {
		return true
	}
	if ip := net.ParseIP(host); ip != nil {
		if ip.IsLoopback() {
			return true
		}
		if s.ln != nil {
			if ta, ok := s.ln.Addr().(*net.TCPAddr); ok && ta.IP.Equal(ip) {
				return true
			}
		}
	}
	return slices.ContainsFunc(s.cfg.AllowedHosts, func(a string) bool { return strings.EqualFold(a, host) })
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
