package process_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/yukta/yukta/adapters/process"
	"github.com/yukta/yukta/application/engines/processengine"
)

// helper is the test program (testdata/helper), built once per test
// binary; what it does is chosen by its first argument.
var helper string

func TestMain(m *testing.M) {
	// The spawner re-executes this binary as the programs' guard.
	if len(os.Args) > 1 && os.Args[1] == process.GuardCommand {
		os.Exit(process.RunGuard(os.Args[2:]))
	}
	// A server of its own, to be killed with SIGKILL by a test: it runs
	// the helper given and waits.
	if len(os.Args) > 1 && os.Args[1] == "as-server" {
		if _, err := spawner(0).Start(processengine.Spec{Path: os.Args[2], Args: os.Args[3:]}); err != nil {
			os.Exit(3)
		}
		select {}
	}
	os.Exit(run(m))
}

// spawner is a spawner whose guard is this test binary.
func spawner(grace time.Duration) *process.Spawner {
	return process.NewSpawner(process.SelfExe(), grace)
}

func run(m *testing.M) int {
	dir, err := os.MkdirTemp("", "yukta-process-test-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(dir)
	helper = filepath.Join(dir, "helper")
	out, err := exec.Command("go", "build", "-o", helper, "./testdata/helper").CombinedOutput()
	if err != nil {
		fmt.Fprintf(os.Stderr, "build the test program: %v\n%s", err, out)
		return 1
	}
	return m.Run()
}

// start runs the helper with args; the test stops it when it ends.
func start(t *testing.T, grace time.Duration, maxLine, queue int, args ...string) processengine.Process {
	t.Helper()
	p, err := spawner(grace).Start(processengine.Spec{Path: helper, Args: args, MaxLineBytes: maxLine, QueueLines: queue})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.Stop() })
	return p
}

// next reads the next output line, failing after 5s or when the output
// ended.
func next(t *testing.T, p processengine.Process) processengine.OutputLine {
	t.Helper()
	select {
	case l, ok := <-p.Lines():
		if !ok {
			t.Fatal("the output ended")
		}
		return l
	case <-time.After(5 * time.Second):
		t.Fatal("no output line within 5s")
	}
	return processengine.OutputLine{}
}

// ended waits for the output to be closed.
func ended(t *testing.T, p processengine.Process) {
	t.Helper()
	deadline := time.After(5 * time.Second)
	for {
		select {
		case l, ok := <-p.Lines():
			if !ok {
				return
			}
			t.Errorf("unexpected line %.80q (too long %v)", l.Data, l.TooLong)
		case <-deadline:
			t.Fatal("the output was not closed within 5s")
		}
	}
}

// running reports whether pid is a live process: not gone, not a zombie
// (a zombie is dead; whether anyone reaps it is not the adapter's
// business).
func running(pid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 || len(s) < i+3 {
		return true
	}
	return s[i+2] != 'Z' && s[i+2] != 'X'
}

// goneWithin polls until pid is not running.
func goneWithin(pid int, d time.Duration) (time.Duration, bool) {
	begin := time.Now()
	for {
		if !running(pid) {
			return time.Since(begin), true
		}
		if time.Since(begin) > d {
			return d, false
		}
		time.Sleep(time.Millisecond)
	}
}

// T15: the program gets an empty environment (the test binary's own is
// not), the working directory "/", and its arguments as given, one each.
func TestProgramGetsAnEmptyEnvironment(t *testing.T) {
	t.Parallel()
	if len(os.Environ()) == 0 {
		t.Fatal("the test's own environment is empty; the check would prove nothing")
	}
	p := start(t, 0, 0, 0, "env", "two words", "", "$HOME")
	var got struct {
		Env  []string `json:"env"`
		Dir  string   `json:"dir"`
		Args []string `json:"args"`
	}
	if err := json.Unmarshal(next(t, p).Data, &got); err != nil {
		t.Fatal(err)
	}
	if len(got.Env) != 0 {
		t.Errorf("the program's environment has %d variables, want 0: %q", len(got.Env), got.Env)
	}
	if got.Dir != "/" {
		t.Errorf("working directory %q, want /", got.Dir)
	}
	if want := []string{"two words", "", "$HOME"}; strings.Join(got.Args, "|") != strings.Join(want, "|") {
		t.Errorf("args %q, want %q as given (no shell)", got.Args, want)
	}
	ended(t, p)
	if err := p.Stop(); err != nil {
		t.Errorf("exit: %v, want status 0", err)
	}
}

// T16: a grandchild (sleep 1000) is gone once Stop returns: the whole
// process group is killed, after SIGTERM, and with SIGKILL when SIGTERM is
// ignored.
func TestStopLeavesNoGrandchild(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		mode     string
		minTaken time.Duration
	}{
		{"grandchild", 0},
		{"grandchild-ignoreterm", 300 * time.Millisecond}, // the grace, then SIGKILL
	} {
		t.Run(tt.mode, func(t *testing.T) {
			t.Parallel()
			p := start(t, 300*time.Millisecond, 0, 0, tt.mode)
			var got struct{ PID, Self int }
			if err := json.Unmarshal(next(t, p).Data, &got); err != nil || got.PID == 0 {
				t.Fatalf("no pid: %v", err)
			}
			if !running(got.PID) || !running(got.Self) {
				t.Fatalf("the program (%d) or its child (%d) is not running before Stop", got.Self, got.PID)
			}
			begin := time.Now()
			_ = p.Stop()
			taken := time.Since(begin)
			if taken < tt.minTaken || taken > tt.minTaken+5*time.Second {
				t.Errorf("Stop took %s, want from %s to %s", taken, tt.minTaken, tt.minTaken+5*time.Second)
			}
			if running(got.Self) {
				t.Errorf("the program %d still runs after Stop", got.Self)
			}
			// SIGKILL is sent before Stop returns; the kernel finishes the
			// child within moments.
			if d, ok := goneWithin(got.PID, time.Second); !ok {
				t.Errorf("grandchild %d (sleep 1000) still runs 1s after Stop", got.PID)
			} else {
				t.Logf("grandchild gone %s after Stop returned", d)
			}
		})
	}
}

// A program that exits by itself leaves nothing either: its group is
// killed when it exits, and its output ends though the child held it.
func TestExitLeavesNoGrandchild(t *testing.T) {
	t.Parallel()
	p := start(t, 0, 0, 0, "grandchild-exit")
	var got struct{ PID int }
	if err := json.Unmarshal(next(t, p).Data, &got); err != nil || got.PID == 0 {
		t.Fatalf("no pid: %v", err)
	}
	ended(t, p)
	if _, ok := goneWithin(got.PID, time.Second); !ok {
		t.Errorf("grandchild %d still runs after its parent exited", got.PID)
	}
	if err := p.Send(t.Context(), []byte("x")); !errors.Is(err, processengine.ErrGone) {
		t.Errorf("Send after the exit: %v, want ErrGone", err)
	}
}

// Lines go in and come out whole; a line of exactly the limit is kept, one
// byte more is dropped, and the reader goes on after it.
func TestLinesRoundTripAndTheLimit(t *testing.T) {
	t.Parallel()
	const limit = 1024
	p := start(t, 0, limit, 4, "echo")
	exact := strings.Repeat("a", limit)
	over := strings.Repeat("b", limit+1)
	for _, s := range []string{`{"kind":"EVENT"}`, exact, over, "after"} {
		if err := p.Send(t.Context(), []byte(s)); err != nil {
			t.Fatal(err)
		}
	}
	if l := next(t, p); string(l.Data) != `{"kind":"EVENT"}` || l.TooLong {
		t.Errorf("first line %q", l.Data)
	}
	if l := next(t, p); string(l.Data) != exact {
		t.Errorf("a line of exactly %d bytes: got %d bytes, too long %v; want it whole", limit, len(l.Data), l.TooLong)
	}
	if l := next(t, p); !l.TooLong || len(l.Data) != 0 {
		t.Errorf("a line of %d bytes: got %d bytes, too long %v; want it dropped", limit+1, len(l.Data), l.TooLong)
	}
	if l := next(t, p); string(l.Data) != "after" {
		t.Errorf("the line after: %q", l.Data)
	}
}

// Back-pressure: a program that never reads fills the pipe and the
// bounded queue; Send then waits (until its context ends) instead of
// buffering, and Stop still returns.
func TestSendWaitsWhenTheProgramDoesNotRead(t *testing.T) {
	t.Parallel()
	const queue = 4
	p := start(t, 0, 0, queue, "noread")
	next(t, p) // ready
	line := []byte(strings.Repeat("s", 16<<10))
	sent := 0
	for ; sent < 100; sent++ {
		ctx, cancel := context.WithTimeout(t.Context(), 200*time.Millisecond)
		err := p.Send(ctx, line)
		cancel()
		if errors.Is(err, context.DeadlineExceeded) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	// The pipe holds 64 KiB (4 lines of 16 KiB), the writer one more, the
	// queue 4: about 9 lines, whatever the program is sent.
	if sent == 100 || sent > 12 {
		t.Fatalf("Send took %d lines of 16 KiB from a program that does not read; want it to wait after about 9", sent)
	}
	t.Logf("Send waited after %d lines (queue %d)", sent, queue)
	begin := time.Now()
	_ = p.Stop()
	if d := time.Since(begin); d > 5*time.Second {
		t.Errorf("Stop took %s with a writer stuck on a full pipe", d)
	}
	if err := p.Send(t.Context(), line); !errors.Is(err, processengine.ErrGone) {
		t.Errorf("Send after Stop: %v, want ErrGone", err)
	}
}

// T15/T16's companion: a 10 MiB line is read through without being held.
// The bound: the test process allocates less than 1 MiB while the program
// writes 10 MiB without a newline (the reader keeps one buffer of the limit,
// 64 KiB); holding the line would allocate at least 10 MiB. Not parallel,
// so no other test allocates meanwhile.
func TestA10MiBLineDoesNotGrowMemory(t *testing.T) {
	const size = 10 << 20
	const bound = 1 << 20
	for _, tt := range []struct {
		name string
		args []string
		want []string // "" for the dropped line
	}{
		{"the line never ends (the program exits)", []string{"flood", fmt.Sprint(size)}, []string{""}},
		{"a newline after 10 MiB, then a line", []string{"flood", fmt.Sprint(size), "then-ok"}, []string{"", "ok"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var before, after runtime.MemStats
			runtime.GC()
			runtime.ReadMemStats(&before)
			p := start(t, 0, processengine.DefaultMaxLine, 0, tt.args...)
			for _, w := range tt.want {
				l := next(t, p)
				if w == "" && !l.TooLong {
					t.Errorf("got a line of %d bytes, want the 10 MiB line dropped", len(l.Data))
				}
				if w != "" && string(l.Data) != w {
					t.Errorf("got %q, want %q", l.Data, w)
				}
			}
			ended(t, p)
			runtime.ReadMemStats(&after)
			alloc := after.TotalAlloc - before.TotalAlloc
			t.Logf("allocated %d bytes while reading a %d-byte line (bound %d)", alloc, size, bound)
			if alloc >= bound {
				t.Errorf("allocated %d bytes while a %d-byte line was read; want under %d", alloc, size, bound)
			}
		})
	}
}

func TestStartRefusesARelativePath(t *testing.T) {
	t.Parallel()
	if _, err := spawner(0).Start(processengine.Spec{Path: "helper"}); err == nil {
		t.Fatal("a relative path was started")
	}
	if _, err := spawner(0).Start(processengine.Spec{Path: "/nonexistent/program"}); err == nil {
		t.Fatal("a missing program was started")
	}
}
