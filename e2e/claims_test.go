package e2e

import (
	"context"
	"encoding/json"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// TestAccessChannelIsClaimed: any client may send "Yukta-Channel: cli", so
// what it says is recorded as its claim, "cli (claimed)", alike in the
// execution, its events, commands and their events, the session list and the
// session's events; a REST call that claims nothing is "rest". The server
// never records a bare "cli".
func TestAccessChannelIsClaimed(t *testing.T) {
	e := newAccessEnv(t)
	const claimed = "cli (claimed)"
	cli := []string{"Yukta-Channel", "cli"}
	status, b, _ := call(t, e.s, "POST", startPath, testKeys["operator"], []byte(`{"payload":{"n":7}}`), cli...)
	if status != 201 {
		t.Fatalf("start: %d %s", status, b)
	}
	var started struct{ ExecutionId string }
	if err := json.Unmarshal(b, &started); err != nil {
		t.Fatal(err)
	}
	e.settle()
	_, b, _ = call(t, e.s, "GET", "/api/sessions/alpha/executions/"+started.ExecutionId, testKeys["viewer"], nil)
	var x struct{ Actor, Channel string }
	if err := json.Unmarshal(b, &x); err != nil || x.Actor != "key:operator" || x.Channel != claimed {
		t.Fatalf("execution actor %q channel %q (%v), want key:operator and %q", x.Actor, x.Channel, err, claimed)
	}
	status, b, _ = call(t, e.s, "POST", "/api/sessions/alpha/executions/"+started.ExecutionId+"/control", testKeys["operator"], []byte(`{"action":"RESTART"}`), cli...)
	if status != 200 {
		t.Fatalf("restart: %d %s", status, b)
	}
	var cmd struct{ CommandId string }
	_ = json.Unmarshal(b, &cmd)
	e.settle()
	doc := `{"name":"g","workflows":[` + wf("wf", []string{nd("start", "MANUAL", "")}, nil) + `]}`
	status, b, _ = call(t, e.s, "PUT", "/api/sessions/gamma", testKeys["admin"], []byte(doc), cli...)
	if status != 201 {
		t.Fatalf("apply: %d %s", status, b)
	}
	var channel, dataChannel string
	for _, q := range []struct{ what, sql, arg string }{
		{"ExecutionStarted event", `SELECT channel, '' FROM events WHERE execution_id = $1 AND type = 'ExecutionStarted'`, started.ExecutionId},
		{"command", `SELECT channel, '' FROM commands WHERE command_id = $1`, cmd.CommandId},
		{"CommandAccepted event", `SELECT channel, coalesce(data->>'channel', '') FROM events WHERE type = 'CommandAccepted' AND data->>'commandId' = $1`, cmd.CommandId},
		{"SessionApplied event", `SELECT channel, '' FROM events WHERE type = 'SessionApplied' AND session_id = $1`, "gamma"},
	} {
		if err := e.db.QueryRow(e.ctx, q.sql, q.arg).Scan(&channel, &dataChannel); err != nil {
			t.Fatalf("%s: %v", q.what, err)
		}
		if channel != claimed || dataChannel != "" && dataChannel != claimed {
			t.Errorf("%s: channel %q, data.channel %q; want %q", q.what, channel, dataChannel, claimed)
		}
	}
	_, b, _ = call(t, e.s, "GET", "/api/sessions", testKeys["viewer"], nil)
	if !strings.Contains(string(b), `"sessionId":"gamma"`) || !strings.Contains(string(b), `"updatedVia":"cli (claimed)"`) {
		t.Errorf("session list: %s, want gamma updated via %q", b, claimed)
	}
	var bare int
	if err := e.db.QueryRow(e.ctx, `SELECT (SELECT count(*) FROM events WHERE channel = 'cli') + (SELECT count(*) FROM commands WHERE channel = 'cli') +
		(SELECT count(*) FROM executions WHERE channel = 'cli')`).Scan(&bare); err != nil || bare != 0 {
		t.Errorf("%d rows record a bare cli channel (%v), want 0", bare, err)
	}
	// The real CLI claims it too.
	cli2 := func(args ...string) cliOut {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		cmd := cliCmd(t, ctx, e.s.URL, args...)
		cmd.Env = append(cmd.Env, "YUKTA_API_KEY="+testKeys["operator"])
		var stdout, stderr strings.Builder
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		err := cmd.Run()
		out := cliOut{stdout: stdout.String(), stderr: stderr.String()}
		if ee, ok := err.(*exec.ExitError); ok {
			out.code = ee.ExitCode()
		}
		return out
	}
	out := cli2("run", "alpha/wf", "--payload", `{"n":8}`)
	cliWant(t, out, 0)
	out = cli2("status", "alpha", cliField(t, out, "execution"))
	cliWant(t, out, 0, "channel: cli (claimed)\n")
}

// TestAccessFailureBudgetSparesWorkingKeys runs the failure budget of issue
// 11 through the real server, with sources told apart by X-Forwarded-For
// from a trusted proxy: a guesser's address spends its budget of 20 wrong
// keys; then a key that worked from that address still works, while a right
// key never used there is not checked (a guess past the budget cannot
// succeed), and works from another address. A stale key sent in a loop from
// a third address locks out only itself.
func TestAccessFailureBudgetSparesWorkingKeys(t *testing.T) {
	e := newAccessEnv(t, "YUKTA_TRUSTED_PROXIES=127.0.0.1")
	from := func(addr string) []string { return []string{"X-Forwarded-For", addr} }
	const nat, other, stale = "198.51.100.20", "198.51.100.21", "198.51.100.22"
	if status, b, _ := call(t, e.s, "GET", "/api/sessions", testKeys["operator"], nil, from(nat)...); status != 200 {
		t.Fatalf("the operator before the guessing: %d %s", status, b)
	}
	for i := 1; i <= 25; i++ {
		want := 401
		if i > 20 {
			want = 429
		}
		key := "guess-" + strings.Repeat("x", i) + "-0123456789abcdef"
		if status, b, h := call(t, e.s, "GET", "/api/sessions", key, nil, from(nat)...); status != want || want == 429 && h.Get("Retry-After") == "" {
			t.Fatalf("guess %d: %d %s, want %d", i, status, b, want)
		}
	}
	if status, b, _ := call(t, e.s, "GET", "/api/sessions", testKeys["operator"], nil, from(nat)...); status != 200 {
		t.Errorf("the operator, who worked from the guesser's address: %d %s, want 200", status, b)
	}
	if status, b, _ := call(t, e.s, "GET", "/api/sessions", testKeys["viewer"], nil, from(nat)...); status != 429 {
		t.Errorf("a right key never used from the spent address: %d %s, want 429 (not checked)", status, b)
	}
	if status, b, _ := call(t, e.s, "GET", "/api/sessions", testKeys["viewer"], nil, from(other)...); status != 200 {
		t.Errorf("the same key from another address: %d %s, want 200", status, b)
	}
	for i := 1; i <= 30; i++ {
		want := 401
		if i > 20 {
			want = 429
		}
		if status, b, _ := call(t, e.s, "GET", "/api/sessions", "stale-key-0123456789abcdefgh", nil, from(stale)...); status != want {
			t.Fatalf("stale key, try %d: %d %s, want %d", i, status, b, want)
		}
	}
	if status, b, _ := call(t, e.s, "GET", "/api/sessions", testKeys["viewer"], nil, from(stale)...); status != 200 {
		t.Errorf("a right key first used from the stale key's address: %d %s, want 200", status, b)
	}
	logs := e.s.logs.String()
	if n := strings.Count(logs, `"authentication failed"`); n != 40 {
		t.Errorf("%d failures logged, want 40 (20 guesses, 20 stale tries; refusals past the budget are not checked)", n)
	}
	if strings.Contains(logs, "guess-x") || strings.Contains(logs, "stale-key-") {
		t.Error("the log holds a presented key")
	}
}
