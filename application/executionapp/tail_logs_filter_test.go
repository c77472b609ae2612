package executionapp_test

import (
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/yukta/yukta/application/executionapp"
	"github.com/yukta/yukta/domain/fault"
)

// The definition of the log readers below: one FAIL node, no secrets.
var failDef = []byte(`{"nodes":[{"nodeId":"compile","type":"FAIL","config":{}}],"edges":[]}`)

var logT0 = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

// tailOver returns the use case over lines (oldest first, numbered from 1).
func tailOver(lines []executionapp.LogEntry, now func() time.Time) *executionapp.TailLogs {
	for i := range lines {
		lines[i].Seq = int64(i + 1)
		lines[i].ExecutionID = "e1"
		if lines[i].At.IsZero() {
			lines[i].At = logT0.Add(time.Duration(i) * time.Millisecond)
		}
	}
	r := &memReader{sessionID: "s", id: "e1", lines: lines}
	return executionapp.NewTailLogs(r, defs{"e1": failDef}, catalog{}, now)
}

func tail(t *testing.T, uc *executionapp.TailLogs, n int, pattern string) executionapp.TailResult {
	t.Helper()
	res, err := uc.Handle(t.Context(), executionapp.TailInput{SessionID: "s", ExecutionID: "e1", TailLines: n, FilterPattern: pattern})
	if err != nil {
		t.Fatalf("tail %d %q: %v", n, pattern, err)
	}
	return res
}

func TestRenderLine(t *testing.T) {
	t.Parallel()
	got := executionapp.RenderLine(executionapp.LogEntry{At: time.Date(2026, 1, 2, 4, 4, 5, 123e6, time.FixedZone("x", 3600)),
		Level: "error", NodeID: "compile", Message: "failed after 1 attempt(s): boom"})
	if want := "[2026-01-02T03:04:05.123Z] [ERROR] failed after 1 attempt(s): boom"; got != want {
		t.Errorf("RenderLine = %q, want %q", got, want)
	}
}

// The seed's "debug a failed run" filter finds the line the engine writes
// when a node fails (level "error", a message without the word), because
// the pattern is matched on the whole rendered line with the level in upper
// case. The lines keep their structured fields.
func TestTailLogsFilterMatchesRenderedLine(t *testing.T) {
	t.Parallel()
	uc := tailOver([]executionapp.LogEntry{
		{Level: "info", NodeID: "prep", Message: "preparing"},
		{Level: "warn", NodeID: "compile", Message: "attempt 1 of 2 failed: failed on purpose; retrying in 1s"},
		{Level: "error", NodeID: "compile", Message: "failed after 2 attempt(s): failed on purpose"},
		{Level: "info", NodeID: "out", Message: "an error in the message, lower case"},
	}, time.Now)
	res := tail(t, uc, 50, "ERROR|Exception")
	if res.TotalMatched != 1 || len(res.Lines) != 1 {
		t.Fatalf("ERROR|Exception: %d matched %+v, want the failure line only", res.TotalMatched, res.Lines)
	}
	if l := res.Lines[0]; l.Seq != 3 || l.Level != "error" || l.NodeID != "compile" || l.Message != "failed after 2 attempt(s): failed on purpose" {
		t.Errorf("line %+v: want the stored fields of seq 3 unchanged", l)
	}
	for pattern, want := range map[string]int64{
		`^\[2026-01-02T03:04:05Z\] \[INFO\] preparing$`: 1,
		`\[WARN\] attempt`:     1,
		`\[(WARN|ERROR)\]`:     2,
		`^\[[^]]+\] \[INFO\] `: 2,
		`\[info\]`:             0,
		`compile`:              0, // the node id is not part of the line
	} {
		if got := tail(t, uc, 50, pattern).TotalMatched; got != want {
			t.Errorf("%q matched %d lines, want %d", pattern, got, want)
		}
	}
}

// The pattern length is counted in characters, not bytes.
func TestTailLogsPatternLengthInCharacters(t *testing.T) {
	t.Parallel()
	uc := tailOver([]executionapp.LogEntry{{Level: "info", Message: strings.Repeat("é", 300)}}, time.Now)
	at := strings.Repeat("é", executionapp.MaxPatternLen) // 400 bytes
	if res := tail(t, uc, 10, at); res.TotalMatched != 1 {
		t.Errorf("%d-character pattern matched %d lines, want 1", executionapp.MaxPatternLen, res.TotalMatched)
	}
	_, err := uc.Handle(t.Context(), executionapp.TailInput{SessionID: "s", ExecutionID: "e1", FilterPattern: at + "é"})
	ve, ok := errors.AsType[*fault.ValidationError](err)
	if !ok || ve.Violations[0].Path != "filterPattern" || ve.Violations[0].Message != "Regex pattern too long (max 200 characters)." {
		t.Errorf("%d-character pattern: %v, want the length refusal", executionapp.MaxPatternLen+1, err)
	}
}

// tailLines is at most 5,000, with or without a filter; 5,000 itself works.
func TestTailLogsTailLinesCap(t *testing.T) {
	t.Parallel()
	if executionapp.MaxTailLines != 5000 {
		t.Fatalf("MaxTailLines = %d, the documented cap is 5000", executionapp.MaxTailLines)
	}
	lines := make([]executionapp.LogEntry, 6000)
	for i := range lines {
		lines[i] = executionapp.LogEntry{Level: "info", Message: fmt.Sprintf("line %d", i+1)}
	}
	uc := tailOver(lines, time.Now)
	for _, pattern := range []string{"", "INFO"} {
		res := tail(t, uc, 5000, pattern)
		if len(res.Lines) != 5000 || res.ReturnedLines != 5000 || res.TotalMatched != 6000 || res.Lines[0].Seq != 1001 || res.Lines[4999].Seq != 6000 {
			t.Errorf("%q tailLines 5000: %d lines (%d..), total %d", pattern, len(res.Lines), res.Lines[0].Seq, res.TotalMatched)
		}
		for _, n := range []int{5001, 100000, -1} {
			_, err := uc.Handle(t.Context(), executionapp.TailInput{SessionID: "s", ExecutionID: "e1", TailLines: n, FilterPattern: pattern})
			ve, ok := errors.AsType[*fault.ValidationError](err)
			if !ok || ve.Violations[0].Path != "tailLines" || !strings.Contains(ve.Violations[0].Message, "between 1 and 5000") {
				t.Errorf("%q tailLines %d: %v, want a tailLines violation", pattern, n, err)
			}
		}
	}
}

// fakeClock advances by step on every reading.
type fakeClock struct {
	mu   sync.Mutex
	t    time.Time
	step time.Duration
}

func (c *fakeClock) now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(c.step)
	return c.t
}

// A filtered read stops after 2 s of (fake) time and says the count is
// incomplete; one that stays within the budget reads everything.
func TestTailLogsTimeBudget(t *testing.T) {
	t.Parallel()
	lines := make([]executionapp.LogEntry, 3000)
	for i := range lines {
		lines[i] = executionapp.LogEntry{Level: "error", Message: "boom"}
	}
	slow := &fakeClock{t: logT0, step: 100 * time.Millisecond} // one reading per line
	res := tail(t, tailOver(lines, slow.now), 5000, "ERROR")
	if res.Complete || res.TotalMatched == 0 || res.TotalMatched > 25 {
		t.Errorf("100 ms a line: complete %v after %d matches, want it stopped at about 2 s (20 lines)", res.Complete, res.TotalMatched)
	}
	if res.ReturnedLines != len(res.Lines) || int64(len(res.Lines)) != res.TotalMatched || res.Lines[len(res.Lines)-1].Seq != 3000 {
		t.Errorf("stopped read: %d returned, %d lines, want the newest lines read so far", res.ReturnedLines, len(res.Lines))
	}
	fast := &fakeClock{t: logT0, step: 500 * time.Microsecond} // 3000 lines in 1.5 s
	if res := tail(t, tailOver(lines, fast.now), 5000, "ERROR"); !res.Complete || res.TotalMatched != 3000 {
		t.Errorf("within the budget: complete %v, %d matched, want all 3000", res.Complete, res.TotalMatched)
	}
}

// A filter sees only the first 4 KiB of the rendered line.
func TestTailLogsMatchWindow(t *testing.T) {
	t.Parallel()
	prefix := len(executionapp.RenderLine(executionapp.LogEntry{At: logT0, Level: "info"}))
	room := executionapp.MaxMatchLineBytes - prefix - len("Exception")
	uc := tailOver([]executionapp.LogEntry{
		{At: logT0, Level: "info", Message: strings.Repeat("x", room) + "Exception"},     // ends at 4 KiB
		{At: logT0, Level: "info", Message: strings.Repeat("x", room+1) + "Exception"},   // one byte past it
		{At: logT0, Level: "info", Message: strings.Repeat("x", room+100) + "Exception"}, // well past it
	}, time.Now)
	res := tail(t, uc, 10, "Exception")
	if res.TotalMatched != 1 || res.Lines[0].Seq != 1 {
		t.Errorf("matched %d lines %v, want only the one whose match ends within 4 KiB", res.TotalMatched, res.Lines)
	}
	if len(res.Lines) == 1 && len(res.Lines[0].Message) != room+len("Exception") {
		t.Error("the window cut the returned message")
	}
	// A window that would end inside a character ends before it.
	uc = tailOver([]executionapp.LogEntry{{At: logT0, Level: "info", Message: strings.Repeat("x", room+len("Exception")-1) + "é"}}, time.Now)
	if res := tail(t, uc, 10, `x$`); res.TotalMatched != 1 {
		t.Errorf("a window cut inside a character: %d matched, want it cut before the character", res.TotalMatched)
	}
}

// A filtered read walks the whole log, past the first chunk of 1,000 lines.
func TestTailLogsFilterLongLog(t *testing.T) {
	t.Parallel()
	lines := make([]executionapp.LogEntry, 2500)
	for i := range lines {
		lines[i] = executionapp.LogEntry{Level: "info", Message: fmt.Sprintf("step %d", i+1)}
	}
	lines[0] = executionapp.LogEntry{Level: "error", Message: "first failure"}
	lines[1499] = executionapp.LogEntry{Level: "error", Message: "second failure"}
	uc := tailOver(lines, time.Now)
	res := tail(t, uc, 50, "ERROR|Exception")
	if !res.Complete || res.TotalMatched != 2 || len(res.Lines) != 2 || res.Lines[0].Seq != 1 || res.Lines[1].Seq != 1500 {
		t.Errorf("2,500-line log: complete %v, %d matched %+v, want seq 1 and 1500", res.Complete, res.TotalMatched, res.Lines)
	}
	if res := tail(t, uc, 1, "ERROR"); res.TotalMatched != 2 || len(res.Lines) != 1 || res.Lines[0].Seq != 1500 {
		t.Errorf("tailLines 1: %d matched %+v, want the newest match and the full count", res.TotalMatched, res.Lines)
	}
	if res := tail(t, uc, 5000, `INFO`); res.TotalMatched != 2498 || len(res.Lines) != 2498 {
		t.Errorf("INFO: %d matched, %d lines, want 2498", res.TotalMatched, len(res.Lines))
	}
}
