package egress_test

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/yukta/yukta/adapters/egress"
	"github.com/yukta/yukta/application/engines/httpengine"
	"github.com/yukta/yukta/application/supervisorapp"
	"github.com/yukta/yukta/domain/supervisor"
)

// These are the egress tests of the http supervisor engine (reliability
// plan T10 to T13): the real engine posting through the real egress client
// to real listeners on loopback.

var _ httpengine.SignalPoster = (*egress.SignalPoster)(nil)

// canaryBody is what canaries answer; no error may ever carry it.
const canaryBody = "CANARY-REPLY-DATA"

// canary is a listener that counts the connections it accepts and answers
// each request 200 with canaryBody.
type canary struct {
	ln       net.Listener
	accepted atomic.Int64
}

func newCanary(t *testing.T, network, addr string) *canary {
	t.Helper()
	ln, err := net.Listen(network, addr)
	if err != nil {
		return nil
	}
	c := &canary{ln: ln}
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			conn, err := ln.Accept()
			if err != nil {
				return
			}
			c.accepted.Add(1)
			go func() {
				defer conn.Close()
				_ = conn.SetDeadline(time.Now().Add(5 * time.Second))
				if _, err := http.ReadRequest(bufio.NewReader(conn)); err == nil {
					_, _ = fmt.Fprintf(conn, "HTTP/1.1 200 OK\r\nContent-Length: %d\r\nConnection: close\r\n\r\n%s", len(canaryBody), canaryBody)
				}
			}()
		}
	}()
	t.Cleanup(func() { _ = ln.Close(); <-done })
	return c
}

func (c *canary) port() string {
	_, p, _ := net.SplitHostPort(c.ln.Addr().String())
	return p
}

// reports collects what the engine reports, with the time of each.
type reports struct {
	mu   sync.Mutex
	errs []error
	at   []time.Time
	read int // reports next returned
	ch   chan struct{}
}

func newReports() *reports { return &reports{ch: make(chan struct{}, 1024)} }

func (r *reports) add(_ string, err error) {
	r.mu.Lock()
	r.errs = append(r.errs, err)
	r.at = append(r.at, time.Now())
	r.mu.Unlock()
	r.ch <- struct{}{}
}

// next waits up to d for the next report.
func (r *reports) next(t *testing.T, d time.Duration) (time.Time, error) {
	t.Helper()
	select {
	case <-r.ch:
	case <-time.After(d):
		t.Fatalf("no report within %s", d)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.read++
	return r.at[r.read-1], r.errs[r.read-1]
}

func (r *reports) text() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var b strings.Builder
	for _, e := range r.errs {
		b.WriteString(e.Error())
		b.WriteByte('\n')
	}
	return b.String()
}

type engineRig struct {
	eng supervisorapp.Engine
	rep *reports
}

// httpEngine builds an http supervisor's engine posting through c.
func httpEngine(t *testing.T, c *egress.Client, settings map[string]any, getenv func(string) string, allowedEnv ...string) *engineRig {
	t.Helper()
	rig := &engineRig{rep: newReports()}
	f := httpengine.NewFactory(httpengine.Deps{Poster: egress.NewSignalPoster(c), Getenv: getenv,
		AllowedEnv: allowedEnv, OnError: rig.rep.add})
	sup := supervisor.Restore(supervisor.Spec{ID: "agent", Name: "Agent", EngineType: "http", Settings: settings,
		Owns: []string{"session:ci"}, Enabled: true})
	eng, err := f(t.Context(), sup, supervisorapp.Fence{SupervisorID: "agent"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = eng.(interface{ Close() error }).Close() })
	rig.eng = eng
	return rig
}

func signal(seq int64) supervisor.Signal {
	return supervisor.NewSignal(strconv.FormatInt(seq, 10), supervisor.EventSignal{Seq: seq, At: time.Now(),
		Type: "ExecutionStatusChanged", SessionID: "ci", ExecutionID: "run-1", Actor: "engine", Data: map[string]any{"status": "FAILURE"}})
}

func newClient(t *testing.T, hosts ...string) *egress.Client {
	t.Helper()
	c, err := egress.New(egress.Options{AllowedHosts: hosts})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// T10: every hostile target is refused at connect time and no canary
// accepts a connection; an allow-listed target is reached.
func TestSupervisorPostSSRFMatrix(t *testing.T) {
	c4 := newCanary(t, "tcp4", "127.0.0.1:0")
	c6 := newCanary(t, "tcp6", "[::1]:0")
	p := c4.port()
	p6 := p
	if c6 != nil {
		p6 = c6.port()
	}
	literal := []string{
		"http://127.0.0.1:" + p + "/",
		"http://127.0.0.2:" + p + "/",
		"http://[::1]:" + p6 + "/",
		"http://[::ffff:127.0.0.1]:" + p + "/",
		"http://[::ffff:169.254.169.254]/latest/meta-data/",
		"http://169.254.169.254/latest/meta-data/",
		"http://[fd00:ec2::254]/",
		"http://100.100.100.200/",
		"http://0.0.0.0:" + p + "/",
		"http://0.1.2.3:" + p + "/",
		"http://10.0.0.1:" + p + "/",
		"http://10.255.255.254/",
		"http://172.16.0.1/",
		"http://172.31.255.254/",
		"http://192.168.0.1/",
		"http://192.168.255.254/",
		"http://100.64.0.1/",
		"http://198.18.0.1/",
		"http://[fc00::1]/",
		"http://[fe80::1]/",
		"http://[64:ff9b::7f00:1]:" + p + "/",
		"http://[2002:7f00:1::1]:" + p + "/",
		"http://allowed@127.0.0.1:" + p + "/",
		"https://127.0.0.1:" + p + "/",
		"http://localhost:" + p + "/",
	}
	// Forms the URL parser takes as names: a resolver that reads them as
	// numbers (glibc's inet_aton) gives a loopback address, refused; one
	// that does not fails to resolve. Either way nothing is reached.
	names := []string{
		"http://2130706433:" + p + "/",
		"http://0177.0.0.1:" + p + "/",
		"http://0x7f.0.0.1:" + p + "/",
		"http://127.1:" + p + "/",
	}
	c := newClient(t) // no allowance at all
	check := func(t *testing.T, target string, mustRefuse bool) {
		t.Parallel()
		rig := httpEngine(t, c, map[string]any{"url": target, "timeoutMs": 5000}, nil)
		if err := rig.eng.Handle(t.Context(), signal(1)); err != nil {
			t.Fatal(err)
		}
		_, err := rig.rep.next(t, 8*time.Second)
		var refused *egress.RefusedError
		if !mustRefuse {
			t.Logf("%s: %v", target, err)
		}
		if mustRefuse && !errors.As(err, &refused) {
			t.Fatalf("%s: report %v, want a refusal by the egress policy", target, err)
		}
		if strings.Contains(err.Error(), canaryBody) {
			t.Fatalf("%s: the report carries reply data: %v", target, err)
		}
	}
	t.Run("targets", func(t *testing.T) {
		for _, target := range literal {
			t.Run(target, func(t *testing.T) { check(t, target, true) })
		}
		for _, target := range names {
			t.Run(target, func(t *testing.T) { check(t, target, false) })
		}
		t.Run("file scheme", func(t *testing.T) {
			t.Parallel()
			err := egress.NewSignalPoster(c).PostSignal(t.Context(), "file:///etc/passwd", nil, []byte("{}"))
			if err == nil || !strings.Contains(err.Error(), "only http and https") {
				t.Fatalf("file:// = %v, want refused", err)
			}
		})
		t.Run("gopher scheme", func(t *testing.T) {
			t.Parallel()
			err := egress.NewSignalPoster(c).PostSignal(t.Context(), "gopher://127.0.0.1:"+p+"/", nil, []byte("{}"))
			if err == nil || !strings.Contains(err.Error(), "only http and https") {
				t.Fatalf("gopher:// = %v, want refused", err)
			}
		})
	})
	if n := c4.accepted.Load(); n != 0 {
		t.Fatalf("the 127.0.0.1 canary accepted %d connections, want 0", n)
	}
	if c6 != nil && c6.accepted.Load() != 0 {
		t.Fatalf("the ::1 canary accepted %d connections, want 0", c6.accepted.Load())
	}
	t.Logf("%d targets refused; canary connections: 0", len(literal)+len(names)+2)

	// The control: the same canary, allow-listed, is reached.
	rig := httpEngine(t, newClient(t, "127.0.0.1:"+p), map[string]any{"url": "http://127.0.0.1:" + p + "/"}, nil)
	if err := rig.eng.Handle(t.Context(), signal(1)); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(5 * time.Second)
	for c4.accepted.Load() == 0 && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	if c4.accepted.Load() != 1 {
		t.Fatalf("the allow-listed canary accepted %d connections, want 1", c4.accepted.Load())
	}
	time.Sleep(100 * time.Millisecond)
	if s := rig.rep.text(); s != "" {
		t.Fatalf("the allow-listed post failed: %s", s)
	}
}

// T11 (b): a 302 or 307 to an address the client could reach is not
// followed; the post is recorded as failed.
func TestSupervisorPostDoesNotFollowRedirects(t *testing.T) {
	cn := newCanary(t, "tcp4", "127.0.0.1:0")
	target := "http://127.0.0.1:" + cn.port() + "/stolen"
	for _, code := range []int{http.StatusFound, http.StatusTemporaryRedirect, http.StatusPermanentRedirect} {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			http.Redirect(w, r, target, code)
		}))
		t.Cleanup(srv.Close)
		u, _ := url.Parse(srv.URL)
		// Both hosts are allowed, so only the redirect rule can stop it.
		rig := httpEngine(t, newClient(t, u.Host, "127.0.0.1:"+cn.port()), map[string]any{"url": srv.URL}, nil)
		if err := rig.eng.Handle(t.Context(), signal(1)); err != nil {
			t.Fatal(err)
		}
		_, err := rig.rep.next(t, 5*time.Second)
		if !strings.Contains(err.Error(), strconv.Itoa(code)) || !strings.Contains(err.Error(), "redirects are not followed") {
			t.Errorf("%d: report %v, want a failure naming the status", code, err)
		}
	}
	if n := cn.accepted.Load(); n != 0 {
		t.Fatalf("the redirect target accepted %d connections, want 0", n)
	}
}

// T11 (a): the allow-list names hosts and the address is checked after
// resolution, so a name that resolves to loopback is refused even when
// the loopback address itself is allowed.
func TestSupervisorPostRefusesANameResolvingToLoopback(t *testing.T) {
	cn := newCanary(t, "tcp4", "127.0.0.1:0")
	rig := httpEngine(t, newClient(t, "127.0.0.1:"+cn.port()), map[string]any{"url": "http://localhost:" + cn.port() + "/"}, nil)
	for i := int64(1); i <= 20; i++ {
		if err := rig.eng.Handle(t.Context(), signal(i)); err != nil {
			t.Fatal(err)
		}
		_, err := rig.rep.next(t, 5*time.Second)
		var refused *egress.RefusedError
		if !errors.As(err, &refused) {
			t.Fatalf("post %d to localhost: %v, want a refusal", i, err)
		}
	}
	if n := cn.accepted.Load(); n != 0 {
		t.Fatalf("canary accepted %d connections, want 0", n)
	}
}

// T11 (c): proxies from the environment are not used. Not parallel: it
// sets the environment.
func TestSupervisorPostIgnoresProxyEnvironment(t *testing.T) {
	proxy := newCanary(t, "tcp4", "127.0.0.1:0")
	pu := "http://127.0.0.1:" + proxy.port()
	t.Setenv("HTTP_PROXY", pu)
	t.Setenv("HTTPS_PROXY", pu)
	t.Setenv("http_proxy", pu)
	t.Setenv("https_proxy", pu)
	t.Setenv("NO_PROXY", "")
	t.Setenv("no_proxy", "")
	// The proxy is even allow-listed; a public target would go through it
	// if the client read the environment.
	rig := httpEngine(t, newClient(t, "127.0.0.1:"+proxy.port()), map[string]any{"url": "http://93.184.215.14:81/", "timeoutMs": 300}, nil)
	if err := rig.eng.Handle(t.Context(), signal(1)); err != nil {
		t.Fatal(err)
	}
	_, _ = rig.rep.next(t, 5*time.Second) // no route from here, or a timeout
	if n := proxy.accepted.Load(); n != 0 {
		t.Fatalf("the proxy accepted %d connections, want 0", n)
	}
}

// T12: a post to a server that never answers ends at timeoutMs; so does
// one to a server that answers one byte at a time.
func TestSupervisorPostEndsAtTimeoutMs(t *testing.T) {
	silent := httptest.NewServer(http.HandlerFunc(stall))
	t.Cleanup(silent.Close)
	slow := slowlorisServer(t)
	for _, tc := range []struct {
		name, url string
	}{{"never answers", silent.URL}, {"slowloris", slow}} {
		t.Run(tc.name, func(t *testing.T) {
			u, _ := url.Parse(tc.url)
			const timeout = 500 * time.Millisecond
			rig := httpEngine(t, newClient(t, u.Host), map[string]any{"url": tc.url, "timeoutMs": timeout.Milliseconds()}, nil)
			start := time.Now()
			if err := rig.eng.Handle(t.Context(), signal(1)); err != nil {
				t.Fatal(err)
			}
			if d := time.Since(start); d > 50*time.Millisecond {
				t.Errorf("Handle took %s; it must not wait for the post", d)
			}
			at, err := rig.rep.next(t, 5*time.Second)
			took := at.Sub(start)
			t.Logf("%s: post ended after %s (timeoutMs %d)", tc.name, took, timeout.Milliseconds())
			if took < timeout*8/10 || took > timeout*12/10 {
				t.Fatalf("post ended after %s, want %s ± 20%%", took, timeout)
			}
			if !strings.Contains(err.Error(), "no answer within timeoutMs (500)") {
				t.Errorf("report %q does not name the timeout", err)
			}
		})
	}
}

// stall never answers. It reads the body first: only then does the server
// notice the client hanging up, which ends the request's context.
func stall(_ http.ResponseWriter, r *http.Request) {
	_, _ = io.Copy(io.Discard, r.Body)
	<-r.Context().Done()
}

// slowlorisServer answers every request one byte of its status line every
// 100 ms.
func slowlorisServer(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	stop := make(chan struct{})
	wg.Go(func() {
		for {
			conn, err := ln.Accept()
			if err != nil {
				return
			}
			wg.Go(func() {
				defer conn.Close()
				if _, err := http.ReadRequest(bufio.NewReader(conn)); err != nil {
					return
				}
				for _, b := range []byte("HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n") {
					select {
					case <-stop:
						return
					case <-time.After(100 * time.Millisecond):
					}
					if _, err := conn.Write([]byte{b}); err != nil {
						return
					}
				}
			})
		}
	})
	t.Cleanup(func() { close(stop); _ = ln.Close(); wg.Wait() })
	return "http://" + ln.Addr().String() + "/"
}

// countingPoster forwards to the real poster and counts the posts in
// flight: what the engine itself lets out at once.
type countingPoster struct {
	next                  httpengine.SignalPoster
	inFlight, peak, calls atomic.Int64
}

func (p *countingPoster) PostSignal(ctx context.Context, url string, header map[string]string, body []byte) error {
	p.calls.Add(1)
	n := p.inFlight.Add(1)
	defer p.inFlight.Add(-1)
	for {
		old := p.peak.Load()
		if n <= old || p.peak.CompareAndSwap(old, n) {
			break
		}
	}
	return p.next.PostSignal(ctx, url, header, body)
}

// T12: while the endpoint stalls, 100 signals never put more than
// maxConcurrent posts in flight: exactly, at the poster, and in every 10 ms
// sample at the server.
func TestSupervisorPostsStayWithinMaxConcurrent(t *testing.T) {
	var inFlight, total atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		inFlight.Add(1)
		total.Add(1)
		defer inFlight.Add(-1)
		stall(w, r) // until the post times out
	}))
	t.Cleanup(srv.Close)
	u, _ := url.Parse(srv.URL)
	poster := &countingPoster{next: egress.NewSignalPoster(newClient(t, u.Host))}
	rep := newReports()
	f := httpengine.NewFactory(httpengine.Deps{Poster: poster, OnError: rep.add})
	eng, err := f(t.Context(), supervisor.Restore(supervisor.Spec{ID: "agent", EngineType: "http",
		Settings: map[string]any{"url": srv.URL, "timeoutMs": 100}, Owns: []string{"session:ci"}, Enabled: true}), supervisorapp.Fence{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = eng.(interface{ Close() error }).Close() })
	done := make(chan struct{})
	go func() {
		defer close(done)
		for i := int64(1); i <= 100; i++ {
			if err := eng.Handle(t.Context(), signal(i)); err != nil {
				t.Error(err)
				return
			}
		}
	}()
	// A request the client gave up on shows at the server until the server
	// notices the hang-up, a moment after the next request may have come:
	// a sample counts as over only when a second reading 2 ms later is
	// over too.
	samples, over := 0, 0
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for waiting := true; waiting; {
		select {
		case <-done:
			waiting = false
		case <-tick.C:
			samples++
			if inFlight.Load() > httpengine.DefaultMaxConcurrent {
				time.Sleep(2 * time.Millisecond)
				if inFlight.Load() > httpengine.DefaultMaxConcurrent {
					over++
				}
			}
		}
	}
	deadline := time.Now().Add(5 * time.Second)
	for total.Load() < 100 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	t.Logf("poster peak %d in flight; server: %d samples, %d over the limit; %d requests", poster.peak.Load(), samples, over, total.Load())
	if poster.peak.Load() != httpengine.DefaultMaxConcurrent {
		t.Fatalf("peak posts in flight = %d, want exactly the default maxConcurrent, 4", poster.peak.Load())
	}
	if over != 0 || samples < 10 {
		t.Fatalf("%d of %d server samples over maxConcurrent, want 0", over, samples)
	}
	// One post per signal and no retry. A post whose 100 ms ran out while
	// it was still connecting (a loaded machine) never reaches the server,
	// so the server may see fewer, never more.
	if poster.calls.Load() != 100 || total.Load() > 100 {
		t.Fatalf("%d posts for 100 signals, the server saw %d; want 100 posts and at most 100 requests (no retry)", poster.calls.Load(), total.Load())
	}
}

// T13: ${env.NAME} sends only allowed names; secret headers and
// environment values never reach the log, on any failure path.
func TestSupervisorPostEnvExfiltration(t *testing.T) {
	secrets := map[string]string{
		"PGPASSWORD":            "canary-pgpassword-91c2",
		"DATABASE_URL":          "postgres://u:canary-dburl-55aa@db/x",
		"AWS_SECRET_ACCESS_KEY": "canary-aws-0d7e",
		"HOME":                  "/canary-home-3b1f",
	}
	for k, v := range secrets {
		t.Setenv(k, v)
	}
	t.Setenv("AGENT_TEAM", "ops-team-allowed")
	var mu sync.Mutex
	var seen []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		var b strings.Builder
		_ = r.Header.Write(&b)
		mu.Lock()
		seen = append(seen, b.String()+string(body))
		mu.Unlock()
		w.WriteHeader(http.StatusInternalServerError) // and the failure is logged
	}))
	t.Cleanup(srv.Close)
	u, _ := url.Parse(srv.URL)
	const secretHeader = "Bearer canary-secret-header-e4f0"
	headers := map[string]any{"X-Team": "${env.AGENT_TEAM}"}
	for k := range secrets {
		headers["X-"+strings.ReplaceAll(k, "_", "-")] = "${env." + k + "}"
	}
	c := newClient(t, u.Host)
	settings := func(url string) map[string]any {
		return map[string]any{"url": url, "timeoutMs": 300, "headers": headers, "secretHeaders": map[string]any{"Authorization": secretHeader}}
	}
	silent := httptest.NewServer(http.HandlerFunc(stall))
	t.Cleanup(silent.Close)
	su, _ := url.Parse(silent.URL)
	c2 := newClient(t, u.Host, su.Host)
	logs := &strings.Builder{}
	for _, tc := range []struct {
		name string
		c    *egress.Client
		url  string
	}{
		{"500", c, srv.URL},
		{"refused", newClient(t), srv.URL},
		{"timeout", c2, silent.URL},
	} {
		rig := httpEngine(t, tc.c, settings(tc.url), os.Getenv, "AGENT_TEAM")
		for i := int64(1); i <= 3; i++ {
			if err := rig.eng.Handle(t.Context(), signal(i)); err != nil {
				t.Fatal(err)
			}
		}
		deadline := time.Now().Add(5 * time.Second)
		for strings.Count(rig.rep.text(), "not retried") < 3 && time.Now().Before(deadline) {
			time.Sleep(10 * time.Millisecond)
		}
		if n := strings.Count(rig.rep.text(), "not retried"); n != 3 {
			t.Fatalf("%s: %d failed posts reported, want 3:\n%s", tc.name, n, rig.rep.text())
		}
		logs.WriteString(rig.rep.text())
	}
	mu.Lock()
	defer mu.Unlock()
	if len(seen) != 3 {
		t.Fatalf("the canary saw %d posts, want 3", len(seen))
	}
	for _, s := range seen {
		for k, v := range secrets {
			if strings.Contains(s, v) {
				t.Errorf("the value of %s reached the canary", k)
			}
		}
		if !strings.Contains(s, "X-Team: ops-team-allowed") {
			t.Errorf("the allowed variable was not delivered:\n%s", s)
		}
		if !strings.Contains(s, "Authorization: "+secretHeader) {
			t.Errorf("the secret header was not delivered")
		}
	}
	text := logs.String()
	for k, v := range secrets {
		if strings.Contains(text, v) {
			t.Errorf("the log shows the value of %s", k)
		}
		if !strings.Contains(text, "${env."+k+"}") {
			t.Errorf("the log does not report ${env.%s} as refused", k)
		}
	}
	for _, leak := range []string{"canary-secret-header", "ops-team-allowed", canaryBody} {
		if strings.Contains(text, leak) {
			t.Errorf("the log shows %q:\n%s", leak, text)
		}
	}
	t.Logf("canary saw 0 of %d secret values in %d posts; log lines: %d, secret values in them: 0", len(secrets), len(seen), strings.Count(text, "\n"))
}

// Posts through a stopped engine's client end with the engine.
func TestSupervisorPostCancelledWithItsContext(t *testing.T) {
	silent := httptest.NewServer(http.HandlerFunc(stall))
	t.Cleanup(silent.Close)
	u, _ := url.Parse(silent.URL)
	ctx, cancel := context.WithTimeout(t.Context(), 100*time.Millisecond)
	defer cancel()
	start := time.Now()
	err := egress.NewSignalPoster(newClient(t, u.Host)).PostSignal(ctx, silent.URL, nil, []byte(`{}`))
	if !errors.Is(err, context.DeadlineExceeded) || time.Since(start) > time.Second {
		t.Fatalf("post = %v after %s, want the context's deadline at about 100 ms", err, time.Since(start))
	}
}
