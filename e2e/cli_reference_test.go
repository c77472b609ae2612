package e2e

import (
	"os"
	"regexp"
	"strings"
	"testing"
)

// TestCLIReferenceMatchesHelp keeps the command table of docs/cli.md true
// to the binary: every flag a row names is a flag of that command's -h, and
// a flag the -h usage line requires (outside [ ]) is not shown optional.
// (`yukta serve` has its own flag set, documented in configuration.md.)
func TestCLIReferenceMatchesHelp(t *testing.T) {
	t.Parallel()
	raw, err := os.ReadFile("../docs/cli.md")
	if err != nil {
		t.Fatal(err)
	}
	rows := cliReferenceRows(string(raw))
	if len(rows) < 30 {
		t.Fatalf("docs/cli.md: found %d command rows, want the whole table", len(rows))
	}
	for _, r := range rows {
		if strings.HasPrefix(r.usage, "yukta serve ") {
			continue // its own flag set, the table of docs/configuration.md
		}
		for _, p := range cliReferenceProblems(t, r.usage) {
			t.Errorf("docs/cli.md:%d `%s`: %s", r.line, r.usage, p)
		}
	}
}

type cliRow struct {
	line  int
	usage string
}

var (
	cliRowRe  = regexp.MustCompile("^\\| `(yukta [^`]+)`")
	cliFlagRe = regexp.MustCompile(`--[a-z][a-z-]*`)
	cliWordRe = regexp.MustCompile(`^[a-z][a-z-]*(\|[a-z-]+)*$`)
)

// cliReferenceRows returns the command rows of docs/cli.md's tables.
func cliReferenceRows(text string) []cliRow {
	var out []cliRow
	for i, l := range strings.Split(text, "\n") {
		if m := cliRowRe.FindStringSubmatch(l); m != nil {
			out = append(out, cliRow{line: i + 1, usage: m[1]})
		}
	}
	return out
}

// cliReferenceProblems compares one row's usage with the binary's help.
func cliReferenceProblems(t *testing.T, usage string) []string {
	t.Helper()
	var words []string
	for _, w := range strings.Fields(usage)[1:] {
		if !cliWordRe.MatchString(w) {
			break
		}
		words = append(words, strings.Split(w, "|")[0])
	}
	// The longest run of words that is a command: `completion bash` is the
	// command completion with the argument bash.
	var help, path string
	for n := len(words); n >= 1; n-- {
		path = "yukta " + strings.Join(words[:n], " ")
		out := yukta(t, "http://127.0.0.1:1", append(append([]string{}, words[:n]...), "-h")...)
		if _, rest, ok := strings.Cut(out.stdout, "Usage:\n  "); ok && out.code == 0 && strings.HasPrefix(rest, path) {
			help = out.stdout
			break
		}
	}
	if help == "" {
		return []string{"no command of the binary prints its usage for it (yukta … -h)"}
	}
	_, usageLine, _ := strings.Cut(help, "Usage:\n  ")
	usageLine, _, _ = strings.Cut(usageLine, "\n")
	var problems []string
	for _, f := range cliFlagRe.FindAllString(usage, -1) {
		if !regexp.MustCompile(`(?m)^\s+(-\w, )?` + regexp.QuoteMeta(f) + `\b`).MatchString(help) {
			problems = append(problems, f+" is not a flag of `"+path+" -h`")
		}
	}
	for _, f := range cliFlagRe.FindAllString(outsideBrackets(usageLine), -1) {
		if strings.Contains(usage, f) && !strings.Contains(outsideBrackets(usage), f) {
			problems = append(problems, f+" is shown optional, but `"+path+" -h` requires it: "+usageLine)
		}
	}
	return problems
}

// outsideBrackets is s without its [ … ] parts.
func outsideBrackets(s string) string {
	var b strings.Builder
	depth := 0
	for _, r := range s {
		switch {
		case r == '[':
			depth++
		case r == ']' && depth > 0:
			depth--
		case depth == 0:
			b.WriteRune(r)
		}
	}
	return b.String()
}
