package httpapi

import (
	"bytes"
	"fmt"
	"io"
	"net/http"

	"github.com/labstack/echo/v4"

	"github.com/yukta/yukta/adapters/authn"
)

// Mount is a handler served beside the spec routes (the MCP endpoint, the
// agent API): behind the same Host/Origin gate, rate limits and key check,
// with the principal on the request context, but authorized by the handler
// itself (per tool, per directive) and not validated against the spec.
type Mount struct {
	// Paths are exact paths, e.g. "/mcp" and "/sse".
	Paths   []string
	Handler http.Handler
	// Surface selects which keys open it.
	Surface authn.Surface
	// BodyLimit caps request bodies in bytes; zero means the API's cap.
	BodyLimit int64
}

// bodyCap refuses a declared length over limit at once and caps what a
// handler can read of any other body (chunked ones included) with
// http.MaxBytesReader, whose error handlers recognise and answer with 413.
func bodyCap(limit int64) echo.MiddlewareFunc {
	return func(next echo.HandlerFunc) echo.HandlerFunc {
		return func(c echo.Context) error {
			req := c.Request()
			if req.ContentLength > limit {
				return tooLarge(req.ContentLength, limit)
			}
			if req.Body != nil {
				req.Body = http.MaxBytesReader(c.Response(), req.Body, limit)
			}
			return next(c)
		}
	}
}

// bufferBody reads a whole API request body, up to limit, before anything
// else looks at it: one more byte is a 413 whether or not a length was
// declared, and the validator and handler then read from memory, so a read
// error can never be mistaken for an invalid request.
func bufferBody(limit int64) echo.MiddlewareFunc {
	return func(next echo.HandlerFunc) echo.HandlerFunc {
		return func(c echo.Context) error {
			req := c.Request()
			if req.Body == nil || req.Body == http.NoBody {
				return next(c)
			}
			if req.ContentLength > limit {
				return tooLarge(req.ContentLength, limit)
			}
			b, err := io.ReadAll(io.LimitReader(req.Body, limit+1))
			if err != nil {
				return echo.NewHTTPError(http.StatusBadRequest, "the request body could not be read: "+err.Error())
			}
			if int64(len(b)) > limit {
				return tooLarge(-1, limit)
			}
			req.Body = io.NopCloser(bytes.NewReader(b))
			req.ContentLength = int64(len(b))
			return next(c)
		}
	}
}

func tooLarge(n, limit int64) error {
	if n < 0 {
		return echo.NewHTTPError(http.StatusRequestEntityTooLarge, fmt.Sprintf("the request body is over the limit of %d bytes here", limit))
	}
	return echo.NewHTTPError(http.StatusRequestEntityTooLarge, fmt.Sprintf("the request body is %d bytes; the limit here is %d", n, limit))
}
