package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/signal"
	"time"

	"github.com/spf13/cobra"

	"github.com/yukta/yukta/api/apiclient"
)

// Log following: the poll interval, and the page asked for on each poll (the
// server's maximum, so a burst between two polls is rarely cut).
const (
	followEvery = 500 * time.Millisecond
	followPage  = 5000
	defaultTail = 100
)

func (a *App) logsCmd() *cobra.Command {
	c := &cobra.Command{
		Use:               "logs SESSION EXECUTION [-n LINES] [--grep RE2] [-f]",
		Short:             "the tail of an execution's log; -f follows it",
		Args:              argsBetween(2, 2),
		ValidArgsFunction: a.completeSession,
	}
	n := c.Flags().IntP("lines", "n", defaultTail, "how many of the last lines to print first (0–5000)")
	pattern := c.Flags().String("grep", "", "only lines matching this RE2 pattern (server-side, ≤ 200 characters)")
	follow := c.Flags().BoolP("follow", "f", false, "follow: keep printing new lines until the execution has ended (with -o jsonl: one JSON line each)")
	addOutput(c)
	return a.leaf(c, func(e *env, pos []string) int { return runLogs(e, pos, *n, *pattern, *follow) })
}

func runLogs(e *env, pos []string, n int, pattern string, follow bool) int {
	if n < 0 || n > followPage {
		return e.usageError("-n %d: want 0 to %d lines", n, followPage)
	}
	if follow && e.output == outJSON {
		return e.usageError("-f streams lines: use -o jsonl (one JSON line each), not -o json")
	}
	if n == 0 && !follow {
		return exitOK
	}
	sid, eid := pos[0], pos[1]
	ctx := e.ctx
	if follow {
		var stop context.CancelFunc
		ctx, stop = signal.NotifyContext(e.ctx, os.Interrupt)
		defer stop()
	}

	// The first page: the last n lines (or, for -n 0, only where to start).
	first, body, f := e.tail(ctx, sid, eid, max(n, 1), pattern)
	if f != nil {
		return e.report(f)
	}
	if e.machine() && !follow {
		return e.emit(body, "lines")
	}
	raw := rawLines(body)
	last := int64(0)
	for i, l := range first.Lines {
		if n > 0 {
			e.printLine(l, raw, i)
		}
		last = l.Seq
	}
	if !follow {
		if first.TotalMatched > int64(first.ReturnedLines) && pattern != "" {
			fmt.Fprintf(e.stderr, "%s: showing %d of %d matching lines; -n shows more\n", e.name, first.ReturnedLines, first.TotalMatched)
		}
		if !first.Complete {
			fmt.Fprintf(e.stderr, "%s: the match count hit the server's time limit; %d is a lower bound\n", e.name, first.TotalMatched)
		}
		return exitOK
	}

	// Follow: poll until the execution has ended and a poll after that
	// brought nothing new. The status is read before the lines, so lines
	// written before the end are never missed.
	tick := time.NewTicker(followEvery)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			if e.ctx.Err() == nil {
				return exitOK // Ctrl-C ends a follow; that is not an error
			}
			return exitFailed
		case <-tick.C:
		}
		ex, f := e.getExecution(ctx, sid, eid)
		if f != nil {
			if ctx.Err() != nil {
				continue
			}
			return e.report(f)
		}
		page, body, f := e.tail(ctx, sid, eid, followPage, pattern)
		if f != nil {
			if ctx.Err() != nil {
				continue
			}
			return e.report(f)
		}
		fresh, raw := 0, rawLines(body)
		for i, l := range page.Lines {
			if l.Seq <= last {
				continue
			}
			if fresh == 0 && len(page.Lines) == followPage && page.Lines[0].Seq > last {
				fmt.Fprintf(e.stderr, "%s: more than %d lines arrived within %s; some were skipped\n", e.name, followPage, followEvery)
			}
			e.printLine(l, raw, i)
			last = l.Seq
			fresh++
		}
		if fresh == 0 && terminal(ex.Status) {
			return exitOK
		}
	}
}

func (e *env) tail(ctx context.Context, sid, eid string, lines int, pattern string) (*apiclient.LogPage, []byte, *failure) {
	params := &apiclient.GetExecutionLogsParams{TailLines: ptr(lines)}
	if pattern != "" {
		params.FilterPattern = ptr(pattern)
	}
	res, err := e.api.GetExecutionLogsWithResponse(ctx, sid, eid, params)
	if err != nil {
		return nil, nil, &failure{err: err}
	}
	if res.JSON200 == nil {
		return nil, nil, &failure{res: res.HTTPResponse, body: res.Body}
	}
	return res.JSON200, res.Body, nil
}

// rawLines is a log page's lines as the server sent them, for -o jsonl.
func rawLines(body []byte) []json.RawMessage {
	var page struct {
		Lines []json.RawMessage `json:"lines"`
	}
	_ = json.Unmarshal(body, &page)
	return page.Lines
}

// printLine writes `seq time level node message`; the message is last and
// escaped, so every line is one line whatever it held. With -o jsonl it
// writes the line's JSON (raw[i]) instead.
func (e *env) printLine(l apiclient.LogLine, raw []json.RawMessage, i int) {
	if e.output == outJSONL && i < len(raw) {
		e.emitLine(raw[i])
		return
	}
	fmt.Fprintf(e.stdout, "%d %s %s %s %s\n", l.Seq, stamp(l.At), orDash(escape(l.Level)), orDash(escape(l.NodeId)), escape(l.Message))
}
