package processengine_test

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/yukta/yukta/application/engines/processengine"
	"github.com/yukta/yukta/application/supervisorapp"
)

// reportEnv is a process engine over the fakes whose reports are
// recorded and whose per-line drops are only counted.
func reportEnv(t *testing.T, every time.Duration, opts ...func(*processengine.Deps)) (*procEnv, chan processengine.DropReport, *atomic.Int64) {
	t.Helper()
	reports := make(chan processengine.DropReport, 100)
	var dropped atomic.Int64
	e := newProcEnv(t, processengine.Limits{ReportEvery: every}, append([]func(*processengine.Deps){func(d *processengine.Deps) {
		d.OnDropped = func(string, string, error) { dropped.Add(1) }
		d.OnReport = func(id string, r processengine.DropReport) {
			if id != "proc" {
				t.Errorf("report for %s, want proc", id)
			}
			reports <- r
		}
	}}, opts...)...)
	return e, reports, &dropped
}

func nextReport(t *testing.T, reports chan processengine.DropReport) processengine.DropReport {
	t.Helper()
	select {
	case r := <-reports:
		return r
	case <-time.After(10 * time.Second):
		t.Fatal("no report within 10s")
		return processengine.DropReport{}
	}
}

// Hole 6 of issue 21: the first dropped line of a quiet spell is reported
// at once; every line after it within the period goes into one summary,
// which names the first of them; OnDropped hears each line.
func TestProcessEngineSumsUpDroppedLines(t *testing.T) {
	t.Parallel()
	e, reports, dropped := reportEnv(t, time.Hour)
	p := e.spawner.next(t)
	p.sayText(t, "hello")
	r := nextReport(t, reports)
	if r.Lines != 1 || r.Period != 0 || r.Reasons[processengine.DropNotJSON] != 1 || !strings.Contains(r.First, `"hello"`) {
		t.Fatalf("first report %+v, want the one line at once", r)
	}
	if m := r.Message("proc"); !strings.HasPrefix(m, "process supervisor proc: dropped an output line") || !strings.Contains(m, "next 1h0m0s") {
		t.Errorf("first message %q", m)
	}
	const n = 500
	for i := range n {
		if i == 0 {
			p.sayText(t, `{"type":"dance"}`)
			continue
		}
		p.sayText(t, "chatter")
	}
	p.sayText(t, `{"type":"noOpinion","answers":"r1"}`) // handled, not dropped: the lines before it were read
	<-e.rec.answers
	select {
	case r := <-reports:
		t.Fatalf("a report within the period: %+v", r)
	default:
	}
	if err := e.eng.Close(); err != nil {
		t.Fatal(err)
	}
	r = nextReport(t, reports)
	if r.Lines != n || r.Reasons[processengine.DropUnknownType] != 1 || r.Reasons[processengine.DropNotJSON] != n-1 || r.Period <= 0 ||
		!strings.Contains(r.First, `"dance"`) {
		t.Errorf("summary at Close %+v, want %d lines, the first the unknown type", r, n)
	}
	if m := r.Message("proc"); !strings.Contains(m, "dropped 500 output lines") || !strings.Contains(m, "notJson 499, unknownType 1") {
		t.Errorf("summary message %q", m)
	}
	if got := dropped.Load(); got != n+1 {
		t.Errorf("OnDropped heard %d lines, want %d", got, n+1)
	}
	if len(reports) != 0 {
		t.Errorf("%d more reports", len(reports))
	}
}

// Each period with drops ends in a summary; a period without drops ends
// the periods, and the next drop is reported at once again.
func TestProcessEngineReportsEachPeriod(t *testing.T) {
	t.Parallel()
	e, reports, _ := reportEnv(t, 50*time.Millisecond)
	p := e.spawner.next(t)
	p.sayText(t, "one")
	if r := nextReport(t, reports); r.Lines != 1 || r.Period != 0 {
		t.Fatalf("first report %+v", r)
	}
	p.sayText(t, "two")
	p.sayText(t, "three")
	if r := nextReport(t, reports); r.Lines != 2 || r.Period <= 0 || !strings.Contains(r.First, `"two"`) {
		t.Fatalf("summary %+v, want two lines from two", r)
	}
	// Quiet: the period ends without a report; the next line is
	// reported at once.
	time.Sleep(200 * time.Millisecond)
	p.sayText(t, "four")
	if r := nextReport(t, reports); r.Lines != 1 || r.Period != 0 || !strings.Contains(r.First, `"four"`) {
		t.Fatalf("after a quiet period %+v, want four at once", r)
	}
}

// The sample in a report is safe to log: control characters escaped,
// credential-shaped text masked, at most 200 bytes.
func TestProcessEngineReportSampleIsSafe(t *testing.T) {
	t.Parallel()
	e, reports, _ := reportEnv(t, time.Hour)
	p := e.spawner.next(t)
	p.sayText(t, "\x1b[31mred\u202e token=hunter2-secret Authorization: Bearer abcdefghijkl yks_ABCDEFGHIJKLMNOP "+strings.Repeat("x", 500))
	r := nextReport(t, reports)
	for _, bad := range []string{"\x1b", "\u202e", "hunter2", "abcdefghijkl", "ABCDEFGHIJKLMNOP"} {
		if strings.Contains(r.First, bad) {
			t.Errorf("sample %q holds %q", r.First, bad)
		}
	}
	if len(r.First) > 204 || !strings.Contains(r.First, "…") {
		t.Errorf("sample of %d bytes %q, want at most 200 and the cut shown", len(r.First), r.First)
	}
}

// Lines the server does not take (the intake refuses the directive) are
// counted as refused, not logged one by one.
func TestProcessEngineCountsRefusedLines(t *testing.T) {
	t.Parallel()
	e, reports, dropped := reportEnv(t, time.Hour, func(d *processengine.Deps) {
		d.Submit = procSubmitFunc(func(context.Context, supervisorapp.SubmitInput) (supervisorapp.DirectiveResult, error) {
			return supervisorapp.DirectiveResult{}, errors.New("execution e1 is not owned by supervisor proc")
		})
	})
	p := e.spawner.next(t)
	for range 3 {
		p.sayText(t, `{"type":"command","key":"k","command":{"type":"PauseWorkflow","executionId":"e1"}}`)
	}
	p.sayText(t, `{"type":"noOpinion","answers":"r1"}`) // the lines before it were handled
	<-e.rec.answers
	r := nextReport(t, reports)
	if r.Reasons[processengine.DropRefused] != 1 || !strings.Contains(r.First, "not owned") {
		t.Fatalf("report %+v, want the refusal", r)
	}
	if err := e.eng.Close(); err != nil {
		t.Fatal(err)
	}
	if r := nextReport(t, reports); r.Lines != 2 || r.Reasons[processengine.DropRefused] != 2 {
		t.Errorf("summary %+v, want the other 2 refusals", r)
	}
	if dropped.Load() != 3 || len(e.errs) != 0 {
		t.Errorf("OnDropped heard %d, OnError %d; want 3 and 0", dropped.Load(), len(e.errs))
	}
}
