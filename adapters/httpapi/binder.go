package httpapi

import (
	"encoding/json"
	"io"

	"github.com/labstack/echo/v4"
)

// binder hands operations that parse their own body (a json.RawMessage
// body, see rawBodyExtension) the exact bytes sent, so the domain parser sees
// malformed JSON and trailing data itself; other bodies are decoded as echo
// does, from the body only.
type binder struct{ echo.DefaultBinder }

func (b *binder) Bind(i any, c echo.Context) error {
	if raw, ok := i.(*json.RawMessage); ok {
		body, err := io.ReadAll(c.Request().Body)
		if err != nil {
			return err
		}
		*raw = body
		return nil
	}
	return b.BindBody(c, i)
}
