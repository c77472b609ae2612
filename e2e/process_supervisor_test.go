package e2e

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/yukta/yukta/adapters/postgres/pgtest"
)

// buildProgram builds the process adapter's test program (one binary,
// its behaviour chosen by its first argument) into dir.
func buildProgram(t *testing.T, dir string) string {
	t.Helper()
	bin := filepath.Join(dir, "decider")
	out, err := exec.Command("go", "build", "-o", bin, "../adapters/process/testdata/helper").CombinedOutput()
	if err != nil {
		t.Fatalf("build the supervisor program: %v\n%s", err, out)
	}
	return bin
}

// running lists the processes whose executable is bin.
func running(bin string) []string {
	var pids []string
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		if exe, err := os.Readlink(filepath.Join("/proc", e.Name(), "exe")); err == nil && exe == bin {
			pids = append(pids, e.Name())
		}
	}
	return pids
}

// TestProcessSupervisorOnTheRealServer: a real program, allowed by
// YUKTA_PROCESS_ALLOWED_COMMANDS, supervises session ci as a process
// supervisor: it pauses each run it hears of (a directive from its
// standard output) and denies an operator's STOP (a verdict on a REVIEW
// signal). Another command is refused when saved; the program is gone once
// the server stops.
func TestProcessSupervisorOnTheRealServer(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	bin := buildProgram(t, dir)
	dsn := pgtest.NewDatabase(t)
	s := startServer(t, serverOptions{DSN: dsn, Env: []string{"YUKTA_PROCESS_ALLOWED_COMMANDS=" + bin}})
	w := &reviewWorld{t: t, s: s}
	w.put("/api/sessions/ci", napSession("ci"))

	st, b, _ := call(t, s, "PUT", "/api/supervisors/decider", "", []byte(`{"name":"Decider","owns":["session:ci"],"reviews":["StopWorkflow"],
		"engine":{"type":"process","settings":{"command":"/bin/sh","args":"-c\nexit 0"}}}`))
	if st != 400 || !strings.Contains(string(b), "engine.settings.command") {
		t.Fatalf("a command off the allow-list: %d %s, want 400 naming engine.settings.command", st, b)
	}
	logPath := filepath.Join(dir, "signals.log")
	w.put("/api/supervisors/decider", []byte(`{"name":"Decider","owns":["session:ci"],"reviews":["StopWorkflow"],
		"engine":{"type":"process","settings":{"command":"`+bin+`","args":"reviewer\n`+logPath+`"}}}`))

	st, b, _ = call(t, s, "POST", "/api/sessions/ci/workflows/nap/executions", "", []byte(`{"payload":{}}`))
	if st != 201 {
		t.Fatalf("start: %d %s", st, b)
	}
	id := strings.Split(strings.Split(string(b), `"executionId":"`)[1], `"`)[0]
	for deadline := time.Now().Add(30 * time.Second); w.status("ci", id) != "PAUSED"; time.Sleep(50 * time.Millisecond) {
		if time.Now().After(deadline) {
			log, _ := os.ReadFile(logPath)
			t.Fatalf("the program's PauseWorkflow never applied: run %s; its input:\n%s", w.status("ci", id), log)
		}
	}
	if st, b := w.stop("ci", id, 8); st != 403 || !strings.Contains(string(b), "the program says no") || !strings.Contains(string(b), "supervisor:decider") {
		t.Fatalf("STOP reviewed by the program: %d %s, want 403 with its reason", st, b)
	}
	if len(running(bin)) != 1 {
		t.Fatalf("%d copies of the program run, want 1", len(running(bin)))
	}
	if err := s.Stop(); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	for len(running(bin)) > 0 {
		if ctx.Err() != nil {
			t.Fatalf("the program still runs after the server stopped: pids %v", running(bin))
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// droppedLines is the server's count of one drop reason (0 while it is
// not exported).
func droppedLines(t *testing.T, s *server, series string) float64 {
	t.Helper()
	return max(0, metricValue(t, scrapeMetrics(t, s), series))
}

// logLinesOf counts the server's log lines that name supervisor id, and
// their bytes, in log.
func logLinesOf(log, id string) (lines, bytes int) {
	for _, l := range strings.Split(log, "\n") {
		if strings.Contains(l, `"supervisor":"`+id+`"`) || strings.Contains(l, "process supervisor "+id+":") {
			lines++
			bytes += len(l) + 1
		}
	}
	return lines, bytes
}

// Hole 6 of issue 21: a program that prints nothing but chatter, as fast
// as it can for 3 s, makes the server log at most about one line a second
// for it (the first line at once, the rest in one summary when the 10 s
// period ends, the sample escaped and masked), and /metrics counts every
// line it dropped.
func TestProcessSupervisorChatterIsCountedNotLogged(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	bin := buildProgram(t, dir)
	dsn := pgtest.NewDatabase(t)
	s := startServer(t, serverOptions{DSN: dsn, Env: []string{"YUKTA_PROCESS_ALLOWED_COMMANDS=" + bin}})
	w := &reviewWorld{t: t, s: s}
	w.put("/api/sessions/ci", napSession("ci"))
	const series = `yukta_supervisor_process_lines_dropped_total{reason="notJson"}`
	before := droppedLines(t, s, series)

	countPath := filepath.Join(dir, "count")
	logBefore := len(s.logs.String())
	begin := time.Now()
	w.put("/api/supervisors/chatter", []byte(`{"name":"Chatter","owns":["session:ci"],
		"engine":{"type":"process","settings":{"command":"`+bin+`","args":"babble\n`+countPath+`\n3"}}}`))
	var printed int
	for deadline := time.Now().Add(60 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		if b, err := os.ReadFile(countPath); err == nil {
			printed, _ = strconv.Atoi(string(b))
			flood := time.Since(begin)
			lines, bytes := logLinesOf(s.logs.String()[logBefore:], "chatter")
			t.Logf("during the flood (%s, program start included) the server logged %d lines, %d bytes for it: %.1f lines/s, %.0f bytes/s",
				flood.Round(time.Millisecond), lines, bytes, float64(lines)/flood.Seconds(), float64(bytes)/flood.Seconds())
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the program did not report how many lines it printed within 60s")
		}
	}
	// Every line it printed was read (its writes wait for the server):
	// the counter reaches the count.
	var dropped float64
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		if dropped = droppedLines(t, s, series) - before; dropped >= float64(printed) || time.Now().After(deadline) {
			break
		}
	}
	// The first line was logged at once, the rest are summed up when
	// their period (10 s) ends.
	summary := regexp.MustCompile(`process supervisor chatter: dropped (\d+) output lines`)
	var summed int
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		if m := summary.FindStringSubmatch(s.logs.String()[logBefore:]); m != nil {
			summed, _ = strconv.Atoi(m[1])
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("no summary of the dropped lines within 30s")
		}
	}
	if summed+1 != printed {
		t.Errorf("the summary counts %d lines and the first was logged alone; want %d in all", summed, printed)
	}
	elapsed := time.Since(begin)
	lines, bytes := logLinesOf(s.logs.String()[logBefore:], "chatter")
	t.Logf("the program printed %d lines; %s counts %.0f; the server logged %d lines (%d bytes) for it in %s: %.1f lines/s, %.0f bytes/s",
		printed, series, dropped, lines, bytes, elapsed.Round(time.Millisecond), float64(lines)/elapsed.Seconds(), float64(bytes)/elapsed.Seconds())
	if printed < 1000 {
		t.Fatalf("the program printed %d lines, want a flood", printed)
	}
	if dropped != float64(printed) {
		t.Errorf("%s grew by %.0f, want %d (every line the program printed)", series, dropped, printed)
	}
	if limit := int(elapsed.Seconds()) + 3; lines > limit {
		t.Errorf("the server logged %d lines for the supervisor in %s, want at most %d (one a second and a few)", lines, elapsed.Round(time.Millisecond), limit)
	}
	log := s.logs.String()[logBefore:]
	for _, l := range strings.Split(log, "\n") {
		if strings.Contains(l, "process supervisor chatter:") {
			t.Logf("the summary: %s", l)
		}
	}
	if !strings.Contains(log, "process supervisor chatter: dropped") || strings.Contains(log, "hunter2") || strings.Contains(log, "\x1b") {
		t.Errorf("want a summary naming the supervisor, its sample escaped and its secret masked; the log:\n%.4000s", log)
	}
}

// pgidOf is the process group of pid (0 when it is not running).
func pgidOf(pid int) int {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0
	}
	s := string(b)
	f := strings.Fields(s[strings.LastIndexByte(s, ')')+2:])
	if len(f) < 3 || f[0] == "Z" || f[0] == "X" {
		return 0
	}
	g, _ := strconv.Atoi(f[2])
	return g
}

// alive lists the given pids that still run, and the live members of
// process group pgid.
func alive(pids []int, pgid int) []int {
	var live []int
	for _, p := range pids {
		if pgidOf(p) != 0 {
			live = append(live, p)
		}
	}
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		if p, err := strconv.Atoi(e.Name()); err == nil && !slices.Contains(live, p) && pgidOf(p) == pgid {
			live = append(live, p)
		}
	}
	return live
}

// Hole 9 of issue 21: after kill -9 of the server, nothing a process
// supervisor started is alive 5 s later: not the program, not its child
// in its process group, not a child that left the group with setsid.
func TestProcessSupervisorDescendantsDieWithTheServer(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	bin := buildProgram(t, dir)
	dsn := pgtest.NewDatabase(t)
	s := startServer(t, serverOptions{DSN: dsn, Env: []string{"YUKTA_PROCESS_ALLOWED_COMMANDS=" + bin}})
	w := &reviewWorld{t: t, s: s}
	w.put("/api/sessions/ci", napSession("ci"))
	pidPath := filepath.Join(dir, "pids")
	w.put("/api/supervisors/parent", []byte(`{"name":"Parent","owns":["session:ci"],
		"engine":{"type":"process","settings":{"command":"`+bin+`","args":"descendants\n`+pidPath+`"}}}`))
	var pids []int
	for deadline := time.Now().Add(30 * time.Second); len(pids) == 0; time.Sleep(50 * time.Millisecond) {
		if b, err := os.ReadFile(pidPath); err == nil {
			for _, f := range strings.Fields(string(b)) {
				p, _ := strconv.Atoi(f)
				pids = append(pids, p)
			}
		}
		if time.Now().After(deadline) {
			t.Fatal("the program did not write its pids within 30s")
		}
	}
	t.Cleanup(func() { // whatever survived a failed run
		for _, p := range pids {
			_ = syscall.Kill(p, syscall.SIGKILL)
		}
	})
	pgid := pgidOf(pids[1])
	if got := alive(pids, pgid); len(got) < len(pids) || pgid == 0 {
		t.Fatalf("before the kill: %v of %v run (group %d), want all", got, pids, pgid)
	}
	s.Kill()
	killed := time.Now()
	for {
		live := alive(pids, pgid)
		if len(live) == 0 {
			t.Logf("the program, its child and its setsid child (%v, group %d) were gone %s after kill -9 of the server",
				pids, pgid, time.Since(killed).Round(time.Millisecond))
			return
		}
		if time.Since(killed) > 5*time.Second {
			t.Fatalf("5s after kill -9 of the server, %v still run (program, child, setsid child: %v; group %d)", live, pids, pgid)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
