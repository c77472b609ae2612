package mcpserver

import (
	"encoding/json"
	"fmt"
	"reflect"

	"github.com/google/jsonschema-go/jsonschema"
)

// Tool schemas every client accepts.
//
// The SDK infers a tool's schemas from its Go types, and writes a value
// typed any as the boolean schema true and a map[string]any as
// "additionalProperties": true. Both are valid JSON Schema, but the MCP
// TypeScript SDK (under most agent hosts, and the MCP Inspector) requires
// every entry of a tool's "properties" to be an object and refuses the whole
// tools/list otherwise, so one such field made every tool unusable there.
// portableSchema rewrites each schema before the tool is registered:
//
//   - a sub-schema true becomes {} with a description ("any JSON value"
//     unless the field's tag gave one): the same schema, as an object;
//   - "additionalProperties": true is left out, which allows the same;
//   - a root object schema without properties gets "properties": {}.
//
// "additionalProperties": false stays: it is the form every client and model
// provider expects for a closed object (the TypeScript SDK's own servers
// write it). No other boolean sub-schema is written; a test walks every
// published schema and checks it against the JSON Schema 2020-12 meta-schema.

// anyValueDescription describes a sub-schema that accepts any JSON value and
// whose field has no description of its own.
const anyValueDescription = "any JSON value"

// portableSchema returns the schema of a tool's input or output: the one
// given (a *jsonschema.Schema, as withEnums builds) or else the one inferred
// from T, rewritten as described above. It panics when T has no schema, as
// mcp.AddTool does; NewServer turns that into a startup error.
func portableSchema[T any](given any) *jsonschema.Schema {
	var s *jsonschema.Schema
	switch g := given.(type) {
	case nil:
		rt := reflect.TypeFor[T]()
		if rt.Kind() == reflect.Pointer {
			rt = rt.Elem()
		}
		inferred, err := jsonschema.ForType(rt, &jsonschema.ForOptions{})
		if err != nil {
			panic(fmt.Errorf("schema of %v: %w", rt, err))
		}
		s = inferred
	case *jsonschema.Schema:
		s = g
	default:
		panic(fmt.Errorf("tool schema of type %T: want *jsonschema.Schema", given))
	}
	makePortable(s, map[*jsonschema.Schema]bool{})
	if s.Type == "object" && s.Properties == nil {
		s.Properties = map[string]*jsonschema.Schema{}
	}
	return s
}

// makePortable rewrites the sub-schemas of s in place.
func makePortable(s *jsonschema.Schema, seen map[*jsonschema.Schema]bool) {
	if s == nil || seen[s] {
		return
	}
	seen[s] = true
	if s.AdditionalProperties != nil && schemaIs(s.AdditionalProperties, "true") {
		s.AdditionalProperties = nil
	}
	eachSubschema(s, func(sub *jsonschema.Schema) {
		switch {
		case schemaIs(sub, "true"):
			if sub.Description == "" {
				sub.Description = anyValueDescription
			}
		case schemaIs(sub, "false"):
			// {"not": {}}: nothing inside to rewrite.
		default:
			makePortable(sub, seen)
		}
	})
}

// schemaIs reports whether s is written as the JSON text want ("true" or
// "false": jsonschema-go writes {} as true and {"not": {}} as false).
func schemaIs(s *jsonschema.Schema, want string) bool {
	b, err := json.Marshal(s)
	return err == nil && string(b) == want
}

var (
	schemaPtrType   = reflect.TypeFor[*jsonschema.Schema]()
	schemaSliceType = reflect.TypeFor[[]*jsonschema.Schema]()
	schemaMapType   = reflect.TypeFor[map[string]*jsonschema.Schema]()
)

// eachSubschema calls f with every direct sub-schema of s (properties,
// items, additionalProperties, allOf, $defs, ...), whatever field of
// jsonschema.Schema holds it.
func eachSubschema(s *jsonschema.Schema, f func(*jsonschema.Schema)) {
	v := reflect.ValueOf(s).Elem()
	for i := range v.NumField() {
		fv := v.Field(i)
		switch fv.Type() {
		case schemaPtrType:
			if !fv.IsNil() {
				f(fv.Interface().(*jsonschema.Schema))
			}
		case schemaSliceType:
			for _, sub := range fv.Interface().([]*jsonschema.Schema) {
				if sub != nil {
					f(sub)
				}
			}
		case schemaMapType:
			for _, sub := range fv.Interface().(map[string]*jsonschema.Schema) {
				if sub != nil {
					f(sub)
				}
			}
		}
	}
}
