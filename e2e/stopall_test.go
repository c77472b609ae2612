package e2e

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/yukta/yukta/adapters/mcpserver"
	"github.com/yukta/yukta/api/apiclient"
	"github.com/yukta/yukta/domain/journal"
)

// TestStopAllReturnsIdsAndJournalsDecisions: STOP_ALL, over REST and over
// MCP control_workflow, in DRAIN and KILL mode, answers with exactly the ids
// of the executions it stopped (or is draining) — not a run of another
// workflow — and every one of them has the command in its journal as a
// decision with the actor, the channel and the STOP_ALL as its cause; the
// journals verify.
func TestStopAllReturnsIdsAndJournalsDecisions(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	const sid = "sa"
	cases := []struct {
		wid, via, mode, delay, channel string
	}{
		{"rest-kill", "rest", "KILL", "30s", "rest"},
		{"rest-drain", "rest", "DRAIN", "5s", "rest"},
		{"mcp-kill", "mcp", "KILL", "30s", "mcp"},
		{"mcp-drain", "mcp", "DRAIN", "5s", "mcp"},
	}
	docs := []string{heldFlow("bystander", "30s")}
	for _, c := range cases {
		docs = append(docs, heldFlow(c.wid, c.delay))
	}
	e.apply(sid, docs...)
	bystander := e.startHeld(sid, "bystander", map[string]any{"n": 0})
	cs := mustConnect(t, e.s.URL, "")

	type stopped struct {
		id, commandID, channel, reason string
	}
	var all []stopped
	for _, c := range cases {
		var runs []string
		for i := range 3 {
			runs = append(runs, e.startHeld(sid, c.wid, map[string]any{"n": i}))
		}
		reason := "stop-all " + c.wid
		var commandID string
		var got []string
		switch c.via {
		case "rest":
			res, err := e.c.StopWorkflowWithResponse(e.ctx, sid, c.wid, nil, apiclient.StopAllRequest{
				Mode: ptr(apiclient.StopAllRequestMode(c.mode)), Reason: ptr(reason)})
			if err != nil || res.JSON200 == nil {
				t.Fatalf("%s: STOP_ALL: %v %d %s", c.wid, err, res.StatusCode(), res.Body)
			}
			commandID, got = res.JSON200.CommandId, res.JSON200.ResultExecutionIds
			if res.JSON200.Status != apiclient.CommandResultStatus("applied") {
				t.Errorf("%s: status %s, want applied", c.wid, res.JSON200.Status)
			}
		case "mcp":
			var out mcpserver.CommandOut
			mustCall(t, cs, "control_workflow", map[string]any{"sessionId": sid, "workflowId": c.wid, "action": "STOP_ALL",
				"mode": c.mode, "reason": reason}, &out)
			commandID, got = out.CommandID, out.ResultExecutionIDs
		}
		if !sameIDs(got, runs) {
			t.Errorf("%s: STOP_ALL %s over %s returned resultExecutionIds %v, want exactly %v", c.wid, c.mode, c.via, got, runs)
		}
		for _, id := range runs {
			all = append(all, stopped{id: id, commandID: commandID, channel: c.channel, reason: reason})
		}
	}
	if x := e.get(sid, bystander); x.Status != apiclient.ExecutionStatusRUNNING {
		t.Errorf("the other workflow's run is %s: STOP_ALL reached it", x.Status)
	}

	for _, s := range all {
		x := e.waitExec(sid, s.id, "the end", func(x apiclient.Execution) bool { return x.EndedAt != nil })
		if x.Status != apiclient.ExecutionStatusSTOPPED {
			t.Errorf("run %s is %s, want STOPPED", s.id, x.Status)
		}
	}
	for _, s := range all {
		if v := e.verifyJournalIn(sid, s.id); v.Result != apiclient.VALID || v.LagEvents != 0 {
			t.Errorf("journal of %s: %+v, want VALID with no lag", s.id, v)
			continue
		}
		decisions := e.stopAllDecisions(sid, s.id, s.commandID)
		if len(decisions) == 0 {
			t.Errorf("journal of %s holds no decision record of STOP_ALL %s", s.id, s.commandID)
			continue
		}
		for _, d := range decisions {
			cause, _ := d["cause"].(map[string]any)
			if d["actor"] == "" || d["actor"] == nil || d["channel"] != s.channel || d["executionId"] != s.id ||
				cause["commandId"] != s.commandID || cause["action"] != nil && cause["action"] != "STOP_ALL" {
				t.Errorf("decision in the journal of %s: %v, want actor, channel %s and the STOP_ALL %s as cause", s.id, d, s.channel, s.commandID)
			}
			if d["type"] == "CommandAccepted" && (cause["action"] != "STOP_ALL" || cause["reason"] != s.reason) {
				t.Errorf("CommandAccepted in the journal of %s: cause %v, want action STOP_ALL with reason %q", s.id, cause, s.reason)
			}
		}
	}
	// The bystander's journal names no STOP_ALL.
	for _, s := range all {
		if d := e.stopAllDecisions(sid, bystander, s.commandID); len(d) > 0 {
			t.Errorf("the other workflow's journal holds STOP_ALL %s: %v", s.commandID, d)
		}
	}
}

// sameIDs says whether got holds exactly the ids of want, in any order.
func sameIDs(got, want []string) bool {
	a, b := slices.Clone(got), slices.Clone(want)
	slices.Sort(a)
	slices.Sort(b)
	return slices.Equal(a, b)
}

// verifyJournalIn waits until the journal of an execution is VALID with no
// lag (or the wait ends) and returns the verification.
func (e *env) verifyJournalIn(sid, id string) apiclient.JournalVerification {
	e.t.Helper()
	deadline := time.Now().Add(waitLimit)
	for {
		r, err := e.c.VerifyJournalWithResponse(e.ctx, sid, id)
		if err != nil || r.JSON200 == nil {
			e.t.Fatalf("verify %s: %v %v", id, err, r)
		}
		if (r.JSON200.Result == apiclient.VALID && r.JSON200.LagEvents == 0) || time.Now().After(deadline) {
			return *r.JSON200
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// stopAllDecisions exports an execution's journal and returns its decision
// records caused by the command commandID.
func (e *env) stopAllDecisions(sid, id, commandID string) []map[string]any {
	e.t.Helper()
	var out []map[string]any
	for _, rec := range e.journalRecords(sid, id) {
		if rec.Kind != journal.KindDecision {
			continue
		}
		if cause, _ := rec.Decision["cause"].(map[string]any); fmt.Sprint(cause["commandId"]) == commandID {
			out = append(out, rec.Decision)
		}
	}
	return out
}

// journalRecords exports an execution's journal and returns its records.
func (e *env) journalRecords(sid, id string) []journal.Record {
	e.t.Helper()
	r, err := e.c.ExportJournalWithResponse(e.ctx, sid, id)
	if err != nil || r.StatusCode() != 200 {
		e.t.Fatalf("export journal of %s: %v %v", id, err, r)
	}
	var out []journal.Record
	for l := range strings.Lines(string(r.Body)) {
		l = strings.TrimSpace(l)
		if l == "" || strings.HasPrefix(l, `{"checkpoint"`) {
			continue
		}
		rec, err := journal.ParseRecord([]byte(l))
		if err != nil {
			e.t.Fatalf("journal of %s: %v\n%s", id, err, l)
		}
		out = append(out, rec)
	}
	return out
}
