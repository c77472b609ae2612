package egress

import (
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"sync/atomic"
	"testing"
)

// countingBody counts the bytes the client takes from a reply.
type countingBody struct {
	io.ReadCloser
	n *atomic.Int64
}

func (b countingBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	b.n.Add(int64(n))
	return n, err
}

type countingTransport struct {
	next http.RoundTripper
	n    *atomic.Int64
}

func (t countingTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	resp, err := t.next.RoundTrip(r)
	if err == nil {
		resp.Body = countingBody{resp.Body, t.n}
	}
	return resp, err
}

// T12: of a 100 MiB reply, the poster reads at most its 64 KiB cap, and
// the post counts as delivered.
func TestSignalPosterReadsAtMostTheCap(t *testing.T) {
	const huge = 100 << 20
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Length", strconv.Itoa(huge))
		chunk := make([]byte, 32<<10)
		for sent := 0; sent < huge; sent += len(chunk) {
			if _, err := w.Write(chunk); err != nil {
				return
			}
		}
	}))
	t.Cleanup(srv.Close)
	u, _ := url.Parse(srv.URL)
	c, err := New(Options{AllowedHosts: []string{u.Host}})
	if err != nil {
		t.Fatal(err)
	}
	var read atomic.Int64
	c.http.Transport = countingTransport{next: c.http.Transport, n: &read}
	if err := NewSignalPoster(c).PostSignal(t.Context(), srv.URL, nil, []byte(`{}`)); err != nil {
		t.Fatalf("a 2xx with a 100 MiB reply: %v, want delivered", err)
	}
	t.Logf("read %d bytes of a %d-byte reply", read.Load(), huge)
	if read.Load() > DefaultSignalReplyBytes {
		t.Fatalf("read %d bytes of the reply, want at most %d", read.Load(), DefaultSignalReplyBytes)
	}
	if read.Load() == 0 {
		t.Fatal("read nothing: the count does not see the body")
	}
}
