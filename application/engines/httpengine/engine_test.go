package httpengine_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/yukta/yukta/adapters/egress"
	"github.com/yukta/yukta/application/engines/httpengine"
	"github.com/yukta/yukta/application/supervisorapp"
	"github.com/yukta/yukta/domain/fault"
	"github.com/yukta/yukta/domain/supervisor"
)

// The http engine is tested against real HTTP servers on loopback, through
// the real egress poster with the servers' addresses allow-listed.

// agentServer records what an http supervisor posts. hold, when set, keeps
// each request open until it is closed (or the request is cancelled).
type agentServer struct {
	srv    *httptest.Server
	host   string
	status int
	hold   chan struct{}

	mu       sync.Mutex
	bodies   [][]byte
	headers  []http.Header
	inFlight int
	peak     int
	calls    atomic.Int64
	canceled atomic.Int64
}

func newAgentServer(t *testing.T, status int) *agentServer {
	t.Helper()
	a := &agentServer{status: status}
	a.srv = httptest.NewServer(http.HandlerFunc(a.serve))
	// Close the held requests before the server waits for them.
	t.Cleanup(a.srv.Close)
	u, err := url.Parse(a.srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	a.host = u.Host
	return a
}

func (a *agentServer) serve(w http.ResponseWriter, r *http.Request) {
	a.calls.Add(1)
	body, _ := io.ReadAll(r.Body)
	a.mu.Lock()
	a.bodies = append(a.bodies, body)
	a.headers = append(a.headers, r.Header.Clone())
	a.inFlight++
	a.peak = max(a.peak, a.inFlight)
	a.mu.Unlock()
	defer func() {
		a.mu.Lock()
		a.inFlight--
		a.mu.Unlock()
	}()
	if a.hold != nil {
		select {
		case <-a.hold:
		case <-r.Context().Done():
			a.canceled.Add(1)
			return
		}
	}
	w.WriteHeader(a.status)
}

func (a *agentServer) received() ([][]byte, []http.Header, int) {
	a.mu.Lock()
	defer a.mu.Unlock()
	return append([][]byte(nil), a.bodies...), append([]http.Header(nil), a.headers...), a.peak
}

// waitFor polls cond for up to 5 s.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// errorLog collects what the engine reports.
type errorLog struct {
	mu   sync.Mutex
	errs []error
}

func (l *errorLog) add(_ string, err error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.errs = append(l.errs, err)
}

func (l *errorLog) all() []error {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]error(nil), l.errs...)
}

func (l *errorLog) text() string {
	var b strings.Builder
	for _, e := range l.all() {
		b.WriteString(e.Error())
		b.WriteByte('\n')
	}
	return b.String()
}

// httpSupervisor is an http supervisor as storage restores it.
func httpSupervisor(settings map[string]any) supervisor.Supervisor {
	return supervisor.Restore(supervisor.Spec{ID: "agent", Name: "Agent", EngineType: "http", Settings: settings,
		Owns: []string{"session:ci"}, Enabled: true})
}

type httpRig struct {
	eng    supervisorapp.Engine
	log    *errorLog
	asked  *sync.Map // environment names the engine read
	closer interface{ Close() error }
}

// newHTTPEngine builds the engine over the real egress poster, allowing
// the given hosts.
func newHTTPEngine(t *testing.T, settings map[string]any, env map[string]string, allowedEnv []string, hosts ...string) *httpRig {
	t.Helper()
	c, err := egress.New(egress.Options{AllowedHosts: hosts})
	if err != nil {
		t.Fatal(err)
	}
	rig := &httpRig{log: &errorLog{}, asked: &sync.Map{}}
	f := httpengine.NewFactory(httpengine.Deps{Poster: egress.NewSignalPoster(c),
		Getenv:     func(n string) string { rig.asked.Store(n, true); return env[n] },
		AllowedEnv: allowedEnv, OnError: rig.log.add})
	eng, err := f(t.Context(), httpSupervisor(settings), supervisorapp.Fence{SupervisorID: "agent"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	rig.eng = eng
	// The runtime stops engines that are EngineClosers.
	closer, ok := eng.(supervisorapp.EngineCloser)
	if !ok {
		t.Fatal("the http engine is not an EngineCloser: the runtime would not stop its posts")
	}
	rig.closer = closer
	t.Cleanup(func() { _ = closer.Close() })
	return rig
}

func eventSignal(seq int64) supervisor.Signal {
	return supervisor.NewSignal(strconv.FormatInt(seq, 10), supervisor.EventSignal{Seq: seq,
		At: time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC), Type: "NodeStatusChanged", SessionID: "ci", WorkflowID: "build",
		ExecutionID: "run-1", NodeID: "n1", Actor: "engine", Data: map[string]any{"status": "FAILURE"}})
}

func TestHTTPEnginePostsEachSignalItTakesInWireForm(t *testing.T) {
	a := newAgentServer(t, http.StatusNoContent)
	rig := newHTTPEngine(t, map[string]any{"url": a.srv.URL + "/yukta/signals?tenant=7",
		"headers":       map[string]any{"X-Team": "ops", "X-Token": "Bearer ${env.AGENT_TOKEN}"},
		"secretHeaders": map[string]any{"Authorization": "Bearer s3cr3t"}},
		map[string]string{"AGENT_TOKEN": "tok-1"}, []string{"AGENT_TOKEN"}, a.host)
	at := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	sigs := []supervisor.Signal{
		supervisor.NewSignal("10", supervisor.StartedSignal{At: at, Snapshot: map[string]any{"cursor": "10"}}),
		eventSignal(11),
		supervisor.NewSignal("12", supervisor.ReviewSignal{ReviewID: "r1", Command: supervisor.StartCommand("ci", "build", nil),
			Actor: "key:ops", Channel: "rest", SessionID: "ci", Deadline: at}),
		supervisor.NewSignal("13", supervisor.DelegatedSignal{DelegationID: "d1", From: "child", Request: map[string]any{"x": 1}}),
		supervisor.NewSignal("14", supervisor.ConsultedSignal{DelegationID: "d2", From: "peer", Payload: "?"}),
		// TICK is not a kind http takes: the runtime never hands it one
		// (supervisor.Hears).
	}
	for _, s := range sigs {
		if err := rig.eng.Handle(t.Context(), s); err != nil {
			t.Fatal(err)
		}
	}
	waitFor(t, "5 posts", func() bool { return a.calls.Load() == 5 })
	if err := rig.closer.Close(); err != nil { // joins the posts
		t.Fatal(err)
	}
	if n := a.calls.Load(); n != 5 {
		t.Fatalf("posts = %d, want 5, one per signal", n)
	}
	bodies, headers, _ := a.received()
	want := map[string]bool{}
	for _, s := range sigs {
		b, err := json.Marshal(s)
		if err != nil {
			t.Fatal(err)
		}
		want[string(b)] = true
	}
	for i, b := range bodies {
		if !want[string(b)] {
			t.Errorf("post %d body %s is not the wire form of a sent signal", i, b)
		}
		var env struct{ Cursor, Kind string }
		if err := json.Unmarshal(b, &env); err != nil || env.Cursor == "" || env.Kind == "" {
			t.Errorf("post %d: no cursor or kind in %s (%v)", i, b, err)
		}
		h := headers[i]
		if h.Get("Content-Type") != "application/json" || h.Get("X-Team") != "ops" ||
			h.Get("X-Token") != "Bearer tok-1" || h.Get("Authorization") != "Bearer s3cr3t" {
			t.Errorf("post %d headers = %v", i, h)
		}
	}
	if errs := rig.log.all(); len(errs) != 0 {
		t.Errorf("errors reported for delivered posts: %v", errs)
	}
	if st, err := rig.eng.State(); st != nil || err != nil {
		t.Errorf("State = %q, %v; want nil", st, err)
	}
}

func TestHTTPEngineKeepsAtMostMaxConcurrentPostsInFlight(t *testing.T) {
	a := newAgentServer(t, http.StatusOK)
	a.hold = make(chan struct{})
	rig := newHTTPEngine(t, map[string]any{"url": a.srv.URL, "maxConcurrent": json.Number("3"), "timeoutMs": json.Number("10000")},
		nil, nil, a.host)
	var handled atomic.Int64
	done := make(chan error, 1)
	go func() {
		for i := int64(1); i <= 10; i++ {
			if err := rig.eng.Handle(t.Context(), eventSignal(i)); err != nil {
				done <- err
				return
			}
			handled.Add(1)
		}
		done <- nil
	}()
	waitFor(t, "3 held requests", func() bool { return a.calls.Load() == 3 })
	time.Sleep(200 * time.Millisecond)
	// Three posts in flight; the fourth Handle waits for a slot.
	if n, c := handled.Load(), a.calls.Load(); n != 3 || c != 3 {
		t.Fatalf("with 3 posts held: Handle returned %d times and the server saw %d requests; want 3 and 3", n, c)
	}
	close(a.hold)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	waitFor(t, "10 posts", func() bool { return a.calls.Load() == 10 })
	if _, _, peak := a.received(); peak != 3 {
		t.Fatalf("peak concurrent requests = %d, want 3", peak)
	}
}

func TestHTTPEngineDoesNotRetryAFailedPost(t *testing.T) {
	a := newAgentServer(t, http.StatusInternalServerError)
	rig := newHTTPEngine(t, map[string]any{"url": a.srv.URL + "/hook?token=query-secret"}, nil, nil, a.host)
	if err := rig.eng.Handle(t.Context(), eventSignal(42)); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the failure report", func() bool { return len(rig.log.all()) == 1 })
	time.Sleep(300 * time.Millisecond)
	if n := a.calls.Load(); n != 1 {
		t.Fatalf("the server saw %d posts after a 500, want 1 (no retry)", n)
	}
	err := rig.log.all()[0]
	var pf *httpengine.PostFailedError
	if !errors.As(err, &pf) || !errors.Is(err, fault.ErrUnavailable) || pf.Cursor != "42" || pf.Kind != supervisor.KindEvent {
		t.Fatalf("report = %v (%T); want a PostFailedError for cursor 42 matching ErrUnavailable", err, err)
	}
	msg := err.Error()
	for _, want := range []string{"500", "not retried", "/signals?after="} {
		if !strings.Contains(msg, want) {
			t.Errorf("report %q does not say %q", msg, want)
		}
	}
	if strings.Contains(msg, "query-secret") {
		t.Errorf("report %q shows the URL's query", msg)
	}
}

func TestHTTPEnginePostsInOrderWithOneSlot(t *testing.T) {
	a := newAgentServer(t, http.StatusOK)
	rig := newHTTPEngine(t, map[string]any{"url": a.srv.URL, "maxConcurrent": json.Number("1")}, nil, nil, a.host)
	const n = 50
	for i := int64(1); i <= n; i++ {
		if err := rig.eng.Handle(t.Context(), eventSignal(i)); err != nil {
			t.Fatal(err)
		}
	}
	waitFor(t, "every post", func() bool { return a.calls.Load() == n })
	bodies, _, peak := a.received()
	for i, b := range bodies {
		var env struct{ Cursor string }
		if err := json.Unmarshal(b, &env); err != nil {
			t.Fatal(err)
		}
		if env.Cursor != strconv.Itoa(i+1) {
			t.Fatalf("post %d carries cursor %s, want %d: out of order", i, env.Cursor, i+1)
		}
	}
	if peak != 1 {
		t.Fatalf("peak concurrent requests = %d, want 1", peak)
	}
}

func TestHTTPEngineWithoutURLPostsNothing(t *testing.T) {
	// No poster at all: a post would panic.
	f := httpengine.NewFactory(httpengine.Deps{})
	eng, err := f(t.Context(), httpSupervisor(map[string]any{"headers": map[string]any{"X-Team": "ops"}}), supervisorapp.Fence{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	for i := int64(1); i <= 3; i++ {
		if err := eng.Handle(t.Context(), eventSignal(i)); err != nil {
			t.Fatal(err)
		}
	}
	if err := eng.(interface{ Close() error }).Close(); err != nil {
		t.Fatal(err)
	}
}

func TestHTTPEngineCloseCancelsAndJoinsPostsInFlight(t *testing.T) {
	a := newAgentServer(t, http.StatusOK)
	a.hold = make(chan struct{}) // never released
	rig := newHTTPEngine(t, map[string]any{"url": a.srv.URL, "timeoutMs": json.Number("10000")}, nil, nil, a.host)
	for i := int64(1); i <= 2; i++ {
		if err := rig.eng.Handle(t.Context(), eventSignal(i)); err != nil {
			t.Fatal(err)
		}
	}
	waitFor(t, "2 held requests", func() bool { return a.calls.Load() == 2 })
	start := time.Now()
	if err := rig.closer.Close(); err != nil {
		t.Fatal(err)
	}
	if took := time.Since(start); took > time.Second {
		t.Fatalf("Close took %s with posts of a 10 s timeout in flight; want them cancelled", took)
	}
	waitFor(t, "the server to see both requests cancelled", func() bool { return a.canceled.Load() == 2 })
	if errs := rig.log.all(); len(errs) != 0 {
		t.Errorf("a stop was reported as failed posts: %v", errs)
	}
	if err := rig.eng.Handle(t.Context(), eventSignal(3)); !errors.Is(err, fault.ErrUnavailable) {
		t.Fatalf("Handle after Close = %v, want ErrUnavailable (the signal comes again)", err)
	}
	if n := a.calls.Load(); n != 2 {
		t.Fatalf("the server saw %d posts, want 2", n)
	}
	if err := rig.closer.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
}

func TestHTTPEngineHandleGivesUpWaitingForASlotWhenCtxEnds(t *testing.T) {
	a := newAgentServer(t, http.StatusOK)
	a.hold = make(chan struct{})
	rig := newHTTPEngine(t, map[string]any{"url": a.srv.URL, "maxConcurrent": json.Number("1"), "timeoutMs": json.Number("10000")},
		nil, nil, a.host)
	if err := rig.eng.Handle(t.Context(), eventSignal(1)); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 100*time.Millisecond)
	defer cancel()
	if err := rig.eng.Handle(ctx, eventSignal(2)); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Handle with every slot taken = %v, want the ctx's deadline", err)
	}
	close(a.hold)
	time.Sleep(100 * time.Millisecond)
	if n := a.calls.Load(); n != 1 {
		t.Fatalf("the server saw %d posts, want 1: the refused signal must not be queued", n)
	}
}

func TestHTTPEngineExpandsOnlyAllowedEnvironmentNames(t *testing.T) {
	a := newAgentServer(t, http.StatusOK)
	env := map[string]string{"SECRET": "do-not-send-7f3a", "ALLOWED": "fine-to-send", "NEWLINE": "a\r\nX-Injected: 1"}
	rig := newHTTPEngine(t, map[string]any{"url": a.srv.URL, "headers": map[string]any{
		"X-Leak": "${env.SECRET}", "X-Ok": "v=${env.ALLOWED};w=${env.SECRET}", "X-Crlf": "${env.NEWLINE}", "X-Unset": "${env.UNSET}"}},
		env, []string{"ALLOWED", "NEWLINE", "UNSET"}, a.host)
	for i := int64(1); i <= 2; i++ {
		if err := rig.eng.Handle(t.Context(), eventSignal(i)); err != nil {
			t.Fatal(err)
		}
	}
	waitFor(t, "2 posts", func() bool { return a.calls.Load() == 2 })
	bodies, headers, _ := a.received()
	for i, h := range headers {
		if h.Get("X-Leak") != "" || h.Get("X-Ok") != "v=fine-to-send;w=" || h.Get("X-Crlf") != "" || h.Get("X-Injected") != "" {
			t.Errorf("post %d headers = %v", i, h)
		}
		for name, vs := range h {
			if strings.Contains(name+strings.Join(vs, ","), "do-not-send") {
				t.Errorf("post %d sent the value of SECRET in %s", i, name)
			}
		}
		if strings.Contains(string(bodies[i]), "do-not-send") {
			t.Errorf("post %d body carries the value of SECRET", i)
		}
	}
	if _, read := rig.asked.Load("SECRET"); read {
		t.Error("the engine read SECRET from the environment; a name off the allow-list must not even be read")
	}
	logText := rig.log.text()
	if strings.Contains(logText, "do-not-send") || strings.Contains(logText, "X-Injected: 1") {
		t.Errorf("the log shows an environment value: %s", logText)
	}
	// Reported once per header and name, not once per post.
	if c := strings.Count(logText, "${env.SECRET}"); c != 2 {
		t.Errorf("${env.SECRET} reported %d times, want 2 (once for each header naming it):\n%s", c, logText)
	}
	for _, want := range []string{"${env.NEWLINE}", "${env.UNSET}", "YUKTA_SUPERVISOR_ENV_ALLOWED"} {
		if !strings.Contains(logText, want) {
			t.Errorf("log does not mention %s:\n%s", want, logText)
		}
	}
	for _, err := range rig.log.all() {
		if !errors.Is(err, fault.ErrForbidden) {
			t.Errorf("env report %v is not ErrForbidden", err)
		}
	}
}

func TestHTTPEngineRefusesStoredSettingsOutOfBounds(t *testing.T) {
	f := httpengine.NewFactory(httpengine.Deps{})
	for _, tc := range []struct {
		settings map[string]any
		names    string
	}{
		{map[string]any{"url": "https://a.example.com", "timeoutMs": json.Number("20000")}, "engine.settings.timeoutMs"},
		{map[string]any{"url": "https://a.example.com", "maxConcurrent": json.Number("33")}, "engine.settings.maxConcurrent"},
		{map[string]any{"url": "https://a.example.com", "maxConcurrent": json.Number("1.5")}, "engine.settings.maxConcurrent"},
		{map[string]any{"url": "ftp://a.example.com"}, "engine.settings.url"},
		{map[string]any{"headers": map[string]any{"X": 1}}, "engine.settings.headers"},
	} {
		_, err := f(t.Context(), httpSupervisor(tc.settings), supervisorapp.Fence{}, nil)
		if !errors.Is(err, fault.ErrInvalid) || !strings.Contains(err.Error(), tc.names) || !strings.Contains(err.Error(), "PUT /api/supervisors/agent") {
			t.Errorf("%v: err = %v; want ErrInvalid naming %s and the fix", tc.settings, err, tc.names)
		}
	}
	_, err := f(t.Context(), supervisor.Restore(supervisor.Spec{ID: "r", EngineType: "rules"}), supervisorapp.Fence{}, nil)
	if err == nil {
		t.Error("the http factory built an engine for a rules supervisor")
	}
}
