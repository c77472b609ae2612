// Package httpapi is the REST door into Yukta: an echo server whose routes are
// generated from api/openapi.yaml (strict server, in restapi/), guarded by a
// Host/Origin gate and request validation, and answering errors as RFC 9457
// problems. echo stays inside this package.
package httpapi

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"net"
	"net/http"
	"regexp"
	"strings"
	"time"

	"github.com/labstack/echo/v4"
	"github.com/labstack/echo/v4/middleware"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"

	"github.com/yukta/yukta/adapters/authn"
	"github.com/yukta/yukta/adapters/httpapi/restapi"
)

// Config tunes the HTTP server.
type Config struct {
	// Addr is host:port to listen on; port 0 picks a free port.
	Addr string
	// AllowedHosts are extra Host header names (beyond loopback names and the
	// bound address) the server answers to, e.g. its public DNS name.
	AllowedHosts []string
	// AllowedOrigins are browser origins ("http://localhost:3000") whose
	// pages may call the server besides its own; New normalises them.
	AllowedOrigins []string
	// BodyLimit caps request bodies of the API in bytes.
	BodyLimit int64
	// AgentBodyLimit caps agent API request bodies (default
	// DefaultAgentBodyLimit, 64 KiB).
	AgentBodyLimit int64
	// Security is the key check and the rate limits.
	Security Security
	// Mounts are handlers served beside the spec routes (MCP, agent API).
	Mounts []Mount
	// TrustedProxies are the networks of reverse proxies whose
	// X-Forwarded-For names the client; empty trusts no proxy, so the
	// source of a request is its TCP peer.
	TrustedProxies []*net.IPNet
	// Metrics receives request and access measurements; nil measures nothing.
	Metrics Observer
	// MetricsHandler serves GET /metrics (Prometheus text); nil answers 404.
	MetricsHandler http.Handler
	// Console serves the web console (adapters/web) at / and every path
	// outside /api/ that no route has; nil answers 404 there.
	Console http.Handler
}

// DefaultBodyLimit is 1 MiB: far above any session document people write.
const DefaultBodyLimit = 1 << 20

// Server owns the listener and the http.Server.
type Server struct {
	log  *zap.Logger
	cfg  Config
	echo *echo.Echo
	srv  *http.Server
	ln   net.Listener
	done chan error
	sec  Security
	obs  Observer
	// routes maps "METHOD /echo/path" to what the access gate needs.
	routes map[string]route
	// mounted are the routes of mounts by path, whatever the method: not in
	// the spec, not validated.
	mounted map[string]route
	// publicPaths are the echo paths of the public routes, whatever the
	// method, so a wrong method on a probe is 405 without a key.
	publicPaths map[string]bool
	// bySource and byKey are the rate limits; failures (per source) and
	// repeats (per source and presented key) the failure budget, and proven
	// the keys that authenticated from a source, which a spent budget does
	// not stop.
	bySource, byKey, byAgent, failures, repeats *limiters
	proven                                      *recent
	checking                                    *checking
	// shutdown closes when Shutdown begins, so long-lived streams end and
	// let the server drain.
	shutdown chan struct{}
}

// New builds the server and its routes; it does not listen yet.
func New(cfg Config, uc UseCases, log *zap.Logger) (*Server, error) {
	if cfg.BodyLimit <= 0 {
		cfg.BodyLimit = DefaultBodyLimit
	}
	origins := make([]string, 0, len(cfg.AllowedOrigins))
	for _, o := range cfg.AllowedOrigins {
		origin, err := ParseOrigin(o)
		if err != nil {
			return nil, fmt.Errorf("httpapi: allowed origins: %w", err)
		}
		origins = append(origins, origin.String())
	}
	cfg.AllowedOrigins = origins
	spec, err := restapi.GetSpec()
	if err != nil {
		return nil, fmt.Errorf("httpapi: load the embedded spec: %w", err)
	}
	validate, err := requestValidator(spec)
	if err != nil {
		return nil, err
	}
	routes, err := specRoutes(spec)
	if err != nil {
		return nil, err
	}
	e := echo.New()
	e.HideBanner, e.HidePort = true, true
	e.IPExtractor = echo.ExtractIPDirect() // no proxy is trusted unless configured
	if len(cfg.TrustedProxies) > 0 {
		opts := []echo.TrustOption{echo.TrustLoopback(false), echo.TrustLinkLocal(false), echo.TrustPrivateNet(false)}
		for _, n := range cfg.TrustedProxies {
			opts = append(opts, echo.TrustIPRange(n))
		}
		e.IPExtractor = echo.ExtractIPFromXFFHeader(opts...)
	}
	e.HTTPErrorHandler = errorHandler(log)
	e.Binder = &binder{}
	sec := cfg.Security
	if sec.AuthFailures.Unlimited() {
		sec.AuthFailures = DefaultAuthFailures
	}
	obs := cfg.Metrics
	if obs == nil {
		obs = noObserver{}
	}
	s := &Server{log: log, cfg: cfg, echo: e, sec: sec, obs: obs, routes: routes, mounted: map[string]route{},
		bySource: newLimiters(sec.SourceRate), byKey: newLimiters(sec.KeyRate), byAgent: newLimiters(sec.AgentRate), failures: newLimiters(sec.AuthFailures),
		repeats: newLimiters(sec.AuthFailures), proven: newRecent(provenFor), checking: newChecking()}
	for _, m := range cfg.Mounts {
		for _, p := range m.Paths {
			s.mounted[p] = route{operationID: "mount:" + p, surface: m.Surface}
		}
	}
	if cfg.Console != nil {
		// The console's files are public (they hold no data: every call the
		// page makes is an API request with the tab's key); behind the same
		// Host/Origin gate and rate limit as the API.
		for _, p := range consolePaths {
			s.mounted[p] = route{operationID: consoleRoute, surface: authn.REST, public: true}
		}
	}
	s.publicPaths = map[string]bool{}
	for k, r := range routes {
		if r.public {
			s.publicPaths[k[strings.IndexByte(k, ' ')+1:]] = true
		}
	}

	e.Use(requestID())
	e.Use(agentContract)
	e.Use(s.measure)
	e.Use(accessLog(log))
	e.Use(middleware.RecoverWithConfig(middleware.RecoverConfig{
		LogErrorFunc: func(c echo.Context, err error, stack []byte) error {
			log.Error("panic recovered", zap.Error(err), zap.ByteString("stack", stack))
			return echo.NewHTTPError(http.StatusInternalServerError).SetInternal(err)
		},
	}))
	e.Use(s.hostGate)
	e.Use(s.gate)
	apiLimit := bufferBody(cfg.BodyLimit)
	e.Use(func(next echo.HandlerFunc) echo.HandlerFunc {
		checked := apiLimit(validate(next))
		return func(c echo.Context) error {
			if _, ok := s.mounted[c.Path()]; ok {
				return next(c) // a mount applies its own cap and checks
			}
			return checked(c)
		}
	})

	s.shutdown = make(chan struct{})
	restapi.RegisterHandlers(e, restapi.NewStrictHandler(&handlers{uc: uc, ex: uc.Executions,
		done: s.shutdown, metrics: cfg.MetricsHandler}, nil))
	s.registerAgent(uc.Agent, cfg.AgentBodyLimit)
	for _, m := range cfg.Mounts {
		limit := m.BodyLimit
		if limit <= 0 {
			limit = cfg.BodyLimit
		}
		h := echo.WrapHandler(m.Handler)
		for _, p := range m.Paths {
			e.Any(p, h, bodyCap(limit))
		}
	}
	if cfg.Console != nil {
		page := echo.WrapHandler(cfg.Console)
		serve := func(c echo.Context) error {
			if isAPIPath(c.Request().URL.Path) {
				return noRoute(c.Request()) // an API path no route has: a problem, never the page
			}
			return page(c)
		}
		for _, p := range consolePaths {
			e.GET(p, serve)
			e.HEAD(p, serve)
		}
	}
	return s, nil
}

// consolePaths are the echo paths the console answers: the root, and every
// path no other route has (echo's catch-all).
var consolePaths = []string{"/", "/*"}

const consoleRoute = "console"

func isAPIPath(p string) bool { return p == "/api" || strings.HasPrefix(p, "/api/") }

// Handler returns the HTTP handler (for tests that drive it in process).
func (s *Server) Handler() http.Handler { return s.echo }

// Listen binds the address synchronously, so "address in use" fails startup,
// then serves in a goroutine that Shutdown joins.
func (s *Server) Listen() error {
	ln, err := net.Listen("tcp", s.cfg.Addr)
	if err != nil {
		return fmt.Errorf("httpapi: listen on %s: %w", s.cfg.Addr, err)
	}
	s.ln = ln
	s.srv = &http.Server{
		Handler:           s.echo,
		ReadHeaderTimeout: 10 * time.Second,
		ReadTimeout:       60 * time.Second,
		IdleTimeout:       120 * time.Second,
		MaxHeaderBytes:    64 << 10,
		ErrorLog:          zap.NewStdLog(s.log.Named("http")),
	}
	s.srv.RegisterOnShutdown(func() { close(s.shutdown) })
	s.done = make(chan error, 1)
	go func() {
		err := s.srv.Serve(ln)
		if errors.Is(err, http.ErrServerClosed) {
			err = nil
		}
		s.done <- err
	}()
	return nil
}

// Addr returns the bound address (useful with port 0).
func (s *Server) Addr() net.Addr { return s.ln.Addr() }

// Shutdown stops accepting, waits for in-flight requests until ctx ends, then
// closes what is left, and joins the serving goroutine.
func (s *Server) Shutdown(ctx context.Context) error {
	if s.srv == nil {
		return nil
	}
	err := s.srv.Shutdown(ctx)
	if err != nil {
		_ = s.srv.Close()
	}
	if serr := <-s.done; serr != nil && err == nil {
		err = serr
	}
	return err
}

var safeRequestID = regexp.MustCompile(`^[A-Za-z0-9._-]{8,64}$`)

// requestID keeps a caller's X-Request-ID only when it is a plain token, so
// logs cannot be forged through it, and otherwise issues a fresh one.
func requestID() echo.MiddlewareFunc {
	return func(next echo.HandlerFunc) echo.HandlerFunc {
		return func(c echo.Context) error {
			id := c.Request().Header.Get(echo.HeaderXRequestID)
			if !safeRequestID.MatchString(id) {
				id = rand.Text()
				c.Request().Header.Set(echo.HeaderXRequestID, id)
			}
			c.Response().Header().Set(echo.HeaderXRequestID, id)
			return next(c)
		}
	}
}

// measure reports every request to the metrics observer by route template,
// so label cardinality stays bounded whatever paths clients send.
func (s *Server) measure(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		start := time.Now()
		err := next(c)
		status := c.Response().Status
		if err != nil {
			// The error handler has not written yet; this is the status it will.
			if he, ok := errors.AsType[*echo.HTTPError](err); ok {
				status = he.Code
			} else {
				status = problemFor(c, err).Status
			}
		}
		r, known := s.routeOf(c)
		surface, path := authn.REST.String(), c.Path()
		if known {
			surface = r.surface.String()
		} else {
			path = "unmatched"
		}
		s.obs.ObserveRequest(surface, c.Request().Method, path, status, time.Since(start))
		return err
	}
}

func accessLog(log *zap.Logger) echo.MiddlewareFunc {
	return middleware.RequestLoggerWithConfig(middleware.RequestLoggerConfig{
		HandleError: true, LogLatency: true, LogMethod: true, LogRoutePath: true, LogURIPath: true,
		LogStatus: true, LogRemoteIP: true, LogRequestID: true,
		LogValuesFunc: func(c echo.Context, v middleware.RequestLoggerValues) error {
			lvl := zapcore.InfoLevel
			switch {
			case v.Status == StatusClientClosed: // the client's choice: info
			case v.Status >= 500:
				lvl = zapcore.ErrorLevel
			case v.Status >= 400:
				lvl = zapcore.WarnLevel
			}
			if ce := log.Check(lvl, "http request"); ce != nil {
				ce.Write(zap.String("request_id", v.RequestID), zap.String("method", v.Method),
					zap.String("route", v.RoutePath), zap.String("path", v.URIPath), zap.Int("status", v.Status),
					zap.Duration("latency", v.Latency), zap.String("remote_ip", v.RemoteIP), zap.String("actor", actorOf(c)))
			}
			return nil
		},
	})
}

// actorOf is the caller's actor for the access log; empty before the gate
// has authenticated (refused or public requests).
func actorOf(c echo.Context) string {
	if p, ok := principal(c); ok {
		return p.Actor()
	}
	return ""
}

// routeOf returns what the access gate knows of the request's route; known
// is false for a request no route matched.
func (s *Server) routeOf(c echo.Context) (route, bool) {
	if r, ok := s.mounted[c.Path()]; ok {
		if r.operationID == consoleRoute && isAPIPath(c.Request().URL.Path) {
			return route{}, false // an unknown API path takes a key like the others
		}
		return r, true
	}
	r, ok := s.routes[c.Request().Method+" "+c.Path()]
	return r, ok
}
