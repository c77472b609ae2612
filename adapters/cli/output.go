package cli

import (
	"bytes"
	"encoding/json"
	"fmt"

	"github.com/spf13/cobra"
)

// Output formats of read commands (-o).
const (
	outTable = "table" // today's human output, the default
	outJSON  = "json"  // the server's answer as it sent it, indented
	outJSONL = "jsonl" // a list's items one per line; an object on one line
)

func validOutput(s string) bool { return s == outTable || s == outJSON || s == outJSONL }

// addOutput gives a read command its -o flag.
func addOutput(c *cobra.Command) {
	c.Flags().StringP("output", "o", outTable, "output: table, json (the server's answer, as GET returns it) or jsonl (a list's items, one per line)")
	_ = c.RegisterFlagCompletionFunc("output", cobra.FixedCompletions([]string{outTable, outJSON, outJSONL}, cobra.ShellCompDirectiveNoFileComp))
}

// machine reports whether -o asks for JSON rather than the table.
func (e *env) machine() bool { return e.output == outJSON || e.output == outJSONL }

// emit writes a read answer's body per -o. listKey names the member that
// holds a list answer's items ("executions"); "" for a single object. The
// body is reformatted, never re-encoded, so numbers stay as the server sent
// them and json matches the REST answer exactly.
func (e *env) emit(body []byte, listKey string) int {
	body = bytes.TrimSpace(body)
	if e.output == outJSON {
		var b bytes.Buffer
		if err := json.Indent(&b, body, "", "  "); err != nil {
			return e.badAnswer(err)
		}
		b.WriteByte('\n')
		_, _ = e.stdout.Write(b.Bytes())
		return exitOK
	}
	if listKey == "" {
		return e.emitLine(body)
	}
	var list map[string]json.RawMessage
	if err := json.Unmarshal(body, &list); err != nil {
		return e.badAnswer(err)
	}
	var items []json.RawMessage
	if err := json.Unmarshal(list[listKey], &items); err != nil {
		return e.badAnswer(fmt.Errorf("%q is not a list: %w", listKey, err))
	}
	for _, it := range items {
		if code := e.emitLine(it); code != exitOK {
			return code
		}
	}
	return exitOK
}

// emitLine writes one JSON value compacted on one line.
func (e *env) emitLine(v []byte) int {
	var b bytes.Buffer
	if err := json.Compact(&b, v); err != nil {
		return e.badAnswer(err)
	}
	b.WriteByte('\n')
	_, _ = e.stdout.Write(b.Bytes())
	return exitOK
}

func (e *env) badAnswer(err error) int {
	fmt.Fprintf(e.stderr, "%s: the answer of %s is not JSON: %v\n", e.name, e.server, err)
	return exitFailed
}
