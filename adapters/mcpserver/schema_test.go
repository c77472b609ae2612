package mcpserver

import (
	"bytes"
	"encoding/json"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/google/jsonschema-go/jsonschema"
	sjs "github.com/santhosh-tekuri/jsonschema/v6"
)

// Every client must accept every tool's schemas. The MCP TypeScript SDK (and
// the MCP Inspector, built on it) refused the whole tools/list because an
// output property was the boolean schema true; the go-sdk client the other
// tests use does not look. So the published schemas are checked as sent, on
// the wire: no boolean sub-schema but "additionalProperties": false, every
// "properties" entry an object, and each schema valid under the official
// JSON Schema 2020-12 meta-schema (testdata/metaschema-2020-12, no network).

// metaBase is where the test serves its copy of the meta-schema. The copy's
// own ids (https://json-schema.org/draft/2020-12/...) are rebased onto it,
// because the validator would otherwise use the copy it embeds for those
// ids, and the test would not be checking against testdata.
const (
	officialBase = "https://json-schema.org/draft/2020-12/"
	metaBase     = "https://metaschema.test/draft/2020-12/"
)

// metaSchema compiles testdata's 2020-12 meta-schema.
func metaSchema(t testing.TB) *sjs.Schema {
	t.Helper()
	c := sjs.NewCompiler()
	c.AssertFormat() // pattern must be a regex, $id a URI reference, ...
	c.UseLoader(noNetwork{})
	dir := filepath.Join("testdata", "metaschema-2020-12")
	files := []string{"schema.json"}
	metas, err := filepath.Glob(filepath.Join(dir, "meta", "*.json"))
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range metas {
		files = append(files, filepath.Join("meta", filepath.Base(m)))
	}
	if len(files) != 8 {
		t.Fatalf("testdata holds %d meta-schema files, want schema.json and the 7 vocabularies", len(files))
	}
	for _, f := range files {
		raw, err := os.ReadFile(filepath.Join(dir, f))
		if err != nil {
			t.Fatal(err)
		}
		doc, err := sjs.UnmarshalJSON(bytes.NewReader(raw))
		if err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		obj := doc.(map[string]any)
		id, _ := obj["$id"].(string)
		want := officialBase + strings.TrimSuffix(f, ".json")
		if id != want {
			t.Fatalf("%s: $id %q, want %q: not the official 2020-12 meta-schema", f, id, want)
		}
		obj["$id"] = metaBase + strings.TrimPrefix(id, officialBase)
		if err := c.AddResource(obj["$id"].(string), obj); err != nil {
			t.Fatal(err)
		}
	}
	sch, err := c.Compile(metaBase + "schema")
	if err != nil {
		t.Fatal(err)
	}
	return sch
}

// noNetwork refuses every load the test did not add itself.
type noNetwork struct{}

func (noNetwork) Load(url string) (any, error) {
	return nil, &os.PathError{Op: "load", Path: url, Err: os.ErrNotExist}
}

// schemaProblems returns what in a tool's input or output schema (as JSON
// text) some client refuses or the meta-schema rejects; none is good.
func schemaProblems(t testing.TB, meta *sjs.Schema, where string, raw json.RawMessage) []string {
	t.Helper()
	var probs []string
	doc, err := sjs.UnmarshalJSON(bytes.NewReader(raw))
	if err != nil {
		return []string{where + ": not JSON: " + err.Error()}
	}
	root, ok := doc.(map[string]any)
	if !ok || root["type"] != "object" {
		probs = append(probs, where+`: the root is not an object schema with "type": "object"`)
	}
	if ok {
		if props, has := root["properties"]; has {
			pm, isObj := props.(map[string]any)
			if !isObj {
				probs = append(probs, where+": properties is not an object")
			}
			for _, name := range slices.Sorted(maps.Keys(pm)) {
				if _, isObj := pm[name].(map[string]any); !isObj {
					// The TypeScript SDK's own rule for tools/list.
					probs = append(probs, where+"/properties/"+name+": not an object")
				}
			}
		}
	}
	probs = append(probs, booleanSubschemas(doc, where)...)
	if err := meta.Validate(doc); err != nil {
		probs = append(probs, where+": the JSON Schema 2020-12 meta-schema rejects it: "+err.Error())
	}
	// The validator's own compile: refs, regexes, the dialect's rules.
	c := sjs.NewCompiler()
	c.DefaultDraft(sjs.Draft2020)
	c.AssertFormat()
	c.UseLoader(noNetwork{})
	url := "https://tools.test/" + strings.ReplaceAll(where, " ", "/")
	if err := c.AddResource(url, doc); err != nil {
		probs = append(probs, where+": "+err.Error())
	} else if _, err := c.Compile(url); err != nil {
		probs = append(probs, where+": does not compile as a 2020-12 schema: "+err.Error())
	}
	return probs
}

// Keywords whose values are schemas (JSON Schema 2020-12, and the older
// spellings a client may still read).
var (
	oneSchema   = []string{"additionalProperties", "additionalItems", "items", "contains", "not", "if", "then", "else", "propertyNames", "unevaluatedItems", "unevaluatedProperties", "contentSchema"}
	schemaMap   = []string{"properties", "patternProperties", "$defs", "definitions", "dependentSchemas"}
	schemaArray = []string{"prefixItems", "allOf", "anyOf", "oneOf", "items"}
)

// booleanSubschemas lists every sub-schema of s that is a boolean, but
// "additionalProperties": false, the closed object every client and model
// provider reads.
func booleanSubschemas(s any, path string) []string {
	obj, ok := s.(map[string]any)
	if !ok {
		return nil
	}
	var out []string
	visit := func(sub any, at string, key string) {
		if b, isBool := sub.(bool); isBool {
			if key == "additionalProperties" && !b {
				return
			}
			out = append(out, at+": boolean schema "+strconv.FormatBool(b))
			return
		}
		out = append(out, booleanSubschemas(sub, at)...)
	}
	keys := slices.Sorted(maps.Keys(obj))
	for _, k := range keys {
		v := obj[k]
		switch {
		case slices.Contains(oneSchema, k) && !isArray(v):
			visit(v, path+"/"+k, k)
		case slices.Contains(schemaArray, k) && isArray(v):
			for i, sub := range v.([]any) {
				visit(sub, path+"/"+k+"/"+strconv.Itoa(i), k)
			}
		case slices.Contains(schemaMap, k):
			if m, isMap := v.(map[string]any); isMap {
				for _, name := range slices.Sorted(maps.Keys(m)) {
					visit(m[name], path+"/"+k+"/"+name, k)
				}
			}
		}
	}
	return out
}

func isArray(v any) bool { _, ok := v.([]any); return ok }

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}

// listedTools is tools/list as the admin key gets it (every tool), raw.
func listedTools(t *testing.T) []struct {
	Name         string          `json:"name"`
	InputSchema  json.RawMessage `json:"inputSchema"`
	OutputSchema json.RawMessage `json:"outputSchema"`
} {
	t.Helper()
	ts, _ := newTestServer(t)
	body := post(t, ts.URL, secretOf("admin"), `{"jsonrpc":"2.0","id":1,"method":"tools/list"}`)
	var res struct {
		Result struct {
			Tools []struct {
				Name         string          `json:"name"`
				InputSchema  json.RawMessage `json:"inputSchema"`
				OutputSchema json.RawMessage `json:"outputSchema"`
			} `json:"tools"`
		} `json:"result"`
	}
	if err := json.Unmarshal([]byte(body), &res); err != nil || len(res.Result.Tools) == 0 {
		t.Fatalf("tools/list: %v: %.300s", err, body)
	}
	return res.Result.Tools
}

func TestToolSchemasEveryClientAccepts(t *testing.T) {
	t.Parallel()
	meta := metaSchema(t)
	tools := listedTools(t)
	if len(tools) != 36 {
		t.Errorf("tools/list has %d tools, want 36", len(tools))
	}
	for _, tl := range tools {
		if len(tl.OutputSchema) == 0 {
			t.Errorf("%s: no output schema", tl.Name)
		}
		for _, s := range []struct {
			which string
			raw   json.RawMessage
		}{{"inputSchema", tl.InputSchema}, {"outputSchema", tl.OutputSchema}} {
			if len(s.raw) == 0 {
				continue
			}
			for _, p := range schemaProblems(t, meta, tl.Name+" "+s.which, s.raw) {
				t.Error(p)
			}
		}
	}
}

// The checks above are live: each flags what it is there for.
func TestSchemaChecksCatchBadSchemas(t *testing.T) {
	t.Parallel()
	meta := metaSchema(t)
	for _, c := range []struct {
		schema, want string
	}{
		{`{"type":"object","properties":{"result":true}}`, "properties/result: not an object"},
		{`{"type":"object","properties":{"a":{"type":"array","items":true}}}`, "/properties/a/items: boolean schema true"},
		{`{"type":"object","properties":{"a":{"type":"object","additionalProperties":true}}}`, "/properties/a/additionalProperties: boolean schema true"},
		{`{"type":"object","properties":{"a":{"anyOf":[false,{"type":"string"}]}}}`, "/properties/a/anyOf/0: boolean schema false"},
		{`{"type":"objekt"}`, "meta-schema rejects it"},
		{`{"type":"object","properties":{"a":{"minLength":-1}}}`, "meta-schema rejects it"},
		{`{"type":"object","properties":{"a":{"type":"string","pattern":"(("}}}`, "meta-schema rejects it"},
		{`{"type":"object","properties":{"a":{"$ref":"#/$defs/missing"}}}`, "does not compile"},
		{`{"type":"string"}`, `not an object schema`},
	} {
		probs := strings.Join(schemaProblems(t, meta, "t", json.RawMessage(c.schema)), "\n")
		if !strings.Contains(probs, c.want) {
			t.Errorf("%s: problems %q, want one containing %q", c.schema, probs, c.want)
		}
	}
	good := `{"type":"object","properties":{"a":{"description":"any JSON value"},"b":{"type":"object","description":"x"}},"additionalProperties":false}`
	if probs := schemaProblems(t, meta, "t", json.RawMessage(good)); len(probs) > 0 {
		t.Errorf("a portable schema is flagged: %v", probs)
	}
}

// portableSchema writes values typed any as described objects, leaves out
// "additionalProperties": true and gives an empty root its properties.
func TestPortableSchema(t *testing.T) {
	t.Parallel()
	type inner struct {
		V any `json:"v"`
	}
	type sample struct {
		Tagged  any            `json:"tagged,omitempty" jsonschema:"what it is"`
		Bare    any            `json:"bare,omitempty"`
		Config  map[string]any `json:"config,omitempty"`
		Items   []any          `json:"items"`
		Nested  *inner         `json:"nested,omitempty"`
		Closed  inner          `json:"closed"`
		Counted map[string]int `json:"counted,omitempty"`
	}
	got := string(must(json.Marshal(portableSchema[sample](nil))))
	for _, want := range []string{
		`"tagged":{"description":"what it is"}`,
		`"bare":{"description":"any JSON value"}`,
		`"config":{"type":"object"}`,
		`"items":{"type":["null","array"],"items":{"description":"any JSON value"}}`,
		`"counted":{"type":"object","additionalProperties":{"type":"integer"}}`,
		`"additionalProperties":false`,
	} {
		if !strings.Contains(got, want) {
			t.Errorf("schema %s\nlacks %s", got, want)
		}
	}
	if strings.Contains(got, ":true") {
		t.Errorf("schema %s holds a boolean schema true", got)
	}
	if got := string(must(json.Marshal(portableSchema[struct{}](nil)))); got != `{"type":"object","properties":{},"additionalProperties":false}` {
		t.Errorf("empty input: %s", got)
	}
	// A given schema (withEnums builds them) is rewritten too.
	given := &jsonschema.Schema{Type: "object", Properties: map[string]*jsonschema.Schema{"x": {}}}
	if got := string(must(json.Marshal(portableSchema[struct{}](given)))); got != `{"type":"object","properties":{"x":{"description":"any JSON value"}}}` {
		t.Errorf("given schema: %s", got)
	}
}

// The server declares only what it does: it is stateless and never sends a
// notification (so no listChanged) nor a log message (so no logging).
func TestCapabilitiesAreHonoured(t *testing.T) {
	t.Parallel()
	ts, _ := newTestServer(t)
	body := post(t, ts.URL, secretOf("viewer"), `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"0"}}}`)
	var res struct {
		Result struct {
			Capabilities map[string]json.RawMessage `json:"capabilities"`
		} `json:"result"`
	}
	if err := json.Unmarshal([]byte(body), &res); err != nil {
		t.Fatalf("%v: %s", err, body)
	}
	got := map[string]string{}
	for k, v := range res.Result.Capabilities {
		got[k] = string(v)
	}
	want := map[string]string{"tools": "{}", "prompts": "{}", "resources": "{}"}
	if !maps.Equal(got, want) {
		t.Errorf("capabilities %v, want exactly %v (from %s)", got, want, body)
	}
}
