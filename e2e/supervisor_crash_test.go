package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/yukta/yukta/adapters/postgres/pgtest"
	"github.com/yukta/yukta/api/apiclient"
	"github.com/yukta/yukta/application/engines/rulesengine"
	"github.com/yukta/yukta/application/supervisorapp"
	"github.com/yukta/yukta/domain/supervisor"
)

// crashSupSession is a chain of a MANUAL trigger, crashSupSteps TRANSFORMs
// and a RESULT: every run makes one ExecutionStarted, one NodeStatusChanged
// per node and one ExecutionStatusChanged.
func crashSupSession() []byte {
	nodes := []string{`{"nodeId":"in","type":"MANUAL"}`}
	var edges []string
	prev := "in"
	for i := range crashSupSteps {
		id := fmt.Sprintf("t%d", i)
		nodes = append(nodes, fmt.Sprintf(`{"nodeId":%q,"type":"TRANSFORM","config":{"expression":"{\"n\": payload.n + 1}"}}`, id))
		edges = append(edges, fmt.Sprintf(`{"source":%q,"target":%q}`, prev, id))
		prev = id
	}
	nodes = append(nodes, `{"nodeId":"out","type":"RESULT"}`)
	edges = append(edges, fmt.Sprintf(`{"source":%q,"target":"out"}`, prev))
	return fmt.Appendf(nil, `{"name":"supervised","workflows":[{"workflowId":"chain","nodes":[%s],"edges":[%s]}]}`,
		strings.Join(nodes, ","), strings.Join(edges, ","))
}

// crashSupRules fires one directive on every event a run makes, one rule per
// event type. ClearBreakpoint changes nothing in the run, and each directive
// leaves exactly one command (applied on a live node, rejected on a finished
// one, both recorded), so the commands count the effects.
var crashSupRules = map[string]string{ // event type -> rule id
	"ExecutionStarted":       "on-start",
	"NodeStatusChanged":      "on-node",
	"ExecutionStatusChanged": "on-status",
}

const crashSupDoc = `{"name":"Crash tally","owns":["session:supcrash"],"allowedCommands":["ClearBreakpoint"],
	"engine":{"type":"rules","settings":{"schemaVersion":1,"rules":[
	{"id":"on-start","when":{"event":"ExecutionStarted"},"then":{"command":"ClearBreakpoint","nodeId":"out"}},
	{"id":"on-node","when":{"event":"NodeStatusChanged"},"then":{"command":"ClearBreakpoint"}},
	{"id":"on-status","when":{"event":"ExecutionStatusChanged"},"then":{"command":"ClearBreakpoint","nodeId":"out"}}]}}}`

const (
	crashSupSteps  = 10   // TRANSFORM nodes: 14 events per run
	crashSupRuns   = 360  // × 14 events: 5,040 events, each firing a rule
	crashSupKillAt = 1500 // settled directives before the kill
	crashSupActor  = "supervisor:tally"
)

// TestSupervisorKill9EveryEventOnceEffect: kill -9 of the server while a
// rules supervisor works through more than 5,000 events, each of which fires
// a rule. After a restart on the same database every event has been handled
// (its directive key rule:<rule>:<cursor> is in the ledger, none is missing, no
// other key exists) and every directive had exactly one effect (one
// command, under its key, on the event's run and node), although the events
// the dead instance had handled after its last saved cursor were handed to
// the engine again. The supervisor's cursor ends at the last event.
//
// The kill is placed by freezing the process (SIGSTOP) once enough
// directives are settled, reading the database, and sending SIGKILL only
// when the freeze caught the engine with directives past its saved cursor
// (they will be redelivered) and work left; otherwise the process goes on
// (SIGCONT) and the next attempt comes a moment later. Frozen then killed,
// the process runs nothing in between: it is a kill -9 at the freeze.
func TestSupervisorKill9EveryEventOnceEffect(t *testing.T) {
	t.Parallel()
	began := time.Now()
	ctx := context.Background()
	dsn := pgtest.NewDatabase(t)
	// A directive per event, far more than a minute's budget: the test is
	// about crashes, not the loop bounds.
	opts := serverOptions{DSN: dsn, Env: []string{"YUKTA_LEASE=2s", "YUKTA_SUPERVISOR_COMMANDS_PER_MINUTE=10000"}}
	s := startServer(t, opts)
	db, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close(ctx)

	if st, b, _ := call(t, s, "PUT", "/api/sessions/supcrash", "", crashSupSession()); st != 201 {
		t.Fatalf("apply the session: %d %s", st, b)
	}
	if st, b, _ := call(t, s, "PUT", "/api/supervisors/tally", "", []byte(crashSupDoc)); st != 201 {
		t.Fatalf("apply the supervisor: %d %s", st, b)
	}
	var appliedSeq int64
	if err := db.QueryRow(ctx, `SELECT max(seq) FROM events WHERE type = 'SupervisorApplied'`).Scan(&appliedSeq); err != nil {
		t.Fatal(err)
	}

	// Start the runs, 16 at a time: the engine runs them far faster than
	// the supervisor's one goroutine sends a directive per event, so its
	// backlog grows to thousands of events.
	ids := make([]string, crashSupRuns)
	var wg sync.WaitGroup
	sem := make(chan struct{}, 16)
	for i := range crashSupRuns {
		wg.Go(func() {
			sem <- struct{}{}
			defer func() { <-sem }()
			key := fmt.Sprintf("run-%d", i)
			res, err := s.Client.StartExecutionWithResponse(ctx, "supcrash", "chain", &apiclient.StartExecutionParams{IdempotencyKey: &key},
				apiclient.StartExecutionJSONRequestBody{Payload: map[string]any{"n": i}})
			if err != nil || res.JSON201 == nil {
				t.Errorf("start %d: %v %v", i, err, res)
				return
			}
			ids[i] = res.JSON201.ExecutionId
		})
	}
	wg.Wait()
	if t.Failed() {
		t.FailNow()
	}
	t.Logf("%d runs started in %s", crashSupRuns, time.Since(began).Round(time.Millisecond))

	// Freeze, look, kill (or thaw and look again).
	var atKill ledgerState
	midBatch := false
	deadline := time.Now().Add(2 * time.Minute) // far more than it takes: only a broken runtime gets there
	for attempt := 1; ; attempt++ {
		for {
			var settled int
			_ = db.QueryRow(ctx, `SELECT count(*) FROM supervisor_directives WHERE supervisor_id = 'tally' AND status <> 'pending'`).Scan(&settled)
			if settled >= crashSupKillAt {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("only %d directives settled within 2 minutes", settled)
			}
			time.Sleep(10 * time.Millisecond)
		}
		if err := s.cmd.Process.Signal(syscall.SIGSTOP); err != nil {
			t.Fatal(err)
		}
		atKill = readLedgerState(t, db)
		midBatch = atKill.pastCursor > 0 && atKill.cursor < atKill.head
		if midBatch || attempt == 20 {
			// After 20 misses the kill goes ahead anyway, so the checks
			// below say what went wrong; the test fails at the end.
			s.Kill()
			t.Logf("kill -9 at attempt %d, %s after the start: %d directives settled, %d pending, %d of them for events past the saved cursor %d; outbox head %d",
				attempt, time.Since(began).Round(time.Millisecond), atKill.settled, atKill.pending, atKill.pastCursor, atKill.cursor, atKill.head)
			break
		}
		if err := s.cmd.Process.Signal(syscall.SIGCONT); err != nil {
			t.Fatal(err)
		}
		time.Sleep(time.Duration(7*attempt) * time.Millisecond)
	}
	// Pending directives whose command was committed already: the
	// restarted instance must settle them without a second one.
	var pendingKeys []string
	rows, err := db.Query(ctx, `SELECT key FROM supervisor_directives WHERE supervisor_id = 'tally' AND status = 'pending'`)
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var k string
		if err := rows.Scan(&k); err != nil {
			t.Fatal(err)
		}
		pendingKeys = append(pendingKeys, supervisorapp.ControlKey("tally", k))
	}
	if rows.Err() != nil {
		t.Fatal(rows.Err())
	}
	var pendingDone int
	if err := db.QueryRow(ctx, `SELECT count(*) FROM commands WHERE actor = $1 AND key = ANY ($2)`, crashSupActor, pendingKeys).Scan(&pendingDone); err != nil {
		t.Fatal(err)
	}
	t.Logf("%d directives pending at the kill, %d of them with their command already committed", len(pendingKeys), pendingDone)

	restarted := time.Now()
	startServer(t, opts)
	caughtUp := waitSupervisorCaughtUp(t, db, 2*time.Minute)
	t.Logf("caught up %s after the restart (cursor %d)", time.Since(restarted).Round(time.Millisecond), caughtUp)

	// Every run succeeded: the directives did not disturb them.
	var runs, succeeded int
	if err := db.QueryRow(ctx, `SELECT count(*), count(*) FILTER (WHERE status = 'SUCCESS' AND execution_id = ANY ($1::uuid[]))
		 FROM executions WHERE session_id = 'supcrash'`, ids).Scan(&runs, &succeeded); err != nil || runs != crashSupRuns || succeeded != runs {
		t.Fatalf("%d runs, %d of the started ones succeeded, want %d (%v)", runs, succeeded, crashSupRuns, err)
	}

	// The events that fire a rule: every event of the runs, except those
	// the supervisor's own commands caused (the engine ignores them).
	type firing struct {
		seq                       int64
		cursor, typ, exec, nodeID string
	}
	want := map[string]firing{} // directive key -> its event
	rows, err = db.Query(ctx, `SELECT xid::text, seq, type, coalesce(execution_id::text, ''), node_id FROM events
		 WHERE session_id = 'supcrash' AND actor <> $1 AND type = ANY ($2)`, crashSupActor, []string{"ExecutionStarted", "NodeStatusChanged", "ExecutionStatusChanged"})
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var f firing
		var xid string
		if err := rows.Scan(&xid, &f.seq, &f.typ, &f.exec, &f.nodeID); err != nil {
			t.Fatal(err)
		}
		x, err := strconv.ParseUint(xid, 10, 64)
		if err != nil {
			t.Fatal(err)
		}
		if f.seq <= appliedSeq {
			t.Fatalf("event %d (%s) precedes the supervisor (%d)", f.seq, f.typ, appliedSeq)
		}
		f.cursor = supervisor.FormatCursor(supervisor.Position{XID: x, Seq: f.seq})
		want[rulesengine.RuleKey(crashSupRules[f.typ], f.cursor)] = f
	}
	if rows.Err() != nil {
		t.Fatal(rows.Err())
	}
	perType := map[string]int{}
	for _, f := range want {
		perType[f.typ]++
	}
	t.Logf("events that fire a rule: %v", perType)
	if len(want) < 5000 {
		t.Fatalf("%d events fired a rule, want at least 5,000", len(want))
	}

	// The ledger: one entry per event, accepted, each with one command.
	type entry struct {
		status    string
		commandID string
		outcomes  int
	}
	got := map[string]entry{}
	rows, err = db.Query(ctx, `SELECT key, status, coalesce(result, 'null') FROM supervisor_directives WHERE supervisor_id = 'tally'`)
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var key, status string
		var result []byte
		if err := rows.Scan(&key, &status, &result); err != nil {
			t.Fatal(err)
		}
		var res struct {
			Outcomes []struct{ CommandId string }
		}
		_ = json.Unmarshal(result, &res)
		e := entry{status: status, outcomes: len(res.Outcomes)}
		if len(res.Outcomes) == 1 {
			e.commandID = res.Outcomes[0].CommandId
		}
		got[key] = e
	}
	if rows.Err() != nil {
		t.Fatal(rows.Err())
	}
	var missing, extra, bad []string
	for k := range want {
		if _, ok := got[k]; !ok {
			missing = append(missing, k)
		}
	}
	for k, e := range got {
		if _, ok := want[k]; !ok {
			extra = append(extra, k)
		}
		if e.status != "accepted" || e.outcomes != 1 || e.commandID == "" {
			bad = append(bad, fmt.Sprintf("%s: %+v", k, e)) // pending: an effect left half-done
		}
	}
	if len(missing)+len(extra)+len(bad) > 0 {
		t.Errorf("ledger of %d entries for %d events: %d events never handled %v; %d keys for no event %v; %d entries not accepted with one command %v",
			len(got), len(want), len(missing), clip(missing), len(extra), clip(extra), len(bad), clip(bad))
	}

	// Per event, whatever the keys: the command events the supervisor's
	// directives wrote name the event they answer (cause, the signal's
	// cursor); each event must have exactly one.
	effects := map[string]int{}
	rows, err = db.Query(ctx, `SELECT coalesce(data->>'cause', ''), count(*) FROM events
		 WHERE session_id = 'supcrash' AND actor = $1 AND type = 'CommandAccepted' GROUP BY 1`, crashSupActor)
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var cause string
		var n int
		if err := rows.Scan(&cause, &n); err != nil {
			t.Fatal(err)
		}
		effects[cause] = n
	}
	if rows.Err() != nil {
		t.Fatal(rows.Err())
	}
	var none, twice []string
	for _, f := range want {
		switch n := effects[f.cursor]; {
		case n == 0:
			none = append(none, fmt.Sprintf("%d (%s)", f.seq, f.typ))
		case n > 1:
			twice = append(twice, fmt.Sprintf("%d (%s): %d", f.seq, f.typ, n))
		}
	}
	if len(none)+len(twice) > 0 {
		t.Errorf("%d events had no effect %v; %d events had more than one %v", len(none), clip(none), len(twice), clip(twice))
	}

	// The effects: exactly one command per directive, under the directive's
	// key, on the event's run and node; no other command by the supervisor.
	type command struct {
		id, key, exec, nodeID, action string
	}
	byID := map[string]command{}
	perKey := map[string]int{}
	rows, err = db.Query(ctx, `SELECT command_id::text, coalesce(key, ''), coalesce(execution_id::text, ''), node_id, action
		 FROM commands WHERE actor = $1`, crashSupActor)
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var c command
		if err := rows.Scan(&c.id, &c.key, &c.exec, &c.nodeID, &c.action); err != nil {
			t.Fatal(err)
		}
		byID[c.id] = c
		perKey[c.key]++
	}
	if rows.Err() != nil {
		t.Fatal(rows.Err())
	}
	if len(byID) != len(want) {
		t.Errorf("%d commands by %s for %d events: every directive must have exactly one effect", len(byID), crashSupActor, len(want))
	}
	var wrong []string
	for k, e := range got {
		f, named := want[k]
		if !named {
			continue // reported above
		}
		c, ok := byID[e.commandID]
		node := f.nodeID
		if node == "" {
			node = "out"
		}
		switch {
		case !ok:
			wrong = append(wrong, k+": its command "+e.commandID+" does not exist")
		case c.key != supervisorapp.ControlKey("tally", k) || perKey[c.key] != 1:
			wrong = append(wrong, fmt.Sprintf("%s: command key %s used %d times", k, c.key, perKey[c.key]))
		case c.exec != f.exec || c.nodeID != node || c.action != "BREAKPOINT_CLEAR":
			wrong = append(wrong, fmt.Sprintf("%s: command %+v, want %s on %s/%s", k, c, "BREAKPOINT_CLEAR", f.exec, node))
		}
	}
	if len(wrong) > 0 {
		t.Errorf("%d directives without exactly one right effect: %v", len(wrong), clip(wrong))
	}
	if t.Failed() {
		t.FailNow()
	}

	// The crash fell in the middle, and the restarted engine was handed
	// events the dead one had already acted on.
	redelivered := atKill.pastCursor
	if atKill.settled == 0 || atKill.settled+atKill.pending >= len(want) {
		t.Fatalf("%d of %d directives were settled at the kill: not in the middle", atKill.settled, len(want))
	}
	if !midBatch || redelivered == 0 {
		t.Fatalf("no kill caught the engine with events handled past its saved cursor (%+v): nothing was redelivered", atKill)
	}
	t.Logf("%d events fired %d directives, each with one command; %d (+%d pending) before the kill, %d after; %d events handled by the dead instance past its saved cursor were redelivered without a second effect; total %s",
		len(want), len(got), atKill.settled, atKill.pending, len(want)-atKill.settled-atKill.pending, redelivered, time.Since(began).Round(time.Millisecond))
}

// ledgerState is the supervisor's progress as the database has it.
type ledgerState struct {
	settled, pending int
	pastCursor       int   // directives for events after the saved cursor in commit order: to be redelivered
	cursor           int64 // the saved cursor
	head             int64 // the newest event of the session
}

func readLedgerState(t *testing.T, db *pgx.Conn) ledgerState {
	t.Helper()
	var s ledgerState
	err := db.QueryRow(context.Background(), `SELECT
		(SELECT count(*) FROM supervisor_directives WHERE supervisor_id = 'tally' AND status <> 'pending'),
		(SELECT count(*) FROM supervisor_directives WHERE supervisor_id = 'tally' AND status = 'pending'),
		(SELECT count(*) FROM supervisor_directives d
		   JOIN events e ON e.seq = (regexp_match(d.key, '^rule:[^:]+:[0-9]+\.([0-9]+)\.'))[1]::bigint
		   JOIN supervisor_cursors cur ON cur.supervisor_id = d.supervisor_id
		  WHERE d.supervisor_id = 'tally' AND (e.xid, e.seq) > (cur.xid, cur.seq)),
		(SELECT coalesce(max(seq), 0) FROM supervisor_cursors WHERE supervisor_id = 'tally'),
		(SELECT coalesce(max(seq), 0) FROM events WHERE session_id = 'supcrash')`).Scan(&s.settled, &s.pending, &s.pastCursor, &s.cursor, &s.head)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// waitSupervisorCaughtUp waits until every run has ended and the
// supervisor's cursor is at the session's last event in commit order, twice
// in a row half a second apart; it returns the cursor. (A directive left
// pending does not hold the wait: the test reports it.)
func waitSupervisorCaughtUp(t *testing.T, db *pgx.Conn, within time.Duration) int64 {
	t.Helper()
	deadline := time.Now().Add(within)
	var prev int64 = -1
	for {
		var open int
		var cursor, last int64
		err := db.QueryRow(context.Background(), `SELECT
			(SELECT count(*) FROM executions WHERE session_id = 'supcrash' AND ended_at IS NULL),
			(SELECT coalesce(max(seq), 0) FROM supervisor_cursors WHERE supervisor_id = 'tally'),
			(SELECT seq FROM events WHERE session_id = 'supcrash' ORDER BY xid DESC, seq DESC LIMIT 1)`).Scan(&open, &cursor, &last)
		if err != nil {
			t.Fatal(err)
		}
		if open == 0 && cursor == last {
			if cursor == prev {
				return cursor
			}
			prev = cursor
		} else {
			prev = -1
		}
		if time.Now().After(deadline) {
			s := readLedgerState(t, db)
			t.Fatalf("the supervisor did not catch up: %d runs open, cursor %d, last event %d (%+v)", open, cursor, last, s)
		}
		time.Sleep(500 * time.Millisecond)
	}
}

// clip keeps the first few items of a long list for a message.
func clip(s []string) string {
	if len(s) > 5 {
		return strings.Join(s[:5], ", ") + " … (" + strconv.Itoa(len(s)-5) + " more)"
	}
	return strings.Join(s, ", ")
}
