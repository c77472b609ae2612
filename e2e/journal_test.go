package e2e

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	openapi_types "github.com/oapi-codegen/runtime/types"

	"github.com/yukta/yukta/adapters/postgres/pgtest"
	"github.com/yukta/yukta/api/apiclient"
	"github.com/yukta/yukta/domain/execution"
	"github.com/yukta/yukta/domain/journal"
)

// journalSeed is the signing key seed the harness gives every server on one
// database: restarts and second instances sign with the same key, and no
// key file is written into the source tree.
func journalSeed(dsn string) []byte {
	sum := sha256.Sum256([]byte("yukta e2e journal key\x00" + dsn))
	return sum[:]
}

// journalKeyEnv is the YUKTA_JOURNAL_KEY setting for a server on dsn, unless
// the test sets its own.
func journalKeyEnv(dsn string, env []string) []string {
	for _, e := range env {
		if strings.HasPrefix(e, "YUKTA_JOURNAL_KEY=") {
			return nil
		}
	}
	return []string{"YUKTA_JOURNAL_KEY=" + base64.StdEncoding.EncodeToString(journalSeed(dsn))}
}

func journalPublicKey(dsn string) ed25519.PublicKey {
	return ed25519.NewKeyFromSeed(journalSeed(dsn)).Public().(ed25519.PublicKey)
}

// sweepJournalsAtEnd makes every e2e test that runs a server on its own
// database check, when it ends (before its server is killed), that every
// execution it made has a journal that verifies and, once settled, a
// projection equal to its live status.
func sweepJournalsAtEnd(tb testing.TB, s *server, dsn string) {
	t, ok := tb.(*testing.T)
	if !ok || dsn == "" {
		return // benchmarks measure; they do not sweep
	}
	t.Cleanup(func() {
		if t.Failed() || !s.running() {
			return
		}
		checkJournals(t, dsn, 15*time.Second)
	})
}

// running reports whether the server process has not exited.
func (s *server) running() bool {
	select {
	case err := <-s.exited:
		s.exited <- err
		return false
	default:
		return true
	}
}

// liveNode is a node as the status API (and the table it reads) has it.
type liveNode struct {
	status            string
	received, emitted int64
}

// projectionMismatch compares a journal's projection with the live status
// of a settled execution: the terminal status, and each node's status and
// counts. A node the journal never saw change is one the engine never moved
// from PENDING. It returns what differs, or "".
func projectionMismatch(p journal.Projection, status string, nodes map[string]liveNode) string {
	var diffs []string
	if p.Run.EngineStatus != status {
		diffs = append(diffs, fmt.Sprintf("run status %q, live %q", p.Run.EngineStatus, status))
	}
	seen := map[string]bool{}
	for _, n := range p.Nodes {
		seen[n.ID] = true
		live, ok := nodes[n.ID]
		switch {
		case !ok:
			diffs = append(diffs, fmt.Sprintf("node %s is not in the live status", n.ID))
		case n.EngineStatus != live.status:
			diffs = append(diffs, fmt.Sprintf("node %s status %q, live %q", n.ID, n.EngineStatus, live.status))
		case n.Received == nil || *n.Received != live.received || n.Emitted == nil || *n.Emitted != live.emitted:
			diffs = append(diffs, fmt.Sprintf("node %s counts %v/%v, live %d/%d", n.ID, deref(n.Received), deref(n.Emitted), live.received, live.emitted))
		}
	}
	for id, live := range nodes {
		if !seen[id] && (live.status != string(execution.NodePending) || live.received != 0 || live.emitted != 0) {
			diffs = append(diffs, fmt.Sprintf("node %s is %s (%d/%d) live but absent from the journal", id, live.status, live.received, live.emitted))
		}
	}
	return strings.Join(diffs, "; ")
}

// journalCheck is what checkJournals found.
type journalCheck struct {
	executions, settled, records int
}

// checkJournals waits until the observer has passed every event committed
// so far, then checks every execution in the database: its journal verifies
// (VALID under the harness key once it has settled; never INVALID), has no
// gap, and the projection of a settled one equals its live status. It reads
// the tables the status API reads, so it works whatever keys the server
// demands. A server must be running to journal.
func checkJournals(t testing.TB, dsn string, wait time.Duration) journalCheck {
	t.Helper()
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Errorf("journal check: %v", err)
		return journalCheck{}
	}
	defer conn.Close(ctx)
	// The executions and their statuses first, then the outbox position to
	// wait for: every event of an execution settled by then is below it.
	type exec struct{ id, status string }
	rows, err := conn.Query(ctx, `SELECT execution_id::text, status FROM executions ORDER BY execution_id`)
	if err != nil {
		t.Errorf("journal check: %v", err)
		return journalCheck{}
	}
	execs, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (exec, error) {
		var x exec
		return x, r.Scan(&x.id, &x.status)
	})
	if err != nil {
		t.Errorf("journal check: %v", err)
		return journalCheck{}
	}
	var target string
	var targetSeq int64
	err = conn.QueryRow(ctx, `SELECT coalesce(max(xid)::text, '0'), coalesce((SELECT seq FROM events ORDER BY xid DESC, seq DESC LIMIT 1), 0) FROM events`).Scan(&target, &targetSeq)
	if err != nil {
		t.Errorf("journal check: %v", err)
		return journalCheck{}
	}
	deadline := time.Now().Add(wait)
	for {
		var caught bool
		if err := conn.QueryRow(ctx, `SELECT (xid, seq) >= ($1::text::xid8, $2) FROM journal_cursor WHERE id = 1`, target, targetSeq).Scan(&caught); err != nil {
			t.Errorf("journal check: %v", err)
			return journalCheck{}
		}
		if caught {
			break
		}
		if time.Now().After(deadline) {
			t.Errorf("journal check: the observer has not consumed the outbox within %s", wait)
			return journalCheck{}
		}
		time.Sleep(20 * time.Millisecond)
	}
	// The harness key and every key the database registered (a test that
	// rotates signs with another).
	keys := journal.NewKeySet(journalPublicKey(dsn))
	krows, err := conn.Query(ctx, `SELECT public_key FROM journal_keys`)
	if err != nil {
		t.Errorf("journal check: %v", err)
		return journalCheck{}
	}
	registered, err := pgx.CollectRows(krows, pgx.RowTo[[]byte])
	if err != nil {
		t.Errorf("journal check: %v", err)
		return journalCheck{}
	}
	for _, k := range registered {
		keys.Add(k)
	}
	var res journalCheck
	for _, x := range execs {
		res.executions++
		lines, cp := storedJournal(t, conn, x.id)
		res.records += len(lines)
		v := journal.VerifyLinesKeys(lines, cp, keys)
		settled := execution.Status(x.status).Terminal()
		if v.Result == journal.VerdictInvalid || settled && v.Result != journal.VerdictValid {
			t.Errorf("journal of %s execution %s: %s at %d (%s: %s)", x.status, x.id, v.Result, v.FirstBadSequence, v.Reason, v.Detail)
			continue
		}
		if !settled {
			continue
		}
		res.settled++
		var records []journal.Record
		for _, l := range lines {
			r, _ := journal.ParseRecord(l)
			records = append(records, r)
		}
		nodes := map[string]liveNode{}
		nrows, err := conn.Query(ctx, `SELECT node_id, status, received, emitted FROM execution_nodes WHERE execution_id = $1`, x.id)
		if err != nil {
			t.Errorf("journal check: %v", err)
			return res
		}
		for nrows.Next() {
			var id string
			var n liveNode
			if err := nrows.Scan(&id, &n.status, &n.received, &n.emitted); err != nil {
				t.Errorf("journal check: %v", err)
			}
			nodes[id] = n
		}
		nrows.Close()
		p := journal.Project(records)
		if d := projectionMismatch(p, x.status, nodes); d != "" {
			t.Errorf("projection of execution %s differs from its live status: %s", x.id, d)
		}
		// Its spend is the fold of the run's TaskCompleted events in the
		// outbox, as the execution read folds them.
		srows, err := conn.Query(ctx, `SELECT node_id, data FROM events WHERE execution_id = $1 AND type = $2 AND node_id <> ''`,
			x.id, execution.EventTaskCompleted)
		if err != nil {
			t.Errorf("journal check: %v", err)
			return res
		}
		var reports []execution.SpendReport
		for srows.Next() {
			var node string
			var data []byte
			if err := srows.Scan(&node, &data); err != nil {
				t.Errorf("journal check: %v", err)
			}
			dec := json.NewDecoder(bytes.NewReader(data))
			dec.UseNumber()
			var m map[string]any
			_ = dec.Decode(&m)
			reports = append(reports, execution.SpendReportFromEventData(node, m))
		}
		srows.Close()
		if want := execution.FoldSpend(reports); !reflect.DeepEqual(p.Spend, want) {
			t.Errorf("projection of execution %s has spend %+v, its TaskCompleted events %+v", x.id, p.Spend, want)
		}
	}
	return res
}

func storedJournal(t testing.TB, conn *pgx.Conn, id string) ([][]byte, journal.Checkpoint) {
	t.Helper()
	ctx := context.Background()
	rows, err := conn.Query(ctx, `SELECT line FROM journal_records WHERE execution_id = $1 ORDER BY sequence`, id)
	if err != nil {
		t.Fatal(err)
	}
	lines, err := pgx.CollectRows(rows, pgx.RowTo[[]byte])
	if err != nil {
		t.Fatal(err)
	}
	var cp journal.Checkpoint
	var pub []byte
	err = conn.QueryRow(ctx, `SELECT execution_id::text, sequence, digest, signature, public_key FROM journal_checkpoints
		WHERE execution_id = $1 ORDER BY sequence DESC LIMIT 1`, id).Scan(&cp.ExecutionID, &cp.Sequence, &cp.Digest, &cp.Signature, &pub)
	if err != nil && err != pgx.ErrNoRows {
		t.Fatal(err)
	}
	cp.KeyID = journal.KeyID(pub)
	return lines, cp
}

// TestJournalEndToEnd drives executions that succeed, fail, are paused and
// resumed, stopped, restarted and answered, through REST and the CLI, then
// checks each journal through the API: VALID with no lag, its projection
// equal to the live status API, commands journaled as decisions with their
// actor, channel and cause; and the CLI's export verifies offline with the
// server's public key, while a tampered copy does not.
func TestJournalEndToEnd(t *testing.T) {
	t.Parallel()
	dsn := pgtest.NewDatabase(t)
	s := startServer(t, serverOptions{DSN: dsn, Env: []string{"YUKTA_LEASE=2s"}})
	e := &env{t: t, s: s, c: s.Client, ctx: context.Background()}
	e.apply("jr",
		line("ok", nd("start", "MANUAL", ""), nd("double", "TRANSFORM", `{"expression":"{\"n\": payload.n * 2}"}`), nd("out", "RESULT", "")),
		line("slow", nd("start", "MANUAL", ""), nd("wait", "DELAY", `{"duration":"30s"}`), nd("out", "RESULT", "")),
		line("bad", nd("start", "MANUAL", ""), nd("boom", "TRANSFORM", `{"expression":"payload.missing.field"}`), nd("out", "RESULT", "")),
		wf("ask", []string{nd("start", "MANUAL", ""), nd("q", "INPUT_REQUEST", `{"prompt":"go on?","mode":"approval"}`), nd("yes", "RESULT", ""), nd("no", "RESULT", "")},
			[]string{ed("start", "q", ""), ed("q", "yes", "approved"), ed("q", "no", "rejected")}),
	)
	var ids []string
	for i := range 5 {
		ids = append(ids, e.start("jr", "ok", map[string]any{"n": i}))
	}
	bad := e.start("jr", "bad", map[string]any{"n": 1})
	ids = append(ids, bad)
	paused := e.start("jr", "slow", nil)
	stopped := e.start("jr", "slow", nil)
	ids = append(ids, paused, stopped)
	e.waitNode("jr", paused, "start", "done", func(n apiclient.ExecutionNode) bool { return n.Status == apiclient.NodeStatusSUCCESS })
	// PAUSE through the CLI, RESUME and STOP through REST: decisions with two channels.
	cliWant(t, yukta(t, e.s.URL, "control", "jr", paused, "PAUSE", "--reason", "look first"), 0)
	if r, err := e.c.ControlExecutionWithResponse(e.ctx, "jr", paused, nil, apiclient.ExecutionCommand{Action: apiclient.ExecutionCommandActionRESUME}); err != nil || r.JSON200 == nil {
		t.Fatalf("resume: %v %v", err, r)
	}
	for _, id := range []string{paused, stopped} {
		if r, err := e.c.ControlExecutionWithResponse(e.ctx, "jr", id, nil, apiclient.ExecutionCommand{Action: apiclient.ExecutionCommandActionSTOP}); err != nil || r.JSON200 == nil {
			t.Fatalf("stop: %v %v", err, r)
		}
	}
	// A command refused after the end grows a settled journal: it is signed again.
	e.waitStatus("jr", bad, apiclient.ExecutionStatusFAILURE)
	if r, err := e.c.ControlExecutionWithResponse(e.ctx, "jr", bad, nil, apiclient.ExecutionCommand{Action: apiclient.ExecutionCommandActionPAUSE}); err != nil || r.StatusCode() != 409 {
		t.Fatalf("PAUSE of a failed execution: %v %v, want 409", err, r)
	}
	restart := e.restartOf(ids[1])
	ids = append(ids, restart)
	ask := e.start("jr", "ask", map[string]any{"n": 7})
	ids = append(ids, ask)
	e.answerFirstInput(ask)
	for _, id := range ids {
		e.waitExec("jr", id, "the end", func(x apiclient.Execution) bool { return x.EndedAt != nil })
	}

	for _, id := range ids {
		// The outbox is read in commit order: an event committed behind a
		// transaction still open elsewhere (an admission pass, a lease
		// renewal) is not readable yet, so neither verify nor the lag counts
		// it. Verify and projection must agree once both read the same
		// journal; a record appended between the two calls is read again.
		var v apiclient.JournalVerification
		var proj apiclient.JournalProjection
		var res int
		for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(50 * time.Millisecond) {
			v = e.verifyJournal(id)
			proj, res = e.projection(id)
			agree := res == 200 && deref(proj.ChainTip) == deref(v.ChainTip) && proj.Sequence == v.Sequence
			if agree && e.verifyJournal(id).Sequence == v.Sequence || time.Now().After(deadline) {
				break
			}
		}
		if v.Result != apiclient.VALID || v.LagEvents != 0 || v.Sequence < 3 {
			t.Errorf("verify %s: %+v, want VALID with no lag", id, v)
			continue
		}
		if res != 200 {
			t.Errorf("projection %s: %d", id, res)
			continue
		}
		if deref(proj.ChainTip) != deref(v.ChainTip) || proj.Sequence != v.Sequence {
			t.Errorf("projection %s covers %d %s, verify %d %s", id, proj.Sequence, deref(proj.ChainTip), v.Sequence, deref(v.ChainTip))
		}
		live := e.get("jr", id)
		nodes := map[string]liveNode{}
		for _, n := range live.Nodes {
			nodes[n.NodeId] = liveNode{status: string(n.Status), received: n.Received, emitted: n.Emitted}
		}
		if d := projectionMismatch(toDomainProjection(proj), string(live.Status), nodes); d != "" {
			t.Errorf("projection of %s (%s) differs from GET execution: %s", id, live.Status, d)
		}
	}

	// The paused execution's journal holds the operator's commands as decisions.
	dir := t.TempDir()
	out := yukta(t, e.s.URL, "journal", "export", "jr", paused)
	cliWant(t, out, 0)
	file := filepath.Join(dir, "paused.ndjson")
	if err := os.WriteFile(file, []byte(out.stdout), 0o600); err != nil {
		t.Fatal(err)
	}
	channels := map[string]string{}
	var lines []string
	for l := range strings.Lines(out.stdout) {
		lines = append(lines, strings.TrimSuffix(l, "\n"))
	}
	for _, l := range lines[:len(lines)-1] {
		r, err := journal.ParseRecord([]byte(l))
		if err != nil {
			t.Fatal(err)
		}
		if r.Kind == journal.KindDecision && r.Decision["type"] == "CommandAccepted" {
			cause, _ := r.Decision["cause"].(map[string]any)
			channels[fmt.Sprint(cause["action"])] = fmt.Sprint(r.Decision["channel"])
			if r.Decision["actor"] == "" || cause["commandId"] == nil {
				t.Errorf("decision without actor or cause: %v", r.Decision)
			}
			if cause["action"] == "PAUSE" && cause["reason"] != "look first" {
				t.Errorf("PAUSE decision cause %v, want the operator's reason", cause)
			}
		}
	}
	if channels["PAUSE"] != "cli (claimed)" || channels["RESUME"] != "rest" || channels["STOP"] != "rest" {
		t.Errorf("decision channels %v, want PAUSE cli (claimed), RESUME and STOP rest", channels)
	}

	// Offline verification with the public key the server publishes.
	kr, err := e.c.GetJournalPublicKeyWithResponse(e.ctx)
	if err != nil || kr.JSON200 == nil {
		t.Fatalf("public key: %v %v", err, kr)
	}
	if want := base64.StdEncoding.EncodeToString(journalPublicKey(dsn)); kr.JSON200.PublicKey != want {
		t.Fatalf("public key %s, want the configured key %s", kr.JSON200.PublicKey, want)
	}
	cliWant(t, yukta(t, e.s.URL, "journal", "verify", file, "--public-key", kr.JSON200.PublicKey), 0, "result: VALID")
	cliWant(t, yukta(t, e.s.URL, "journal", "verify", file), 3, "result: UNANCHORED")
	other, _, _ := ed25519.GenerateKey(nil)
	cliWant(t, yukta(t, e.s.URL, "journal", "verify", file, "--public-key", base64.StdEncoding.EncodeToString(other)), 3, "reason: unknown_key")
	// A tampered copy: the third record's actor changed.
	tampered := append([]string(nil), lines...)
	tampered[2] = strings.Replace(tampered[2], `"actor":"`, `"actor":"x`, 1)
	bad3 := filepath.Join(dir, "tampered.ndjson")
	if err := os.WriteFile(bad3, []byte(strings.Join(tampered, "\n")+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	cliWant(t, yukta(t, e.s.URL, "journal", "verify", bad3, "--public-key", kr.JSON200.PublicKey), 1, "result: INVALID", "firstBadSequence: 3", "reason: digest_mismatch")
	// A cut tail (the last record dropped, the checkpoint kept).
	cut := append(append([]string(nil), lines[:len(lines)-2]...), lines[len(lines)-1])
	cutFile := filepath.Join(dir, "cut.ndjson")
	if err := os.WriteFile(cutFile, []byte(strings.Join(cut, "\n")+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	cliWant(t, yukta(t, e.s.URL, "journal", "verify", cutFile, "--public-key", kr.JSON200.PublicKey), 1, "result: INVALID", "reason: checkpoint_mismatch")

	// A foreign or unknown execution is not found, the same way as GET execution.
	if r, _ := e.c.VerifyJournalWithResponse(e.ctx, "jr", "0193b000-0000-7000-8000-000000000000"); r == nil || r.StatusCode() != 404 {
		t.Fatalf("unknown execution: %v", r)
	}
	check := checkJournals(t, dsn, 10*time.Second)
	t.Logf("checked %d executions (%d settled), %d records", check.executions, check.settled, check.records)
}

func (e *env) verifyJournal(id string) apiclient.JournalVerification {
	e.t.Helper()
	deadline := time.Now().Add(waitLimit)
	for {
		r, err := e.c.VerifyJournalWithResponse(e.ctx, "jr", id)
		if err != nil || r.JSON200 == nil {
			e.t.Fatalf("verify %s: %v %v", id, err, r)
		}
		if (r.JSON200.Result == apiclient.VALID && r.JSON200.LagEvents == 0) || time.Now().After(deadline) {
			return *r.JSON200
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func (e *env) projection(id string) (apiclient.JournalProjection, int) {
	e.t.Helper()
	r, err := e.c.GetExecutionProjectionWithResponse(e.ctx, "jr", id)
	if err != nil {
		e.t.Fatal(err)
	}
	if r.JSON200 == nil {
		return apiclient.JournalProjection{}, r.StatusCode()
	}
	return *r.JSON200, 200
}

func (e *env) restartOf(id string) string {
	e.t.Helper()
	e.waitExec("jr", id, "the end", func(x apiclient.Execution) bool { return x.EndedAt != nil })
	r, err := e.c.ControlExecutionWithResponse(e.ctx, "jr", id, nil, apiclient.ExecutionCommand{Action: apiclient.ExecutionCommandActionRESTART})
	if err != nil || r.JSON200 == nil || len(r.JSON200.ResultExecutionIds) != 1 {
		e.t.Fatalf("restart: %v %v", err, r)
	}
	return r.JSON200.ResultExecutionIds[0]
}

func (e *env) answerFirstInput(execID string) {
	e.t.Helper()
	deadline := time.Now().Add(waitLimit)
	for {
		r, err := e.c.ListInputsWithResponse(e.ctx, &apiclient.ListInputsParams{SessionId: ptr("jr")})
		if err != nil || r.JSON200 == nil {
			e.t.Fatalf("inputs: %v %v", err, r)
		}
		for _, in := range r.JSON200.Inputs {
			if in.ExecutionId != execID {
				continue
			}
			var id openapi_types.UUID
			if err := id.UnmarshalText([]byte(in.InputId)); err != nil {
				e.t.Fatal(err)
			}
			a, err := e.c.AnswerInputWithResponse(e.ctx, id, nil, apiclient.AnswerRequest{Answer: map[string]any{"approved": true}})
			if err != nil || a.JSON200 == nil {
				e.t.Fatalf("answer: %v %v", err, a)
			}
			return
		}
		if time.Now().After(deadline) {
			e.t.Fatal("no input was requested")
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// toDomainProjection reads the API's projection back into the domain shape
// projectionMismatch compares.
func toDomainProjection(p apiclient.JournalProjection) journal.Projection {
	out := journal.Projection{ExecutionID: p.ExecutionId, Run: journal.RunView{EngineStatus: deref(p.Run.EngineStatus)}}
	for _, n := range p.Nodes {
		out.Nodes = append(out.Nodes, journal.NodeView{ID: n.Id, EngineStatus: deref(n.EngineStatus), Received: n.Received, Emitted: n.Emitted})
	}
	return out
}

// assertEveryEventJournaledOnce checks the outbox against the journals: each
// event of an execution has exactly one record (by source seq), and every
// journal runs 1..n with no gap.
func assertEveryEventJournaledOnce(t *testing.T, dsn string) (events, records int) {
	t.Helper()
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	var missing, gaps int
	err = conn.QueryRow(ctx, `SELECT (SELECT count(*) FROM events WHERE execution_id IS NOT NULL),
		(SELECT count(*) FROM journal_records),
		(SELECT count(*) FROM events e WHERE e.execution_id IS NOT NULL
		    AND NOT EXISTS (SELECT 1 FROM journal_records j WHERE j.source_seq = e.seq)),
		(SELECT count(*) FROM (SELECT execution_id FROM journal_records GROUP BY execution_id
		                        HAVING min(sequence) <> 1 OR max(sequence) <> count(*)) g)`).Scan(&events, &records, &missing, &gaps)
	if err != nil {
		t.Fatal(err)
	}
	if missing != 0 || gaps != 0 || events != records {
		t.Fatalf("%d events, %d records: %d events without a record, %d journals with a gap", events, records, missing, gaps)
	}
	return events, records
}

// TestJournalSurvivesKillUnderLoad kills the server (SIGKILL) while the
// engine runs a heavy fan-out and the observer is appending, restarts it,
// and checks that every journal verifies VALID, with every event journaled
// exactly once, no gap and no torn record (T23).
func TestJournalSurvivesKillUnderLoad(t *testing.T) {
	t.Parallel()
	dsn := pgtest.NewDatabase(t)
	opts := serverOptions{DSN: dsn, Env: []string{"YUKTA_LEASE=2s"}}
	s := startServer(t, opts)
	res, err := s.Client.PutSessionWithBodyWithResponse(context.Background(), "load", nil, jsonType, bytes.NewReader(linearSession("load", 10)))
	if err != nil || res.StatusCode() != 201 {
		t.Fatalf("apply: %v %v", err, res)
	}
	// 600 runs of a 10-node chain started 16 at a time: about 13,000 events.
	const runs = 600
	var wg sync.WaitGroup
	sem := make(chan struct{}, 16)
	for i := range runs {
		wg.Go(func() {
			sem <- struct{}{}
			defer func() { <-sem }()
			// Starts cut off by the kill fail; the executions that exist count.
			_, _ = s.Client.StartExecutionWithResponse(context.Background(), "load", "w", nil, apiclient.StartRequest{Payload: map[string]any{"i": i}})
		})
	}
	conn, err := pgx.Connect(context.Background(), dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	// Kill once the observer has journaled and anchored a good part while
	// many runs are still in flight, whatever the machine's speed.
	deadline := time.Now().Add(60 * time.Second)
	var recs, settled, inFlight int
	for {
		_ = conn.QueryRow(context.Background(), `SELECT (SELECT count(*) FROM journal_records), (SELECT count(*) FROM journal_checkpoints),
			(SELECT count(*) FROM executions WHERE ended_at IS NULL)`).Scan(&recs, &settled, &inFlight)
		if recs >= 1000 && settled >= 1 && inFlight >= 20 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("in 60 s the observer never journaled 1,000 records and settled an execution while 20 runs were in flight (last: %d, %d, %d)", recs, settled, inFlight)
		}
		time.Sleep(2 * time.Millisecond)
	}
	s.Kill()
	wg.Wait() // the starts the kill cut off fail; those that answered count
	var running, behind int
	_ = conn.QueryRow(context.Background(), `SELECT count(*) FROM executions WHERE status = 'RUNNING'`).Scan(&running)
	_ = conn.QueryRow(context.Background(), `SELECT count(*) FROM events e WHERE (e.xid, e.seq) > (SELECT xid, seq FROM journal_cursor)`).Scan(&behind)
	t.Logf("killed with %d records journaled, %d executions running, the observer %d events behind", recs, running, behind)
	if running == 0 {
		t.Fatal("every run had finished before the kill; the test proves nothing")
	}

	s2 := startServer(t, opts)
	deadline = time.Now().Add(120 * time.Second)
	for {
		var left int
		_ = conn.QueryRow(context.Background(), `SELECT count(*) FROM executions WHERE ended_at IS NULL`).Scan(&left)
		if left == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d executions still running 120 s after the restart", left)
		}
		time.Sleep(50 * time.Millisecond)
	}
	check := checkJournals(t, dsn, 30*time.Second)
	events, records := assertEveryEventJournaledOnce(t, dsn)
	var started int
	_ = conn.QueryRow(context.Background(), `SELECT count(*) FROM executions`).Scan(&started)
	if check.settled != started || started < 100 {
		t.Fatalf("%d settled journals checked, %d executions", check.settled, started)
	}
	t.Logf("after the restart: %d executions VALID with projections equal to their live status; %d events, %d records", check.settled, events, records)
	_ = s2
}

// TestJournalObserverStalledExecutionsGoOn holds the observer off (its
// position row locked, as another instance's observer would) while runs
// execute: they finish as usual, verify reports the lag and UNANCHORED; once
// released, the observer catches up and every journal is VALID.
func TestJournalObserverStalledExecutionsGoOn(t *testing.T) {
	t.Parallel()
	dsn := pgtest.NewDatabase(t)
	s := startServer(t, serverOptions{DSN: dsn})
	e := &env{t: t, s: s, c: s.Client, ctx: context.Background()}
	e.apply("jr", line("ok", nd("start", "MANUAL", ""), nd("double", "TRANSFORM", `{"expression":"{\"n\": payload.n * 2}"}`), nd("out", "RESULT", "")))
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	hold, err := conn.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := hold.Exec(ctx, `SELECT 1 FROM journal_cursor WHERE id = 1 FOR UPDATE`); err != nil {
		t.Fatal(err)
	}
	var ids []string
	for i := range 5 {
		ids = append(ids, e.start("jr", "ok", map[string]any{"n": i}))
	}
	for _, id := range ids {
		e.waitStatus("jr", id, apiclient.ExecutionStatusSUCCESS)
	}
	r, err := e.c.VerifyJournalWithResponse(e.ctx, "jr", ids[0])
	if err != nil || r.JSON200 == nil {
		t.Fatalf("verify: %v %v", err, r)
	}
	if r.JSON200.Result != apiclient.UNANCHORED || r.JSON200.LagEvents == 0 {
		t.Fatalf("while the observer is held: %+v, want UNANCHORED with lag", *r.JSON200)
	}
	if err := hold.Rollback(ctx); err != nil {
		t.Fatal(err)
	}
	for _, id := range ids {
		if v := e.verifyJournal(id); v.Result != apiclient.VALID || v.LagEvents != 0 {
			t.Fatalf("after release %s: %+v", id, v)
		}
	}
}
