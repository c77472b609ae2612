package httpapi

import (
	"encoding/json"
	"io"

	"github.com/labstack/echo/v4"

	"github.com/yukta/yukta/domain/jsonvalue"
)

// binder decodes request bodies for the generated strict server. Operations
// that parse their own body (a json.RawMessage body, see rawBodyExtension)
// get the exact bytes sent, so the domain parser sees malformed JSON and
// trailing data itself. Every other body is checked strictly (domain/jsonvalue:
// no U+0000, valid UTF-8, no repeated keys, numbers in range; the request
// validator has normally done it already) and then decoded with numbers kept
// as json.Number, so a payload's 9007199254740993 is not rounded on the way in.
type binder struct{}

func (b *binder) Bind(i any, c echo.Context) error {
	body, err := io.ReadAll(c.Request().Body)
	if err != nil {
		return err
	}
	if raw, ok := i.(*json.RawMessage); ok {
		*raw = body
		return nil
	}
	if len(body) == 0 {
		return nil // no body: the request type keeps its zero value, as echo's binder did
	}
	if checked, _ := c.Get(bodyCheckedKey).(bool); !checked {
		if err := jsonvalue.Validate(body, "body"); err != nil {
			return strictError(err)
		}
	}
	return decodeBody(body, i)
}
