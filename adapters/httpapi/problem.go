package httpapi

import (
	"errors"
	"net/http"
	"strconv"
	"strings"

	"github.com/labstack/echo/v4"
	"go.uber.org/zap"

	"github.com/yukta/yukta/adapters/httpapi/restapi"
	"github.com/yukta/yukta/domain/fault"
)

const problemContentType = "application/problem+json"

// statusByKind is the one table from fault kinds to HTTP statuses.
var statusByKind = []struct {
	kind   error
	status int
	typ    string
}{
	{fault.ErrInvalid, http.StatusBadRequest, "urn:yukta:problem:invalid"},
	{fault.ErrNotFound, http.StatusNotFound, "urn:yukta:problem:not-found"},
	{fault.ErrForbidden, http.StatusForbidden, "urn:yukta:problem:forbidden"},
	{fault.ErrConflict, http.StatusConflict, "urn:yukta:problem:conflict"},
	{fault.ErrUnavailable, http.StatusServiceUnavailable, "urn:yukta:problem:unavailable"},
}

// errorHandler turns every error a handler or middleware returns into an RFC
// 9457 problem. It is the only place a failed request is logged; a 5xx never
// echoes internal error text.
func errorHandler(log *zap.Logger) echo.HTTPErrorHandler {
	return func(err error, c echo.Context) {
		if c.Response().Committed {
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

func problemFor(c echo.Context, err error) restapi.Problem {
	if ve, ok := errors.AsType[*fault.ValidationError](err); ok {
		p := restapi.Problem{Type: "urn:yukta:problem:invalid", Title: "Invalid " + ve.Subject, Status: http.StatusBadRequest,
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
			return restapi.Problem{Type: m.typ, Title: http.StatusText(m.status), Status: m.status, Detail: err.Error()}
		}
	}
	if he, ok := errors.AsType[*echo.HTTPError](err); ok {
		p := restapi.Problem{Type: "about:blank", Title: http.StatusText(he.Code), Status: he.Code}
		if msg, ok := he.Message.(string); ok && msg != http.StatusText(he.Code) {
			p.Detail = msg
		}
		return p
	}
	return restapi.Problem{Type: "about:blank", Title: http.StatusText(http.StatusInternalServerError), Status: http.StatusInternalServerError}
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
