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
	"time"

	"github.com/labstack/echo/v4"
	"github.com/labstack/echo/v4/middleware"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"

	"github.com/yukta/yukta/adapters/httpapi/restapi"
)

// Config tunes the HTTP server.
type Config struct {
	// Addr is host:port to listen on; port 0 picks a free port.
	Addr string
	// AllowedHosts are extra Host header names (beyond loopback names and the
	// bound address) the server answers to, e.g. its public DNS name.
	AllowedHosts []string
	// BodyLimit caps request bodies of the API in bytes.
	BodyLimit int64
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
	// shutdown closes when Shutdown begins, so long-lived streams end and
	// let the server drain.
	shutdown chan struct{}
}

// New builds the server and its routes; it does not listen yet.
func New(cfg Config, uc UseCases, log *zap.Logger) (*Server, error) {
	if cfg.BodyLimit <= 0 {
		cfg.BodyLimit = DefaultBodyLimit
	}
	spec, err := restapi.GetSwagger()
	if err != nil {
		return nil, fmt.Errorf("httpapi: load the embedded spec: %w", err)
	}
	validate, err := requestValidator(spec)
	if err != nil {
		return nil, err
	}
	e := echo.New()
	e.HideBanner, e.HidePort = true, true
	e.IPExtractor = echo.ExtractIPDirect() // no proxy is trusted unless configured
	e.HTTPErrorHandler = errorHandler(log)
	e.Binder = &binder{}
	s := &Server{log: log, cfg: cfg, echo: e}

	e.Use(requestID())
	e.Use(accessLog(log))
	e.Use(middleware.RecoverWithConfig(middleware.RecoverConfig{
		LogErrorFunc: func(c echo.Context, err error, stack []byte) error {
			log.Error("panic recovered", zap.Error(err), zap.ByteString("stack", stack))
			return echo.NewHTTPError(http.StatusInternalServerError).SetInternal(err)
		},
	}))
	e.Use(s.hostGate)
	e.Use(middleware.BodyLimit(fmt.Sprintf("%dB", cfg.BodyLimit)))
	e.Use(validate)

	s.shutdown = make(chan struct{})
	restapi.RegisterHandlers(e, restapi.NewStrictHandler(&handlers{uc: uc, ex: uc.Executions, checkCondition: uc.CheckCondition, done: s.shutdown}, nil))
	return s, nil
}

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

func accessLog(log *zap.Logger) echo.MiddlewareFunc {
	return middleware.RequestLoggerWithConfig(middleware.RequestLoggerConfig{
		HandleError: true, LogLatency: true, LogMethod: true, LogRoutePath: true, LogURIPath: true,
		LogStatus: true, LogRemoteIP: true, LogRequestID: true,
		LogValuesFunc: func(_ echo.Context, v middleware.RequestLoggerValues) error {
			lvl := zapcore.InfoLevel
			switch {
			case v.Status >= 500:
				lvl = zapcore.ErrorLevel
			case v.Status >= 400:
				lvl = zapcore.WarnLevel
			}
			if ce := log.Check(lvl, "http request"); ce != nil {
				ce.Write(zap.String("request_id", v.RequestID), zap.String("method", v.Method),
					zap.String("route", v.RoutePath), zap.String("path", v.URIPath), zap.Int("status", v.Status),
					zap.Duration("latency", v.Latency), zap.String("remote_ip", v.RemoteIP))
			}
			return nil
		},
	})
}
