// Package cli is the yukta command-line client: apply a session file, start a
// run and watch its nodes, read status and logs, control executions and
// nodes, answer inputs, apply, list, show and delete supervisors, and list
// and decide approvals. Every call goes through the client generated from
// api/openapi.yaml; output is plain lines (`key: value` or aligned tables) so
// that it stays stable and easy to grep.
package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/yukta/yukta/api/apiclient"
)

// DefaultServer is where the client looks when neither --server nor
// YUKTA_SERVER says otherwise.
const DefaultServer = "http://127.0.0.1:8080"

// Exit codes.
const (
	exitOK      = 0
	exitFailed  = 1 // the server refused, the run failed, or it could not be reached
	exitUsage   = 2 // bad arguments
	exitStopped = 2 // run --watch: the execution was STOPPED
)

// channel is the Yukta-Channel header value recorded with every command.
const channel = "cli"

type command struct {
	name    string
	args    string // positional arguments and flags, for the usage line
	summary string
	run     func(e *env, args []string) int
}

var commands []command

func init() {
	commands = []command{
		{"apply", "FILE [--id SESSION]", "create or replace a session from a JSON document (FILE - reads stdin)", runApply},
		{"run", "SESSION/WORKFLOW [--payload JSON] [--key IDEMPOTENCY_KEY] [--watch]", "start an execution; --watch follows it to the end", runRun},
		{"status", "SESSION [EXECUTION]", "one execution's status and nodes, or the session's last 20 executions", runStatus},
		{"logs", "SESSION EXECUTION [-n LINES] [--grep RE2] [-f]", "the tail of an execution's log; -f follows it", runLogs},
		{"control", "SESSION EXECUTION [--node NODE] ACTION [flags]", "execution: PAUSE RESUME STOP RESTART RESTART_FROM_NODE\n      node (--node): PAUSE RESUME STOP STEP_ENABLE STEP STEP_DISABLE SKIP UNSKIP RETRY\n      BREAKPOINT BREAKPOINT_CLEAR", runControl},
		{"stop-all", "SESSION WORKFLOW [--mode DRAIN|CANCEL|KILL]", "stop every active execution of a workflow", runStopAll},
		{"inputs", "[SESSION] [--all] [--execution ID]", "inputs that INPUT_REQUEST nodes are waiting for", runInputs},
		{"answer", "INPUT_ID JSON", `answer an input (approvals: {"approved": true, "comment": "…"})`, runAnswer},
		{"supervisors", "apply FILE [--id SUPERVISOR] | list | show SUPERVISOR | delete SUPERVISOR | credential create SUPERVISOR [--ttl-hours N] [--allow CIDR]... | credential show|revoke SUPERVISOR", "create or replace a supervisor from a JSON document (FILE - reads stdin), list them,\n      print one's document (secret settings read ***; apply it again to keep them), or delete one;\n      issue or rotate its agent API credential (the token is printed once), show its metadata, or revoke it", runSupervisors},
		{"approvals", "list [--status S] [--limit N] | show ID | approve ID [--reason R] | reject ID [--reason R]", "commands supervisors hold for review: list those waiting for an ADMIN's approval (--status ALL:\n      every review), show one with its steps, or approve (apply it) or reject (refuse it) one", runApprovals},
		{"journal", "export SESSION EXECUTION | verify FILE --public-key KEY", "export an execution's journal (NDJSON, to stdout), or verify an export offline\n      (no server needed; exit 0 VALID, 1 INVALID, 3 UNANCHORED)", runJournal},
	}
}

// Usage is the client part of `yukta help`.
func Usage() string {
	var b strings.Builder
	for _, c := range commands {
		fmt.Fprintf(&b, "  yukta %s %s\n      %s\n", c.name, c.args, c.summary)
	}
	fmt.Fprintf(&b, "\nClient commands take --server URL (or YUKTA_SERVER; default %s) and send\nYUKTA_API_KEY, when set, as a bearer token. yukta COMMAND -h shows a command's flags.\n", DefaultServer)
	return b.String()
}

// Run runs one client command and returns the process exit code: 0 on
// success, 1 when the server refused or could not be reached (and, for run
// --watch, when the execution FAILED), 2 on bad arguments (and, for run
// --watch, when the execution was STOPPED).
func Run(ctx context.Context, cmd string, args []string, stdout, stderr io.Writer, getenv func(string) string) int {
	if getenv == nil {
		getenv = func(string) string { return "" }
	}
	for _, c := range commands {
		if c.name == cmd {
			e := &env{ctx: ctx, name: "yukta " + c.name, cmd: c, stdout: stdout, stderr: stderr, getenv: getenv}
			return c.run(e, args)
		}
	}
	fmt.Fprintf(stderr, "yukta: unknown client command %q\n\n%s", cmd, Usage())
	return exitUsage
}

// env is what one command runs with.
type env struct {
	ctx            context.Context
	name           string // "yukta apply"
	cmd            command
	stdout, stderr io.Writer
	getenv         func(string) string
	server         string // base URL, without a trailing slash
	api            *apiclient.ClientWithResponses
}

// flags returns the command's flag set with --server already on it.
func (e *env) flags() *flag.FlagSet {
	fs := flag.NewFlagSet(e.name, flag.ContinueOnError)
	fs.SetOutput(e.stderr)
	fs.StringVar(&e.server, "server", "", "Yukta server URL (default $YUKTA_SERVER or "+DefaultServer+")")
	fs.Usage = func() {
		summary := strings.ReplaceAll(e.cmd.summary, "\n      ", "\n  ")
		fmt.Fprintf(fs.Output(), "Usage: %s %s\n  %s\n\nFlags:\n", e.name, e.cmd.args, summary)
		fs.PrintDefaults()
	}
	return fs
}

// parse parses flags placed anywhere among the positional arguments (the
// flag package alone stops at the first positional) and checks their count.
// It returns the positionals and, when it returns ok=false, the exit code.
func (e *env) parse(fs *flag.FlagSet, args []string, min, max int) (pos []string, code int, ok bool) {
	for {
		if err := fs.Parse(args); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				return nil, exitOK, false
			}
			return nil, exitUsage, false
		}
		rest := fs.Args()
		if used := len(args) - len(rest); used > 0 && args[used-1] == "--" {
			pos = append(pos, rest...)
			break
		}
		if len(rest) == 0 {
			break
		}
		pos, args = append(pos, rest[0]), rest[1:]
	}
	if len(pos) < min || max >= 0 && len(pos) > max {
		what := "too many arguments"
		if len(pos) < min {
			what = "missing arguments"
		}
		fmt.Fprintf(e.stderr, "%s: %s\nUsage: %s %s\n", e.name, what, e.name, e.cmd.args)
		return nil, exitUsage, false
	}
	if err := e.connect(); err != nil {
		fmt.Fprintf(e.stderr, "%s: %v\n", e.name, err)
		return nil, exitUsage, false
	}
	return pos, exitOK, true
}

// usageError reports a bad argument and returns the usage exit code.
func (e *env) usageError(format string, a ...any) int {
	fmt.Fprintf(e.stderr, "%s: %s\nUsage: %s %s\n", e.name, fmt.Sprintf(format, a...), e.name, e.cmd.args)
	return exitUsage
}

// connect builds the generated client for the chosen server.
func (e *env) connect() error {
	raw := e.server
	if raw == "" {
		raw = e.getenv("YUKTA_SERVER")
	}
	if raw == "" {
		raw = DefaultServer
	}
	if !strings.Contains(raw, "://") {
		raw = "http://" + raw
	}
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return fmt.Errorf("server URL %q is not an http(s) URL such as %s", raw, DefaultServer)
	}
	e.server = strings.TrimSuffix(u.String(), "/")
	opts := []apiclient.ClientOption{apiclient.WithHTTPClient(&http.Client{Transport: transport()})}
	if key := strings.TrimSpace(e.getenv("YUKTA_API_KEY")); key != "" {
		opts = append(opts, apiclient.WithRequestEditorFn(func(_ context.Context, req *http.Request) error {
			req.Header.Set("Authorization", "Bearer "+key)
			return nil
		}))
	}
	opts = append(opts, apiclient.WithRequestEditorFn(func(_ context.Context, req *http.Request) error {
		req.Header.Set("User-Agent", "yukta-cli")
		return nil
	}))
	e.api, err = apiclient.NewClientWithResponses(e.server, opts...)
	return err
}

// transport bounds connecting and waiting for an answer's headers (commands
// wait at most 60 s on the server), but not reading a body: event streams
// stay open as long as the run does.
func transport() http.RoundTripper {
	t := http.DefaultTransport.(*http.Transport).Clone()
	t.DialContext = (&net.Dialer{Timeout: 10 * time.Second, KeepAlive: 30 * time.Second}).DialContext
	t.ResponseHeaderTimeout = 90 * time.Second
	return t
}

// callError reports an error the client returned (no HTTP answer, or an
// answer it could not read) and returns the exit code.
func (e *env) callError(err error) int {
	if e.ctx.Err() != nil {
		fmt.Fprintf(e.stderr, "%s: interrupted\n", e.name)
		return exitFailed
	}
	var ue *url.Error
	if errors.As(err, &ue) {
		fmt.Fprintf(e.stderr, "%s: cannot reach the Yukta server at %s: %v\n", e.name, e.server, ue.Err)
		fmt.Fprintf(e.stderr, "%s: start one with `yukta serve`, or point --server (or YUKTA_SERVER) at a running server\n", e.name)
		return exitFailed
	}
	fmt.Fprintf(e.stderr, "%s: reading the answer of %s: %v\n", e.name, e.server, err)
	return exitFailed
}

// problem reports a non-success answer, an RFC 9457 problem when the server
// sent one, and returns the exit code.
func (e *env) problem(res *http.Response, body []byte) int {
	p, ok := decodeProblem(res, body)
	if !ok {
		status, ct := 0, ""
		if res != nil {
			status, ct = res.StatusCode, res.Header.Get("Content-Type")
		}
		fmt.Fprintf(e.stderr, "%s: unexpected answer from %s: %d %s (%s)", e.name, e.server, status, http.StatusText(status), ct)
		if s := strings.TrimSpace(string(body)); s != "" {
			fmt.Fprintf(e.stderr, ": %s", escape(truncate(s, 200)))
		}
		fmt.Fprintf(e.stderr, "\n%s: is %s a Yukta server?\n", e.name, e.server)
		return exitFailed
	}
	msg := p.Title
	if p.Detail != nil && *p.Detail != "" {
		msg = *p.Detail
	}
	fmt.Fprintf(e.stderr, "%s: %d %s: %s\n", e.name, p.Status, p.Title, escape(msg))
	if p.Errors != nil {
		for _, v := range *p.Errors {
			fmt.Fprintf(e.stderr, "%s: %s\n", escape(v.Path), escape(v.Message))
		}
	}
	return exitFailed
}

func decodeProblem(res *http.Response, body []byte) (apiclient.Problem, bool) {
	var p apiclient.Problem
	if res == nil || !strings.Contains(res.Header.Get("Content-Type"), "json") {
		return p, false
	}
	if err := jsonUnmarshal(body, &p); err != nil || p.Title == "" && p.Detail == nil {
		return p, false
	}
	if p.Status == 0 {
		p.Status = res.StatusCode
	}
	return p, true
}

// isTerminal reports whether w is a terminal that can take cursor movements.
func isTerminal(w io.Writer, getenv func(string) string) bool {
	f, ok := w.(*os.File)
	if !ok || getenv("TERM") == "dumb" {
		return false
	}
	fi, err := f.Stat()
	return err == nil && fi.Mode()&os.ModeCharDevice != 0
}

func ptr[T any](v T) *T { return &v }

func deref[T any](p *T) T {
	var zero T
	if p == nil {
		return zero
	}
	return *p
}
