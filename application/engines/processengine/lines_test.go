package processengine_test

import (
	"strings"
	"testing"
	"time"

	"github.com/yukta/yukta/application/engines/processengine"
	"github.com/yukta/yukta/application/supervisorapp"
	"github.com/yukta/yukta/domain/supervisor"
)

// TestProcessEngineCommandLine: a command line is a directive sent through
// the intake under the engine's lease.
func TestProcessEngineCommandLine(t *testing.T) {
	t.Parallel()
	e := newProcEnv(t, processengine.Limits{})
	p := e.spawner.next(t)
	p.sayText(t, `{"type":"command","key":"pause-12","cause":"12","reason":"three failures","command":{"type":"PauseWorkflow","executionId":"e1"}}`)
	var in supervisorapp.SubmitInput
	select {
	case in = <-e.rec.directives:
	case <-time.After(5 * time.Second):
		t.Fatal("no directive reached the intake")
	}
	d := in.Directive
	if in.SupervisorID != "proc" || in.Channel != supervisorapp.ChannelSupervisor || in.Fence == nil || *in.Fence != e.fence {
		t.Errorf("sent by %q over %q with fence %v; want proc over %q with %v", in.SupervisorID, in.Channel, in.Fence, supervisorapp.ChannelSupervisor, e.fence)
	}
	if d.Key() != "pause-12" || d.Cause() != "12" || d.Reason() != "three failures" || d.Command().Type() != supervisor.PauseWorkflow ||
		d.Command().Target().String() != "execution:e1" {
		t.Errorf("directive %s %s %s %s %s; want pause-12, cause 12, the reason, PauseWorkflow on execution:e1",
			d.Key(), d.Cause(), d.Reason(), d.Command().Type(), d.Command().Target())
	}
}

// TestProcessEngineVerdictLines: verdict and noOpinion answer the review
// named by answers, under the engine's lease.
func TestProcessEngineVerdictLines(t *testing.T) {
	t.Parallel()
	e := newProcEnv(t, processengine.Limits{})
	p := e.spawner.next(t)
	p.sayText(t, `{"type":"verdict","answers":"r1","verdict":"DENY","reason":"not on Fridays"}`)
	p.sayText(t, `{"type":"verdict","answers":"r2","verdict":"require_approval"}`)
	p.sayText(t, `{"type":"noOpinion","answers":"r3"}`)
	want := []struct {
		review   string
		decision supervisor.Decision
		reason   string
	}{{"r1", supervisor.Deny, "not on Fridays"}, {"r2", supervisor.RequireApproval, ""}, {"r3", supervisor.NoOpinion, ""}}
	for _, w := range want {
		select {
		case in := <-e.rec.answers:
			if in.ReviewID != w.review || in.SupervisorID != "proc" || in.Verdict.Decision() != w.decision || in.Verdict.Reason() != w.reason ||
				in.Fence == nil || *in.Fence != e.fence {
				t.Errorf("answer %+v (verdict %s %q); want review %s %s %q by proc with fence %v", in, in.Verdict.Decision(), in.Verdict.Reason(),
					w.review, w.decision, w.reason, e.fence)
			}
		case <-time.After(5 * time.Second):
			t.Fatalf("no answer for %s", w.review)
		}
	}
}

// TestProcessEngineDropsJunk: every line the contract does not know is
// dropped with its reason, nothing reaches the server, and the engine goes
// on with the next line.
func TestProcessEngineDropsJunk(t *testing.T) {
	t.Parallel()
	e := newProcEnv(t, processengine.Limits{})
	p := e.spawner.next(t)
	tests := []struct {
		line   string
		reason string
		words  string
	}{
		{"thinking...", processengine.DropNotJSON, "not a JSON object"},
		{"", processengine.DropNotJSON, "not a JSON object"},
		{`[1,2]`, processengine.DropNotJSON, "not a JSON object"},
		{`null`, processengine.DropNotJSON, "not a JSON object"},
		{`{"key":"k"}`, processengine.DropUnknownType, `no "type"`},
		{`{"type":7}`, processengine.DropUnknownType, `no "type"`},
		{`{"type":"dance"}`, processengine.DropUnknownType, `type "dance"; use one of command, verdict`},
		{`{"type":"command","key":"k"}`, processengine.DropInvalid, "command"},
		{`{"type":"command","key":"k","command":{"type":"PauseWorkflw","executionId":"e1"}}`, processengine.DropInvalid, "PauseWorkflw"},
		{`{"type":"command","key":"k","command":{"type":"PauseWorkflow","executionId":"e1"},"colour":"red"}`, processengine.DropInvalid, "colour"},
		{`{"type":"verdict","verdict":"ALLOW"}`, processengine.DropInvalid, "answers is required"},
		{`{"type":"verdict","answers":"r1","verdict":"MAYBE"}`, processengine.DropInvalid, `"MAYBE" is not a verdict`},
		{`{"type":"verdict","answers":"r1","verdict":"DENY"}`, processengine.DropInvalid, "reason: is required with DENY"},
		{`{"type":"verdict","answers":"r1","verdict":"NO_OPINION"}`, processengine.DropInvalid, "noOpinion"},
		{`{"type":"verdict","answers":"r1","verdict":"ALLOW","extra":1}`, processengine.DropInvalid, `"extra" is not a member`},
		{`{"type":"noOpinion","answers":"r1","verdict":"ALLOW"}`, processengine.DropInvalid, `"verdict" is not a member of a noOpinion line`},
		{`{"type":"noOpinion","answers":5}`, processengine.DropInvalid, "strings"},
		{`{"type":"verdict","answers":"` + strings.Repeat("r", 129) + `","verdict":"ALLOW"}`, processengine.DropInvalid, "longer than 128"},
		{`{"type":"delegationAnswer","answers":"d1","answer":{}}`, processengine.DropNotBuilt, "delegations are not wired"},
		{`{"type":"delegate","kind":"CONSULT","key":"k","payload":{}}`, processengine.DropNotBuilt, "delegations are not wired"},
	}
	for _, tt := range tests {
		p.sayText(t, tt.line)
		d := e.nextDrop(t)
		if d.reason != tt.reason || d.err == nil || !strings.Contains(d.err.Error(), tt.words) {
			t.Errorf("line %.60q: dropped as %s (%v); want %s saying %q", tt.line, d.reason, d.err, tt.reason, tt.words)
		}
	}
	p.say(t, processengine.OutputLine{TooLong: true})
	if d := e.nextDrop(t); d.reason != processengine.DropTooLong || !strings.Contains(d.err.Error(), "longer than 65536 bytes") {
		t.Errorf("an overlong line: dropped as %s (%v); want %s", d.reason, d.err, processengine.DropTooLong)
	}
	// The engine goes on.
	p.sayText(t, `{"type":"noOpinion","answers":"r9"}`)
	select {
	case in := <-e.rec.answers:
		if in.ReviewID != "r9" {
			t.Errorf("answered %s, want r9", in.ReviewID)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("a valid line after the junk was not handled")
	}
	if n := len(e.rec.directives) + len(e.rec.answers); n != 0 {
		t.Errorf("%d junk lines reached the server", n)
	}
	if n := len(e.drops); n != 0 {
		t.Errorf("%d more drops than lines", n)
	}
}
