package httpapi

import (
	"net/http"

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
