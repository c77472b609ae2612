package mcpserver

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"regexp"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/yukta/yukta/domain/jsonvalue"
)

// Strict and exact tool arguments and results.
//
// The SDK decodes a call's arguments with a lenient JSON decoder into the
// tool's typed input: a repeated key keeps its last value, U+0000 and invalid
// UTF-8 pass (the store then refuses them, as an internal error), and a
// payload's numbers become float64, so 9007199254740993 arrives as
// 9007199254740992. On the way out it re-reads the typed output through
// float64 too. So the raw arguments are checked by domain/jsonvalue before
// any tool runs (a refusal is an isError result naming the argument), the
// values typed any (payload, equals, a node's config) are taken from the raw
// arguments with their exact numbers, and a tool's output is re-encoded
// exactly after the SDK has validated it.

// strictArguments is the receiving middleware that refuses a tool call whose
// arguments are not strict JSON, and replaces a successful call's
// structured output by its exact encoding.
func strictArguments(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		ct, ok := req.(*mcp.CallToolRequest)
		if !ok || ct.Params == nil {
			return next(ctx, method, req)
		}
		if args := ct.Params.Arguments; len(args) > 0 {
			v, err := jsonvalue.Decode(args, "")
			if err != nil {
				return argumentRefusal(ct.Params.Name, err), nil
			}
			if _, ok := v.(map[string]any); !ok && v != nil {
				return argumentRefusal(ct.Params.Name, &jsonvalue.Error{Reason: "must be one JSON object, such as {\"sessionId\":\"orders\"}"}), nil
			}
		}
		out := &exactOutput{}
		res, err := next(context.WithValue(ctx, exactKey{}, out), method, req)
		if r, ok := res.(*mcp.CallToolResult); ok && err == nil && r.IsError {
			schemaRefusal(ct.Params.Name, r)
			decodeRefusal(ct.Params.Name, r)
		}
		if r, ok := res.(*mcp.CallToolResult); ok && err == nil && !r.IsError && out.json != nil {
			r.StructuredContent = json.RawMessage(out.json)
			if len(r.Content) == 1 {
				if tc, ok := r.Content[0].(*mcp.TextContent); ok {
					tc.Text = string(out.json)
				}
			}
		}
		return res, err
	}
}

// argumentRefusal is the isError answer to arguments that are not strict
// JSON: a sentence naming the argument and what is wrong with it.
func argumentRefusal(tool string, err error) *mcp.CallToolResult {
	what := "the arguments are not valid JSON"
	if je, ok := errors.AsType[*jsonvalue.Error](err); ok {
		what = je.Error() // "payload.id: appears twice in one object; …"
		if je.Path == "" {
			what = "the arguments " + je.Reason
		}
	}
	msg := fmt.Sprintf("Invalid arguments for %s: %s. Nothing was done; fix the argument and call again.", sanitizeText(tool, maxToolName), what)
	return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: sanitizeText(msg, maxErrorText)}}}
}

// sdkSchemaPrefix starts the SDK's answer to arguments its input schema
// refuses.
const sdkSchemaPrefix = `validating "arguments": `

// sdkTypeMismatch is the SDK's wording of a value of the wrong type, whose
// value it prints after its float64 round trip (9.007199254740992e+15).
var sdkTypeMismatch = regexp.MustCompile(`^type: .* has type "(\w+)", want "(\w+)"$`)

// schemaRefusal rewords the SDK's refusal of arguments against a tool's
// input schema ("validating \"arguments\": validating root: validating
// /properties/reason: type: 9.007199254740992e+15 has type \"integer\",
// want \"string\"") as a sentence naming the argument the way an agent
// wrote it ("reason: must be a string, not an integer"), without the
// rounded value.
func schemaRefusal(tool string, r *mcp.CallToolResult) {
	if len(r.Content) != 1 {
		return
	}
	tc, ok := r.Content[0].(*mcp.TextContent)
	if !ok || !strings.HasPrefix(tc.Text, sdkSchemaPrefix) {
		return
	}
	rest := strings.TrimPrefix(tc.Text, sdkSchemaPrefix)
	path, detail := "", rest
	if i := strings.LastIndex(rest, "validating /"); i >= 0 {
		loc, d, ok := strings.Cut(rest[i+len("validating "):], ": ")
		if ok {
			path, detail = schemaPath(loc), d
		}
	} else {
		detail = strings.TrimPrefix(detail, "validating root: ")
	}
	if m := sdkTypeMismatch.FindStringSubmatch(detail); m != nil {
		detail = "must be " + article(m[2]) + ", not " + article(m[1])
	}
	detail = strings.TrimPrefix(strings.TrimPrefix(detail, "required: "), "enum: ")
	if path != "" {
		detail = path + ": " + detail
	}
	tc.Text = sanitizeText(fmt.Sprintf("Invalid arguments for %s: %s. Nothing was done; fix the argument and call again.", sanitizeText(tool, maxToolName), detail), maxErrorText)
}

// schemaPath turns a schema location (/properties/session/properties/
// workflows/items/properties/nodeId) into an argument path
// (session.workflows[].nodeId).
func schemaPath(loc string) string {
	var b strings.Builder
	parts := strings.Split(strings.Trim(loc, "/"), "/")
	for i := 0; i < len(parts); i++ {
		switch {
		case parts[i] == "properties" && i+1 < len(parts):
			if b.Len() > 0 {
				b.WriteByte('.')
			}
			b.WriteString(parts[i+1])
			i++
		case parts[i] == "items":
			b.WriteString("[]")
		}
	}
	return b.String()
}

// article puts "a" or "an" before a JSON type name.
func article(typ string) string {
	if typ != "" && strings.ContainsRune("aeiou", rune(typ[0])) {
		return "an " + typ
	}
	return "a " + typ
}

// exactKey carries a call's *exactOutput on its context.
type exactKey struct{}

// exactOutput is where a tool handler leaves the exact encoding of its
// output for strictArguments.
type exactOutput struct{ json []byte }

// addTool registers a typed tool whose output is encoded exactly and whose
// schemas every client accepts (portableSchema).
func addTool[In, Out any](m *mcp.Server, t *mcp.Tool, h mcp.ToolHandlerFor[In, Out]) {
	tt := *t
	tt.InputSchema = portableSchema[In](t.InputSchema)
	tt.OutputSchema = portableSchema[Out](t.OutputSchema)
	mcp.AddTool(m, &tt, exact(h))
}

// exact wraps a typed handler: a successful output is also encoded with
// encoding/json as it is (json.Number stays its text), for strictArguments
// to put in the result in place of the SDK's float64 round trip.
func exact[In, Out any](h mcp.ToolHandlerFor[In, Out]) mcp.ToolHandlerFor[In, Out] {
	return func(ctx context.Context, req *mcp.CallToolRequest, in In) (*mcp.CallToolResult, Out, error) {
		res, out, err := h(ctx, req, in)
		if err == nil && res == nil {
			if holder, ok := ctx.Value(exactKey{}).(*exactOutput); ok {
				if b, err := json.Marshal(out); err == nil {
					holder.json = b
				}
			}
		}
		return res, out, err
	}
}

// rawArgument returns an argument of a call as sent, numbers as json.Number,
// and whether it was given (and not null). Handlers use it for the values
// typed any, which the SDK's decoding would round.
func rawArgument(req *mcp.CallToolRequest, name string) (any, bool) {
	if req == nil || req.Params == nil || len(req.Params.Arguments) == 0 {
		return nil, false
	}
	v, err := jsonvalue.Decode(req.Params.Arguments, "")
	if err != nil {
		return nil, false
	}
	m, _ := v.(map[string]any)
	a, ok := m[name]
	return a, ok && a != nil
}

// rawArgumentJSON returns an argument's exact JSON text.
func rawArgumentJSON(req *mcp.CallToolRequest, name string) (json.RawMessage, bool) {
	if req == nil || req.Params == nil || len(req.Params.Arguments) == 0 {
		return nil, false
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(req.Params.Arguments, &m); err != nil {
		return nil, false
	}
	a, ok := m[name]
	return a, ok && string(a) != "null"
}

// strictTransport reads a POSTed JSON-RPC message before the SDK does. A
// raw U+0000 byte in it (invalid JSON, which the SDK would refuse in Go's
// words before any tool is known) is written as the escape \u0000, the same
// string, so that strictArguments refuses it naming the argument. A message
// that is not JSON, or has more after it, gets a JSON-RPC parse error in
// plain words.
// Anything else, a body over the cap included, goes to the SDK as sent.
func strictTransport(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost || r.Body == nil || r.Body == http.NoBody {
			next.ServeHTTP(w, r)
			return
		}
		body, err := io.ReadAll(io.LimitReader(r.Body, MaxRequestBodyBytes+1))
		if err != nil || int64(len(body)) > MaxRequestBodyBytes {
			// Let the SDK answer as it does for a body it cannot read whole.
			r.Body = readCloser{io.MultiReader(bytes.NewReader(body), errorReader{err}, r.Body), r.Body}
			next.ServeHTTP(w, r)
			return
		}
		if bytes.IndexByte(body, 0) >= 0 {
			body = bytes.ReplaceAll(body, []byte{0}, []byte(`\u0000`))
		}
		if err := jsonvalue.Validate(body, ""); jsonvalue.IsSyntax(err) || trailingData(err) {
			writeParseError(w, err)
			return
		}
		if bad := envelopeRefusal(body); bad != nil {
			writeRPCError(w, bad)
			return
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
		r.ContentLength = int64(len(body))
		next.ServeHTTP(w, r)
	})
}

// trailingData reports a body with more after its JSON value, which the SDK
// would otherwise ignore.
func trailingData(err error) bool {
	je, ok := errors.AsType[*jsonvalue.Error](err)
	return ok && je.Path == "" && strings.HasPrefix(je.Reason, "has data after the JSON value")
}

// writeParseError answers a body that is not JSON: HTTP 400 with a JSON-RPC
// parse error (-32700) saying where the JSON breaks.
func writeParseError(w http.ResponseWriter, err error) {
	msg := "Parse error: the request is not valid JSON"
	if je, ok := errors.AsType[*jsonvalue.Error](err); ok {
		msg = "Parse error: the request " + je.Reason
		if je.Path != "" {
			msg += " (in " + je.Path + ")"
		}
	}
	b, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": nil, "error": map[string]any{"code": -32700, "message": sanitizeText(msg, maxErrorText)}})
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusBadRequest)
	_, _ = w.Write(b)
}

// errorReader returns err once the bytes before it are read (nil: EOF).
type errorReader struct{ err error }

func (e errorReader) Read([]byte) (int, error) {
	if e.err == nil {
		return 0, io.EOF
	}
	return 0, e.err
}

type readCloser struct {
	io.Reader
	io.Closer
}

// goDecoderText tells the SDK's own words for arguments its typed decoding
// could not take (a number beyond an int, for one): encoding/json's text,
// with Go type names.
var goDecoderText = regexp.MustCompile(`json: |cannot unmarshal|Go struct field|Go value`)

// goStructField finds the argument and the Go type in encoding/json's text
// ("... overflows into Go struct field mcpserver.ReadSignalsIn.limit of
// type int").
var goStructField = regexp.MustCompile(`Go struct field [A-Za-z0-9_]+\.([A-Za-z0-9_.]+) of type ([A-Za-z0-9_.\[\]*]+)`)

// decodeRefusal rewords the SDK's refusal of arguments its typed decoding
// could not take as a sentence naming the argument, without Go's words.
func decodeRefusal(tool string, r *mcp.CallToolResult) {
	if len(r.Content) != 1 {
		return
	}
	tc, ok := r.Content[0].(*mcp.TextContent)
	if !ok || !goDecoderText.MatchString(tc.Text) {
		return
	}
	detail := "an argument has a value of a type or size this tool cannot take"
	if m := goStructField.FindStringSubmatch(tc.Text); m != nil {
		typ := jsonTypeOf(m[2])
		if strings.Contains(tc.Text, "overflows") {
			detail = m[1] + ": is out of range for " + article(typ)
		} else {
			detail = m[1] + ": must be " + article(typ)
		}
	}
	tc.Text = sanitizeText(fmt.Sprintf("Invalid arguments for %s: %s. Nothing was done; fix the argument and call again.", sanitizeText(tool, maxToolName), detail), maxErrorText)
}

// jsonTypeOf names a Go type as the JSON type it is read from.
func jsonTypeOf(goType string) string {
	switch strings.TrimLeft(goType, "*") {
	case "int", "int8", "int16", "int32", "int64", "uint", "uint8", "uint16", "uint32", "uint64":
		return "integer"
	case "float32", "float64":
		return "number"
	case "bool":
		return "boolean"
	case "string":
		return "string"
	}
	if strings.HasPrefix(goType, "[]") {
		return "array"
	}
	return "object"
}

// rpcRefusal is a JSON-RPC error strictTransport answers in place of the
// SDK, whose answers to these envelopes are in Go's words ("invalid ID type
// map[string]interface {}", "json: cannot unmarshal ... into Go struct
// field mcp.initializeParamsV2.protocolVersion").
type rpcRefusal struct {
	status int
	id     json.RawMessage // nil: null
	code   int
	msg    string
}

// paramsOf are the SDK's params of the methods whose params it decodes
// into typed values, so a member of the wrong type is refused here first.
var paramsOf = map[string]func() any{
	"initialize": func() any { return &mcp.InitializeParams{} },
	"tools/call": func() any { return &mcp.CallToolParamsRaw{} },
	"tools/list": func() any { return &mcp.ListToolsParams{} },
	"ping":       func() any { return &mcp.PingParams{} },
}

// envelopeRefusal checks what the SDK reads of a message (or of each
// message of a batch) before it does: an id that is a string or an
// integer, a method that is a string, params that are an object whose
// members have the types the method takes.
func envelopeRefusal(body []byte) *rpcRefusal {
	trimmed := bytes.TrimSpace(body)
	if len(trimmed) > 0 && trimmed[0] == '[' {
		var batch []json.RawMessage
		if json.Unmarshal(trimmed, &batch) != nil {
			return nil // the SDK answers what is not a batch of messages
		}
		for _, m := range batch {
			if bad := messageRefusal(m); bad != nil {
				return bad
			}
		}
		return nil
	}
	return messageRefusal(trimmed)
}

func messageRefusal(raw json.RawMessage) *rpcRefusal {
	invalid := func(msg string) *rpcRefusal {
		return &rpcRefusal{status: http.StatusBadRequest, code: -32600, msg: "Invalid Request: " + msg}
	}
	var m map[string]json.RawMessage
	if json.Unmarshal(raw, &m) != nil {
		return invalid("a JSON-RPC message is one JSON object with jsonrpc, id, method and params")
	}
	var id json.RawMessage
	if v, ok := m["id"]; ok && string(v) != "null" {
		var s string
		var n int64
		if json.Unmarshal(v, &s) != nil && (json.Unmarshal(v, &n) != nil || bytes.ContainsAny(v, ".eE")) {
			return invalid("id must be a string or an integer (within 64 bits)")
		}
		id = v
	}
	var method string
	if v, ok := m["method"]; ok && json.Unmarshal(v, &method) != nil {
		return &rpcRefusal{status: http.StatusBadRequest, id: id, code: -32600, msg: "Invalid Request: method must be a string, such as \"tools/call\""}
	}
	params, ok := m["params"]
	if !ok || string(params) == "null" {
		return nil
	}
	bad := func(detail string) *rpcRefusal {
		return &rpcRefusal{status: http.StatusOK, id: id, code: -32602,
			msg: sanitizeText(fmt.Sprintf("Invalid params for %q: %s", sanitizeText(method, maxToolName), detail), maxErrorText)}
	}
	if t := bytes.TrimSpace(params); len(t) == 0 || t[0] != '{' {
		return bad("params must be a JSON object")
	}
	mk, ok := paramsOf[method]
	if !ok {
		return nil
	}
	if err := json.Unmarshal(params, mk()); err != nil {
		if te, ok := errors.AsType[*json.UnmarshalTypeError](err); ok && te.Field != "" {
			return bad(fmt.Sprintf("%s must be %s, not %s", te.Field, article(jsonTypeOf(te.Type.String())), article(jsonValueName(te.Value))))
		}
		return bad("a member has a value of a type or size this method cannot take")
	}
	return nil
}

// jsonValueName names encoding/json's description of a JSON value.
func jsonValueName(v string) string {
	switch {
	case v == "bool":
		return "boolean"
	case strings.HasPrefix(v, "number"):
		return "number"
	case v == "":
		return "value"
	}
	return v
}

// writeRPCError answers a refused envelope.
func writeRPCError(w http.ResponseWriter, r *rpcRefusal) {
	var id any
	if r.id != nil {
		id = r.id
	}
	b, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": id, "error": map[string]any{"code": r.code, "message": r.msg}})
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(r.status)
	_, _ = w.Write(b)
}
