package e2e

// The examples of README.md, docs/*.md and docs/adr/*.md are run here, so
// the docs cannot drift from the binary. TestDocExamples finds every fenced
// block, logs what it does with each, and fails on a block it neither runs
// nor finds marked as not runnable (with a reason).
//
// The convention, for authors (also in docs/architecture.md, "Examples in
// the docs are tests"): an HTML comment on the lines just before a fence
// says what the block is. Blank lines may stand between the comment and
// the fence; nothing else may.
//
//	<!-- example: run -->             a shell block (sh, bash, console): run it
//	<!-- example: run fails -->       run it; it must exit non-zero (a refusal shown on purpose)
//	<!-- example: output -->          the answer of the last block run before it, compared loosely;
//	                                  with lines before its -->, the answer of those lines (unseen)
//	<!-- example: session -->         a session document (JSON or YAML): `yukta apply` must take it
//	<!-- example: supervisor -->      a supervisor document: `yukta supervisors apply` must take it
//	<!-- example: rules -->           a rule document: applied as a rules supervisor's settings
//	<!-- example: json -->            JSON (or JSON lines) that is not sent anywhere: it must parse
//	<!-- example: signal -->          signal lines: valid by docs/process-supervisor.schema.json
//	<!-- example: tested-by TestX --> run by the named test, which reads the block itself
//	<!-- example: not run — REASON --> not runnable; the reason is required
//
// `session` and `supervisor` take `id=ID` when the document names no id.
// A `run` comment may go on for more lines before its `-->`: those lines
// are shell run just before the block, unseen by the reader (a fresh run to
// act on, say). A mermaid block is a diagram and never run; every other
// block needs a comment, shell blocks too (so that a command written for
// the reader's machine, a reload or an install, is never run unasked).
//
// How a shell block runs: bash -euo pipefail, in a scratch directory that
// links the repository's top-level folders (examples/, deploy/, …), against
// one server per document (a fresh database). The shell's variables and
// functions carry from one block of a document to the next, as a reader's
// terminal would. The docs' address (http://127.0.0.1:8080, localhost:8080)
// is replaced by the server's; a placeholder <name> is the shell variable
// $name (set by an earlier block or a hidden set-up); `yukta`, `./yukta`
// and `go run .` are the binary built for the test (any other go command
// is refused: mark such a block not run); YUKTA_SERVER points at the server. A
// console block runs its "$ " lines ("…" in them is a filled-in value) and
// its other lines are the output it must print, by the loose rule below.
// curl fails on an HTTP error (--fail-with-body), and a stream (-N) is cut
// after a few seconds. A document with the comment `<!-- examples: keys -->`
// gets a server with the access tests' key file, and YUKTA_API_KEY (ADMIN),
// KEY, ADMIN_KEY, OPERATOR_KEY and VIEWER_KEY in the shell; without it the
// server is open (no keys), as `yukta serve` on loopback is, and those
// variables are empty. `<!-- examples: env NAME=VALUE … -->` gives the
// document's server those settings (say, a process supervisor's command
// allowed).
//
// The loose rule for `output`: when the sample is JSON (one value or JSON
// lines), the last JSON values the block printed must have its shape: every
// member of a sample object is there with a value of the same JSON type
// (objects recursively, arrays by their first item), and a "status" member
// has the same value. Otherwise each non-blank line of the sample must be
// found in the output, "…" (and a word cut with it, such as 01a2f3c4-…)
// standing for any text.

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"syscall"
	"testing"
	"time"

	sjs "github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/yukta/yukta/adapters/postgres/pgtest"
)

// docBlockTimeout bounds one block (its hidden set-up included).
const docBlockTimeout = 60 * time.Second

// docOpenKey is what the key variables hold for a server without keys:
// set (so "$YUKTA_API_KEY" is no unbound variable) but empty (so a
// `yukta serve` in a block sees no key).
const docOpenKey = ""

// docStreamSeconds is how long a streaming curl (-N) of an example reads.
const docStreamSeconds = 3

// docFiles are the Markdown files whose examples are run, relative to the
// repository root.
func docFiles(t testing.TB) []string {
	t.Helper()
	files := []string{"README.md"}
	for _, pat := range []string{"docs/*.md", "docs/adr/*.md"} {
		m, err := filepath.Glob(filepath.Join("..", pat))
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range m {
			files = append(files, strings.TrimPrefix(filepath.ToSlash(f), "../"))
		}
	}
	sort.Strings(files[1:])
	return files
}

// docBlock is one fenced block of a Markdown file.
type docBlock struct {
	File  string // relative to the repository root
	Line  int    // the line of the opening fence, from 1
	Info  string // the fence's info string (sh, json, …)
	Body  string
	Mark  string // the comment's kind: run, output, session, …; "" without a comment
	Args  string // the rest of the comment's first line
	Setup string // the comment's further lines (run only)
}

func (b docBlock) where() string { return fmt.Sprintf("%s:%d (```%s)", b.File, b.Line, b.Info) }

var (
	fenceRe   = regexp.MustCompile("^(\\s*)(```+|~~~+)\\s*([^`\\s]*)")
	exampleRe = regexp.MustCompile(`^<!--\s*example:\s*([a-z-]+)\s*(.*?)\s*$`)
)

// parseDocBlocks returns the fenced blocks of a Markdown text with the
// example comment before each.
func parseDocBlocks(file, text string) ([]docBlock, error) {
	lines := strings.Split(text, "\n")
	var out []docBlock
	for i := 0; i < len(lines); i++ {
		m := fenceRe.FindStringSubmatch(lines[i])
		if m == nil {
			continue
		}
		indent, fence := m[1], m[2]
		b := docBlock{File: file, Line: i + 1, Info: m[3]}
		var body []string
		j := i + 1
		for ; j < len(lines); j++ {
			if strings.HasPrefix(strings.TrimSpace(lines[j]), fence) && strings.TrimSpace(strings.TrimLeft(strings.TrimSpace(lines[j]), fence[:1])) == "" {
				break
			}
			body = append(body, strings.TrimPrefix(lines[j], indent))
		}
		if j == len(lines) {
			return nil, fmt.Errorf("%s: the block is not closed", b.where())
		}
		b.Body = strings.Join(body, "\n") + "\n"
		if err := b.readComment(lines[:i]); err != nil {
			return nil, err
		}
		out = append(out, b)
		i = j
	}
	return out, nil
}

// readComment reads the example comment that ends on the last non-blank
// line of before, if there is one.
func (b *docBlock) readComment(before []string) error {
	end := len(before) - 1
	for end >= 0 && strings.TrimSpace(before[end]) == "" {
		end--
	}
	if end < 0 || !strings.HasSuffix(strings.TrimSpace(before[end]), "-->") {
		return nil
	}
	start := end
	for start >= 0 && !strings.Contains(before[start], "<!--") {
		start--
	}
	if start < 0 {
		return nil
	}
	comment := strings.Join(before[start:end+1], "\n")
	comment = strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(comment), "-->"))
	first, rest, _ := strings.Cut(comment, "\n")
	m := exampleRe.FindStringSubmatch(strings.TrimSpace(first))
	if m == nil {
		if strings.Contains(first, "example") {
			return fmt.Errorf("%s: the comment before it, %q, is not <!-- example: KIND … -->", b.where(), first)
		}
		return nil
	}
	b.Mark, b.Args, b.Setup = m[1], m[2], rest
	if b.Mark == "not" {
		b.Mark, b.Args = "not run", strings.TrimSpace(strings.TrimPrefix(m[2], "run"))
	}
	return nil
}

// notRunReason is the reason of a "not run" mark, without its dash.
func (b docBlock) notRunReason() string {
	return strings.TrimSpace(strings.TrimLeft(b.Args, "—–-: "))
}

// kind is what the harness does with the block, or an error naming the
// block and what to add.
func (b docBlock) kind() (string, error) {
	switch b.Mark {
	case "":
		// A shell block is not run unmarked either: a command written for
		// a reader's machine (a reload, a kill, an install) must not run on
		// the test's by default.
		if b.Info == "mermaid" {
			return "diagram", nil
		}
		return "", fmt.Errorf("%s is neither run nor marked: put <!-- example: KIND --> before it "+
			"(run, output, session, supervisor, rules, json, signal, tested-by TestName, or \"not run — REASON\"; see docs/architecture.md)", b.where())
	case "run", "output", "session", "supervisor", "rules", "json", "signal":
		if b.Setup != "" && b.Mark != "run" && b.Mark != "output" {
			return "", fmt.Errorf("%s: only a run or output comment may hold shell lines", b.where())
		}
		return b.Mark, nil
	case "tested-by":
		if !regexp.MustCompile(`^Test\w+$`).MatchString(b.Args) {
			return "", fmt.Errorf("%s: tested-by needs the test's name (tested-by TestName), got %q", b.where(), b.Args)
		}
		return b.Mark, nil
	case "not run":
		if b.notRunReason() == "" {
			return "", fmt.Errorf("%s: a not run mark needs its reason: <!-- example: not run — why -->", b.where())
		}
		return b.Mark, nil
	}
	return "", fmt.Errorf("%s: unknown example kind %q", b.where(), b.Mark)
}

var (
	docEnvRe  = regexp.MustCompile(`(?m)^<!--\s*examples:\s*env\s+(.*?)\s*-->\s*$`)
	docKeysRe = regexp.MustCompile(`(?m)^<!--\s*examples:\s*keys\s*-->\s*$`)
)

// docServerSettings reads a document's server comments, each a line of
// its own: keys, and the NAME=VALUE settings of every
// <!-- examples: env … -->.
func docServerSettings(text string) (keys bool, env []string) {
	for _, m := range docEnvRe.FindAllStringSubmatch(text, -1) {
		env = append(env, strings.Fields(m[1])...)
	}
	return docKeysRe.MatchString(text), env
}

// docState is one document's run: its server, shell state and the output
// of the last block run.
type docState struct {
	t       *testing.T
	s       *server
	keys    bool
	env     []string // the server's extra settings (<!-- examples: env … -->)
	dir     string   // the scratch directory the blocks run in
	state   string   // the shell's variables and functions between blocks
	bin     string   // holds yukta
	last    string   // stdout of the last block run
	lastRun string   // where() of that block
}

func newDocState(t *testing.T, keys bool) *docState {
	t.Helper()
	d := &docState{t: t, keys: keys, dir: t.TempDir()}
	d.state = filepath.Join(t.TempDir(), "state.sh")
	d.bin = t.TempDir()
	if err := os.Symlink(binary(t), filepath.Join(d.bin, "yukta")); err != nil {
		t.Fatal(err)
	}
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	// ./yukta, as after `go build -o yukta .`, is the test's binary too.
	if err := os.Symlink(binary(t), filepath.Join(d.dir, "yukta")); err != nil {
		t.Fatal(err)
	}
	entries, err := os.ReadDir(root)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if e.IsDir() && !strings.HasPrefix(e.Name(), ".") {
			if err := os.Symlink(filepath.Join(root, e.Name()), filepath.Join(d.dir, e.Name())); err != nil {
				t.Fatal(err)
			}
		}
	}
	return d
}

// server starts the document's server on first use.
func (d *docState) server() *server {
	if d.s == nil {
		env := append([]string(nil), d.env...)
		if d.keys {
			env = append(env, "YUKTA_API_KEYS="+writeKeyFile(d.t))
		}
		d.s = startServer(d.t, serverOptions{DSN: pgtest.NewDatabase(d.t), Env: env})
	}
	return d.s
}

// docShellPrelude runs before every block: the wrappers that make the
// docs' commands reach the test's server and fail on HTTP errors.
const docShellPrelude = `
go() {
  if [ "${1:-}" = run ] && [ "${2:-}" = . ]; then shift 2; yukta "$@"; return; fi
  echo "docs test: only 'go run . ARGS' (the built binary) is run, not: go $*" >&2; return 127
}
curl() {
  local a stream=
  for a in "$@"; do case "$a" in --no-buffer|-[a-zA-Z]*N*) stream=1;; esac; done
  if [ -n "$stream" ]; then
    local rc=0; command curl --fail-with-body --max-time ` + "%d" + ` "$@" || rc=$?
    [ "$rc" = 28 ] && return 0; return "$rc"
  fi
  command curl --fail-with-body --max-time 60 "$@"
}
`

var placeholderRe = regexp.MustCompile(`<([A-Za-z][A-Za-z0-9_]*)>`)

// shellText is a block's text as the harness runs it.
func (d *docState) shellText(text string) string {
	u := d.server().URL
	hostPort := strings.TrimPrefix(u, "http://")
	text = strings.NewReplacer("http://127.0.0.1:8080", u, "http://localhost:8080", u,
		"127.0.0.1:8080", hostPort, "localhost:8080", hostPort).Replace(text)
	text = placeholderRe.ReplaceAllString(text, "${$1}")
	return text
}

// consoleOutput returns the lines of a console block that are not
// commands: the output it shows.
func consoleOutput(b docBlock) string {
	if b.Info != "console" {
		return ""
	}
	var out []string
	for l := range strings.Lines(b.Body) {
		if !strings.HasPrefix(l, "$ ") {
			out = append(out, l)
		}
	}
	return strings.Join(out, "")
}

// docConsoleValue stands for "…" in a console block's command (a value
// the reader fills in).
const docConsoleValue = "docs-example-value-0123456789abcdef"

// consoleCommands returns the commands of a console block (its "$ " lines).
func consoleCommands(body string) string {
	var cmds []string
	for l := range strings.Lines(body) {
		if c, ok := strings.CutPrefix(l, "$ "); ok {
			cmds = append(cmds, strings.ReplaceAll(strings.TrimRight(c, "\n"), "…", docConsoleValue))
		}
	}
	return strings.Join(cmds, "\n") + "\n"
}

// runShell runs a block (and its set-up) in the document's shell; it
// returns the output and an error when the exit status is not the one
// wanted.
func (d *docState) runShell(b docBlock) (string, error) {
	s := d.server()
	body := b.Body
	if b.Info == "console" {
		body = consoleCommands(body)
	}
	script := "set -a\n[ -f \"$DOC_STATE\" ] && . \"$DOC_STATE\"\n" + fmt.Sprintf(docShellPrelude, docStreamSeconds) +
		"set -euo pipefail\ncd \"$DOC_DIR\"\n" +
		d.shellText(b.Setup) + "\n" + d.shellText(body) + "\n{ export -p; declare -f; } > \"$DOC_STATE\"\n"
	file := filepath.Join(d.t.TempDir(), "block.sh")
	if err := os.WriteFile(file, []byte(script), 0o600); err != nil {
		return "", err
	}
	ctx, cancel := context.WithTimeout(context.Background(), docBlockTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, "bash", file)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = 5 * time.Second
	home := d.t.TempDir()
	cmd.Env = []string{"PATH=" + d.bin + ":" + os.Getenv("PATH"), "HOME=" + home, "DOC_STATE=" + d.state, "DOC_DIR=" + d.dir,
		"YUKTA_SERVER=" + s.URL, "LANG=C.UTF-8"}
	admin, operator, viewer := docOpenKey, docOpenKey, docOpenKey
	if d.keys {
		admin, operator, viewer = testKeys["admin"], testKeys["operator"], testKeys["viewer"]
	}
	cmd.Env = append(cmd.Env, "YUKTA_API_KEY="+admin, "KEY="+admin, "ADMIN_KEY="+admin, "OPERATOR_KEY="+operator, "VIEWER_KEY="+viewer)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	// Whatever the block left running in its process group ends with it.
	if cmd.Process != nil {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	}
	out := stdout.String()
	shown := fmt.Sprintf("--- stdout\n%s--- stderr\n%s", out, stderr.String())
	wantFail := strings.Contains(" "+b.Args+" ", " fails ")
	switch {
	case ctx.Err() != nil:
		return out, fmt.Errorf("did not finish within %s\n%s", docBlockTimeout, shown)
	case err != nil && !wantFail:
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			return out, fmt.Errorf("exit %d\n%s", ee.ExitCode(), shown)
		}
		return out, err
	case err == nil && wantFail:
		// The state is saved only by a block that gets to its end.
		return out, fmt.Errorf("exit 0, but the block is marked `run fails`\n%s", shown)
	}
	return out + stderr.String(), nil
}

// apply sends a session or supervisor document with the CLI.
func (d *docState) apply(b docBlock) error {
	s := d.server()
	ext := ".json"
	if b.Info == "yaml" || b.Info == "yml" {
		ext = ".yaml"
	}
	file := filepath.Join(d.t.TempDir(), "doc"+ext)
	if err := os.WriteFile(file, []byte(b.Body), 0o600); err != nil {
		return err
	}
	args := []string{"apply", file}
	if b.Mark == "supervisor" {
		args = []string{"supervisors", "apply", file}
	}
	if id, ok := strings.CutPrefix(b.Args, "id="); ok {
		args = append(args, "--id", id)
	}
	out := d.cli(s, args...)
	if out.code != 0 {
		return fmt.Errorf("yukta %s refused it:\n%s", strings.Join(args[:len(args)-1], " "), out)
	}
	return nil
}

// applyRules applies a rule document as the settings of a rules
// supervisor that owns nothing but its own session.
func (d *docState) applyRules(b docBlock) error {
	var settings json.RawMessage
	if err := json.Unmarshal([]byte(b.Body), &settings); err != nil {
		return fmt.Errorf("not JSON: %v", err)
	}
	doc, _ := json.Marshal(map[string]any{"name": "docs example", "owns": []string{"session:docs-rules"},
		"engine": map[string]any{"type": "rules", "settings": settings}})
	return d.apply(docBlock{File: b.File, Line: b.Line, Info: "json", Body: string(doc), Mark: "supervisor", Args: fmt.Sprintf("id=rules-%d", b.Line)})
}

func (d *docState) cli(s *server, args ...string) cliOut {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, binary(d.t), args...)
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + os.TempDir(), "YUKTA_SERVER=" + s.URL}
	if d.keys {
		cmd.Env = append(cmd.Env, "YUKTA_API_KEY="+testKeys["admin"])
	}
	var stdout, stderr strings.Builder
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	out := cliOut{stdout: stdout.String(), stderr: stderr.String()}
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		out.code = ee.ExitCode()
	} else if err != nil {
		out.code, out.stderr = -1, err.Error()
	}
	return out
}

// jsonValues decodes a sequence of JSON values (JSON lines included); ok
// is false when text is not only JSON.
func jsonValues(text string) (vals []any, ok bool) {
	dec := json.NewDecoder(strings.NewReader(text))
	dec.UseNumber()
	for {
		var v any
		err := dec.Decode(&v)
		if err == io.EOF {
			return vals, len(vals) > 0
		}
		if err != nil {
			return nil, false
		}
		vals = append(vals, v)
	}
}

// jsonValuesIn decodes the JSON values of an output, skipping lines that
// are not JSON.
func jsonValuesIn(text string) []any {
	if v, ok := jsonValues(text); ok {
		return v
	}
	var out []any
	for l := range strings.Lines(text) {
		if v, ok := jsonValues(l); ok {
			out = append(out, v...)
		}
	}
	return out
}

// sameShape reports the first way got differs from the sample want, by
// the loose rule: members and JSON types, and equal "status" values.
func sameShape(path string, want, got any) error {
	switch w := want.(type) {
	case map[string]any:
		g, ok := got.(map[string]any)
		if !ok {
			return fmt.Errorf("%s: the sample has an object, the output %s", path, docJSONType(got))
		}
		keys := make([]string, 0, len(w))
		for k := range w {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			gv, ok := g[k]
			if !ok {
				return fmt.Errorf("%s.%s: in the sample, not in the output", path, k)
			}
			if k == "status" && fmt.Sprint(w[k]) != fmt.Sprint(gv) {
				return fmt.Errorf("%s.status: the sample says %v, the output %v", path, w[k], gv)
			}
			if err := sameShape(path+"."+k, w[k], gv); err != nil {
				return err
			}
		}
		return nil
	case []any:
		g, ok := got.([]any)
		if !ok {
			return fmt.Errorf("%s: the sample has an array, the output %s", path, docJSONType(got))
		}
		if len(w) > 0 && len(g) > 0 {
			return sameShape(path+"[0]", w[0], g[0])
		}
		if len(w) > 0 {
			return fmt.Errorf("%s: the sample's array has items, the output's is empty", path)
		}
		return nil
	}
	if docJSONType(want) != docJSONType(got) {
		return fmt.Errorf("%s: the sample has %s, the output %s", path, docJSONType(want), docJSONType(got))
	}
	return nil
}

func docJSONType(v any) string {
	switch v.(type) {
	case map[string]any:
		return "an object"
	case []any:
		return "an array"
	case string:
		return "a string"
	case json.Number, float64:
		return "a number"
	case bool:
		return "a boolean"
	case nil:
		return "null"
	}
	return fmt.Sprintf("%T", v)
}

var docCutWordRe = regexp.MustCompile(`[^\s(]*…[^\s)]*`)

// matchOutput compares a sample with an output by the loose rule.
func matchOutput(sample, output string) error {
	if want, ok := jsonValues(sample); ok {
		got := jsonValuesIn(output)
		if len(got) < len(want) {
			return fmt.Errorf("the sample has %d JSON value(s), the output %d:\n%s", len(want), len(got), output)
		}
		got = got[len(got)-len(want):]
		for i := range want {
			if err := sameShape("$", want[i], got[i]); err != nil {
				return fmt.Errorf("value %d: %v\noutput:\n%s", i+1, err, output)
			}
		}
		return nil
	}
	for l := range strings.Lines(sample) {
		l = strings.TrimSpace(l)
		if l == "" {
			continue
		}
		// A word cut with "…" (an id such as 01a2f3c4-…) stands for any text.
		parts := strings.Split(docCutWordRe.ReplaceAllString(l, "…"), "…")
		for i := range parts {
			parts[i] = regexp.QuoteMeta(strings.TrimSpace(parts[i]))
		}
		if !regexp.MustCompile(strings.Join(parts, ".*")).MatchString(output) {
			return fmt.Errorf("the sample's line %q is not in the output:\n%s", l, output)
		}
	}
	return nil
}

// validSignalLines checks each JSON value of text against the signal line
// of docs/process-supervisor.schema.json (the form the agent API and the
// process engine hand signals in).
func validSignalLines(text string) error {
	raw, err := os.ReadFile("../docs/process-supervisor.schema.json")
	if err != nil {
		return err
	}
	doc, err := sjs.UnmarshalJSON(bytes.NewReader(raw))
	if err != nil {
		return err
	}
	c := sjs.NewCompiler()
	const url = "file:///process-supervisor.schema.json"
	if err := c.AddResource(url, doc); err != nil {
		return err
	}
	schema, err := c.Compile(url + "#/$defs/inputLine")
	if err != nil {
		return err
	}
	dec := json.NewDecoder(strings.NewReader(text))
	n := 0
	for {
		var line json.RawMessage
		if err := dec.Decode(&line); err == io.EOF {
			break
		} else if err != nil {
			return fmt.Errorf("marked signal, but it is not JSON: %v", err)
		}
		v, err := sjs.UnmarshalJSON(bytes.NewReader(line))
		if err != nil {
			return err
		}
		if err := schema.Validate(v); err != nil {
			return fmt.Errorf("not a signal line of docs/process-supervisor.schema.json: %v", err)
		}
		n++
	}
	if n == 0 {
		return errors.New("marked signal, but it holds no JSON")
	}
	return nil
}

// testExists reports whether a test function of that name is in the module.
func testExists(name string) bool {
	for _, pat := range []string{"*_test.go", "../*_test.go", "../*/*_test.go", "../*/*/*_test.go", "../*/*/*/*_test.go"} {
		files, _ := filepath.Glob(pat)
		for _, f := range files {
			b, err := os.ReadFile(f)
			if err == nil && bytes.Contains(b, []byte("func "+name+"(t *testing.T)")) {
				return true
			}
		}
	}
	return false
}

// testedBlocks returns the blocks of a doc (relative to the repository
// root) marked `<!-- example: tested-by NAME -->`, in order: the blocks a
// dedicated test runs itself. It fails unless there are exactly n.
func testedBlocks(t *testing.T, file, name string, n int) []docBlock {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join("..", file))
	if err != nil {
		t.Fatal(err)
	}
	blocks, err := parseDocBlocks(file, string(raw))
	if err != nil {
		t.Fatal(err)
	}
	var out []docBlock
	for _, b := range blocks {
		if b.Mark == "tested-by" && b.Args == name {
			out = append(out, b)
		}
	}
	if len(out) != n {
		t.Fatalf("%s: %d blocks are marked <!-- example: tested-by %s -->, want %d", file, len(out), name, n)
	}
	return out
}

// runDocBlocks runs one document's blocks in order and returns a line per
// block saying what was done, and an error per block that failed (each
// naming file, line and block).
func runDocBlocks(t *testing.T, blocks []docBlock, keys bool, env ...string) (log []string, errs []error) {
	d := newDocState(t, keys)
	d.env = env
	for _, b := range blocks {
		k, err := b.kind()
		if err != nil {
			errs = append(errs, err)
			continue
		}
		note := k
		began := time.Now()
		switch k {
		case "run":
			out, err := d.runShell(b)
			if err != nil {
				errs = append(errs, fmt.Errorf("%s: %v\nthe block:\n%s", b.where(), err, strings.TrimSuffix(b.Setup, "\n")+"\n"+b.Body))
			} else if want := consoleOutput(b); want != "" {
				if err := matchOutput(want, out); err != nil {
					errs = append(errs, fmt.Errorf("%s: the output its lines show differs: %v", b.where(), err))
				}
			}
			d.last, d.lastRun = out, b.where()
		case "output":
			if b.Setup != "" {
				// The command is in the comment: run it unseen, then compare.
				out, err := d.runShell(docBlock{File: b.File, Line: b.Line, Info: "sh", Body: b.Setup})
				if err != nil {
					errs = append(errs, fmt.Errorf("%s: the command of the output sample: %v\nthe command:\n%s", b.where(), err, b.Setup))
					break
				}
				d.last, d.lastRun = out, b.where()+"'s command"
			}
			if d.lastRun == "" {
				errs = append(errs, fmt.Errorf("%s: an output sample with no block run before it", b.where()))
				break
			}
			if err := matchOutput(b.Body, d.last); err != nil {
				errs = append(errs, fmt.Errorf("%s: the output of %s does not match the sample: %v", b.where(), d.lastRun, err))
			}
			note = "output of " + d.lastRun
		case "session", "supervisor":
			if err := d.apply(b); err != nil {
				errs = append(errs, fmt.Errorf("%s: %v", b.where(), err))
			}
		case "rules":
			if err := d.applyRules(b); err != nil {
				errs = append(errs, fmt.Errorf("%s: %v", b.where(), err))
			}
		case "signal":
			if err := validSignalLines(b.Body); err != nil {
				errs = append(errs, fmt.Errorf("%s: %v", b.where(), err))
			}
		case "json":
			if _, ok := jsonValues(b.Body); !ok {
				errs = append(errs, fmt.Errorf("%s: marked json, but it is not JSON (or JSON lines)", b.where()))
			}
		case "tested-by":
			if !testExists(b.Args) {
				errs = append(errs, fmt.Errorf("%s: tested-by %s, but there is no such test", b.where(), b.Args))
			}
			note = "run by " + b.Args
		case "not run":
			note = "not run: " + b.notRunReason()
		case "diagram":
			note = "not run: a diagram"
		}
		if took := time.Since(began); took >= 100*time.Millisecond {
			note += fmt.Sprintf(" (%s)", took.Round(100*time.Millisecond))
		}
		log = append(log, fmt.Sprintf("%s: %s", b.where(), note))
	}
	return log, errs
}

// TestDocExamples runs every example of the docs (see the top of this
// file), one subtest and one server per document.
func TestDocExamples(t *testing.T) {
	t.Parallel()
	for _, tool := range []string{"bash", "curl", "jq", "openssl"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Fatalf("the docs' examples need %s (apt-get install %s): %v", tool, tool, err)
		}
	}
	for _, f := range docFiles(t) {
		raw, err := os.ReadFile(filepath.Join("..", f))
		if err != nil {
			t.Fatal(err)
		}
		blocks, err := parseDocBlocks(f, string(raw))
		if err != nil {
			t.Error(err)
			continue
		}
		if len(blocks) == 0 {
			continue
		}
		keys, env := docServerSettings(string(raw))
		t.Run(f, func(t *testing.T) {
			t.Parallel()
			start := time.Now()
			log, errs := runDocBlocks(t, blocks, keys, env...)
			for _, l := range log {
				t.Log(l)
			}
			for _, err := range errs {
				t.Error(err)
			}
			t.Logf("%s: %d blocks in %s", f, len(blocks), time.Since(start).Round(time.Millisecond))
		})
	}
}

// TestDocExamplesCatchEdits is the harness's own test: real blocks of the
// docs, edited in memory to be wrong, must fail, each error naming the
// file and line of the block; and a block without a mark must fail too.
func TestDocExamplesCatchEdits(t *testing.T) {
	t.Parallel()
	raw, err := os.ReadFile("../docs/cli.md")
	if err != nil {
		t.Fatal(err)
	}
	blocks, err := parseDocBlocks("docs/cli.md", string(raw))
	if err != nil {
		t.Fatal(err)
	}
	var yaml docBlock
	for _, b := range blocks {
		if b.Mark == "session" && b.Info == "yaml" {
			yaml = b
		}
	}
	if yaml.Body == "" {
		t.Fatal("docs/cli.md has no YAML session example to edit")
	}
	edit := func(b docBlock, old, new string) docBlock {
		t.Helper()
		if !strings.Contains(b.Body, old) {
			t.Fatalf("%s lacks %q", b.where(), old)
		}
		b.Body = strings.Replace(b.Body, old, new, 1)
		return b
	}
	run := docBlock{File: "docs/cli.md", Line: 1000, Info: "sh", Mark: "run", Body: "yukta status hello -o json\n"}

	// control.md up to the answer of its first command: the setup, the
	// PAUSE and its answer.
	raw, err = os.ReadFile("../docs/control.md")
	if err != nil {
		t.Fatal(err)
	}
	all, err := parseDocBlocks("docs/control.md", string(raw))
	if err != nil {
		t.Fatal(err)
	}
	var pause []docBlock
	for _, b := range all {
		pause = append(pause, b)
		if b.Mark == "output" {
			break
		}
	}
	if len(pause) < 3 || !strings.Contains(pause[len(pause)-2].Body, `"action":"PAUSE"`) {
		t.Fatalf("docs/control.md does not begin with a PAUSE and its answer: %+v", pause)
	}
	pauseRun, pauseOut := pause[len(pause)-2], pause[len(pause)-1]
	editAt := func(bs []docBlock, i int, old, new string) []docBlock {
		t.Helper()
		out := append([]docBlock(nil), bs...)
		if i < 0 {
			i += len(out)
		}
		out[i] = edit(out[i], old, new)
		return out
	}
	editLast := func(bs []docBlock, old, new string) []docBlock { return editAt(bs, -1, old, new) }
	cases := []struct {
		name   string
		blocks []docBlock
		want   string
	}{
		{"the example as written passes", []docBlock{yaml}, ""},
		{"a session document with an unknown node type", []docBlock{edit(yaml, "type: LOG", "type: LOGG")}, yaml.where() + ": yukta apply refused it"},
		{"a CLI line with a flag that does not exist", []docBlock{yaml, edit(run, "-o json", "--output-as json")}, run.where() + ": exit 2"},
		{"a curl line to a route that does not exist", []docBlock{{File: "docs/x.md", Line: 7, Info: "sh", Mark: "run",
			Body: "curl -s localhost:8080/api/sessionz\n"}}, "docs/x.md:7 (```sh): exit 22"},
		{"control.md as written passes", pause, ""},
		{"control.md's PAUSE answer with a drifted status", editLast(pause, `"status":"applied"`, `"status":"accepted"`),
			pauseOut.where() + ": the output of " + pauseRun.where() + " does not match the sample: value 1: $.status: the sample says accepted"},
		{"control.md's PAUSE answer with a member the answer lacks", editLast(pause, `"resultExecutionIds"`, `"resultExecutions"`),
			pauseOut.where() + ": the output of " + pauseRun.where() + " does not match the sample: value 1: $.resultExecutions: in the sample"},
		{"control.md's PAUSE with an action that does not exist", editAt(pause, -2, `"action":"PAUSE"`, `"action":"PAUZE"`), pauseRun.where() + ": exit 22"},
		{"an output sample whose hidden command answers otherwise", []docBlock{{File: "docs/x.md", Line: 11, Info: "", Mark: "output",
			Setup: "echo 'status: done'", Body: "status: review\n"}}, "docs/x.md:11"},
		{"a block marked run fails that succeeds", []docBlock{{File: "docs/x.md", Line: 9, Info: "sh", Mark: "run", Args: "fails", Body: "true\n"}}, "docs/x.md:9"},
		{"a shell block without a mark", []docBlock{{File: "docs/x.md", Line: 2, Info: "sh", Body: "kill -HUP $(pidof yukta)\n"}}, "docs/x.md:2 (```sh) is neither run nor marked"},
		{"a signal line without its cursor", []docBlock{{File: "docs/x.md", Line: 6, Info: "json", Mark: "signal",
			Body: `{"kind": "EVENT", "signal": {"seq": 1}}`}}, "docs/x.md:6 (```json): not a signal line"},
		{"a JSON block without a mark", []docBlock{{File: "docs/x.md", Line: 3, Info: "json", Body: "{}\n"}}, "docs/x.md:3 (```json) is neither run nor marked"},
		{"a not run mark without a reason", []docBlock{{File: "docs/x.md", Line: 4, Info: "sh", Mark: "not run", Body: "rm -rf /\n"}}, "docs/x.md:4"},
		{"tested-by a test that does not exist", []docBlock{{File: "docs/x.md", Line: 5, Info: "js", Mark: "tested-by", Args: "TestNoSuchThing", Body: "x\n"}}, "docs/x.md:5"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			_, errs := runDocBlocks(t, c.blocks, false)
			if c.want == "" {
				for _, err := range errs {
					t.Errorf("the unedited example failed: %v", err)
				}
				return
			}
			if len(errs) == 0 {
				t.Fatalf("the edited example passed; want an error naming %q", c.want)
			}
			if !strings.HasPrefix(errs[0].Error(), c.want) {
				t.Fatalf("the error does not start with %q:\n%v", c.want, errs[0])
			}
		})
	}

	// The parser reads the marks of a text as authors write them.
	got, err := parseDocBlocks("x.md", "<!-- example: not run — a diagram of ours -->\n\n```text\na\n```\n"+
		"<!-- example: run\nX=1\n-->\n```sh\necho $X\n```\n  ```sh\n  indented\n  ```\n")
	if err != nil || len(got) != 3 || got[0].Mark != "not run" || got[0].notRunReason() != "a diagram of ours" ||
		got[1].Mark != "run" || got[1].Setup != "X=1" || got[1].Line != 9 || got[2].Body != "indented\n" || got[2].Mark != "" {
		t.Fatalf("parsed %+v, %v", got, err)
	}
}

// TestDocServerSettings: only a comment on a line of its own sets up the
// server; one quoted in a sentence or a table (as architecture.md does)
// does not.
func TestDocServerSettings(t *testing.T) {
	t.Parallel()
	keys, env := docServerSettings("# T\n\n<!-- examples: env A=1 B=2 -->\n<!-- examples: keys -->\n")
	if !keys || strings.Join(env, " ") != "A=1 B=2" {
		t.Fatalf("keys %v env %v", keys, env)
	}
	keys, env = docServerSettings("| `<!-- examples: keys -->` | a page with `<!-- examples: env NAME=VALUE … -->` |\n")
	if keys || len(env) != 0 {
		t.Fatalf("quoted comments set keys %v env %v", keys, env)
	}
}

// TestDocOutputRule pins the loose rule for output samples.
func TestDocOutputRule(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		sample, output string
		ok             bool
	}{
		{"review: 01a2f3c4-…\n", "review: 01a23450-44a3-7b29\n", true},
		{"message: held (review 01a2…); it applies\n", "message: held (review 01a23450-44a3); it applies\n", true},
		{"review: 01a2…\n", "reviews: 01a23450\n", false},
		{"deadline: 2026-…\n", "status: review\n", false},
		{`{"status": "applied", "ids": ["…"]}`, `{"status":"applied","ids":["x"],"more":1}`, true},
		{`{"status": "applied"}`, `{"status":"accepted"}`, false},
		{`{"ids": ["…"]}`, `{"ids":[]}`, false},
		{`{"n": 1}`, `{"n":"1"}`, false},
		{"{\"a\": 1}\n{\"b\": 2}\n", "noise\n{\"a\":5}\n{\"b\":6}\n", true},
	} {
		if err := matchOutput(c.sample, c.output); (err == nil) != c.ok {
			t.Errorf("sample %q, output %q: got %v, want ok %v", c.sample, c.output, err, c.ok)
		}
	}
}
