package httpapi

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strings"

	"github.com/getkin/kin-openapi/routers"
	"github.com/labstack/echo/v4"

	"github.com/yukta/yukta/domain/fault"
	"github.com/yukta/yukta/domain/jsonvalue"
)

// Strict input: every JSON request body and every declared parameter is
// checked by domain/jsonvalue before anything decodes or stores it.
// PostgreSQL refuses U+0000 in text and jsonb, and encoding/json would
// silently replace invalid UTF-8, keep the last of repeated keys and round
// numbers beyond 2^53; each becomes a 400 naming the place instead. Body
// paths start with "body" ("body.payload.id"), parameter paths with where
// the parameter is ("path.executionId", "query.cursor",
// "header.Idempotency-Key"), as schema validation names them.

// bodyCheckedKey marks a request whose body strictBody has read, so the
// binder does not read it a second time.
const bodyCheckedKey = "yukta.bodyChecked"

// strictParameters refuses a declared path, query or header parameter whose
// value holds U+0000 or is not valid UTF-8. Those values reach the store or
// the log (an idempotency key, an id in an error sentence), so they must be
// text PostgreSQL can hold.
func strictParameters(req *http.Request, route *routers.Route, pathParams map[string]string) error {
	var vs []fault.Violation
	check := func(in, name, value string) {
		if err := jsonvalue.Check(value, in+"."+name, jsonvalue.Limits{}); err != nil {
			if je, ok := errors.AsType[*jsonvalue.Error](err); ok {
				vs = append(vs, je.Violation())
			}
		}
	}
	var query map[string][]string
	// Concat copies: the spec's slices are shared by every request.
	for _, ref := range slices.Concat(route.PathItem.Parameters, route.Operation.Parameters) {
		p := ref.Value
		if p == nil {
			continue
		}
		switch p.In {
		case "path":
			// The router leaves path values escaped ("abc%00").
			v := pathParams[p.Name]
			if u, err := url.PathUnescape(v); err == nil {
				v = u
			}
			check(p.In, p.Name, v)
		case "query":
			if query == nil {
				query = req.URL.Query()
			}
			for _, v := range query[p.Name] {
				check(p.In, p.Name, v)
			}
		case "header":
			for _, v := range req.Header.Values(p.Name) {
				check(p.In, p.Name, v)
			}
		}
	}
	if len(vs) == 0 {
		return nil
	}
	return &fault.ValidationError{Subject: "request", Violations: vs}
}

// strictBody reads the (buffered) request body and refuses it unless it is
// exactly one strict JSON value. An empty body is left to schema validation,
// which knows whether the operation requires one.
func strictBody(c echo.Context) error {
	req := c.Request()
	if req.Body == nil || req.Body == http.NoBody {
		return nil
	}
	data, err := io.ReadAll(req.Body)
	if err != nil {
		return echo.NewHTTPError(http.StatusBadRequest, "the request body could not be read completely; send it again")
	}
	req.Body = io.NopCloser(bytes.NewReader(data))
	if len(data) == 0 {
		return nil
	}
	if err := jsonvalue.Validate(data, "body"); err != nil {
		return strictError(err)
	}
	c.Set(bodyCheckedKey, true)
	return nil
}

// strictError turns a strict JSON refusal into the request's validation
// error. A syntax error makes the whole value unreadable, so its path is the
// root's ("body"), with the place it broke in the message.
func strictError(err error) error {
	if je, ok := errors.AsType[*jsonvalue.Error](err); ok {
		v := je.Violation()
		if i := strings.IndexAny(je.Path, ".["); i > 0 && jsonvalue.IsSyntax(err) {
			v = fault.Violation{Path: je.Path[:i], Message: je.Reason + " (in " + strings.TrimPrefix(je.Path[i:], ".") + ")"}
		}
		return &fault.ValidationError{Subject: "request", Violations: []fault.Violation{v}}
	}
	return &fault.ValidationError{Subject: "request", Violations: []fault.Violation{{Path: "body", Message: "is not one valid JSON value"}}}
}

// decodeBody decodes a strict JSON body into a generated request type.
// Numbers in members typed any (a start payload, an answer, a breakpoint's
// equals) stay json.Number, so their exact text reaches the store. A member
// of the wrong type is named in plain words; schema validation has normally
// refused it already.
func decodeBody(data []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	err := dec.Decode(v)
	if err == nil {
		return nil
	}
	if te, ok := errors.AsType[*json.UnmarshalTypeError](err); ok {
		path := "body"
		if te.Field != "" {
			path += "." + te.Field
		}
		return &fault.ValidationError{Subject: "request", Violations: []fault.Violation{{Path: path,
			Message: "must be " + jsonKind(te.Type.Kind().String()) + ", not a JSON " + te.Value + "; GET /api/openapi.yaml describes the request"}}}
	}
	return &fault.ValidationError{Subject: "request", Violations: []fault.Violation{{Path: "body",
		Message: "does not have the shape this operation takes; GET /api/openapi.yaml describes the request"}}}
}

// jsonKind names a Go kind as the JSON type a client sends.
func jsonKind(k string) string {
	switch {
	case k == "string":
		return "a string"
	case k == "bool":
		return "a boolean"
	case strings.HasPrefix(k, "int"), strings.HasPrefix(k, "uint"):
		return "an integer"
	case strings.HasPrefix(k, "float"):
		return "a number"
	case k == "slice", k == "array":
		return "an array"
	case k == "map", k == "struct":
		return "an object"
	}
	return "another type"
}
