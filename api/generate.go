// Package api holds Yukta's REST contract, openapi.yaml. The server stubs (in
// adapters/httpapi) and the Go client (api/apiclient) are generated from it;
// run `go generate ./api` (or `task gen`) after editing the spec.
package api

import _ "embed"

//go:generate go tool oapi-codegen -config server.cfg.yaml openapi.yaml
//go:generate go tool oapi-codegen -config client.cfg.yaml openapi.yaml

// Spec is the OpenAPI document, served at /api/openapi.yaml.
//
//go:embed openapi.yaml
var Spec []byte
