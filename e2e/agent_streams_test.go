package e2e

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/yukta/yukta/adapters/postgres/pgtest"
)

// agentStream is an open SSE stream of the agent API: its data lines as
// they came, and when it ended.
type agentStream struct {
	cancel context.CancelFunc
	done   chan struct{}
	mu     sync.Mutex
	lines  []string
	ended  time.Time
}

// openAgentStream opens GET /api/agent/v1/events on s after the cursor.
func openAgentStream(t *testing.T, s *server, token, after string) *agentStream {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	req, _ := http.NewRequestWithContext(ctx, "GET", s.URL+"/api/agent/v1/events?after="+after, nil)
	req.Header.Set("Authorization", "Bearer "+token)
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	if res.StatusCode != 200 {
		b, _ := io.ReadAll(res.Body)
		res.Body.Close()
		cancel()
		t.Fatalf("GET /events: %d %s", res.StatusCode, b)
	}
	st := &agentStream{cancel: cancel, done: make(chan struct{})}
	go func() {
		defer close(st.done)
		defer res.Body.Close()
		sc := bufio.NewScanner(res.Body)
		for sc.Scan() {
			if line, ok := strings.CutPrefix(sc.Text(), "data: "); ok {
				st.mu.Lock()
				st.lines = append(st.lines, line)
				st.mu.Unlock()
			}
		}
		st.mu.Lock()
		st.ended = time.Now()
		st.mu.Unlock()
	}()
	t.Cleanup(func() { cancel(); <-st.done })
	return st
}

// endedAt is when the stream ended (zero while it is open).
func (s *agentStream) endedAt() time.Time {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.ended
}

// mentioning counts the data lines that hold text.
func (s *agentStream) mentioning(text string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for _, l := range s.lines {
		if strings.Contains(l, text) {
			n++
		}
	}
	return n
}

// agentPoll is one long poll in flight: its answer and when it came.
type agentPoll struct {
	done   chan struct{}
	at     time.Time
	status int
	body   string
}

func startAgentPoll(t *testing.T, s *server, token, after string) *agentPoll {
	t.Helper()
	p := &agentPoll{done: make(chan struct{})}
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	req, _ := http.NewRequestWithContext(ctx, "GET", s.URL+"/api/agent/v1/signals?wait=60&after="+after, nil)
	req.Header.Set("Authorization", "Bearer "+token)
	go func() {
		defer close(p.done)
		defer cancel()
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			p.at, p.body = time.Now(), err.Error()
			return
		}
		b, _ := io.ReadAll(res.Body)
		res.Body.Close()
		p.at, p.status, p.body = time.Now(), res.StatusCode, string(b)
	}()
	t.Cleanup(func() { cancel(); <-p.done })
	return p
}

// answered reports whether the long poll has its answer.
func (p *agentPoll) answered() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// TestAgentStreamsEndWithTheirCredential: an agent's SSE stream and its
// long poll in flight, both on instance B, while an ADMIN changes who the
// agent is through instance A (same database). Rotating or revoking the
// credential, disabling or deleting the supervisor ends both within 1 s
// (the long poll answers 401), and a run started after the change is not
// delivered; narrowing owns keeps the stream open but it no longer carries
// the unit that was dropped.
func TestAgentStreamsEndWithTheirCredential(t *testing.T) {
	t.Parallel()
	dsn := pgtest.NewDatabase(t)
	a := startServer(t, serverOptions{DSN: dsn})
	b := startServer(t, serverOptions{DSN: dsn})
	db, err := pgxpool.New(context.Background(), dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(db.Close)
	w := &reviewWorld{t: t, s: a, db: db}
	w.put("/api/sessions/ci", napSession("ci"))
	w.put("/api/sessions/cd", napSession("cd"))

	doc := func(id string, enabled bool, owns ...string) []byte {
		o, _ := json.Marshal(owns)
		return []byte(`{"name":"` + id + `","owns":` + string(o) + `,"enabled":` + map[bool]string{true: "true", false: "false"}[enabled] +
			`,"engine":{"type":"http","settings":{}}}`)
	}
	for _, c := range []struct {
		name   string
		change func(w *reviewWorld, id string)
		ends   bool
	}{
		{"rotate", func(w *reviewWorld, id string) { issueToken(w, id) }, true},
		{"revoke", func(w *reviewWorld, id string) {
			if st, b, _ := call(w.t, a, "DELETE", "/api/supervisors/"+id+"/credential", "", nil); st != 204 {
				w.t.Fatalf("revoke: %d %s", st, b)
			}
		}, true},
		{"disable", func(w *reviewWorld, id string) {
			w.put("/api/supervisors/"+id, doc(id, false, "session:ci", "session:cd"))
		}, true},
		{"delete", func(w *reviewWorld, id string) {
			if st, b, _ := call(w.t, a, "DELETE", "/api/supervisors/"+id, "", nil); st != 200 {
				w.t.Fatalf("delete: %d %s", st, b)
			}
		}, true},
		{"narrow", func(w *reviewWorld, id string) { w.put("/api/supervisors/"+id, doc(id, true, "session:ci")) }, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			w := w.in(t)
			id := "s-" + c.name
			w.put("/api/supervisors/"+id, doc(id, true, "session:ci", "session:cd"))
			token := issueToken(w, id)
			// Start at the head, so what the stream carries is what happens
			// from here on.
			st, body, _ := call(t, b, "GET", "/api/agent/v1/signals?wait=0", token, nil)
			var head signalPage
			if st != 200 || json.Unmarshal(body, &head) != nil || head.Cursor == "" {
				t.Fatalf("GET /signals?wait=0: %d %s", st, body)
			}
			stream := openAgentStream(t, b, token, head.Cursor)
			poll := startAgentPoll(t, b, token, head.Cursor)
			time.Sleep(300 * time.Millisecond) // let the long poll reach the server: it is to be in flight
			if poll.answered() {
				t.Fatalf("the long poll answered before any change: %d %s", poll.status, poll.body)
			}

			c.change(w, id)
			changed := time.Now()
			if !c.ends {
				// Narrowed to ci: a run of cd, then one of ci. The stream
				// and the long poll carry ci's and never cd's.
				dropped := w.napping("cd")
				kept := w.napping("ci")
				deadline := time.Now().Add(20 * time.Second)
				for stream.mentioning(kept) == 0 || !poll.answered() {
					if time.Now().After(deadline) {
						t.Fatalf("after narrowing, within 20 s: the stream carried %d lines of the kept run, the long poll answered %v",
							stream.mentioning(kept), poll.answered())
					}
					time.Sleep(20 * time.Millisecond)
				}
				if n := stream.mentioning(dropped); n != 0 {
					t.Fatalf("the stream carried %d signals of session cd after owns was narrowed to ci", n)
				}
				if poll.status != 200 || strings.Contains(poll.body, dropped) {
					t.Fatalf("the long poll in flight across the narrowing answered %d %s; want 200 without run %s of cd", poll.status, poll.body, dropped)
				}
				if !stream.endedAt().IsZero() {
					t.Fatal("narrowing owns ended the stream; it should go on with what is still owned")
				}
				t.Logf("narrow: 0 signals of the dropped unit after the change, the stream goes on")
				return
			}
			// Nothing happens after the change: the stream and the long
			// poll end by asking again, not because a signal came.
			deadline := changed.Add(time.Second)
			for stream.endedAt().IsZero() || !poll.answered() {
				if time.Now().After(deadline) {
					t.Fatalf("%s: 1 s after the change the stream ended: %v, the long poll answered: %v", c.name, !stream.endedAt().IsZero(), poll.answered())
				}
				time.Sleep(10 * time.Millisecond)
			}
			// A run started after the change must not reach the agent.
			after := w.napping("ci")
			if poll.status != 401 || !strings.Contains(poll.body, "supervisor credential") {
				t.Fatalf("%s: the long poll in flight answered %d %s, want 401 naming the supervisor credential", c.name, poll.status, poll.body)
			}
			if n := stream.mentioning(after); n != 0 || strings.Contains(poll.body, after) {
				t.Fatalf("%s: %d signals of a run started after the change were delivered", c.name, n)
			}
			t.Logf("%s: the stream ended %d ms and the long poll answered 401 %d ms after the change (on the other instance)",
				c.name, stream.endedAt().Sub(changed).Milliseconds(), poll.at.Sub(changed).Milliseconds())
		})
	}
}

// issueToken issues (or rotates) the credential of supervisor id.
func issueToken(w *reviewWorld, id string) string {
	w.t.Helper()
	st, b, _ := call(w.t, w.s, "POST", "/api/supervisors/"+id+"/credential", w.key, nil)
	var c struct{ Token string }
	if st != 201 || json.Unmarshal(b, &c) != nil || !strings.HasPrefix(c.Token, "yks_") {
		w.t.Fatalf("issue a credential for %s: %d %s", id, st, b)
	}
	return c.Token
}
