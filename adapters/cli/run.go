package cli

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/signal"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/yukta/yukta/api/apiclient"
)

// How long a watch keeps reconnecting to a lost event stream, and how often.
const (
	reconnectFor = 60 * time.Second
	backoffMin   = 250 * time.Millisecond
	backoffMax   = 5 * time.Second
)

func (a *App) runCmd() *cobra.Command {
	c := &cobra.Command{
		Use:               "run SESSION/WORKFLOW [--payload JSON] [--key IDEMPOTENCY_KEY] [--watch]",
		Short:             "start an execution; --watch follows it to the end (exit 0 SUCCESS, 4 FAILURE, 5 STOPPED)",
		Args:              argsBetween(1, 1),
		ValidArgsFunction: a.completeWorkflow,
	}
	payload := c.Flags().String("payload", "", "trigger payload: JSON, @FILE, or - for stdin")
	key := c.Flags().String("key", "", "Idempotency-Key: a repeated key returns the same execution")
	watch := c.Flags().BoolP("watch", "w", false, "follow the execution until it ends; exit 0 SUCCESS, 4 FAILURE, 5 STOPPED")
	addOutput(c)
	return a.leaf(c, func(e *env, pos []string) int { return runRun(e, pos, payload, key, watch) })
}

// runRun starts a run. With -o json (or jsonl) stdout carries one JSON
// document: the start's answer (as POST …/executions returns it: the
// executionId, or a review's ticket), or with --watch the ended execution
// (as GET returns it); what a person reads (progress, hints) goes to
// stderr, and the exit code is the same as without -o.
func runRun(e *env, pos []string, payload, key *string, watch *bool) int {
	var document func(body []byte) int // nil: the lines for people on stdout
	if e.machine() {
		out := e.stdout
		e.stdout = e.stderr
		defer func() { e.stdout = out }()
		document = func(body []byte) int {
			e.stdout = out
			return e.emit(body, "")
		}
	}
	return startRun(e, pos, payload, key, watch, document)
}

func startRun(e *env, pos []string, payload, key *string, watch *bool, document func([]byte) int) int {
	sid, wid, found := strings.Cut(pos[0], "/")
	if !found || sid == "" || wid == "" || strings.Contains(wid, "/") {
		return e.usageError("%q is not SESSION/WORKFLOW (e.g. hello/greet)", pos[0])
	}
	var body apiclient.StartRequest
	if *payload != "" {
		raw, err := jsonArg("--payload", *payload)
		if err != nil {
			return e.usageError("%v", err)
		}
		body.Payload = raw
	}
	params := &apiclient.StartExecutionParams{YuktaChannel: ptr(apiclient.StartExecutionParamsYuktaChannel(channel))}
	if *key != "" {
		params.IdempotencyKey = key
	}
	res, err := e.api.StartExecutionWithResponse(e.ctx, sid, wid, params, body)
	if err != nil {
		return e.callError(err)
	}
	if t := res.JSON202; t != nil {
		// A supervisor reviews the start: no run yet. --watch follows the
		// review, then the run it starts.
		if code := e.printTicket(t); !*watch {
			if document != nil {
				return document(res.Body)
			}
			return code
		}
		eid, code := e.awaitReview(t.ReviewId)
		if eid == "" {
			return code
		}
		fmt.Fprintf(e.stdout, "execution: %s\n", eid)
		return e.watchEnd(sid, eid, document)
	}
	out, existing := res.JSON201, false
	if out == nil {
		out, existing = res.JSON200, true
	}
	if out == nil {
		return e.problem(res.HTTPResponse, res.Body)
	}
	fmt.Fprintf(e.stdout, "execution: %s\n", out.ExecutionId)
	if existing {
		fmt.Fprintf(e.stdout, "existing: true (started earlier with idempotency key %q)\n", *key)
	}
	if !*watch {
		if document != nil {
			return document(res.Body)
		}
		fmt.Fprintf(e.stdout, "status: %s\n", out.Status)
		return exitOK
	}
	return e.watchEnd(sid, out.ExecutionId, document)
}

// watchEnd watches the run to its end; with -o it then writes the ended
// execution as GET returns it (numbers as the server sent them).
func (e *env) watchEnd(sid, eid string, document func([]byte) int) int {
	code := e.watch(sid, eid)
	if document == nil || code != exitOK && code != exitRunFailed && code != exitStopped {
		return code
	}
	res, err := e.api.GetExecutionWithResponse(e.ctx, sid, eid)
	if err != nil {
		return e.callError(err)
	}
	if res.JSON200 == nil {
		return e.problem(res.HTTPResponse, res.Body)
	}
	if c := document(res.Body); c != exitOK {
		return c
	}
	return code
}

// failure is a call that did not return what was asked: no answer (err) or
// a non-success answer (res, body).
type failure struct {
	err  error
	res  *http.Response
	body []byte
}

func (f *failure) retryable() bool {
	return f.err != nil || f.res != nil && f.res.StatusCode >= 500
}

func (e *env) report(f *failure) int {
	if f.err != nil {
		return e.callError(f.err)
	}
	return e.problem(f.res, f.body)
}

func (e *env) getExecution(ctx context.Context, sid, eid string) (*apiclient.Execution, *failure) {
	res, err := e.api.GetExecutionWithResponse(ctx, sid, eid)
	if err != nil {
		return nil, &failure{err: err}
	}
	if res.JSON200 == nil {
		return nil, &failure{res: res.HTTPResponse, body: res.Body}
	}
	var exact apiclient.Execution
	if decodeExact(res.Body, &exact) {
		return &exact, nil // the result's numbers as the server sent them
	}
	return res.JSON200, nil
}

// watch follows an execution's event stream and re-renders its nodes on
// every status change until the execution ends.
func (e *env) watch(sid, eid string) int {
	ctx, stop := signal.NotifyContext(e.ctx, os.Interrupt)
	defer stop()
	v := &view{w: e.stdout, tty: isTerminal(e.stdout, e.getenv), last: map[string]string{}, ctx: ctx, hinter: &hinter{e: e}}

	ex, f := e.getExecution(ctx, sid, eid)
	if f != nil {
		return e.watchFailed(ctx, f, sid, eid)
	}
	v.show(ex)
	lastID := ""
	var lostSince time.Time
	backoff := backoffMin
	for !terminal(ex.Status) {
		connected := func() {
			if !lostSince.IsZero() {
				fmt.Fprintf(e.stderr, "%s: event stream back after %s\n", e.name, took(lostSince, nil, time.Now()))
				v.drawn = 0
			}
			lostSince, backoff = time.Time{}, backoffMin
		}
		var fresh *apiclient.Execution
		fresh, f = e.followStream(ctx, sid, eid, &lastID, v, connected)
		if fresh != nil {
			ex = fresh
			continue // terminal
		}
		if ctx.Err() != nil {
			return e.interrupted(sid, eid)
		}
		if !f.retryable() {
			return e.report(f)
		}
		if lostSince.IsZero() {
			lostSince = time.Now()
			v.drawn = 0 // the message below would be drawn over
			fmt.Fprintf(e.stderr, "%s: event stream lost (%s); reconnecting from event %s\n", e.name, f.describe(), orDash(lastID))
		} else if time.Since(lostSince) > reconnectFor {
			fmt.Fprintf(e.stderr, "%s: gave up reconnecting after %s; the execution may still be running: yukta status %s %s\n", e.name, reconnectFor, sid, eid)
			return e.report(f)
		}
		select {
		case <-ctx.Done():
			return e.interrupted(sid, eid)
		case <-time.After(backoff):
		}
		backoff = min(2*backoff, backoffMax)
	}
	return e.finish(v, ex)
}

func (f *failure) describe() string {
	if f.err != nil {
		if ue, ok := errors.AsType[*url.Error](f.err); ok {
			return ue.Err.Error()
		}
		return f.err.Error()
	}
	if f.res != nil {
		return f.res.Status
	}
	return "no answer"
}

func (e *env) watchFailed(ctx context.Context, f *failure, sid, eid string) int {
	if ctx.Err() != nil && e.ctx.Err() == nil {
		return e.interrupted(sid, eid)
	}
	return e.report(f)
}

func (e *env) interrupted(sid, eid string) int {
	fmt.Fprintf(e.stderr, "%s: stopped watching; the execution continues: yukta status %s %s\n", e.name, sid, eid)
	return exitInterrupted
}

// followStream reads the event stream once, from lastID on. It returns the
// execution once it is terminal, or why the stream could not be read or
// ended early.
func (e *env) followStream(ctx context.Context, sid, eid string, lastID *string, v *view, connected func()) (*apiclient.Execution, *failure) {
	params := &apiclient.StreamExecutionEventsParams{}
	if *lastID != "" {
		params.LastEventID = ptr(*lastID)
	}
	// The raw call: the *WithResponse variant would read the endless body.
	resp, err := e.api.StreamExecutionEvents(ctx, sid, eid, params)
	if err != nil {
		return nil, &failure{err: err}
	}
	defer func() { _ = resp.Body.Close() }()
	if resp.StatusCode != http.StatusOK || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		body, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
		return nil, &failure{res: resp, body: body}
	}
	// A status change may have happened between the last read and this
	// stream's start; read once more so nothing is missed.
	ex, f := e.getExecution(ctx, sid, eid)
	if f != nil {
		return nil, f
	}
	connected()
	v.show(ex)
	if terminal(ex.Status) {
		return ex, nil
	}
	records, stopReading := readRecords(resp.Body)
	defer stopReading()
	// On a terminal the table is drawn again every redrawEvery, so the
	// elapsed time moves while nodes wait (a DELAY's timers send no event).
	var tick <-chan time.Time
	if v.tty {
		t := time.NewTicker(redrawEvery)
		defer t.Stop()
		tick = t.C
	}
	dirty := false
	for {
		var rec record
		select {
		case rec = <-records:
		case <-tick:
			v.show(ex)
			continue
		}
		ev, comment, err := rec.ev, rec.comment, rec.err
		if err != nil {
			if errors.Is(err, io.EOF) {
				err = errors.New("the server closed it")
			}
			return nil, &failure{err: err}
		}
		*lastID = rec.lastID
		switch {
		case comment: // keep-alive: a cheap safety net
			dirty = true
		case ev.Event == "NodeStatusChanged", ev.Event == "ExecutionStatusChanged", ev.Event == "ExecutionStarted":
			dirty = true
		case ev.Event == "shutdown", ev.Event == "error":
			return nil, &failure{err: fmt.Errorf("the server closed it with a %q event", ev.Event)}
		}
		if dirty && !rec.more {
			dirty = false
			if ex, f = e.getExecution(ctx, sid, eid); f != nil {
				return nil, f
			}
			v.show(ex)
			if terminal(ex.Status) {
				return ex, nil
			}
		}
	}
}

// redrawEvery is how often run --watch redraws its table on a terminal.
const redrawEvery = time.Second

// record is one record of an event stream, as readRecords passes it on.
type record struct {
	ev      sseEvent
	comment bool
	err     error
	lastID  string
	more    bool // more of the stream was already read (a burst goes on)
}

// readRecords reads an event stream in its own goroutine, one record at a
// time, until the stream fails or stop is called. stop closes body (which
// ends a read in progress) and returns once the goroutine has.
func readRecords(body io.ReadCloser) (records <-chan record, stop func()) {
	out := make(chan record)
	quit, done := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(done)
		r := newSSEReader(body)
		for {
			ev, comment, err := r.next()
			select {
			case out <- record{ev: ev, comment: comment, err: err, lastID: r.lastID, more: err == nil && r.buffered()}:
			case <-quit:
				return
			}
			if err != nil {
				return
			}
		}
	}()
	return out, func() {
		close(quit)
		_ = body.Close()
		<-done
	}
}

// finish prints how the run ended and returns the exit code for it.
func (e *env) finish(v *view, ex *apiclient.Execution) int {
	fmt.Fprintf(e.stdout, "status: %s\n", ex.Status)
	fmt.Fprintf(e.stdout, "duration: %s\n", took(ex.StartedAt, nonZero(ex.EndedAt), time.Now()))
	if msg := deref(ex.Error); msg != "" {
		fmt.Fprintf(e.stdout, "error: %s\n", escape(msg))
	}
	if ex.Result != nil {
		fmt.Fprintf(e.stdout, "result: %s\n", compactJSON(ex.Result))
	}
	switch ex.Status {
	case "SUCCESS":
		return exitOK
	case "STOPPED":
		return exitStopped
	default:
		return exitRunFailed
	}
}

// view renders an execution's progress: a table redrawn in place on a
// terminal, otherwise one line per change.
type view struct {
	w      io.Writer
	tty    bool
	ctx    context.Context
	hinter *hinter           // the answer commands of WAITING inputs
	hints  []string          // the hint lines shown now
	drawn  int               // lines of the last drawing (tty)
	status string            // last execution status printed (lines)
	last   map[string]string // last line printed per node (lines)
}

func (v *view) show(ex *apiclient.Execution) {
	if v.hinter != nil {
		if lines, changed := v.hinter.hints(v.ctx, ex); changed {
			v.hints = lines
			if !v.tty {
				defer func() {
					for _, l := range lines {
						fmt.Fprintln(v.w, l)
					}
				}()
			}
		}
	}
	if v.tty {
		var b bytes.Buffer
		if v.drawn > 0 {
			fmt.Fprintf(&b, "\x1b[%dA\r\x1b[J", v.drawn)
		}
		status := string(ex.Status)
		if deref(ex.Draining) {
			status += " (draining)"
		}
		fmt.Fprintf(&b, "%s/%s  %s  %s  %s\n", ex.SessionId, ex.WorkflowId, ex.ExecutionId, status, took(ex.StartedAt, nonZero(ex.EndedAt), time.Now()))
		v.drawn = 1 + nodeTable(&b, ex.Nodes)
		for _, l := range v.hints {
			fmt.Fprintln(&b, l)
			v.drawn++
		}
		_, _ = v.w.Write(b.Bytes())
		return
	}
	// The run's status comes first, except its end, which follows the
	// node changes that led to it.
	s := string(ex.Status)
	if deref(ex.Draining) {
		s += " (draining)"
	}
	if s != v.status && !terminal(ex.Status) {
		v.status = s
		fmt.Fprintf(v.w, "execution %s\n", s)
	}
	defer func() {
		if s != v.status {
			v.status = s
			fmt.Fprintf(v.w, "execution %s\n", s)
		}
	}()
	for _, n := range ex.Nodes {
		line := fmt.Sprintf("node %s %s %s received=%d emitted=%d", escape(n.NodeId), escape(n.Type), n.Status, n.Received, n.Emitted)
		if notes := nodeNotes(n); notes != "" {
			line += " (" + notes + ")"
		}
		if v.last[n.NodeId] != line {
			v.last[n.NodeId] = line
			fmt.Fprintln(v.w, line)
		}
	}
}
