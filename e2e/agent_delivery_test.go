package e2e

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/yukta/yukta/adapters/postgres/pgtest"
	"github.com/yukta/yukta/application/supervisorapp"
	"github.com/yukta/yukta/domain/supervisor"
)

// The delivery checker (reliability plan, T20): an agent supervisor's
// signals and directives across kill -9 of the server.
const (
	delivSession = "deliv"
	delivSup     = "deliv"
	delivActor   = "supervisor:" + delivSup
	// delivRuns runs of crashSupSession's chain (14 events each) make
	// 10,640 events; the directives' command events come on top.
	delivRuns      = 760
	delivMinEvents = 10000
	// delivSends is how many times each consumer sends one directive, all
	// at once, with one key.
	delivSends = 3
	// delivWorkers consumer jobs are sent at once. A key a kill left
	// pending holds its senders until the dead sender's claim runs out
	// (supervisorapp.DefaultClaimTTL, 10 s); the other workers go on.
	delivWorkers = 16
)

// delivKillAt: the server is killed (-9) when the session has this many
// events in the outbox, and restarted at once on the same database.
var delivKillAt = []int{2500, 5000, 7500}

const delivSupDoc = `{"name":"Delivery checker","owns":["session:deliv"],"allowedCommands":["ClearBreakpoint"],
	"engine":{"type":"http","settings":{}}}`

// TestAgentDeliveryAcrossKills is the delivery checker of T20 on the real
// binary. An agent supervisor (engine http without a url: its agent reads
// over the agent API) owns a session whose runs make more than 10,000
// events, each a uniquely identified EVENT signal (its cursor is the
// event's seq). Two consumers in this process read them while the server
// is killed with SIGKILL three times and restarted on the same database
// and port: one long-polls GET /signals?after= with the cursor of its last
// page, one reads GET /events (SSE) and reconnects with Last-Event-ID after
// every disconnect; both retry with backoff until the server is back. At
// the end each consumer's signals are compared with the outbox itself:
// none lost, none unexpected, each one what the outbox holds under its
// seq, none first delivered behind one already seen (an agent saving its
// cursor would have skipped it); duplicates are counted (at least once).
//
// Every ExecutionStarted a consumer sees makes it send a ClearBreakpoint
// directive on that run three times at once, with one key derived from
// the run (both consumers send the same directive under the same key, and
// send it again on a redelivery), retrying the same key when a kill cuts
// a send. Each key must have exactly one effect: one ledger entry,
// accepted, one command in the commands table, and every answer naming
// that command; at most one answer is not marked repeated.
func TestAgentDeliveryAcrossKills(t *testing.T) {
	t.Parallel()
	began := time.Now()
	ctx := context.Background()
	dsn := pgtest.NewDatabase(t)
	// Off: the default 600 requests a minute per credential would pace two
	// consumers and thousands of directive sends to minutes.
	// One directive per run, far more than a minute's budget: the test is
	// about delivery, not the loop bounds.
	opts := serverOptions{DSN: dsn, Env: []string{"YUKTA_LEASE=2s", "YUKTA_AGENT_RATE_LIMIT=off", "YUKTA_SUPERVISOR_COMMANDS_PER_MINUTE=10000"}}
	s := startServer(t, opts)
	base := s.URL
	opts.Args = []string{"--addr", strings.TrimPrefix(base, "http://")} // restarts listen where the consumers call
	db, err := pgxpool.New(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()

	if st, b, _ := call(t, s, "PUT", "/api/sessions/"+delivSession, "", crashSupSession()); st != 201 {
		t.Fatalf("apply the session: %d %s", st, b)
	}
	if st, b, _ := call(t, s, "PUT", "/api/supervisors/"+delivSup, "", []byte(delivSupDoc)); st != 201 {
		t.Fatalf("apply the supervisor: %d %s", st, b)
	}
	st, b, _ := call(t, s, "POST", "/api/supervisors/"+delivSup+"/credential", "", nil)
	var cred struct{ Token string }
	if st != 201 || json.Unmarshal(b, &cred) != nil || cred.Token == "" {
		t.Fatalf("issue the credential: %d %s", st, b)
	}
	var createdSeq int64
	if err := db.QueryRow(ctx, `SELECT seq FROM events WHERE type = 'SupervisorApplied' AND data->>'supervisorId' = $1 AND data->>'created' = 'true'`,
		delivSup).Scan(&createdSeq); err != nil {
		t.Fatal(err)
	}
	setupTook := time.Since(began)

	// The consumers and the directive senders run until the checks are
	// done (or a deadline far beyond what the test needs).
	runCtx, stop := context.WithTimeout(ctx, 4*time.Minute)
	defer stop()
	dirs := newDelivDirectives(base, cred.Token)
	poller := newDelivConsumer("long poll", base, cred.Token, dirs)
	sse := newDelivConsumer("SSE", base, cred.Token, dirs)
	var bg sync.WaitGroup
	for range delivWorkers {
		bg.Go(func() { dirs.work(runCtx) })
	}
	bg.Go(func() { poller.poll(runCtx) })
	bg.Go(func() { sse.stream(runCtx) })
	defer func() {
		stop()
		bg.Wait()
	}()

	// Produce: delivRuns starts, 8 at a time, each with its own
	// idempotency key, retried (same key) while the server is down.
	produced := make(chan []string, 1)
	var startRetries atomic.Int64
	go func() { produced <- delivProduce(runCtx, base, &startRetries) }()

	// Kill -9 three times while the runs are produced and consumed.
	type kill struct {
		at                         time.Duration
		events                     int
		polled, streamed, inFlight int
		pendingKeys, pendingDone   int
		settledKeys, jobs          int
		restart                    time.Duration
	}
	var kills []kill
	pendingAtKill := map[string]bool{} // directive keys pending at a kill
	pendingDone := 0                   // … of them with their command committed at the kill
	for _, n := range delivKillAt {
		deadline := time.Now().Add(90 * time.Second)
		var events int
		for {
			if err := db.QueryRow(ctx, `SELECT count(*) FROM events WHERE session_id = $1`, delivSession).Scan(&events); err != nil {
				t.Fatal(err)
			}
			if events >= n {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("only %d events within 90 s, want %d before kill %d", events, n, len(kills)+1)
			}
			time.Sleep(20 * time.Millisecond)
		}
		k := kill{at: time.Since(began), events: events, polled: poller.count(), streamed: sse.count(), inFlight: int(dirs.inFlight.Load()), jobs: int(dirs.pending.Load())}
		s.Kill()
		if err := db.QueryRow(ctx, `SELECT count(*) FILTER (WHERE status <> 'pending') FROM supervisor_directives WHERE supervisor_id = $1`,
			delivSup).Scan(&k.settledKeys); err != nil {
			t.Fatal(err)
		}
		// Directives the kill caught half done: their key is pending; some
		// have their command committed already, and a resend must not
		// make a second one.
		rows, err := db.Query(ctx, `SELECT key FROM supervisor_directives WHERE supervisor_id = $1 AND status = 'pending'`, delivSup)
		if err != nil {
			t.Fatal(err)
		}
		var controlKeys []string
		for rows.Next() {
			var key string
			if err := rows.Scan(&key); err != nil {
				t.Fatal(err)
			}
			pendingAtKill[key] = true
			controlKeys = append(controlKeys, supervisorapp.ControlKey(delivSup, key))
		}
		if rows.Err() != nil {
			t.Fatal(rows.Err())
		}
		k.pendingKeys = len(controlKeys)
		if err := db.QueryRow(ctx, `SELECT count(*) FROM commands WHERE actor = $1 AND key = ANY ($2)`, delivActor, controlKeys).Scan(&k.pendingDone); err != nil {
			t.Fatal(err)
		}
		pendingDone += k.pendingDone
		t0 := time.Now()
		s = startServer(t, opts)
		k.restart = time.Since(t0)
		if s.URL != base {
			t.Fatalf("the restarted server serves on %s, not %s", s.URL, base)
		}
		kills = append(kills, k)
		t.Logf("kill -9 #%d at %s: %d events in the outbox, consumed %d (long poll) / %d (SSE), %d directive jobs queued, %d sends in flight, ledger %d settled + %d pending (%d of them with their command committed); serving again after %s",
			len(kills), k.at.Round(time.Millisecond), k.events, k.polled, k.streamed, k.jobs, k.inFlight, k.settledKeys, k.pendingKeys, k.pendingDone, k.restart.Round(time.Millisecond))
	}
	var ids []string
	select {
	case ids = <-produced:
	case <-runCtx.Done():
		t.Fatal("the runs were not all started")
	}
	if len(ids) != delivRuns {
		t.Fatalf("%d runs started, want %d", len(ids), delivRuns)
	}
	producedAt := time.Since(began)

	// Settle: every run ends (those the dead instances held are taken over
	// once their lease runs out).
	for deadline := time.Now().Add(90 * time.Second); ; time.Sleep(200 * time.Millisecond) {
		var open, total int
		if err := db.QueryRow(ctx, `SELECT count(*) FILTER (WHERE ended_at IS NULL), count(*) FROM executions WHERE session_id = $1`,
			delivSession).Scan(&open, &total); err != nil {
			t.Fatal(err)
		}
		if open == 0 && total == delivRuns {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d of %d runs still open after 90 s", open, total)
		}
	}
	settledAt := time.Since(began)

	// Catch up: the ground truth is every event of the session after the
	// supervisor was created, in commit order, read from the outbox. Done
	// when both consumers hold all of it, no directive is being sent, and
	// the outbox has not grown since the last look.
	var truth []delivSignal
	rank := map[int64]int{}
	loadTruth := func() {
		rows, err := db.Query(ctx, `SELECT e.seq, e.type, coalesce(e.execution_id::text, ''), e.node_id
			  FROM events e, (SELECT xid, seq FROM events WHERE seq = $2) c
			 WHERE e.session_id = $1 AND (e.xid, e.seq) > (c.xid, c.seq)
			 ORDER BY e.xid, e.seq`, delivSession, createdSeq)
		if err != nil {
			t.Fatal(err)
		}
		defer rows.Close()
		truth = truth[:0]
		clear(rank)
		for rows.Next() {
			var s delivSignal
			if err := rows.Scan(&s.seq, &s.typ, &s.exec, &s.node); err != nil {
				t.Fatal(err)
			}
			rank[s.seq] = len(truth)
			truth = append(truth, s)
		}
		if rows.Err() != nil {
			t.Fatal(rows.Err())
		}
	}
	prevLen := -1
	for deadline := time.Now().Add(90 * time.Second); ; time.Sleep(500 * time.Millisecond) {
		loadTruth()
		lp, ls := poller.missing(truth), sse.missing(truth)
		busy := dirs.pending.Load()
		if lp == 0 && ls == 0 && busy == 0 && len(truth) == prevLen {
			break
		}
		prevLen = len(truth)
		if time.Now().After(deadline) {
			t.Errorf("after 90 s: %d signals in the outbox, the long poll misses %d, SSE misses %d, %d directive jobs unfinished", len(truth), lp, ls, busy)
			break
		}
	}
	caughtUpAt := time.Since(began)
	stop() // the consumers and senders end here; what they got is final
	bg.Wait()

	// The signals: lost 0, unexpected 0, each the event its seq names.
	perType := map[string]int{}
	for _, s := range truth {
		perType[s.typ]++
	}
	t.Logf("ground truth: %d EVENT signals of session %s after the supervisor's creation (seq %d): %v", len(truth), delivSession, createdSeq, perType)
	if len(truth) < delivMinEvents {
		t.Errorf("%d signals, want at least %d", len(truth), delivMinEvents)
	}
	bySeq := make(map[int64]delivSignal, len(truth))
	for _, s := range truth {
		bySeq[s.seq] = s
	}
	for _, c := range []*delivConsumer{poller, sse} {
		r := c.check(truth, bySeq, rank)
		t.Logf("%s: %d received, %d distinct, lost %d, unexpected %d, wrong %d, late %d, duplicates %d; %d other signals; %d streams ended and reconnected, %d requests refused while the server was down, %d other failed requests %s",
			c.name, r.received, r.distinct, len(r.lost), len(r.unexpected), len(r.wrong), len(r.late), r.duplicates, c.others, c.reconnects, c.refused, c.failures, clip(c.problems))
		if len(r.lost)+len(r.unexpected)+len(r.wrong)+len(r.late) > 0 {
			t.Errorf("%s: lost %d %s; unexpected %d %s; not the outbox's event %d %s; first delivered behind a later one %d %s",
				c.name, len(r.lost), clip(r.lost), len(r.unexpected), clip(r.unexpected), len(r.wrong), clip(r.wrong), len(r.late), clip(r.late))
		}
	}

	// The directives: one per run (every ExecutionStarted was delivered),
	// each with exactly one effect.
	want := map[string]string{} // directive key -> run
	for _, s := range truth {
		if s.typ == "ExecutionStarted" {
			want[delivKey(s.exec)] = s.exec
		}
	}
	if len(want) != delivRuns {
		t.Errorf("%d ExecutionStarted signals, want %d", len(want), delivRuns)
	}
	type ledger struct {
		status, commandID string
		outcomes          int
	}
	entries := map[string]ledger{}
	rows, err := db.Query(ctx, `SELECT key, status, coalesce(result, 'null') FROM supervisor_directives WHERE supervisor_id = $1`, delivSup)
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var key, status string
		var result []byte
		if err := rows.Scan(&key, &status, &result); err != nil {
			t.Fatal(err)
		}
		var res struct{ Outcomes []struct{ CommandId string } }
		_ = json.Unmarshal(result, &res)
		e := ledger{status: status, outcomes: len(res.Outcomes)}
		if len(res.Outcomes) == 1 {
			e.commandID = res.Outcomes[0].CommandId
		}
		entries[key] = e
	}
	if rows.Err() != nil {
		t.Fatal(rows.Err())
	}
	type command struct{ id, exec, node, action, status string }
	commands := map[string][]command{} // control key -> commands
	rows, err = db.Query(ctx, `SELECT command_id::text, coalesce(key, ''), coalesce(execution_id::text, ''), node_id, action, status
		 FROM commands WHERE actor = $1`, delivActor)
	if err != nil {
		t.Fatal(err)
	}
	var ncommands int
	cmdStatus := map[string]int{}
	for rows.Next() {
		var c command
		var key string
		if err := rows.Scan(&c.id, &key, &c.exec, &c.node, &c.action, &c.status); err != nil {
			t.Fatal(err)
		}
		commands[key] = append(commands[key], c)
		cmdStatus[c.status]++
		ncommands++
	}
	if rows.Err() != nil {
		t.Fatal(rows.Err())
	}
	// The command events: one CommandAccepted per key, naming the
	// command, and one CommandApplied or CommandRejected per command.
	accepted := map[string][]string{} // control key -> command ids
	rows, err = db.Query(ctx, `SELECT coalesce(data->>'key', ''), coalesce(data->>'commandId', '') FROM events
		 WHERE session_id = $1 AND actor = $2 AND type = 'CommandAccepted'`, delivSession, delivActor)
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var key, id string
		if err := rows.Scan(&key, &id); err != nil {
			t.Fatal(err)
		}
		accepted[key] = append(accepted[key], id)
	}
	if rows.Err() != nil {
		t.Fatal(rows.Err())
	}
	settled := map[string]int{} // command id -> CommandApplied/CommandRejected events
	rows, err = db.Query(ctx, `SELECT coalesce(data->>'commandId', '') FROM events
		 WHERE session_id = $1 AND actor = $2 AND type IN ('CommandApplied', 'CommandRejected')`, delivSession, delivActor)
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			t.Fatal(err)
		}
		settled[id]++
	}
	if rows.Err() != nil {
		t.Fatal(rows.Err())
	}
	answers := dirs.answersByKey()
	var missing, extra, badLedger, badEffect, badAnswer []string
	firsts, repeats, sends := 0, 0, 0
	for key, exec := range want {
		e, ok := entries[key]
		switch {
		case !ok:
			missing = append(missing, key)
			continue
		case e.status != "accepted" || e.outcomes != 1 || e.commandID == "":
			badLedger = append(badLedger, fmt.Sprintf("%s: %+v", key, e))
		}
		ck := supervisorapp.ControlKey(delivSup, key)
		cs, ev := commands[ck], accepted[ck]
		switch {
		case len(cs) != 1 || cs[0].id != e.commandID || cs[0].exec != exec || cs[0].node != "out" || cs[0].action != "BREAKPOINT_CLEAR":
			badEffect = append(badEffect, fmt.Sprintf("%s: %d commands %+v, ledger names %s", key, len(cs), cs, e.commandID))
		case len(ev) != 1 || ev[0] != e.commandID || settled[e.commandID] != 1:
			badEffect = append(badEffect, fmt.Sprintf("%s: CommandAccepted events %v, %d settling events for %s", key, ev, settled[e.commandID], e.commandID))
		}
		as := answers[key]
		first := 0
		for _, a := range as {
			sends++
			if a.repeated {
				repeats++
			} else {
				first++
			}
			if a.commandID != e.commandID || a.status != "accepted" {
				badAnswer = append(badAnswer, fmt.Sprintf("%s: answered %+v, ledger %s", key, a, e.commandID))
			}
		}
		firsts += first
		if first > 1 || len(as) < 2*delivSends {
			badAnswer = append(badAnswer, fmt.Sprintf("%s: %d answers, %d not repeated", key, len(as), first))
		}
	}
	for key := range entries {
		if _, ok := want[key]; !ok {
			extra = append(extra, key)
		}
	}
	if ncommands != len(want) {
		t.Errorf("%d commands by %s for %d directive keys: want exactly one each", ncommands, delivActor, len(want))
	}
	if len(missing)+len(extra)+len(badLedger)+len(badEffect)+len(badAnswer)+len(dirs.problems) > 0 {
		t.Errorf("directives: %d keys never sent %s; %d keys for no run %s; %d ledger entries not accepted with one command %s; %d keys without exactly one effect %s; %d wrong answers %s; %d sends refused %s",
			len(missing), clip(missing), len(extra), clip(extra), len(badLedger), clip(badLedger), len(badEffect), clip(badEffect),
			len(badAnswer), clip(badAnswer), len(dirs.problems), clip(dirs.problems))
	}
	t.Logf("directives: %d keys, %d answered sends (%d first answers, %d repeated), %d commands %v, one each; %d keys pending at a kill (%d with their command committed) settled with one command; %d sends cut by a kill, %d refused while the server was down, all sent again with their key; %d starts sent again across the kills",
		len(want), sends, firsts, repeats, ncommands, cmdStatus, len(pendingAtKill), pendingDone, dirs.cut.Load(), dirs.refused.Load(), startRetries.Load())
	t.Logf("directive sends answered for a retry, by status: %v %s; slowest send %s", dirs.retried, clip(dirs.notes), dirs.slowest.Round(time.Millisecond))
	t.Logf("phases: setup %s, produce with %d kills %s, runs settled %s, consumers caught up %s, checks %s; total %s",
		setupTook.Round(time.Millisecond), len(kills), (producedAt - setupTook).Round(time.Millisecond), (settledAt - producedAt).Round(time.Millisecond),
		(caughtUpAt - settledAt).Round(time.Millisecond), (time.Since(began) - caughtUpAt).Round(time.Millisecond), time.Since(began).Round(time.Millisecond))
}

// delivKey is the directive key for a run: the same whoever sends it.
func delivKey(executionID string) string { return "clear-out:" + executionID }

// delivSignal is one EVENT signal, or one event of the outbox.
type delivSignal struct {
	seq             int64
	typ, exec, node string
}

// delivEnvelope is a signal as the agent API sends it.
type delivEnvelope struct {
	Cursor string `json:"cursor"`
	Kind   string `json:"kind"`
	Signal struct {
		Seq         int64  `json:"seq"`
		Type        string `json:"type"`
		SessionID   string `json:"sessionId"`
		ExecutionID string `json:"executionId"`
		NodeID      string `json:"nodeId"`
	} `json:"signal"`
}

// delivBackoff waits longer after each failure, up to half a second.
type delivBackoff time.Duration

func (b *delivBackoff) wait(ctx context.Context) {
	*b = delivBackoff(min(max(2*time.Duration(*b), 20*time.Millisecond), 500*time.Millisecond))
	t := time.NewTimer(time.Duration(*b))
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-t.C:
	}
}

// delivConsumer is one reader of the signals, keeping every one it got in
// arrival order.
type delivConsumer struct {
	name, base, token string
	client            *http.Client
	dirs              *delivDirectives

	mu                 sync.Mutex
	got                []delivSignal
	bad                []string // envelopes that do not name their event
	others, reconnects int
	refused, failures  int
	problems           []string
}

func newDelivConsumer(name, base, token string, dirs *delivDirectives) *delivConsumer {
	return &delivConsumer{name: name, base: base, token: token, dirs: dirs,
		client: &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 4}}}
}

func (c *delivConsumer) count() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.got)
}

// fail counts a failed request; refused connections (the server is down)
// are counted apart, other reasons kept.
func (c *delivConsumer) fail(err error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if errors.Is(err, syscall.ECONNREFUSED) {
		c.refused++
		return
	}
	c.failures++
	if len(c.problems) < 5 {
		c.problems = append(c.problems, fmt.Sprintf("%.160s", err))
	}
}

// take handles one signal as an agent would: an ExecutionStarted (again
// on a redelivery) has a directive sent for its run. The directive is
// queued before the signal counts as received, so a consumer that has
// every signal has queued every directive.
func (c *delivConsumer) take(e delivEnvelope) {
	s := delivSignal{seq: e.Signal.Seq, typ: e.Signal.Type, exec: e.Signal.ExecutionID, node: e.Signal.NodeID}
	if e.Kind == "EVENT" && s.typ == "ExecutionStarted" && s.exec != "" {
		c.dirs.enqueue(s.exec, e.Cursor)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if e.Kind != "EVENT" {
		c.others++
		return
	}
	if p, err := supervisor.ParseCursor(e.Cursor); err != nil || p.Seq != s.seq || p.Legacy() || e.Signal.SessionID != delivSession {
		c.bad = append(c.bad, fmt.Sprintf("cursor %s seq %d session %s", e.Cursor, s.seq, e.Signal.SessionID))
	}
	c.got = append(c.got, s)
}

func (c *delivConsumer) request(ctx context.Context, path string) (*http.Request, error) {
	req, err := http.NewRequestWithContext(ctx, "GET", c.base+"/api/agent/v1"+path, nil)
	if err == nil {
		req.Header.Set("Authorization", "Bearer "+c.token)
	}
	return req, err
}

// poll long-polls /signals, passing back the cursor of the last page.
func (c *delivConsumer) poll(ctx context.Context) {
	after := ""
	var backoff delivBackoff
	for ctx.Err() == nil {
		rctx, cancel := context.WithTimeout(ctx, 20*time.Second)
		req, err := c.request(rctx, "/signals?wait=5&limit=500&after="+url.QueryEscape(after))
		if err != nil {
			cancel()
			c.fail(err)
			return
		}
		res, err := c.client.Do(req)
		if err != nil {
			cancel()
			if ctx.Err() == nil {
				c.fail(err)
				backoff.wait(ctx)
			}
			continue
		}
		b, err := io.ReadAll(res.Body)
		res.Body.Close()
		cancel()
		var page struct {
			Signals []delivEnvelope
			Cursor  string
		}
		if err != nil || res.StatusCode != 200 || json.Unmarshal(b, &page) != nil || page.Cursor == "" {
			if ctx.Err() == nil {
				c.fail(fmt.Errorf("GET /signals: %d %v %.200s", res.StatusCode, err, b))
				backoff.wait(ctx)
			}
			continue
		}
		for _, s := range page.Signals {
			c.take(s)
		}
		after = page.Cursor
		backoff = 0
	}
}

// stream reads /events, reconnecting with Last-Event-ID (the id of the
// last signal received whole) after every disconnect, as EventSource does.
func (c *delivConsumer) stream(ctx context.Context) {
	last := ""
	var backoff delivBackoff
	for ctx.Err() == nil {
		connCtx, cancel := context.WithCancel(ctx)
		req, err := c.request(connCtx, "/events")
		if err != nil {
			cancel()
			c.fail(err)
			return
		}
		if last != "" {
			req.Header.Set("Last-Event-ID", last)
		}
		res, err := c.client.Do(req)
		if err != nil || res.StatusCode != 200 {
			if err == nil {
				b, _ := io.ReadAll(res.Body)
				res.Body.Close()
				err = fmt.Errorf("%d %.200s", res.StatusCode, b)
			}
			cancel()
			if ctx.Err() == nil {
				c.fail(fmt.Errorf("GET /events: %w", err))
				backoff.wait(ctx)
			}
			continue
		}
		// The server writes at least a heartbeat every 15 s: a stream
		// silent for longer is dead.
		idle := time.AfterFunc(25*time.Second, cancel)
		sc := bufio.NewScanner(res.Body)
		sc.Buffer(make([]byte, 64<<10), 4<<20)
		var id, data string
		for sc.Scan() {
			idle.Reset(25 * time.Second)
			line := sc.Text()
			switch {
			case line == "":
				if data != "" {
					var e delivEnvelope
					if err := json.Unmarshal([]byte(data), &e); err != nil {
						c.fail(fmt.Errorf("SSE data %.200s: %v", data, err))
					} else {
						c.take(e)
					}
				}
				if id != "" {
					last = id
				}
				id, data = "", ""
			case strings.HasPrefix(line, "id: "):
				id = line[len("id: "):]
			case strings.HasPrefix(line, "data: "):
				data = line[len("data: "):]
			}
		}
		idle.Stop()
		res.Body.Close()
		cancel()
		if ctx.Err() == nil {
			c.mu.Lock()
			c.reconnects++
			c.mu.Unlock()
			backoff.wait(ctx)
		}
	}
}

// missing counts the outbox's events this consumer has not received.
func (c *delivConsumer) missing(truth []delivSignal) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	seen := make(map[int64]bool, len(c.got))
	for _, s := range c.got {
		seen[s.seq] = true
	}
	n := 0
	for _, s := range truth {
		if !seen[s.seq] {
			n++
		}
	}
	return n
}

type delivReport struct {
	received, distinct, duplicates int
	lost, unexpected, wrong, late  []string
}

// check compares what the consumer received with the outbox: lost (never
// received), unexpected (no such event of the session), wrong (not the
// event its seq names, or an envelope whose cursor is not its seq), late
// (first received after an event that follows it in commit order: a
// reader resuming from the later one's cursor would never get it), and
// the duplicates.
func (c *delivConsumer) check(truth []delivSignal, bySeq map[int64]delivSignal, rank map[int64]int) delivReport {
	c.mu.Lock()
	defer c.mu.Unlock()
	r := delivReport{received: len(c.got), wrong: append([]string(nil), c.bad...)}
	seen := map[int64]bool{}
	high := -1
	for _, s := range c.got {
		want, ok := bySeq[s.seq]
		if ok && want != s {
			r.wrong = append(r.wrong, fmt.Sprintf("%+v, the outbox has %+v", s, want))
		}
		if seen[s.seq] {
			r.duplicates++
			continue
		}
		seen[s.seq] = true
		if !ok {
			r.unexpected = append(r.unexpected, fmt.Sprintf("%d %s", s.seq, s.typ))
			continue
		}
		if k := rank[s.seq]; k < high {
			r.late = append(r.late, fmt.Sprintf("%d (position %d, after %d)", s.seq, k, high))
		} else {
			high = k
		}
	}
	r.distinct = len(seen)
	for _, s := range truth {
		if !seen[s.seq] {
			r.lost = append(r.lost, fmt.Sprintf("%d %s %s %s", s.seq, s.typ, s.exec, s.node))
		}
	}
	sort.Strings(r.lost)
	return r
}

// delivDirectives sends the consumers' directives: each job is one
// consumer handling one ExecutionStarted, which sends the directive
// delivSends times at once, each send retried with the same key until it
// has an answer.
type delivDirectives struct {
	base, token string
	client      *http.Client
	queue       chan delivJob
	pending     atomic.Int64 // jobs queued or being sent
	inFlight    atomic.Int64 // sends waiting for an answer
	cut         atomic.Int64 // sends that got no answer (the server died with them) and were sent again
	refused     atomic.Int64 // sends refused a connection (the server was down) and sent again

	mu       sync.Mutex
	answers  map[string][]delivAnswer
	problems []string
	retried  map[int]int // answers sent again, by status
	notes    []string    // the first answer of each retried status
	slowest  time.Duration
}

type delivJob struct {
	key  string
	body []byte
}

type delivAnswer struct {
	status, commandID string
	repeated          bool
}

func newDelivDirectives(base, token string) *delivDirectives {
	return &delivDirectives{base: base, token: token, queue: make(chan delivJob, 8*delivRuns), answers: map[string][]delivAnswer{}, retried: map[int]int{},
		client: &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{MaxIdleConnsPerHost: 32}}}
}

// enqueue queues the directive for a run's ExecutionStarted at cursor.
func (d *delivDirectives) enqueue(executionID, cursor string) {
	key := delivKey(executionID)
	body, _ := json.Marshal(map[string]any{"key": key, "cause": cursor, "reason": "delivery check",
		"command": map[string]any{"type": "ClearBreakpoint", "target": "execution:" + executionID, "nodeId": "out"}})
	d.pending.Add(1)
	select {
	case d.queue <- delivJob{key: key, body: body}:
	default:
		d.pending.Add(-1)
		d.problem(key + ": the send queue is full")
	}
}

func (d *delivDirectives) work(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			return
		case job := <-d.queue:
			var wg sync.WaitGroup
			for range delivSends {
				wg.Go(func() { d.send(ctx, job) })
			}
			wg.Wait()
			d.pending.Add(-1)
		}
	}
}

func (d *delivDirectives) problem(p string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.problems = append(d.problems, p)
}

// send sends the directive until it is answered: a send the kill cut, a
// 429 or a 5xx is sent again, with the same key.
func (d *delivDirectives) send(ctx context.Context, job delivJob) {
	var backoff delivBackoff
	for ctx.Err() == nil {
		req, err := http.NewRequestWithContext(ctx, "POST", d.base+"/api/agent/v1/directives", bytes.NewReader(job.body))
		if err != nil {
			d.problem(err.Error())
			return
		}
		req.Header.Set("Authorization", "Bearer "+d.token)
		req.Header.Set("Content-Type", "application/json")
		d.inFlight.Add(1)
		sent := time.Now()
		res, err := d.client.Do(req)
		d.inFlight.Add(-1)
		d.mu.Lock()
		d.slowest = max(d.slowest, time.Since(sent))
		d.mu.Unlock()
		if err != nil {
			if ctx.Err() == nil {
				if errors.Is(err, syscall.ECONNREFUSED) {
					d.refused.Add(1)
				} else {
					d.cut.Add(1)
				}
				backoff.wait(ctx)
			}
			continue
		}
		b, err := io.ReadAll(res.Body)
		res.Body.Close()
		switch {
		case err != nil:
			d.cut.Add(1)
			backoff.wait(ctx)
			continue
		case res.StatusCode == http.StatusTooManyRequests || res.StatusCode >= 500:
			d.mu.Lock()
			d.retried[res.StatusCode]++
			if d.retried[res.StatusCode] == 1 {
				d.notes = append(d.notes, fmt.Sprintf("%d %.200s", res.StatusCode, bytes.TrimSpace(b)))
			}
			d.mu.Unlock()
			backoff.wait(ctx)
			continue
		case res.StatusCode != http.StatusAccepted:
			d.problem(fmt.Sprintf("%s: %d %.300s", job.key, res.StatusCode, b))
			return
		}
		var a struct {
			Status   string
			Repeated bool
			Outcomes []struct{ CommandId string }
		}
		if err := json.Unmarshal(b, &a); err != nil || len(a.Outcomes) != 1 {
			d.problem(fmt.Sprintf("%s: answer %.300s", job.key, b))
			return
		}
		d.mu.Lock()
		d.answers[job.key] = append(d.answers[job.key], delivAnswer{status: a.Status, commandID: a.Outcomes[0].CommandId, repeated: a.Repeated})
		d.mu.Unlock()
		return
	}
}

func (d *delivDirectives) answersByKey() map[string][]delivAnswer {
	d.mu.Lock()
	defer d.mu.Unlock()
	out := make(map[string][]delivAnswer, len(d.answers))
	for k, v := range d.answers {
		out[k] = append([]delivAnswer(nil), v...)
	}
	return out
}

// delivProduce starts delivRuns runs, 8 at a time, each with its own
// idempotency key, sending a start again (same key) until it is answered;
// it returns the execution ids.
func delivProduce(ctx context.Context, base string, retries *atomic.Int64) []string {
	client := &http.Client{Timeout: 20 * time.Second, Transport: &http.Transport{MaxIdleConnsPerHost: 8}}
	ids := make([]string, delivRuns)
	var wg sync.WaitGroup
	sem := make(chan struct{}, 8)
	for i := range delivRuns {
		wg.Go(func() {
			sem <- struct{}{}
			defer func() { <-sem }()
			var backoff delivBackoff
			for ctx.Err() == nil {
				req, err := http.NewRequestWithContext(ctx, "POST", base+"/api/sessions/"+delivSession+"/workflows/chain/executions",
					strings.NewReader(fmt.Sprintf(`{"payload":{"n":%d}}`, i)))
				if err != nil {
					return
				}
				req.Header.Set("Content-Type", "application/json")
				req.Header.Set("Idempotency-Key", fmt.Sprintf("run-%d", i))
				res, err := client.Do(req)
				if err == nil {
					b, rerr := io.ReadAll(res.Body)
					res.Body.Close()
					var out struct{ ExecutionId string }
					if rerr == nil && (res.StatusCode == 201 || res.StatusCode == 200) && json.Unmarshal(b, &out) == nil && out.ExecutionId != "" {
						ids[i] = out.ExecutionId
						return
					}
				}
				retries.Add(1)
				backoff.wait(ctx)
			}
		})
	}
	wg.Wait()
	var got []string
	for _, id := range ids {
		if id != "" {
			got = append(got, id)
		}
	}
	return got
}
