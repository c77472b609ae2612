package httpapi

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/labstack/echo/v4"
	"go.uber.org/zap"

	"github.com/yukta/yukta/adapters/authn"
	"github.com/yukta/yukta/application/supervisorapp"
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
	// AuthFailures is the failure budget: how many different wrong keys a
	// source may present, and how often it may present the same wrong key
	// again, before it gets 429 until the budget refills. Zero means 20 a
	// minute.
	AuthFailures Rate
	// Agent checks a supervisor credential presented on the agent API
	// (the secret and the source address) and returns its principal
	// (access.SupervisorPrincipal); an error is a wrong credential. Nil:
	// the agent API takes nobody.
	Agent func(ctx context.Context, secret, source string) (access.Principal, error)
	// AgentRate limits each supervisor credential on the agent API; zero
	// is unlimited (the server's default is DefaultAgentRate).
	AgentRate Rate
}

// DefaultAgentRate is the agent API's limit per credential (seed 000).
var DefaultAgentRate = Rate{N: 600, Per: time.Minute}

// DefaultAuthFailures lets a person mistype a key a few times a minute and
// keeps online guessing hopeless.
var DefaultAuthFailures = Rate{N: 20, Per: time.Minute}

// provenFor is how long a key that authenticated from a source stays exempt
// from that source's spent failure budget after its last success: a day, so
// a daily job behind the same NAT as a key guesser keeps working.
const provenFor = 24 * time.Hour

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
// rate limits the source, checks the key (401) within the failure budget,
// rate limits the key, and asks the permission table whether the key may
// perform the route's operation on the session the route names (403, or 404
// for a session the key may not see). Nothing after it runs for a refused
// request.
//
// The failure budget bounds guessing without letting a guesser lock out the
// keys of the people who share its address (a NAT, a proxy):
//
//   - each different wrong key a source presents spends one token of the
//     source's budget; once it is spent, keys new to the source are not
//     checked at all (429), so a guess beyond the budget cannot succeed even
//     when it is right;
//   - a wrong key presented again (a stale key in a loop) spends only its
//     own budget at that source, so it is refused on its own and does not
//     use up everyone's;
//   - a key that authenticated from the source within the last day is
//     still checked when the source's budget is spent, and then only its
//     own rate limit applies. Only such a key gets past a spent budget, so a
//     guesser there learns nothing unless it presents, exactly, a key in use
//     at its own address.
func (s *Server) gate(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		req := c.Request()
		r, known := s.routeOf(c)
		if !known {
			// A method the path does not have: public when the path's
			// routes are (a probe answers 405, not 401).
			r = route{surface: authn.REST, public: s.publicPaths[c.Path()]}
			if strings.HasPrefix(req.URL.Path, AgentBase+"/") {
				// An agent path that does not exist takes a credential like
				// the others: 401 without one, 404 only to a supervisor.
				r = route{surface: authn.Agent}
			}
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
		// pair is the source and the presented key; again is that and the
		// surface, the key of a wrong key's own budget (the MCP key sent to
		// REST in a loop must not stop it on /mcp).
		presented := authn.Presented(req)
		var pair, again string
		if presented != "" {
			h := sha256.Sum256([]byte(presented))
			pair = src + " " + string(h[:])
			again = pair + " " + r.surface.String()
			if spent, wait := s.repeats.spent(again, now); spent {
				s.obs.RateLimited(r.surface.String(), "auth-failures")
				return tooMany(c, wait, "this key failed authentication too often from "+src+"; it is not valid here, so stop sending it, or retry after the Retry-After delay with a valid key")
			}
		}
		// A key that is neither proven here nor already refused here is a
		// guess: it reserves a token of the source's budget before it is
		// checked (so concurrent different guesses cannot share one), and
		// gets it back if it is valid. Concurrent requests with the same
		// key are one guess and reserve once.
		var refund func()
		switch {
		case s.sec.Keys.OpenOn(r.surface): // no key is checked, so none is guessed
		case pair == "":
			if spent, wait := s.failures.spent(src, now); spent {
				s.obs.RateLimited(r.surface.String(), "auth-failures")
				return tooMany(c, wait, "too many failed authentications from "+src+"; retry after the Retry-After delay with a valid key")
			}
		case s.proven.has(pair, now), s.repeats.has(again):
		default:
			first := s.checking.join(pair)
			defer s.checking.leave(pair)
			if !first {
				break // the same key is being checked from here: one guess
			}
			ok, wait, undo := s.failures.reserve(src, now)
			if !ok {
				s.obs.RateLimited(r.surface.String(), "auth-failures")
				return tooMany(c, wait, "too many failed authentications from "+src+"; retry after the Retry-After delay with a valid key")
			}
			refund = undo
		}
		var p access.Principal
		var err error
		if r.surface == authn.Agent && presented != "" {
			if s.sec.Agent == nil {
				err = authn.ErrInvalid
			} else if p, err = s.sec.Agent(req.Context(), presented, src); err != nil {
				if !errors.Is(err, supervisorapp.ErrAgentUnauthenticated) {
					return err // the database is down: not the caller's fault
				}
				s.log.Info("agent credential refused", zap.String("source", src), zap.Error(err))
				err = authn.ErrInvalid
			}
		} else {
			p, err = s.sec.Keys.Authenticate(req.WithContext(authn.WithSource(req.Context(), src)), r.surface)
		}
		if err != nil {
			// Only a wrong key spends the failure budget (its reserved
			// token stays spent): a request without one guesses nothing.
			reason := "missing"
			if !errors.Is(err, authn.ErrMissing) {
				reason = "invalid"
				s.repeats.take(again, now)
			}
			s.obs.AuthFailure(r.surface.String(), reason)
			// The fingerprint lets an operator tie repeated failures to one
			// stale key without the log holding anything usable as a key.
			s.log.Warn("authentication failed", zap.String("source", src), zap.String("reason", reason),
				zap.String("surface", r.surface.String()), zap.String("route", c.Path()),
				zap.String("key_fingerprint", fingerprint(presented)),
				zap.String("request_id", c.Response().Header().Get(echo.HeaderXRequestID)))
			c.Response().Header().Set(echo.HeaderWWWAuthenticate, `Bearer realm="yukta"`)
			if r.surface == authn.Agent {
				// The agent API takes supervisor credentials only: say so,
				// not "API key", whose holders it refuses.
				if reason == "missing" {
					return echo.NewHTTPError(http.StatusUnauthorized, "the agent API takes a supervisor credential; send it as \"Authorization: Bearer yks_…\" (an ADMIN issues one with POST /api/supervisors/{id}/credential)")
				}
				return echo.NewHTTPError(http.StatusUnauthorized, (&supervisorapp.AgentRefusal{}).Error())
			}
			if reason == "missing" {
				return echo.NewHTTPError(http.StatusUnauthorized, "an API key is required; send it as \"Authorization: Bearer <key>\" or \"X-API-Key: <key>\"")
			}
			return echo.NewHTTPError(http.StatusUnauthorized, "the API key is not valid for this endpoint; check the key, or ask an ADMIN for one")
		}
		if refund != nil {
			refund()
		}
		if pair != "" && !p.Anonymous() {
			s.proven.add(pair, now)
		}
		byKey := s.byKey
		if r.surface == authn.Agent {
			byKey = s.byAgent
		}
		if ok, wait := byKey.take(p.Actor(), now); !ok {
			s.obs.RateLimited(r.surface.String(), "key")
			return tooMany(c, wait, p.Actor()+" sent too many requests; slow down and retry after the Retry-After delay")
		}
		if presented != "" && !p.Anonymous() && r.surface != authn.Agent {
			// The key stays under watch while the request lasts: a stream
			// or a long poll ends once it no longer authenticates as p (the
			// agent API re-checks its supervisor's credential itself). The
			// log's fields are read now: the callback runs beside the
			// handler, which owns c.
			route, id := c.Path(), c.Response().Header().Get(echo.HeaderXRequestID)
			held, release := s.sec.Keys.Hold(req, r.surface, p, func(cause error) {
				s.log.Info("request ended: the key that opened it is no longer valid", zap.String("actor", p.Actor()),
					zap.String("surface", r.surface.String()), zap.String("route", route), zap.String("reason", keyEndReason(cause)),
					zap.String("request_id", id))
			})
			defer release()
			req = held
		}
		c.Set(principalKey, p)
		c.SetRequest(req.WithContext(authn.WithPrincipal(req.Context(), p)))
		if err := refuseWorker(p, r); err != nil {
			return err
		}
		if r.op != 0 {
			sid := c.Param("sessionId")
			if sid == "" {
				sid = c.QueryParam("sessionId")
			}
			if err := p.Can(r.op, sid); err != nil {
				return err
			}
		}
		err = next(c)
		if cause := authn.Ended(req.Context()); cause != nil && !c.Response().Committed {
			// Nothing was answered yet (a long poll, an MCP call): say why.
			c.Response().Header().Set(echo.HeaderWWWAuthenticate, `Bearer realm="yukta"`)
			return echo.NewHTTPError(http.StatusUnauthorized, cause.Error())
		}
		return err
	}
}

// refuseWorker refuses a WORKER key every route but the worker API's
// before anything else looks at the request: the MCP door as a whole
// (whose tools are authorized one by one further in, and none of which a
// WORKER key may call), and every route of the permission table whose
// operation is not access.WorkTasks (the gate's own check below refuses
// those with an operation too; this covers the ones a handler authorizes,
// scopeResource). Every other principal passes.
func refuseWorker(p access.Principal, r route) error {
	if p.Role() != access.Worker {
		return nil
	}
	if r.surface == authn.MCP {
		return access.RefuseWorker(p, "use MCP (the /mcp endpoint and every tool)")
	}
	switch {
	case r.listed == access.WorkTasks:
		return nil
	case r.listed.Valid():
		return p.Can(r.listed, "")
	case r.operationID == "":
		return nil // no route: answered 404 or 405
	}
	return access.RefuseWorker(p, "call "+r.operationID)
}

// keyEndReason is the log's word for why Hold ended a request.
func keyEndReason(cause error) string {
	if errors.Is(cause, authn.ErrKeyChanged) {
		return "changed"
	}
	return "invalid"
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
