package httpapi

import (
	"errors"
	"fmt"
	"mime"
	"net/http"
	"slices"
	"strings"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/getkin/kin-openapi/routers"
	"github.com/getkin/kin-openapi/routers/gorillamux"
	"github.com/labstack/echo/v4"

	"github.com/yukta/yukta/domain/execution"
	"github.com/yukta/yukta/domain/fault"
)

// rawBodyExtension marks operations that parse their own body: the domain
// parser reports every violation (unknown fields included) in one answer,
// which schema validation, stopping at the first layer it rejects, cannot.
const rawBodyExtension = "x-yukta-raw-body"

// ownPathExtension lists the path parameters of a raw-body operation that
// its domain parser checks with the body (a session id against the
// document's sessionId): a value the schema refuses is not answered alone
// here, which would hide every problem of the body, but reported by the
// parser in the same answer as them.
const ownPathExtension = "x-yukta-checks-path"

// requestValidator checks each request against the OpenAPI document before a
// handler runs: route, parameters, content type and (for most operations) the
// body. It answers 404/405/415/400 as problems naming the offending field.
func requestValidator(spec *openapi3.T) (echo.MiddlewareFunc, error) {
	spec.Servers = nil // match any host; the Host gate decides which hosts are allowed
	// kin-openapi validates an OpenAPI 3.1 document by compiling a JSON
	// Schema 2020-12 validator for every request, which costs more than the
	// rest of a request together. Our schemas keep to the keywords both
	// versions share, so its native validator checks them exactly; refuse to
	// start if a schema ever needs the 2020-12 keywords.
	if err := checkNoJSONSchema2020(spec); err != nil {
		return nil, err
	}
	spec.OpenAPI = "3.0.3"
	// kin-openapi checks no string format unless told how; ids in uuid
	// format are refused here, in words, instead of by the generated
	// binder's Go text.
	spec.SetStringFormatValidator("uuid", openapi3.NewCallbackValidator(func(s string) error {
		if !execution.ValidID(s) {
			return errors.New("not a UUID")
		}
		return nil
	}))
	formats := spec.GetSchemaValidationOptions()
	router, err := gorillamux.NewRouter(spec)
	if err != nil {
		return nil, fmt.Errorf("httpapi: build the spec router: %w", err)
	}
	return func(next echo.HandlerFunc) echo.HandlerFunc {
		return func(c echo.Context) error {
			req := c.Request()
			route, params, err := router.FindRoute(req)
			switch {
			case errors.Is(err, routers.ErrMethodNotAllowed):
				// echo's router matched the path and knows its methods
				// (RFC 9110: a 405 carries Allow). OPTIONS is answered by
				// echo itself: 204 with the same Allow.
				allow, _ := c.Get(echo.ContextKeyHeaderAllow).(string)
				if req.Method == http.MethodOptions && allow != "" {
					return next(c)
				}
				if allow != "" {
					c.Response().Header().Set(echo.HeaderAllow, allow)
				}
				return echo.NewHTTPError(http.StatusMethodNotAllowed, fmt.Sprintf("%s is not allowed on %s; allowed: %s", req.Method, req.URL.Path, allow))
			case err != nil:
				return noRoute(req)
			}
			raw := route.Operation.Extensions[rawBodyExtension] == true
			if rb := route.Operation.RequestBody; rb != nil && rb.Value != nil {
				if err := checkContentType(req, rb.Value); err != nil {
					return err
				}
			}
			// The strict checks come before schema validation, which decodes
			// the body with encoding/json and would see neither repeated keys
			// nor U+0000, and would answer 1e400 in Go's words.
			if err := strictParameters(req, route, params); err != nil {
				return err
			}
			if route.Operation.RequestBody != nil && !raw {
				if err := strictBody(c); err != nil {
					return err
				}
			}
			in := &openapi3filter.RequestValidationInput{
				Request: req, PathParams: params, Route: route,
				Options: &openapi3filter.Options{
					MultiError:              true,
					ExcludeRequestBody:      raw,
					AuthenticationFunc:      openapi3filter.NoopAuthenticationFunc, // the access gate has decided already
					SchemaValidationOptions: formats,
				},
			}
			if err := openapi3filter.ValidateRequest(req.Context(), in); err != nil && !onlyOwnPathErrors(err, route.Operation) {
				return requestError(err)
			}
			return next(c)
		}
	}, nil
}

// onlyOwnPathErrors reports whether every error in err is about a path
// parameter the operation's parser checks itself (ownPathExtension).
func onlyOwnPathErrors(err error, op *openapi3.Operation) bool {
	own, _ := op.Extensions[ownPathExtension].([]any)
	if len(own) == 0 {
		return false
	}
	var walk func(error) bool
	walk = func(err error) bool {
		switch e := err.(type) {
		case openapi3.MultiError:
			for _, m := range e {
				if !walk(m) {
					return false
				}
			}
			return len(e) > 0
		case *openapi3filter.RequestError:
			return e.Parameter != nil && e.Parameter.In == "path" && slices.Contains(own, any(e.Parameter.Name))
		}
		return false
	}
	return walk(err)
}

// checkNoJSONSchema2020 reports a component schema using a keyword that only
// JSON Schema 2020-12 (OpenAPI 3.1) validation understands.
func checkNoJSONSchema2020(spec *openapi3.T) error {
	for name, ref := range spec.Components.Schemas {
		err := ref.WalkSubtree(func(path string, r *openapi3.SchemaRef) error {
			v := r.Value
			if v != nil && (v.Const != nil || len(v.PrefixItems) != 0 || v.Contains != nil || len(v.PatternProperties) != 0 ||
				len(v.DependentSchemas) != 0 || v.PropertyNames != nil || v.If != nil || v.Then != nil || v.Else != nil ||
				len(v.DependentRequired) != 0 || len(v.Defs) != 0 || v.ContentSchema != nil ||
				v.UnevaluatedItems.Has != nil || v.UnevaluatedItems.Schema != nil ||
				v.UnevaluatedProperties.Has != nil || v.UnevaluatedProperties.Schema != nil) {
				return fmt.Errorf("httpapi: schema %s%s uses a JSON Schema 2020-12 keyword; the request validator only checks the 3.0 subset", name, path)
			}
			return nil
		})
		if err != nil {
			return err
		}
	}
	return nil
}

func checkContentType(req *http.Request, body *openapi3.RequestBody) error {
	ct := req.Header.Get(echo.HeaderContentType)
	mt, _, err := mime.ParseMediaType(ct)
	if ct != "" && err == nil && body.Content.Get(mt) != nil {
		return nil
	}
	if ct == "" && req.ContentLength == 0 && !body.Required {
		return nil
	}
	var want []string
	for k := range body.Content {
		want = append(want, k)
	}
	return echo.NewHTTPError(http.StatusUnsupportedMediaType,
		fmt.Sprintf("Content-Type %q is not accepted here; send %s", ct, strings.Join(want, " or ")))
}

// requestError turns kin-openapi's errors (which embed schema dumps) into
// short violations with a path. It walks the error tree by type, not with
// errors.As: MultiError's As would pick one member and hide the rest.
func requestError(err error) error {
	var vs []fault.Violation
	var walk func(err error, path string)
	walk = func(err error, path string) {
		switch e := err.(type) {
		case openapi3.MultiError:
			for _, m := range e {
				walk(m, path)
			}
		case *openapi3filter.RequestError:
			p := "body"
			if e.Parameter != nil {
				p = e.Parameter.In + "." + e.Parameter.Name
			}
			if e.Err == nil {
				vs = append(vs, fault.Violation{Path: p, Message: firstLine(e.Reason)})
				return
			}
			walk(e.Err, p)
		case *openapi3.SchemaError:
			if ptr := e.JSONPointer(); len(ptr) > 0 {
				path += "." + strings.Join(ptr, ".")
			}
			msg := schemaReason(e.Reason)
			if e.SchemaField == "format" && e.Schema != nil && e.Schema.Format == "uuid" {
				msg = "is not a UUID (such as 0192f0c4-8c5e-7b7a-9f3e-2d4c5b6a7e8f); list the ids with the matching GET call"
			}
			vs = append(vs, fault.Violation{Path: path, Message: msg})
		case *openapi3filter.ParseError:
			vs = append(vs, fault.Violation{Path: path, Message: parseReason(e)})
		default:
			if u, ok := err.(interface{ Unwrap() error }); ok && u.Unwrap() != nil {
				walk(u.Unwrap(), path)
				return
			}
			vs = append(vs, fault.Violation{Path: path, Message: plainWords(firstLine(err.Error()))})
		}
	}
	walk(err, "")
	return &fault.ValidationError{Subject: "request", Violations: vs}
}

// parseReason words a parameter or body that could not be parsed for its
// schema ("abc" is an invalid integer) from the parse error's own reason,
// never from its cause, which is Go's text (strconv.ParseInt: …).
func parseReason(e *openapi3filter.ParseError) string {
	for e.Reason == "" {
		inner, ok := e.Cause.(*openapi3filter.ParseError)
		if !ok {
			break
		}
		e = inner
	}
	switch {
	case e.Reason != "" && e.Value != nil:
		return fmt.Sprintf("%s is %s", quote(fmt.Sprint(e.Value)), e.Reason)
	case e.Reason != "":
		return "is " + e.Reason
	}
	return "could not be read for its schema; GET /api/openapi.yaml describes it"
}

// plainWords keeps a validator's sentence unless it carries Go's own error
// text, which says nothing to a client.
func plainWords(s string) string {
	for _, g := range []string{"json: ", "strconv.", "interface {}", "cannot unmarshal", "invalid character"} {
		if strings.Contains(s, g) {
			return "is not valid here; GET /api/openapi.yaml describes it"
		}
	}
	return s
}

// schemaReason drops the preamble the JSON schema validator puts before the
// reason ("jsonschema validation failed with '…'\n- at ”: minimum: …").
func schemaReason(s string) string {
	if i := strings.LastIndex(s, "\n- at '"); i >= 0 {
		s = s[i+len("\n- at '"):]
		if j := strings.Index(s, "': "); j >= 0 {
			s = s[j+len("': "):]
		}
	}
	return firstLine(s)
}

func firstLine(s string) string {
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i]
	}
	return s
}

// noRoute is the answer to a request no route of the API has.
func noRoute(req *http.Request) error {
	return echo.NewHTTPError(http.StatusNotFound, fmt.Sprintf("no route %s %s; GET /api/openapi.yaml lists every route", req.Method, req.URL.Path))
}
