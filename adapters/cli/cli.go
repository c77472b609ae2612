// Package cli is the yukta command-line client: apply a session file, start a
// run and watch its nodes, read status and logs, control executions and
// nodes, answer inputs, apply, list, show and delete supervisors, and list
// and decide approvals, list and show sessions, plugins, workflows and runs.
// Every call goes through the client generated from api/openapi.yaml; the
// command tree is cobra's (flags, help, shell completion). Output is plain
// lines (`key: value` or aligned tables) so that it stays stable and easy to
// grep, or, with -o json|jsonl on read commands, the server's JSON answer.
package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/yukta/yukta/api/apiclient"
)

// DefaultServer is where the client looks when neither --server nor
// YUKTA_SERVER says otherwise.
const DefaultServer = "http://127.0.0.1:8080"

// Exit codes, documented in docs/cli.md. Scripts tell a refusal from a run
// that ended badly from a typo without reading the output.
const (
	exitOK          = 0   // done
	exitFailed      = 1   // the server refused (an error answer), a local error, journal verify INVALID
	exitUsage       = 2   // bad arguments or flags: nothing was sent
	exitUnanchored  = 3   // journal verify: the chain holds but no valid checkpoint vouches for its end
	exitRunFailed   = 4   // run --watch: the execution ended FAILURE
	exitStopped     = 5   // run --watch: the execution ended STOPPED
	exitUnreachable = 6   // no answer: the server could not be reached, or the connection broke
	exitInterrupted = 130 // Ctrl-C while watching or waiting; the execution goes on
)

// channel is the Yukta-Channel header value recorded with every command.
const channel = "cli"

// Run runs one client command (cmd and its args, as typed after `yukta`)
// and returns the process exit code. The tests and tools that call one
// command use it; the binary runs the whole tree through App.
func Run(ctx context.Context, cmd string, args []string, stdout, stderr io.Writer, getenv func(string) string) int {
	return New(ctx, stdout, stderr, getenv).Execute(append([]string{cmd}, args...))
}

// env is what one command runs with.
type env struct {
	ctx            context.Context
	name           string // "yukta supervisors show"
	cmd            *cobra.Command
	stdout, stderr io.Writer
	getenv         func(string) string
	server         string // base URL, without a trailing slash
	output         string // -o: table (or empty), json or jsonl
	api            *apiclient.ClientWithResponses
}

// usageError reports a bad argument, names the help to read, and returns
// the usage exit code.
func (e *env) usageError(format string, a ...any) int {
	fmt.Fprintf(e.stderr, "%s: %s\n", e.name, fmt.Sprintf(format, a...))
	usageHint(e.stderr, e.cmd)
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
		return exitUnreachable
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
	fmt.Fprintf(e.stderr, "%s: %d %s: %s\n", e.name, p.Status, p.Title, escape(cliWords(msg)))
	if p.Errors != nil {
		for _, v := range *p.Errors {
			path := v.Path
			if path == "" {
				path = "(document)"
			}
			fmt.Fprintf(e.stderr, "%s: %s\n", escape(path), escape(cliWords(v.Message)))
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
