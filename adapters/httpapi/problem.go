package httpapi

import (
	"context"
	"errors"
	"net/http"
	"strconv"
	"strings"

	"github.com/labstack/echo/v4"
	"go.uber.org/zap"

	"github.com/yukta/yukta/adapters/authn"
	"github.com/yukta/yukta/adapters/httpapi/restapi"
	"github.com/yukta/yukta/application/executionapp"
	"github.com/yukta/yukta/domain/access"
	"github.com/yukta/yukta/domain/fault"
	"github.com/yukta/yukta/domain/jsonvalue"
)

const problemContentType = "application/problem+json"

// statusByKind is the one table from fault kinds to HTTP statuses.
var statusByKind = []struct {
	kind   error
	status int
	typ    string
}{
	{fault.ErrInvalid, http.StatusBadRequest, typeInvalid},
	{fault.ErrNotFound, http.StatusNotFound, typeNotFound},
	{fault.ErrForbidden, http.StatusForbidden, typeForbidden},
	{fault.ErrConflict, http.StatusConflict, typeConflict},
	{fault.ErrUnavailable, http.StatusServiceUnavailable, typeUnavailable},
}

// nextSteps names the route to try next for errors whose core text cannot:
// the core's texts name no route (MCP adds its tools the same way).
var nextSteps = []struct {
	is   error
	text string
}{
	{executionapp.ErrExecutionDeleted, " List the executions that remain with GET /api/sessions/{sessionId}/executions."},
	{executionapp.ErrExecutionNotFound, " List a session's executions with GET /api/sessions/{sessionId}/executions."},
	{access.ErrAPIKeyNotFound, " List the keys with GET /api/keys."},
}

// nextStep is the hint for err, or "".
func nextStep(err error) string {
	for _, s := range nextSteps {
		if errors.Is(err, s.is) {
			return s.text
		}
	}
	return ""
}

// errorHandler turns every error a handler or middleware returns into an RFC
// 9457 problem. It is the only place a failed request is logged; a 5xx never
// echoes internal error text.
func errorHandler(log *zap.Logger) echo.HTTPErrorHandler {
	return func(err error, c echo.Context) {
		if c.Response().Committed {
			return
		}
		if clientGone(c, err) {
			// Nobody reads this answer; it is the client's choice, not a
			// failure of the server.
			log.Debug("request cancelled by the client", zap.String("method", c.Request().Method),
				zap.String("route", c.Path()), zap.String("request_id", c.Response().Header().Get(echo.HeaderXRequestID)))
			c.Response().Status = StatusClientClosed
			return
		}
		p := problemFor(c, err)
		if p.Status >= 500 {
			log.Error("request failed", zap.Error(err), zap.String("method", c.Request().Method),
				zap.String("route", c.Path()), zap.String("request_id", c.Response().Header().Get(echo.HeaderXRequestID)))
			// A 5xx never shows internal error text; the log has it.
			switch p.Status {
			case http.StatusServiceUnavailable:
				p.Detail = "the database is unavailable; retry shortly (request id " + c.Response().Header().Get(echo.HeaderXRequestID) + ")"
			default:
				p.Detail = "internal error; the server log has the details under request id " + c.Response().Header().Get(echo.HeaderXRequestID)
			}
		}
		writeProblem(c, p)
	}
}

// Problem types answered outside statusByKind: the ones the HTTP layer
// itself produces (routing, body limits, authentication, rate limits) and the
// catch-all for an internal error. No answer has type about:blank.
const (
	typeInvalid          = "urn:yukta:problem:invalid"
	typeUnauthenticated  = "urn:yukta:problem:unauthenticated"
	typeForbidden        = "urn:yukta:problem:forbidden"
	typeNotFound         = "urn:yukta:problem:not-found"
	typeMethodNotAllowed = "urn:yukta:problem:method-not-allowed"
	typeConflict         = "urn:yukta:problem:conflict"
	typeTooLarge         = "urn:yukta:problem:too-large"
	typeUnsupportedMedia = "urn:yukta:problem:unsupported-media-type"
	typeRateLimited      = "urn:yukta:problem:rate-limited"
	typeInternal         = "urn:yukta:problem:internal"
	typeUnavailable      = "urn:yukta:problem:unavailable"
	typeHTTP             = "urn:yukta:problem:http"
)

// typeByStatus names the problem of an HTTP error the echo layer or a
// middleware raised by status code.
var typeByStatus = map[int]string{
	http.StatusBadRequest:            typeInvalid,
	http.StatusUnauthorized:          typeUnauthenticated,
	http.StatusForbidden:             typeForbidden,
	http.StatusNotFound:              typeNotFound,
	http.StatusMethodNotAllowed:      typeMethodNotAllowed,
	http.StatusConflict:              typeConflict,
	http.StatusRequestEntityTooLarge: typeTooLarge,
	http.StatusUnsupportedMediaType:  typeUnsupportedMedia,
	http.StatusTooManyRequests:       typeRateLimited,
	http.StatusInternalServerError:   typeInternal,
	http.StatusServiceUnavailable:    typeUnavailable,
}

// StatusClientClosed is the status the access log and the metrics record
// for a request its client abandoned before the answer (a long poll it
// stopped waiting for): nginx's 499. Nothing is written to the client.
const StatusClientClosed = 499

// clientGone reports whether the request failed because its client went
// away: its context is cancelled, so whatever the error says (the context's
// own error, or a store call it cut short) nobody waits for the answer.
func clientGone(c echo.Context, err error) bool {
	ctx := c.Request().Context()
	return err != nil && errors.Is(ctx.Err(), context.Canceled) && authn.Ended(ctx) == nil
}

func problemFor(c echo.Context, err error) restapi.Problem {
	if clientGone(c, err) {
		return restapi.Problem{Type: typeHTTP, Title: "Client Closed Request", Status: StatusClientClosed,
			Detail: "the client closed the request before the answer"}
	}
	if je, ok := errors.AsType[*jsonvalue.Error](err); ok {
		// A strict JSON refusal from anywhere below (a use case checking a
		// value it was handed) reads like the edge's own.
		err = &fault.ValidationError{Subject: "request", Violations: []fault.Violation{je.Violation()}}
	}
	if ve, ok := errors.AsType[*fault.ValidationError](err); ok {
		p := restapi.Problem{Type: typeInvalid, Title: "Invalid " + ve.Subject, Status: http.StatusBadRequest,
			Detail: violationsDetail(len(ve.Violations)), Errors: make([]restapi.Violation, len(ve.Violations))}
		if m := c.Request().Method; m == http.MethodGet || m == http.MethodHead {
			p.Detail = strings.TrimSuffix(p.Detail, " Nothing was changed.")
		}
		for i, v := range ve.Violations {
			p.Errors[i] = restapi.Violation{Path: v.Path, Message: v.Message}
		}
		return p
	}
	for _, m := range statusByKind {
		if errors.Is(err, m.kind) {
			return restapi.Problem{Type: m.typ, Title: http.StatusText(m.status), Status: m.status, Detail: err.Error() + nextStep(err)}
		}
	}
	if he, ok := errors.AsType[*echo.HTTPError](err); ok {
		if v, ok := parameterFormat(he); ok {
			return problemFor(c, &fault.ValidationError{Subject: "request", Violations: []fault.Violation{v}})
		}
		p := restapi.Problem{Type: problemType(he.Code), Title: http.StatusText(he.Code), Status: he.Code}
		if p.Title == "" {
			p.Title = "Error"
		}
		if msg, ok := he.Message.(string); ok && msg != http.StatusText(he.Code) && he.Code < 500 {
			p.Detail = msg
		}
		return p
	}
	return restapi.Problem{Type: typeInternal, Title: http.StatusText(http.StatusInternalServerError), Status: http.StatusInternalServerError}
}

// problemType is the problem type of an HTTP status.
func problemType(status int) string {
	if t, ok := typeByStatus[status]; ok {
		return t
	}
	if status >= 500 {
		return typeInternal
	}
	return typeHTTP
}

// parameterFormat rewords the generated router's parameter binding errors
// ("Invalid format for parameter inputId: error unmarshaling 'x' text as
// *uuid.UUID: …"), whose tail is Go text, as a violation naming the
// parameter. Request validation normally refuses such values first; this is
// the net under it.
func parameterFormat(he *echo.HTTPError) (fault.Violation, bool) {
	msg, ok := he.Message.(string)
	if !ok || he.Code != http.StatusBadRequest {
		return fault.Violation{}, false
	}
	rest, ok := strings.CutPrefix(msg, "Invalid format for parameter ")
	if !ok {
		return fault.Violation{}, false
	}
	name, _, _ := strings.Cut(rest, ":")
	return fault.Violation{Path: name, Message: "is not in the format this parameter takes; GET /api/openapi.yaml describes it"}, true
}

func violationsDetail(n int) string {
	if n == 1 {
		return "1 problem found; see errors. Nothing was changed."
	}
	return strconv.Itoa(n) + " problems found; see errors. Nothing was changed."
}

func writeProblem(c echo.Context, p restapi.Problem) {
	c.Response().Header().Set(echo.HeaderContentType, problemContentType)
	if c.Request().Method == http.MethodHead {
		_ = c.NoContent(p.Status)
		return
	}
	_ = c.JSON(p.Status, p)
}
