package egress

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
)

// DefaultSignalReplyBytes is how much of an http supervisor's reply is read
// (and thrown away) so the connection can be reused; the rest is not read.
const DefaultSignalReplyBytes = 64 << 10

// SignalPoster posts the signals of http supervisors
// (httpengine.SignalPoster) through a Client, so the same policy holds
// as for workflow nodes: allow-listed hosts, no private, loopback or
// metadata address at connect time, no redirect, no proxy.
type SignalPoster struct {
	c *Client
	// reply caps the bytes read of a reply; the reply is not used.
	reply int64
}

// NewSignalPoster returns a poster over c that reads at most
// DefaultSignalReplyBytes of each reply.
func NewSignalPoster(c *Client) *SignalPoster {
	return &SignalPoster{c: c, reply: DefaultSignalReplyBytes}
}

// PostSignal posts body as JSON to rawURL with header, under ctx's deadline.
// It returns nil when the answer is 2xx, whatever its body. A 3xx is a
// failure (redirects are not followed). Errors name the URL without its
// query and never carry header values or reply data (not even the reason
// phrase of the status line: the code and its standard text only).
func (p *SignalPoster) PostSignal(ctx context.Context, rawURL string, header map[string]string, body []byte) error {
	u, err := url.Parse(rawURL)
	if err != nil {
		// url.Parse's error repeats the URL, query included.
		return errors.New("egress: the supervisor url cannot be read; fix engine.settings.url")
	}
	if u.Scheme != "http" && u.Scheme != "https" {
		return fmt.Errorf("egress: only http and https URLs can be called, got scheme %q", u.Scheme)
	}
	where := "POST " + redact(u)
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, u.String(), bytes.NewReader(body))
	if err != nil {
		return fmt.Errorf("egress: %s: %w", where, unwrapURLError(err))
	}
	for name, v := range header {
		req.Header.Set(name, v)
	}
	// Set last: the body is JSON whatever the headers say.
	req.Header.Set("Content-Type", "application/json")
	resp, err := p.c.http.Do(req)
	if err != nil {
		var refused *RefusedError
		if errors.As(err, &refused) {
			return fmt.Errorf("egress: %s: %w", where, refused)
		}
		return fmt.Errorf("egress: %s: %w", where, unwrapURLError(err))
	}
	// The reply is not read, only drained up to the cap so a small answer
	// leaves the connection reusable; a larger one closes it. A failure to
	// drain changes nothing: the status was what mattered.
	_, _ = io.CopyN(io.Discard, resp.Body, p.reply)
	_ = resp.Body.Close()
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return fmt.Errorf("egress: %s: answered %d %s; only a 2xx answer counts as delivered (redirects are not followed)", where, resp.StatusCode, http.StatusText(resp.StatusCode))
	}
	return nil
}
