package executionapp

import (
	"errors"
	"regexp/syntax"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/yukta/yukta/domain/fault"
)

func TestCompileFilter(t *testing.T) {
	for _, c := range []struct {
		pattern, match, msg string
	}{
		{"error|warn", "an error here", ""},
		{`(?i)timeout after \d+s`, "Timeout after 30s", ""},
		{"(", "", "Invalid regex pattern"},
		{`\p{Nope}`, "", "Invalid regex pattern"},
		{strings.Repeat("a", MaxPatternLen+1), "", "too long"},
		{"(abc|def|ghi){1,50}x{1,50}", "", "too expensive"},
	} {
		re, err := CompileFilter(c.pattern)
		if c.msg == "" {
			if err != nil || !re.MatchString(c.match) {
				t.Errorf("%q: %v, want it to match %q", c.pattern, err, c.match)
			}
			continue
		}
		ve, ok := errors.AsType[*fault.ValidationError](err)
		if !ok || ve.Violations[0].Path != "filterPattern" || !strings.Contains(ve.Violations[0].Message, c.msg) {
			t.Errorf("%q: %v, want a filterPattern violation saying %q", c.pattern, err, c.msg)
		}
	}
}

// FuzzCompileFilter: any pattern either compiles within the caps, so a
// match costs bounded time, or is refused with a violation that names the
// field; nothing panics.
func FuzzCompileFilter(f *testing.F) {
	for _, s := range []string{"error", "(", "a**", `\Q(\E`, "(?i)x{1000}", "[[:alpha:]]+", "\xff", strings.Repeat("(", 300)} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, pattern string) {
		re, err := CompileFilter(pattern)
		if err != nil {
			ve, ok := errors.AsType[*fault.ValidationError](err)
			if !ok || len(ve.Violations) != 1 || ve.Violations[0].Path != "filterPattern" {
				t.Fatalf("%q: error %v does not name filterPattern", pattern, err)
			}
			return
		}
		if utf8.RuneCountInString(pattern) > MaxPatternLen {
			t.Fatalf("%q: accepted above the length cap", pattern)
		}
		parsed, err := syntax.Parse(pattern, syntax.Perl)
		if err != nil {
			t.Fatalf("%q: accepted but does not parse: %v", pattern, err)
		}
		prog, err := syntax.Compile(parsed.Simplify())
		if err != nil || len(prog.Inst) > MaxPatternInsts {
			t.Fatalf("%q: accepted above the instruction cap", pattern)
		}
		re.MatchString(strings.Repeat("ab", 2048))
	})
}
