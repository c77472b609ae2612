package httpapi

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"net/http"
	"strconv"
	"time"

	"github.com/labstack/echo/v4"
	"go.uber.org/zap"

	"github.com/yukta/yukta/adapters/authn"
	"github.com/yukta/yukta/domain/access"
)

// Security is who may call and how often.
type Security struct {
	// Keys are the configured keys; with none, every caller is the
	// anonymous ADMIN (the bind guard keeps such a server on loopback).
	Keys authn.Keys
	// KeyRate limits each authenticated key; SourceRate each source
	// address, before authentication. Zero is unlimited.
	KeyRate, SourceRate Rate
	// AuthFailures is how many failed authentications a source may make
	// before it gets 429 until its budget refills. Zero means 20 a minute.
	AuthFailures Rate
}

// DefaultAuthFailures lets a person mistype a key a few times a minute and
// keeps online guessing hopeless.
var DefaultAuthFailures = Rate{N: 20, Per: time.Minute}

// Observer receives request and access measurements (Prometheus in
// production). Implementations must be safe for concurrent use.
type Observer interface {
	ObserveRequest(surface, method, route string, status int, d time.Duration)
	AuthFailure(surface, reason string)
	RateLimited(surface, scope string)
}

type noObserver struct{}

func (noObserver) ObserveRequest(string, string, string, int, time.Duration) {}
func (noObserver) AuthFailure(string, string)                                {}
func (noObserver) RateLimited(string, string)                                {}

// principalKey is where the gate leaves the principal on the echo context,
// for the access log.
const principalKey = "yukta.principal"

// gate authenticates and authorizes every request that reached a route: it
// rate limits the source, checks the key (401), rate limits the key, and
// asks the permission table whether the key may perform the route's
// operation on the session the route names (403, or 404 for a session the
// key may not see). Nothing after it runs for a refused request.
func (s *Server) gate(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		req := c.Request()
		r, known := s.routeOf(c)
		if !known {
			r = route{surface: authn.REST}
		}
		now := time.Now()
		src := c.RealIP()
		if ok, wait := s.bySource.take(src, now); !ok {
			s.obs.RateLimited(r.surface.String(), "source")
			return tooMany(c, wait, "too many requests from "+src+"; slow down and retry after the Retry-After delay")
		}
		if r.public {
			return next(c)
		}
		if spent, wait := s.failures.spent(src, now); spent {
			s.obs.RateLimited(r.surface.String(), "auth-failures")
			return tooMany(c, wait, "too many failed authentications from "+src+"; retry after the Retry-After delay with a valid key")
		}
		p, err := s.sec.Keys.Authenticate(req, r.surface)
		if err != nil {
			// Only a wrong key spends the failure budget: a request without
			// one guesses nothing.
			reason := "missing"
			if !errors.Is(err, authn.ErrMissing) {
				reason = "invalid"
				s.failures.take(src, now)
			}
			s.obs.AuthFailure(r.surface.String(), reason)
			// The fingerprint lets an operator tie repeated failures to one
			// stale key without the log holding anything usable as a key.
			s.log.Warn("authentication failed", zap.String("source", src), zap.String("reason", reason),
				zap.String("surface", r.surface.String()), zap.String("route", c.Path()),
				zap.String("key_fingerprint", fingerprint(authn.Presented(req))),
				zap.String("request_id", c.Response().Header().Get(echo.HeaderXRequestID)))
			c.Response().Header().Set(echo.HeaderWWWAuthenticate, `Bearer realm="yukta"`)
			if reason == "missing" {
				return echo.NewHTTPError(http.StatusUnauthorized, "an API key is required; send it as \"Authorization: Bearer <key>\" or \"X-API-Key: <key>\"")
			}
			return echo.NewHTTPError(http.StatusUnauthorized, "the API key is not valid for this endpoint; check the key, or ask an ADMIN for one")
		}
		if ok, wait := s.byKey.take(p.Actor(), now); !ok {
			s.obs.RateLimited(r.surface.String(), "key")
			return tooMany(c, wait, p.Actor()+" sent too many requests; slow down and retry after the Retry-After delay")
		}
		c.Set(principalKey, p)
		c.SetRequest(req.WithContext(authn.WithPrincipal(req.Context(), p)))
		if r.op != 0 {
			sid := c.Param("sessionId")
			if sid == "" {
				sid = c.QueryParam("sessionId")
			}
			if err := p.Can(r.op, sid); err != nil {
				return err
			}
		}
		return next(c)
	}
}

func tooMany(c echo.Context, wait time.Duration, msg string) error {
	c.Response().Header().Set(echo.HeaderRetryAfter, strconv.Itoa(retryAfter(wait)))
	return echo.NewHTTPError(http.StatusTooManyRequests, msg)
}

// fingerprint is the first 8 hex digits of the SHA-256 of a presented key:
// enough to match against `sha256sum` of a known key, too little to help a
// guess. Empty for no key.
func fingerprint(secret string) string {
	if secret == "" {
		return ""
	}
	h := sha256.Sum256([]byte(secret))
	return hex.EncodeToString(h[:4])
}

// principal returns the caller the gate authenticated.
func principal(c echo.Context) (access.Principal, bool) {
	p, ok := c.Get(principalKey).(access.Principal)
	return p, ok
}
