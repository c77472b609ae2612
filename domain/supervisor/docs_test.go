package supervisor

import (
	"os"
	"strings"
	"testing"
)

// jsonBlocks returns the ```json blocks of a Markdown file.
func jsonBlocks(t *testing.T, path string) []string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	rest := string(b)
	for {
		_, after, ok := strings.Cut(rest, "```json\n")
		if !ok {
			return out
		}
		block, tail, _ := strings.Cut(after, "```")
		out = append(out, block)
		rest = tail
	}
}

// TestReferenceExamples keeps the examples of docs/supervisors.md valid:
// the supervisor document, the rule document, and the preset documents.
func TestReferenceExamples(t *testing.T) {
	t.Parallel()
	blocks := jsonBlocks(t, "../../docs/supervisors.md")
	var sawSupervisor, sawRules, sawPresets bool
	for _, b := range blocks {
		switch {
		case strings.Contains(b, `"owns"`):
			sawSupervisor = true
			if _, err := Parse([]byte(b), ParseOptions{}); err != nil {
				t.Errorf("supervisor example: %v", err)
			}
		case strings.HasPrefix(b, "{\n  \"schemaVersion\""):
			sawRules = true
			if _, err := ParseRuleDocument([]byte(b), nil); err != nil {
				t.Errorf("rule document example: %v", err)
			}
		case strings.HasPrefix(b, `{"schemaVersion":1`):
			sawPresets = true
			ps, _ := Presets("rules")
			lines := strings.Split(strings.TrimSpace(b), "\n")
			if len(lines) != len(ps) {
				t.Fatalf("preset documents: got %d lines, want %d", len(lines), len(ps))
			}
			for i, p := range ps {
				if lines[i] != p.Document {
					t.Errorf("preset %s:\n doc  %s\n code %s", p.Name, lines[i], p.Document)
				}
			}
		}
	}
	if !sawSupervisor || !sawRules || !sawPresets {
		t.Errorf("examples found: supervisor %v, rules %v, presets %v; want all", sawSupervisor, sawRules, sawPresets)
	}
}
