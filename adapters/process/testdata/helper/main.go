// Command helper is the program the process adapter's tests run as a
// supervisor: one binary, its behaviour chosen by its first argument.
package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"
)

func main() {
	if len(os.Args) < 2 {
		os.Exit(2)
	}
	out := bufio.NewWriter(os.Stdout)
	say := func(v any) {
		b, _ := json.Marshal(v)
		out.Write(append(b, '\n'))
		out.Flush()
	}
	switch os.Args[1] {
	case "env": // what the program was given
		dir, _ := os.Getwd()
		env := os.Environ()
		if env == nil {
			env = []string{}
		}
		say(map[string]any{"env": env, "dir": dir, "args": os.Args[2:]})
	case "echo": // each input line back, until EOF
		in := bufio.NewScanner(os.Stdin)
		in.Buffer(make([]byte, 1<<20), 1<<20)
		for in.Scan() {
			out.Write(append(in.Bytes(), '\n'))
			out.Flush()
		}
	case "exit": // exit at once with the status given
		n, _ := strconv.Atoi(os.Args[2])
		os.Exit(n)
	case "grandchild", "grandchild-ignoreterm": // a child in the group, then wait
		if os.Args[1] == "grandchild-ignoreterm" {
			signal.Ignore(syscall.SIGTERM) // inherited by the sleep: only SIGKILL ends them
		}
		c := exec.Command("/usr/bin/sleep", "1000")
		if err := c.Start(); err != nil {
			say(map[string]any{"error": err.Error()})
			os.Exit(1)
		}
		say(map[string]any{"pid": c.Process.Pid, "self": os.Getpid()})
		wait()
	case "grandchild-exit": // a child in the group, then exit without it
		c := exec.Command("/usr/bin/sleep", "1000")
		if err := c.Start(); err != nil {
			os.Exit(1)
		}
		say(map[string]any{"pid": c.Process.Pid})
		time.Sleep(100 * time.Millisecond)
		os.Exit(0)
	case "flood": // n bytes without a newline, then optionally a newline and "ok"
		n, _ := strconv.Atoi(os.Args[2])
		chunk := []byte(strings.Repeat("x", 64<<10))
		for n > 0 {
			k := min(n, len(chunk))
			os.Stdout.Write(chunk[:k])
			n -= k
		}
		if len(os.Args) > 3 && os.Args[3] == "then-ok" {
			os.Stdout.Write([]byte("\nok\n"))
		}
	case "babble": // non-directive lines as fast as it can for os.Args[3] seconds, then their count to os.Args[2]
		secs, _ := strconv.ParseFloat(os.Args[3], 64)
		end := time.Now().Add(time.Duration(secs * float64(time.Second)))
		w := bufio.NewWriterSize(os.Stdout, 64<<10)
		line := []byte("chatter \x1b[31mred\x1b[0m token=hunter2-very-secret and more words than a directive needs\n")
		n := 0
		for time.Now().Before(end) {
			for range 1000 {
				w.Write(line)
			}
			n += 1000
		}
		w.Flush()
		writeFile(os.Args[2], strconv.Itoa(n))
		wait()
	case "descendants": // a child in the group and one that left it (setsid); "self child daemon" pids to os.Args[2]
		c := exec.Command("/usr/bin/sleep", "300")
		d := exec.Command("/usr/bin/sleep", "301")
		d.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
		if c.Start() != nil || d.Start() != nil {
			os.Exit(1)
		}
		writeFile(os.Args[2], fmt.Sprintf("%d %d %d", os.Getpid(), c.Process.Pid, d.Process.Pid))
		say(map[string]any{"pid": c.Process.Pid, "daemon": d.Process.Pid, "self": os.Getpid()})
		wait()
	case "noread": // never reads its input
		say(map[string]any{"ready": true})
		wait()
	case "reviewer": // answers REVIEW with DENY, EVENT with a PauseWorkflow; logs its input to os.Args[2]
		log, err := os.OpenFile(os.Args[2], os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
		if err != nil {
			os.Exit(1)
		}
		in := bufio.NewScanner(os.Stdin)
		in.Buffer(make([]byte, 1<<20), 1<<20)
		for in.Scan() {
			log.Write(append(in.Bytes(), '\n'))
			var sig struct {
				Cursor string         `json:"cursor"`
				Kind   string         `json:"kind"`
				Signal map[string]any `json:"signal"`
			}
			if json.Unmarshal(in.Bytes(), &sig) != nil {
				continue
			}
			fmt.Fprintln(out, "thinking about", sig.Kind) // not a contract line: dropped
			switch sig.Kind {
			case "REVIEW":
				say(map[string]any{"type": "verdict", "answers": sig.Signal["reviewId"], "verdict": "DENY", "reason": "the program says no"})
			case "EVENT":
				say(map[string]any{"type": "command", "key": "pause-" + sig.Cursor, "cause": sig.Cursor,
					"command": map[string]any{"type": "PauseWorkflow", "executionId": sig.Signal["executionId"]}})
			}
			out.Flush()
		}
	default:
		os.Exit(2)
	}
}

// writeFile writes s to path whole: readers never see part of it.
func writeFile(path, s string) {
	if os.WriteFile(path+".tmp", []byte(s), 0o600) != nil || os.Rename(path+".tmp", path) != nil {
		os.Exit(1)
	}
}

// wait blocks until the process is killed.
func wait() {
	for {
		time.Sleep(time.Hour)
	}
}
