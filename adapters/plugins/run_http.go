package plugins

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"mime"
	"net/http"
	"slices"
	"strings"

	"github.com/yukta/yukta/adapters/egress"
	"github.com/yukta/yukta/application/executionapp"
	"github.com/yukta/yukta/domain/plugin"
)

// userAgent identifies Yukta to the services it calls.
const userAgent = "yukta"

// outbound is one request HTTP_REQUEST or WEBHOOK_OUT sends.
type outbound struct {
	method, url string
	body        []byte // nil: no body
	headers     map[string]any
	auth        string
	key         string
	maxBytes    int64
}

// send builds and sends o through the egress client. Errors never carry the
// authorization value: net/http does not print header values, and the URL
// is named without its query.
func (o outbound) send(ctx context.Context, c *egress.Client) (*egress.Response, error) {
	var body io.Reader
	if o.body != nil {
		body = bytes.NewReader(o.body)
	}
	req, err := http.NewRequestWithContext(ctx, o.method, o.url, body)
	if err != nil {
		return nil, fmt.Errorf("building the %s request: %w", o.method, err)
	}
	req.Header.Set("User-Agent", userAgent)
	if o.body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	// Configured headers may override the two above; validation keeps them
	// away from the framing headers and the ones set below.
	for _, name := range slices.Sorted(maps.Keys(o.headers)) {
		if v, ok := o.headers[name].(string); ok {
			req.Header.Set(name, v)
		}
	}
	if o.auth != "" {
		req.Header.Set("Authorization", o.auth)
	}
	if o.key != "" {
		req.Header.Set("Idempotency-Key", o.key)
	}
	return c.DoLimited(ctx, req, o.maxBytes)
}

// runHTTPRequest calls the endpoint and emits the answer on "default" (2xx)
// or "error" (any other status). No answer at all is an error, so the
// engine's retry applies.
func runHTTPRequest(ctx context.Context, c *egress.Client, in executionapp.Invocation) (executionapp.Outcome, error) {
	method := str(in.Config, "method")
	if method == "" {
		method = http.MethodGet
	}
	o := outbound{method: method, url: str(in.Config, "url"), auth: str(in.Config, "authorization"), key: in.IdempotencyKey}
	o.headers, _ = in.Config["headers"].(map[string]any)
	if n, ok := number(in.Config["maxResponseBytes"]); ok {
		o.maxBytes = int64(n)
	}
	var toSend any
	hasBody := false
	if b, ok := in.Config["body"]; ok && b != nil {
		toSend, hasBody = b, true
	} else if method == http.MethodPost || method == http.MethodPut || method == http.MethodPatch {
		toSend, hasBody = in.Payload, true
	}
	if hasBody {
		b, err := json.Marshal(toSend)
		if err != nil {
			return executionapp.Outcome{}, fmt.Errorf("HTTP_REQUEST: encoding the body as JSON: %w", err)
		}
		o.body = b
	}
	resp, err := o.send(ctx, c)
	if err != nil {
		return executionapp.Outcome{}, fmt.Errorf("HTTP_REQUEST: %w", err)
	}
	answer, logs := decodeAnswer(resp)
	if resp.Status >= 200 && resp.Status < 300 {
		return executionapp.Outcome{Emits: []executionapp.Emit{{Port: plugin.DefaultPort, Payload: answer}}, Logs: logs}, nil
	}
	logs = append(logs, executionapp.Warn(fmt.Sprintf("%s %s answered %d; sent to the %q port", method, hostOf(o.url), resp.Status, errorPort)))
	return executionapp.Outcome{Emits: []executionapp.Emit{{Port: errorPort, Payload: answer}}, Logs: logs}, nil
}

// decodeAnswer turns a response into {"status", "headers", "body"}. The
// status is a float64 because payloads are JSON values.
func decodeAnswer(resp *egress.Response) (map[string]any, []executionapp.LogLine) {
	headers := make(map[string]any, len(resp.Header))
	for k, v := range resp.Header {
		if len(v) > 0 {
			headers[strings.ToLower(k)] = v[0]
		}
	}
	var logs []executionapp.LogLine
	var body any = strings.ToValidUTF8(string(resp.Body), "\uFFFD")
	if isJSON(resp.Header.Get("Content-Type")) {
		if len(bytes.TrimSpace(resp.Body)) == 0 {
			body = nil
		} else if v, err := decodeJSON(resp.Body); err == nil {
			body = v
		} else {
			// Kept as text rather than failed: the answer arrived, and a
			// retry would get the same bytes.
			logs = append(logs, executionapp.Warn("the answer says it is JSON but is not ("+err.Error()+"); its body is passed on as text"))
		}
	}
	return map[string]any{"status": float64(resp.Status), "headers": headers, "body": body}, logs
}

// decodeJSON reads exactly one JSON value, numbers as json.Number so that
// large integers such as ids keep every digit.
func decodeJSON(b []byte) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, err
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, fmt.Errorf("data after the JSON value")
	}
	return v, nil
}

func isJSON(contentType string) bool {
	mt, _, err := mime.ParseMediaType(contentType)
	return err == nil && (mt == "application/json" || strings.HasSuffix(mt, "+json"))
}

// hostOf names a URL in logs by scheme, host and path only: queries often
// carry keys.
func hostOf(raw string) string {
	if i := strings.IndexAny(raw, "?#"); i >= 0 {
		return raw[:i]
	}
	return raw
}

// maxErrorBody bounds how much of a refused webhook's answer the error quotes.
const maxErrorBody = 256

// runWebhookOut posts the payload; any status but 2xx fails the attempt, so
// the node's retry re-sends it with the same Idempotency-Key.
func runWebhookOut(ctx context.Context, c *egress.Client, in executionapp.Invocation) (executionapp.Outcome, error) {
	b, err := json.Marshal(in.Payload)
	if err != nil {
		return executionapp.Outcome{}, fmt.Errorf("WEBHOOK_OUT: encoding the payload as JSON: %w", err)
	}
	o := outbound{method: http.MethodPost, url: str(in.Config, "url"), body: b, auth: str(in.Config, "authorization"), key: in.IdempotencyKey}
	o.headers, _ = in.Config["headers"].(map[string]any)
	resp, err := o.send(ctx, c)
	if err != nil {
		return executionapp.Outcome{}, fmt.Errorf("WEBHOOK_OUT: %w", err)
	}
	if resp.Status < 200 || resp.Status >= 300 {
		snippet := truncate(redactSecret(strings.ToValidUTF8(string(resp.Body), "\uFFFD"), o.auth), maxErrorBody)
		return executionapp.Outcome{}, fmt.Errorf("WEBHOOK_OUT: POST %s answered %d %s: %q", hostOf(o.url), resp.Status, http.StatusText(resp.Status), snippet)
	}
	return executionapp.Outcome{}, nil
}

// redactSecret masks the authorization value, and its credential without
// the scheme ("Bearer "), in text quoted from an answer: some endpoints echo
// the request back, and the credential must not reach an error through them.
// It runs before any truncation, which could otherwise leave part of it.
func redactSecret(text, auth string) string {
	if auth == "" {
		return text
	}
	text = strings.ReplaceAll(text, auth, plugin.MaskedValue)
	if _, cred, ok := strings.Cut(auth, " "); ok && len(cred) >= 8 {
		text = strings.ReplaceAll(text, cred, plugin.MaskedValue)
	}
	return text
}
