package plugins

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"mime"
	"net/http"
	"net/url"
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
	// secretHeaders and secretQuery hold the secret map fields: sent like
	// headers and added to the url's query.
	secretHeaders, secretQuery map[string]any
	auth                       string
	key                        string
	maxBytes                   int64
}

// newOutbound reads the fields HTTP_REQUEST and WEBHOOK_OUT share.
func newOutbound(method string, config map[string]any, key string) outbound {
	o := outbound{method: method, url: str(config, "url"), auth: str(config, "authorization"), key: key}
	o.headers, _ = config["headers"].(map[string]any)
	o.secretHeaders, _ = config["secretHeaders"].(map[string]any)
	o.secretQuery, _ = config["secretQuery"].(map[string]any)
	return o
}

// secrets lists the secret values o sends, for redaction.
func (o outbound) secrets() []string {
	out := []string{o.auth}
	if _, cred, ok := strings.Cut(o.auth, " "); ok {
		out = append(out, cred)
	}
	for _, m := range []map[string]any{o.secretHeaders, o.secretQuery} {
		for _, v := range m {
			if s, ok := v.(string); ok {
				out = append(out, s, url.QueryEscape(s))
			}
		}
	}
	return out
}

// send builds and sends o through the egress client. Errors never carry a
// secret: net/http does not print header values, and the URL is named
// without its query and user.
func (o outbound) send(ctx context.Context, c *egress.Client) (*egress.Response, error) {
	var body io.Reader
	if o.body != nil {
		body = bytes.NewReader(o.body)
	}
	req, err := http.NewRequestWithContext(ctx, o.method, o.url, body)
	if err != nil {
		if ue, ok := errors.AsType[*url.Error](err); ok {
			err = ue.Err // its own copy of the URL may hold a query
		}
		return nil, fmt.Errorf("building the %s request: %w", o.method, err)
	}
	if len(o.secretQuery) > 0 {
		q := url.Values{}
		for name, v := range o.secretQuery {
			if s, ok := v.(string); ok {
				q.Set(name, s)
			}
		}
		if enc := q.Encode(); req.URL.RawQuery == "" {
			req.URL.RawQuery = enc
		} else {
			req.URL.RawQuery += "&" + enc
		}
	}
	req.Header.Set("User-Agent", userAgent)
	if o.body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	// Configured headers may override the two above; validation keeps them
	// away from the framing headers and the ones set below, and keeps each
	// name in one of the two maps.
	for _, m := range []map[string]any{o.headers, o.secretHeaders} {
		for _, name := range slices.Sorted(maps.Keys(m)) {
			if v, ok := m[name].(string); ok {
				req.Header.Set(name, v)
			}
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
	o := newOutbound(method, in.Config, in.IdempotencyKey)
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
// carry keys, and a user:password@ (refused when a session is applied, but
// possible in a definition stored before that rule) reads "***".
func hostOf(raw string) string {
	if i := strings.IndexAny(raw, "?#"); i >= 0 {
		raw = raw[:i]
	}
	return plugin.RedactURL(raw)
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
	o := newOutbound(http.MethodPost, in.Config, in.IdempotencyKey)
	o.body = b
	resp, err := o.send(ctx, c)
	if err != nil {
		return executionapp.Outcome{}, fmt.Errorf("WEBHOOK_OUT: %w", err)
	}
	if resp.Status < 200 || resp.Status >= 300 {
		snippet := truncate(redactSecrets(strings.ToValidUTF8(string(resp.Body), "\uFFFD"), o.secrets()), maxErrorBody)
		return executionapp.Outcome{}, fmt.Errorf("WEBHOOK_OUT: POST %s answered %d %s: %q", hostOf(o.url), resp.Status, http.StatusText(resp.Status), snippet)
	}
	return executionapp.Outcome{}, nil
}

// minRedacted is the shortest secret redactSecrets replaces: a one-letter
// value would mask every such letter of the text.
const minRedacted = 4

// redactSecrets masks each secret value in text quoted from an answer
// (the authorization value, its credential without the scheme "Bearer ",
// secret header and query values, also as escaped in a query): some
// endpoints echo the request back, and a secret must not reach an error
// through them. Longer values go first, so one containing another is masked
// whole. It runs before any truncation, which could otherwise leave part of
// a value.
func redactSecrets(text string, secrets []string) string {
	secrets = slices.DeleteFunc(slices.Clone(secrets), func(s string) bool { return len(s) < minRedacted })
	slices.SortFunc(secrets, func(a, b string) int { return len(b) - len(a) })
	for _, s := range secrets {
		text = strings.ReplaceAll(text, s, plugin.MaskedValue)
	}
	return text
}
