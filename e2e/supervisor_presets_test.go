package e2e

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/yukta/yukta/adapters/postgres/pgtest"
)

// stallSession: "stuck" parks each run on a 10-minute DELAY timer and "ask"
// on an input nobody answers (nothing changes status meanwhile, so
// lastProgressAt stays at the start); "steady" passes through six 15-second
// DELAY nodes, so a node changes status every 15 s for 90 s.
const stallSession = `{"name":"stall","workflows":[
	{"workflowId":"stuck","nodes":[
		{"nodeId":"in","type":"MANUAL"},
		{"nodeId":"nap","type":"DELAY","config":{"duration":"10m"}},
		{"nodeId":"out","type":"RESULT"}],
	 "edges":[{"source":"in","target":"nap"},{"source":"nap","target":"out"}]},
	{"workflowId":"ask","nodes":[
		{"nodeId":"in","type":"MANUAL"},
		{"nodeId":"approve","type":"INPUT_REQUEST","config":{"prompt":"Nobody will answer this","mode":"approval"}},
		{"nodeId":"out","type":"RESULT"}],
	 "edges":[{"source":"in","target":"approve"},{"source":"approve","sourcePort":"approved","target":"out"}]},
	{"workflowId":"steady","nodes":[
		{"nodeId":"in","type":"MANUAL"},
		{"nodeId":"d1","type":"DELAY","config":{"duration":"15s"}},
		{"nodeId":"d2","type":"DELAY","config":{"duration":"15s"}},
		{"nodeId":"d3","type":"DELAY","config":{"duration":"15s"}},
		{"nodeId":"d4","type":"DELAY","config":{"duration":"15s"}},
		{"nodeId":"d5","type":"DELAY","config":{"duration":"15s"}},
		{"nodeId":"d6","type":"DELAY","config":{"duration":"15s"}},
		{"nodeId":"out","type":"RESULT"}],
	 "edges":[{"source":"in","target":"d1"},{"source":"d1","target":"d2"},{"source":"d2","target":"d3"},
		{"source":"d3","target":"d4"},{"source":"d4","target":"d5"},{"source":"d5","target":"d6"},{"source":"d6","target":"out"}]}]}`

// TestStallWatchdogPresetOnTheRealServer: the stall-watchdog preset, taken
// from the catalogue with minutes=1 (its minimum) and applied with
// tickSeconds 5, stops the RUNNING runs that made no progress for a minute
// (one on a long DELAY timer, one WAITING for an input) as
// supervisor:watchdog, with the preset's reason, a tick as cause and the
// preset's default mode, and never before 60 s without progress. A run of
// the same age whose nodes keep progressing is left alone and succeeds, and
// so is a paused run that stands still (the rule filters on RUNNING).
func TestStallWatchdogPresetOnTheRealServer(t *testing.T) {
	t.Parallel()
	s := startServer(t, serverOptions{DSN: pgtest.NewDatabase(t)})

	// The preset as the catalogue serves it, at its defaults.
	st, b, _ := call(t, s, "GET", "/api/supervisor-engines/rules/presets", "", nil)
	var list struct {
		Presets []struct {
			Name       string
			Needs      string
			Settings   map[string]any
			Parameters []struct {
				Name, Default string
				Minimum       int64
			}
		}
	}
	if st != 200 || json.Unmarshal(b, &list) != nil {
		t.Fatalf("presets: %d %s", st, b)
	}
	var settings map[string]any
	for _, p := range list.Presets {
		if p.Name != "stall-watchdog" {
			continue
		}
		settings = p.Settings
		if !strings.Contains(p.Needs, "tickSeconds") {
			t.Fatalf("stall-watchdog needs %q; want tickSeconds named", p.Needs)
		}
		var minutes, mode bool
		for _, prm := range p.Parameters {
			minutes = minutes || prm.Name == "minutes" && prm.Default == "10" && prm.Minimum == 1
			mode = mode || prm.Name == "mode" && prm.Default == "CANCEL"
		}
		if !minutes || !mode {
			t.Fatalf("stall-watchdog parameters: %+v; want minutes (default 10, minimum 1) and mode (default CANCEL)", p.Parameters)
		}
	}
	if settings == nil {
		t.Fatalf("no stall-watchdog preset in %s", b)
	}
	// PUT /api/supervisors takes a rule document, not a preset name with
	// parameters (InstantiatePreset backs only the dry run), so the
	// parameter is filled in the served document: minutes appears in the
	// condition's duration and in the reason, exactly as the template
	// writes them.
	raw, _ := json.Marshal(settings)
	var rules struct {
		Rules []struct {
			When struct{ If string }
			Then struct{ Reason string }
		}
	}
	if json.Unmarshal(raw, &rules) != nil || len(rules.Rules) != 1 || strings.Count(rules.Rules[0].When.If, "duration('10m')") != 1 ||
		rules.Rules[0].Then.Reason != "no progress for 10 minutes" {
		t.Fatalf("the served stall-watchdog document is not the template at minutes=10: %s", raw)
	}
	const reason = "no progress for 1 minutes" // the template's fmt.Sprintf("no progress for %d minutes", minutes)
	rule := settings["rules"].([]any)[0].(map[string]any)
	rule["when"].(map[string]any)["if"] = strings.Replace(rules.Rules[0].When.If, "duration('10m')", "duration('1m')", 1)
	rule["then"].(map[string]any)["reason"] = reason

	if st, b, _ := call(t, s, "PUT", "/api/sessions/stall", "", []byte(stallSession)); st != 201 {
		t.Fatalf("apply session: %d %s", st, b)
	}
	doc, _ := json.Marshal(map[string]any{"name": "Stall watchdog preset", "engine": map[string]any{"type": "rules", "settings": settings},
		"owns": []string{"session:stall"}, "tickSeconds": 5})
	if st, b, _ := call(t, s, "PUT", "/api/supervisors/watchdog", "", doc); st != 201 {
		t.Fatalf("apply supervisor: %d %s", st, b)
	}

	type node struct {
		NodeId, Status     string
		StartedAt, EndedAt *time.Time
	}
	type run struct {
		Status    string
		StartedAt time.Time
		Nodes     []node
	}
	get := func(id string) run {
		st, b, _ := call(t, s, "GET", "/api/sessions/stall/executions/"+id, "", nil)
		var r run
		if st != 200 || json.Unmarshal(b, &r) != nil {
			t.Fatalf("get %s: %d %s", id, st, b)
		}
		return r
	}
	start := func(wf string) string {
		st, b, _ := call(t, s, "POST", "/api/sessions/stall/workflows/"+wf+"/executions", "", []byte(`{"payload":{}}`))
		var out struct{ ExecutionId string }
		if st != 201 || json.Unmarshal(b, &out) != nil {
			t.Fatalf("start %s: %d %s", wf, st, b)
		}
		return out.ExecutionId
	}
	began := time.Now()
	stuck, asking, steady, paused := start("stuck"), start("ask"), start("steady"), start("stuck")
	if st, b, _ := call(t, s, "POST", "/api/sessions/stall/executions/"+paused+"/control", "", []byte(`{"action":"PAUSE"}`)); st != 200 {
		t.Fatalf("pause: %d %s", st, b)
	}
	stalled := map[string]string{stuck: "nap", asking: "approve"}
	// Each stalled run reaches its parking node and stays RUNNING.
	poll(t, 30*time.Second, "stalled runs parked", func() bool {
		for id, nid := range stalled {
			r := get(id)
			if r.Status != "RUNNING" {
				t.Fatalf("%s is %s before any stall", id, r.Status)
			}
			for _, n := range r.Nodes {
				if n.NodeId == nid && n.StartedAt == nil {
					return false
				}
			}
		}
		return true
	})
	parkedAfter := time.Since(began)
	if r := get(paused); r.Status != "PAUSED" {
		t.Fatalf("paused run is %s", r.Status)
	}

	// Wait for the watchdog. Meanwhile the stalled runs may not end early,
	// and when they are stopped the control must still be RUNNING (it is
	// as old as they are: only its progress spares it).
	stoppedAfter := map[string]time.Duration{}
	for len(stoppedAfter) < len(stalled) {
		if time.Since(began) > 3*time.Minute {
			t.Fatalf("the watchdog stopped %d of %d stalled runs within 3 minutes", len(stoppedAfter), len(stalled))
		}
		for id := range stalled {
			if _, done := stoppedAfter[id]; done {
				continue
			}
			switch r := get(id); r.Status {
			case "RUNNING":
			case "STOPPED":
				stoppedAfter[id] = time.Since(began)
				if c := get(steady).Status; c != "RUNNING" {
					t.Fatalf("the control run is %s when the stalled run %s is stopped; want RUNNING", c, id)
				}
			default:
				t.Fatalf("stalled run %s is %s after %s; want RUNNING, then STOPPED", id, r.Status, time.Since(began))
			}
		}
		time.Sleep(250 * time.Millisecond)
	}

	for id, nid := range stalled {
		// The STOP is journaled (behind the commit) as a decision of
		// supervisor:watchdog.
		var recs []journalRec
		poll(t, 30*time.Second, "the STOP of "+id+" journaled", func() bool {
			recs = journalOf(t, s, "stall", id)
			for _, r := range recs {
				if r.Decision != nil && r.Decision.Type == "CommandApplied" && r.Decision.Actor == "supervisor:watchdog" {
					return true
				}
			}
			return false
		})
		var accepted *journalEntry
		var stopAt time.Time
		for _, r := range recs {
			switch e := r.entry(); {
			case r.Decision != nil && e.Type == "CommandAccepted":
				if accepted != nil {
					t.Fatalf("%s: more than one command: %+v and %+v", id, *accepted, *e)
				}
				accepted = e
			case e.Type == "ExecutionStatusChanged" && e.Data["to"] == "STOPPED":
				stopAt = e.At
				if e.Actor != "supervisor:watchdog" {
					t.Fatalf("%s was stopped by %s, want supervisor:watchdog", id, e.Actor)
				}
			}
		}
		if accepted == nil || stopAt.IsZero() {
			t.Fatalf("%s: no STOP command or no STOPPED in its journal: %+v", id, recs)
		}
		if accepted.Actor != "supervisor:watchdog" || accepted.Channel != "supervisor" || accepted.Data["action"] != "STOP" ||
			accepted.Data["mode"] != "CANCEL" || accepted.Data["reason"] != reason || !strings.HasPrefix(str(accepted.Data["cause"]), "tick:") {
			t.Fatalf("%s: the STOP is %+v; want action STOP, mode CANCEL, reason %q, cause tick:… by supervisor:watchdog on channel supervisor",
				id, *accepted, reason)
		}
		if accepted.At.Before(stopAt) {
			stopAt = accepted.At
		}
		// Its last progress: the newest start or end of the run and its
		// nodes before the stop (the stop's own changes carry its time),
		// and the engine's node events before it.
		r := get(id)
		if r.Status != "STOPPED" {
			t.Fatalf("%s is %s after the stop", id, r.Status)
		}
		last := r.StartedAt
		later := func(at *time.Time) {
			if at != nil && at.Before(stopAt) && at.After(last) {
				last = *at
			}
		}
		for _, n := range r.Nodes {
			later(n.StartedAt)
			later(n.EndedAt)
			if n.NodeId == nid && n.Status != "STOPPED" {
				t.Fatalf("%s: %s is %s after the stop, want STOPPED", id, nid, n.Status)
			}
		}
		for _, rec := range recs {
			if e := rec.entry(); e.Type == "NodeStatusChanged" && e.Actor == "engine" {
				later(&e.At)
			}
		}
		if idle := stopAt.Sub(last); idle < time.Minute {
			t.Fatalf("%s was stopped after %s without progress (last progress %s, stop %s); the preset waits 1 minute", id, idle, last, stopAt)
		} else {
			t.Logf("%s (stalled at %s): last progress %s, stopped %s later by supervisor:watchdog; the test saw it STOPPED %s after the start",
				id, nid, last.Format(time.RFC3339Nano), idle, stoppedAfter[id].Round(time.Millisecond))
		}
	}

	// The control finishes on its own, with no command from the watchdog;
	// the paused run stands still and stays PAUSED.
	poll(t, 90*time.Second, "the control run finished", func() bool { return get(steady).Status != "RUNNING" })
	if st := get(steady).Status; st != "SUCCESS" {
		t.Fatalf("the control run ended %s, want SUCCESS", st)
	}
	if st := get(paused).Status; st != "PAUSED" {
		t.Fatalf("the paused run is %s after %s standing still, want PAUSED", st, time.Since(began))
	}
	for _, id := range []string{steady, paused} {
		for _, r := range journalOf(t, s, "stall", id) {
			if e := r.entry(); e.Actor == "supervisor:watchdog" {
				t.Fatalf("the watchdog touched %s: %+v", id, *e)
			}
		}
	}
	t.Logf("stalled runs parked %s after the start; the control succeeded %s after the start; the paused run is still PAUSED",
		parkedAfter.Round(time.Millisecond), time.Since(began).Round(time.Millisecond))
}

// journalEntry is the event or decision of a journal record.
type journalEntry struct {
	Type, Actor, Channel string
	At                   time.Time
	Data                 map[string]any
}

// journalRec is one record of a journal export (the checkpoint line has
// neither).
type journalRec struct {
	Event, Decision *journalEntry
}

func (r journalRec) entry() *journalEntry {
	if r.Decision != nil {
		return r.Decision
	}
	if r.Event != nil {
		return r.Event
	}
	return &journalEntry{}
}

// journalOf reads an execution's journal export.
func journalOf(t *testing.T, s *server, session, id string) []journalRec {
	t.Helper()
	st, b, _ := call(t, s, "GET", "/api/sessions/"+session+"/executions/"+id+"/journal", "", nil)
	if st != 200 {
		t.Fatalf("journal of %s: %d %s", id, st, b)
	}
	var out []journalRec
	for line := range bytes.Lines(b) {
		var r journalRec
		if err := json.Unmarshal(line, &r); err != nil {
			t.Fatalf("journal line %s: %v", line, err)
		}
		if r.Event != nil || r.Decision != nil {
			out = append(out, r)
		}
	}
	return out
}
