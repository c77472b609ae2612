package processengine

import (
	"fmt"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/yukta/yukta/domain/plugin"
)

// DefaultReportEvery is how often, at most, a process engine
// reports the output lines it did not act on (Limits.ReportEvery):
// the first line of a quiet spell is reported at once, the rest of each
// period in one summary at its end. Whatever a program prints, the server
// logs at most one line per period for its dropped lines.
const DefaultReportEvery = 10 * time.Second

// maxSampleBytes caps the sample of a dropped line in a report.
const maxSampleBytes = 200

// DropRefused is the reason for a line of the contract the server did not
// take: the intake refused or failed the directive, the review or
// delegation it answers is not this supervisor's or already settled. The
// intake journals its refusals with the sender; the report only counts
// them.
const DropRefused = "refused"

// DropReasons are every reason a line is dropped for, in a fixed order
// (the metrics declare one series each).
var DropReasons = []string{DropTooLong, DropNotJSON, DropUnknownType, DropInvalid, DropNotBuilt, DropRefused}

// DropReport sums up the output lines of one supervisor's program that
// the engine dropped (Deps.OnReport).
type DropReport struct {
	// Lines were dropped, Reasons says why (reason → lines).
	Lines   int
	Reasons map[string]int
	// Period is how long the lines were counted for: 0 for the report of
	// the first line of a quiet spell, ReportEvery (or less, when the
	// engine stopped) for a summary.
	Period time.Duration
	// Every is the engine's ReportEvery: the next report comes no sooner.
	Every time.Duration
	// First is what was wrong with the first of them: clipped to 200
	// bytes, control and invisible characters escaped, credential-shaped
	// text masked.
	First string
}

// Message is the report as one log message about supervisorID.
func (r DropReport) Message(supervisorID string) string {
	reasons := make([]string, 0, len(r.Reasons))
	for _, k := range DropReasons {
		if n := r.Reasons[k]; n > 0 {
			reasons = append(reasons, fmt.Sprintf("%s %d", k, n))
		}
	}
	if r.Period == 0 {
		return fmt.Sprintf("process supervisor %s: dropped an output line that was not a directive it could send (%s): %s; "+
			"lines dropped in the next %s are counted and reported together", supervisorID, strings.Join(reasons, ", "), r.First, r.Every)
	}
	return fmt.Sprintf("process supervisor %s: dropped %d output lines that were not directives it could send in the last %s (%s); first: %s",
		supervisorID, r.Lines, r.Period.Round(time.Millisecond), strings.Join(reasons, ", "), r.First)
}

// dropCounter counts dropped lines into periods of every. It belongs to
// the engine's keep goroutine: no locking.
type dropCounter struct {
	every time.Duration
	// timer is armed while a period is open, nil while quiet.
	timer *time.Timer
	since time.Time
	cur   DropReport
}

// add counts one dropped line. A line in a quiet spell is reported at
// once (ok) and opens a period; a line within a period is counted for its
// summary.
func (c *dropCounter) add(reason string, err error, now time.Time) (r DropReport, ok bool) {
	if c.timer == nil {
		c.timer, c.since = time.NewTimer(c.every), now
		return DropReport{Lines: 1, Reasons: map[string]int{reason: 1}, Every: c.every, First: logSample(err)}, true
	}
	if c.cur.Lines == 0 {
		c.cur = DropReport{Reasons: map[string]int{}, Every: c.every, First: logSample(err)}
	}
	c.cur.Lines++
	c.cur.Reasons[reason]++
	return DropReport{}, false
}

// C fires when the open period ends; nil while quiet.
func (c *dropCounter) C() <-chan time.Time {
	if c.timer == nil {
		return nil
	}
	return c.timer.C
}

// due ends the period: its summary (ok unless nothing was dropped in it,
// which ends the period without a new one).
func (c *dropCounter) due(now time.Time) (DropReport, bool) {
	r := c.cur
	c.cur = DropReport{}
	if r.Lines == 0 {
		c.timer = nil
		return r, false
	}
	r.Period = max(now.Sub(c.since), time.Millisecond)
	c.since = now
	c.timer.Reset(c.every)
	return r, true
}

// stop ends counting: the summary of the period so far, if anything was
// dropped in it.
func (c *dropCounter) stop(now time.Time) (DropReport, bool) {
	if c.timer == nil {
		return DropReport{}, false
	}
	c.timer.Stop()
	r, ok := c.due(now)
	c.timer = nil
	return r, ok
}

// logSample is err's text made safe for a log line: credential-shaped text
// masked, control, invisible and invalid characters escaped, clipped to
// maxSampleBytes.
func logSample(err error) string {
	if err == nil {
		return ""
	}
	s := plugin.MaskCredentials(err.Error())
	var b strings.Builder
	for i := 0; i < len(s); {
		r, w := utf8.DecodeRuneInString(s[i:])
		i += w
		switch {
		case r == utf8.RuneError && w == 1:
			b.WriteString(`\uFFFD`)
		case r > 0xFFFF && !unicode.IsGraphic(r):
			fmt.Fprintf(&b, `\U%08X`, r)
		case !unicode.IsGraphic(r) || unicode.Is(unicode.Cf, r):
			fmt.Fprintf(&b, `\u%04X`, r)
		default:
			b.WriteRune(r)
		}
		if b.Len() > maxSampleBytes {
			break
		}
	}
	out := b.String()
	if len(out) <= maxSampleBytes {
		return out
	}
	cut := maxSampleBytes
	for cut > 0 && !utf8.RuneStart(out[cut]) {
		cut--
	}
	return out[:cut] + "…"
}
