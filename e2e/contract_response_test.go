package e2e

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/getkin/kin-openapi/routers"
	"github.com/getkin/kin-openapi/routers/gorillamux"

	"github.com/yukta/yukta/api"
)

var (
	contractOnce   sync.Once
	contractRouter routers.Router
	contractErr    error
)

// contract is a router over api/openapi.yaml for checking answers against
// it (any host: servers are cleared, as the server's own validator does).
func contract(t *testing.T) routers.Router {
	t.Helper()
	contractOnce.Do(func() {
		var doc *openapi3.T
		doc, contractErr = openapi3.NewLoader().LoadFromData(api.Spec)
		if contractErr != nil {
			return
		}
		// The journal and this document are text: checked as strings.
		openapi3filter.RegisterBodyDecoder("application/x-ndjson", openapi3filter.PlainBodyDecoder)
		openapi3filter.RegisterBodyDecoder("application/yaml", openapi3filter.PlainBodyDecoder)
		doc.Servers = nil
		// The schemas keep to the 3.0 subset (httpapi.checkNoJSONSchema2020),
		// so kin-openapi's own validator checks them exactly.
		doc.OpenAPI = "3.0.3"
		contractRouter, contractErr = gorillamux.NewRouter(doc)
	})
	if contractErr != nil {
		t.Fatal(contractErr)
	}
	return contractRouter
}

// checkAnswer fails the test when an answer is not one the operation
// declares: its status must be listed, and its body must match the schema
// of its content type (a problem must be a Problem).
func checkAnswer(t *testing.T, method, path string, status int, header http.Header, body []byte) {
	t.Helper()
	req, err := http.NewRequestWithContext(context.Background(), method, "http://127.0.0.1"+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	route, params, err := contract(t).FindRoute(req)
	if err != nil {
		t.Errorf("%s %s: no operation in the contract: %v", method, path, err)
		return
	}
	in := &openapi3filter.ResponseValidationInput{
		RequestValidationInput: &openapi3filter.RequestValidationInput{Request: req, PathParams: params, Route: route},
		Status:                 status, Header: header, Body: io.NopCloser(bytes.NewReader(body)),
		Options: &openapi3filter.Options{IncludeResponseStatus: true, MultiError: true},
	}
	if err := openapi3filter.ValidateResponse(context.Background(), in); err != nil {
		t.Errorf("%s %s answered %d, which %s does not declare so: %s\n%s", method, path, status, route.Operation.OperationID,
			strings.ReplaceAll(err.Error(), "\n", " "), body)
	}
	if status == http.StatusTooManyRequests && header.Get("Retry-After") == "" {
		t.Errorf("%s %s: 429 without Retry-After", method, path)
	}
}
