package executionapp

import (
	"context"
	"fmt"
	"regexp"
	"regexp/syntax"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/yukta/yukta/domain/fault"
	"github.com/yukta/yukta/domain/session"
)

// Log reading limits (DESIGN §6). RE2 runs in linear time; these caps bound
// the constant.
const (
	MaxPatternLen      = 200
	MaxPatternInsts    = 256
	MaxMatchLineBytes  = 4 << 10
	MaxLogCallDuration = 2 * time.Second
	MaxTailLines       = 5000
	DefaultTailLines   = 100
	logChunk           = 1000
)

// TailLogs returns the last lines of an execution's log, optionally only
// those matching an RE2 pattern. Reading the tail costs the same whatever the
// log's length: it walks the (execution, seq) index backwards.
//
// A filter is matched against the whole line as RenderLine writes it,
// "[timestamp] [LEVEL] message" with the level in upper case, as the seed
// formats it, so "ERROR|Exception" finds the line of a failed node (stored
// with the level "error") whatever its message says. Only the first
// MaxMatchLineBytes of the rendered line are searched.
//
// Every value of a secret config field of the execution's own definition
// snapshot is replaced by plugin.MaskedValue before a line is matched or
// returned, on every door: a workflow that prints a secret does not show
// it, and a filter cannot be used to guess one by counting matches.
type TailLogs struct {
	reader  Reader
	defs    DefinitionSource
	catalog session.Catalog
	now     func() time.Time
}

// NewTailLogs returns the use case.
func NewTailLogs(r Reader, defs DefinitionSource, c session.Catalog, now func() time.Time) *TailLogs {
	return &TailLogs{reader: r, defs: defs, catalog: c, now: now}
}

// TailInput selects lines.
type TailInput struct {
	SessionID, ExecutionID string
	TailLines              int
	FilterPattern          string
}

// TailResult is the selected lines, oldest first.
type TailResult struct {
	ExecutionID string
	Lines       []LogEntry
	// TotalMatched counts every matching line in the log (all lines without
	// a filter); Complete is false when the time limit stopped the count.
	TotalMatched  int64
	ReturnedLines int
	Complete      bool
}

// RenderLine is the text a filter pattern is matched against: the line's
// time in RFC 3339 (UTC), its level in upper case and its message, as
// "[2026-01-02T03:04:05.123Z] [ERROR] failed after 1 attempt(s): boom".
func RenderLine(l LogEntry) string {
	return "[" + l.At.UTC().Format(time.RFC3339Nano) + "] [" + strings.ToUpper(l.Level) + "] " + l.Message
}

// matchWindow is the first MaxMatchLineBytes of s, cut back to a whole
// UTF-8 character.
func matchWindow(s string) string {
	if len(s) <= MaxMatchLineBytes {
		return s
	}
	cut := MaxMatchLineBytes
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut]
}

// CompileFilter checks a filter pattern against the caps and compiles it.
func CompileFilter(pattern string) (*regexp.Regexp, error) {
	bad := func(msg string) error {
		return &fault.ValidationError{Subject: "log filter", Violations: []fault.Violation{{Path: "filterPattern", Message: msg}}}
	}
	if utf8.RuneCountInString(pattern) > MaxPatternLen {
		return nil, bad(fmt.Sprintf("Regex pattern too long (max %d characters).", MaxPatternLen))
	}
	re, err := syntax.Parse(pattern, syntax.Perl)
	if err != nil {
		return nil, bad("Invalid regex pattern: " + err.Error())
	}
	prog, err := syntax.Compile(re.Simplify())
	if err != nil {
		return nil, bad("Invalid regex pattern: " + err.Error())
	}
	if len(prog.Inst) > MaxPatternInsts {
		return nil, bad(fmt.Sprintf("Regex filter is too expensive to evaluate (%d instructions, max %d); simplify the pattern.", len(prog.Inst), MaxPatternInsts))
	}
	return regexp.Compile(pattern)
}

// Handle reads the tail.
func (uc *TailLogs) Handle(ctx context.Context, in TailInput) (TailResult, error) {
	n := in.TailLines
	switch {
	case n == 0:
		n = DefaultTailLines
	case n < 1 || n > MaxTailLines:
		return TailResult{}, &fault.ValidationError{Subject: "log request", Violations: []fault.Violation{{
			Path: "tailLines", Message: fmt.Sprintf("must be between 1 and %d, got %d", MaxTailLines, n)}}}
	}
	var re *regexp.Regexp
	if in.FilterPattern != "" {
		var err error
		if re, err = CompileFilter(in.FilterPattern); err != nil {
			return TailResult{}, err
		}
	}
	// Ownership first: an unknown or foreign execution reads as not found.
	if _, err := uc.reader.Execution(ctx, in.SessionID, in.ExecutionID); err != nil {
		return TailResult{}, err
	}
	mask, err := uc.masker(ctx, in.ExecutionID)
	if err != nil {
		return TailResult{}, err
	}
	res := TailResult{ExecutionID: in.ExecutionID, Complete: true}
	if re == nil {
		lines, total, err := uc.reader.LogsBefore(ctx, in.ExecutionID, 0, n)
		if err != nil {
			return TailResult{}, err
		}
		reverse(lines)
		for i := range lines {
			lines[i].Message = mask.Replace(lines[i].Message)
		}
		res.Lines, res.TotalMatched = lines, total
		res.ReturnedLines = len(lines)
		return res, nil
	}
	deadline := uc.now().Add(MaxLogCallDuration)
	var kept []LogEntry // newest first
	before := int64(0)
	for {
		chunk, _, err := uc.reader.LogsBefore(ctx, in.ExecutionID, before, logChunk)
		if err != nil {
			return TailResult{}, err
		}
		for _, l := range chunk {
			if uc.now().After(deadline) {
				res.Complete = false
				break
			}
			l.Message = mask.Replace(l.Message)
			if re.MatchString(matchWindow(RenderLine(l))) {
				res.TotalMatched++
				if len(kept) < n {
					kept = append(kept, l)
				}
			}
		}
		if !res.Complete || len(chunk) < logChunk {
			break
		}
		before = chunk[len(chunk)-1].Seq
	}
	reverse(kept)
	res.Lines, res.ReturnedLines = kept, len(kept)
	return res, nil
}

// masker returns the replacer of the execution's secret values; it
// replaces nothing when the workflow has none.
func (uc *TailLogs) masker(ctx context.Context, executionID string) (*strings.Replacer, error) {
	src, err := uc.defs.Source(ctx, executionID)
	if err != nil {
		return nil, err
	}
	w, err := session.RestoreWorkflow(src.WorkflowID, "", src.Definition)
	if err != nil {
		return nil, err
	}
	return strings.NewReplacer(SecretValues(w, uc.catalog)...), nil
}

func reverse(ls []LogEntry) {
	for i, j := 0, len(ls)-1; i < j; i, j = i+1, j-1 {
		ls[i], ls[j] = ls[j], ls[i]
	}
}
