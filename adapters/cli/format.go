package cli

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"text/tabwriter"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/yukta/yukta/api/apiclient"
	"github.com/yukta/yukta/domain/jsonvalue"
)

// escape makes text from the server safe to print on one line: control
// characters (C0, DEL, C1), tabs, invalid UTF-8 and bidirectional overrides
// are written as escapes, so a log line or prompt cannot forge terminal
// output or split a table row.
func escape(s string) string {
	clean := true
	for _, r := range s {
		if r == utf8.RuneError || unicode.IsControl(r) || isBidi(r) {
			clean = false
			break
		}
	}
	if clean {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size <= 1:
			fmt.Fprintf(&b, `\x%02x`, s[i])
		case r == '\n':
			b.WriteString(`\n`)
		case r == '\r':
			b.WriteString(`\r`)
		case r == '\t':
			b.WriteString(`\t`)
		case r < 0x80 && unicode.IsControl(r):
			fmt.Fprintf(&b, `\x%02x`, r)
		case unicode.IsControl(r) || isBidi(r):
			fmt.Fprintf(&b, `\u%04x`, r)
		default:
			b.WriteString(s[i : i+size])
		}
		i += size
	}
	return b.String()
}

// isBidi reports the invisible characters that reorder displayed text.
func isBidi(r rune) bool {
	return r >= 0x202a && r <= 0x202e || r >= 0x2066 && r <= 0x2069 || r == 0x200e || r == 0x200f || r == 0x061c
}

func truncate(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	r := []rune(s)
	return string(r[:n]) + "…"
}

// orDash writes "-" for an empty cell so that columns stay splittable.
func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func jsonUnmarshal(b []byte, v any) error { return json.Unmarshal(b, v) }

// compactJSON renders a value on one line.
func compactJSON(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	return string(b)
}

// jsonArg reads a JSON argument: inline, @FILE, or - for stdin. It must be
// one strict JSON value (domain/jsonvalue: no U+0000, valid UTF-8, no
// repeated keys, numbers within a double's range), which is what the server
// accepts; it is sent as the exact text given, so 9007199254740993 stays
// 9007199254740993.
func jsonArg(what, s string) (json.RawMessage, error) {
	var raw []byte
	switch {
	case s == "-":
		b, err := io.ReadAll(os.Stdin)
		if err != nil {
			return nil, fmt.Errorf("%s: reading stdin: %w", what, err)
		}
		raw = b
	case strings.HasPrefix(s, "@"):
		b, err := os.ReadFile(s[1:])
		if err != nil {
			return nil, fmt.Errorf("%s: %w", what, err)
		}
		raw = b
	default:
		raw = []byte(s)
	}
	raw = bytes.TrimSpace(raw)
	if err := jsonvalue.Validate(raw, ""); err != nil {
		je, ok := errors.AsType[*jsonvalue.Error](err)
		switch {
		case !ok:
			return nil, fmt.Errorf("%s is not JSON; quote it for the shell, e.g. '{\"name\":\"Ada\"}'", what)
		case jsonvalue.IsSyntax(err) || je.Path == "":
			return nil, fmt.Errorf("%s %s; quote it for the shell, e.g. '{\"name\":\"Ada\"}'", what, escape(je.Reason))
		default:
			return nil, fmt.Errorf("%s: %s: %s", what, escape(je.Path), escape(je.Reason))
		}
	}
	return json.RawMessage(raw), nil
}

// decodeExact reads a JSON response body into v with numbers kept as
// json.Number, so a value the server sent exactly (a result, an answer) is
// printed exactly; the generated client's own decoding goes through
// float64. It reports whether it could.
func decodeExact(body []byte, v any) bool {
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.UseNumber()
	return dec.Decode(v) == nil
}

// timeLayout prints instants in UTC with milliseconds.
const timeLayout = "2006-01-02T15:04:05.000Z"

func stamp(t time.Time) string {
	if t.IsZero() {
		return "-"
	}
	return t.UTC().Format(timeLayout)
}

func stampPtr(t *time.Time) string {
	if t == nil {
		return "-"
	}
	return stamp(*t)
}

// took is how long something ran: to its end, or so far.
func took(start time.Time, end *time.Time, now time.Time) string {
	if start.IsZero() {
		return "-"
	}
	stop := now
	if end != nil && !end.IsZero() {
		stop = *end
	}
	d := stop.Sub(start)
	if d < 0 {
		d = 0
	}
	switch {
	case d < time.Second:
		return d.Round(time.Millisecond).String()
	case d < time.Minute:
		return d.Round(10 * time.Millisecond).String()
	default:
		return d.Round(time.Second).String()
	}
}

func terminal(s apiclient.ExecutionStatus) bool {
	return s == "SUCCESS" || s == "FAILURE" || s == "STOPPED"
}

// nodeNotes sums up what a node's status column does not say.
func nodeNotes(n apiclient.ExecutionNode) string {
	var notes []string
	if n.Paused {
		notes = append(notes, "paused")
	}
	if n.StepMode {
		notes = append(notes, fmt.Sprintf("step(credits=%d)", deref(n.StepCredits)))
	}
	if n.Skipped {
		notes = append(notes, "skip")
	}
	if bp := n.Breakpoint; bp != nil {
		if c := deref(bp.Condition); c != "" {
			notes = append(notes, "breakpoint("+truncate(c, 40)+")")
		} else {
			notes = append(notes, "breakpoint("+deref(bp.Field)+"="+truncate(compactJSON(bp.Equals), 40)+")")
		}
	}
	if w := deref(n.Waiting); w > 0 {
		// What a waiting node holds: a DELAY's timers read PENDING 0 0
		// otherwise, with nothing received or emitted yet.
		h := fmt.Sprintf("holding %d", w)
		if n.DueAt != nil && !n.DueAt.IsZero() {
			h += ", next due " + stamp(*n.DueAt)
		}
		notes = append(notes, h)
	}
	if e := deref(n.Error); e != "" {
		notes = append(notes, "error: "+truncate(e, 120))
	}
	return escape(strings.Join(notes, ", "))
}

// nodeTable writes the per-node table and returns how many lines it wrote.
func nodeTable(w io.Writer, nodes []apiclient.ExecutionNode) int {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "NODE\tTYPE\tSTATUS\tRECEIVED\tEMITTED\tNOTES")
	for _, n := range nodes {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%d\t%s\n", escape(n.NodeId), escape(n.Type), n.Status, n.Received, n.Emitted, orDash(nodeNotes(n)))
	}
	_ = tw.Flush()
	return len(nodes) + 1
}

// executionReport writes an execution's status lines (not its node table).
func executionReport(w io.Writer, ex *apiclient.Execution, now time.Time) {
	fmt.Fprintf(w, "execution: %s\n", ex.ExecutionId)
	fmt.Fprintf(w, "session: %s\n", ex.SessionId)
	fmt.Fprintf(w, "workflow: %s\n", ex.WorkflowId)
	status := string(ex.Status)
	if deref(ex.Draining) {
		status += " (draining)"
	}
	fmt.Fprintf(w, "status: %s\n", status)
	fmt.Fprintf(w, "started: %s\n", stamp(ex.StartedAt))
	fmt.Fprintf(w, "ended: %s\n", stampPtr(nonZero(ex.EndedAt)))
	fmt.Fprintf(w, "duration: %s\n", took(ex.StartedAt, nonZero(ex.EndedAt), now))
	fmt.Fprintf(w, "actor: %s\n", escape(ex.Actor))
	fmt.Fprintf(w, "channel: %s\n", escape(ex.Channel))
	if r := deref(ex.RestartOf); r != "" {
		fmt.Fprintf(w, "restart-of: %s\n", r)
	}
	if f := deref(ex.FromNodeId); f != "" {
		fmt.Fprintf(w, "from-node: %s\n", f)
	}
	if e := deref(ex.Error); e != "" {
		fmt.Fprintf(w, "error: %s\n", escape(e))
	}
	if ex.Result != nil {
		fmt.Fprintf(w, "result: %s\n", compactJSON(ex.Result))
	}
}

func nonZero(t *time.Time) *time.Time {
	if t == nil || t.IsZero() {
		return nil
	}
	return t
}
