// Command custom-server is the yukta binary with two node types and one
// adapter of its own, added through the public extension API (package
// server; docs/extending.md walks through this file):
//
//   - UPPERCASE, a processor: upper-cases one string field of the message;
//   - NOTIFY, an outbound processor: posts the message as JSON to a URL
//     with the message's idempotency key in the Idempotency-Key header;
//   - an audit sink that appends every journal record to the file named by
//     CUSTOM_SERVER_AUDIT_FILE (when set).
//
// Build and run it like yukta: `go build -o custom-server . && ./custom-server serve`.
package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/yukta/yukta/server"
)

func main() {
	opts := []server.Option{
		server.WithNodeType(uppercase(), server.RunnerFunc(runUppercase)),
		server.WithNodeType(notify(), &notifier{client: &http.Client{Timeout: notifyCeiling}}),
	}
	if path := os.Getenv("CUSTOM_SERVER_AUDIT_FILE"); path != "" {
		opts = append(opts, server.WithAuditSink(&fileAudit{path: path}))
	}
	server.Main(opts...)
}

// uppercase describes UPPERCASE: one optional field, the default port.
func uppercase() server.Descriptor {
	return server.Descriptor{
		Type:        "UPPERCASE",
		Category:    server.Processor,
		Description: "Upper-cases one string field of the message and passes it on.",
		Usage: `Pattern: MANUAL -> UPPERCASE -> RESULT
Example config: {"field": "text"}`,
		Fields: []server.Field{
			{Name: "field", Type: server.String, Default: "text", Description: "the member of the message (an object) to upper-case"},
		},
	}
}

// runUppercase has no side effect, so running it twice for one message
// (at-least-once delivery) is harmless.
func runUppercase(ctx context.Context, in server.Invocation) (server.Outcome, error) {
	field, _ := in.Config["field"].(string)
	msg, ok := in.Payload.(map[string]any)
	if !ok {
		return server.Outcome{}, fmt.Errorf("UPPERCASE: the message is not an object, so it has no field %q", field)
	}
	s, ok := msg[field].(string)
	if !ok {
		return server.Outcome{}, fmt.Errorf("UPPERCASE: the message's %q is not a string", field)
	}
	out := make(map[string]any, len(msg))
	for k, v := range msg {
		out[k] = v
	}
	out[field] = strings.ToUpper(s)
	return server.Outcome{Emits: []server.Emit{{Port: server.DefaultPort, Payload: out}}}, nil
}

// notifyCeiling caps one NOTIFY call; the node's own timeout (the context's
// deadline) is what authors set.
const notifyCeiling = time.Minute

// notify describes NOTIFY: a required URL, checked when the session is
// applied, not when a run reaches the node.
func notify() server.Descriptor {
	return server.Descriptor{
		Type:        "NOTIFY",
		Category:    server.Processor,
		Description: "Posts the message as JSON to a URL, with an Idempotency-Key header stable across retries, and passes it on.",
		Usage: `Pattern: MANUAL -> NOTIFY -> RESULT
A 2xx answer passes the message on; any other answer, or none, fails the attempt and "retry" applies, with the same Idempotency-Key.
Example config: {"url": "http://127.0.0.1:9000/hook", "retry": {"maxAttempts": 3, "backoff": "1s"}}`,
		Fields: []server.Field{
			{Name: "url", Type: server.URL, Required: true, Description: "http:// or https:// address to post to"},
		},
	}
}

// notifier runs NOTIFY. The engine may run it more than once for one
// message (a crash after the post, before the commit), so the receiver
// deduplicates on the Idempotency-Key, which is the same on every attempt.
type notifier struct{ client *http.Client }

func (n *notifier) Run(ctx context.Context, in server.Invocation) (server.Outcome, error) {
	url, _ := in.Config["url"].(string)
	body, err := json.Marshal(in.Payload)
	if err != nil {
		return server.Outcome{}, fmt.Errorf("NOTIFY: the message is not JSON: %w", err)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		return server.Outcome{}, fmt.Errorf("NOTIFY: %w", err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Idempotency-Key", in.IdempotencyKey)
	resp, err := n.client.Do(req)
	if err != nil {
		return server.Outcome{}, fmt.Errorf("NOTIFY: %w", err)
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<20))
	if resp.StatusCode/100 != 2 {
		return server.Outcome{}, fmt.Errorf("NOTIFY: %s answered %d", url, resp.StatusCode)
	}
	return server.Outcome{
		Emits: []server.Emit{{Port: server.DefaultPort, Payload: in.Payload}},
		Logs:  []server.LogLine{{Level: "info", Message: fmt.Sprintf("notified %s (attempt %d)", url, in.Attempt)}},
	}, nil
}

// fileAudit appends each journal record, one JSON line each, to a file. It
// runs inside the journal's round: an error makes the journal retry the
// round, so a record may be written twice, never skipped.
type fileAudit struct {
	mu   sync.Mutex
	path string
}

func (a *fileAudit) Audit(ctx context.Context, records []server.AuditRecord) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	f, err := os.OpenFile(a.path, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o600)
	if err != nil {
		return err
	}
	var buf bytes.Buffer
	for _, r := range records {
		buf.Write(r.Line)
		buf.WriteByte('\n')
	}
	if _, err := f.Write(buf.Bytes()); err != nil {
		_ = f.Close()
		return err
	}
	return f.Close()
}
