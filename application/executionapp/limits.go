package executionapp

import (
	"fmt"

	"github.com/yukta/yukta/domain/jsonvalue"
)

// Defaults of ValueLimits.
const (
	DefaultMaxMessageBytes = 1 << 20
	DefaultMaxOutputBytes  = 8 << 20
	DefaultMaxLogLineBytes = 16 << 10
	// maxErrorBytes caps a failure's text where it is stored (node, run,
	// log line, event).
	maxErrorBytes = 4 << 10
)

// ValueLimits bound what one node attempt may produce, so that one node
// cannot fill the database or the server's memory. A message, a result or
// an attempt's output over its limit fails the attempt with the limit named
// and nothing of it is stored; a log line over its limit is stored cut, with
// a note (a log is for diagnosis, and losing a run to a long diagnostic
// would be worse than a visible cut).
type ValueLimits struct {
	// MaxMessageBytes caps one emitted message and the run's result, as
	// JSON. Expressions are held to it too.
	MaxMessageBytes int
	// MaxOutputBytes caps all messages of one attempt together.
	MaxOutputBytes int
	// MaxLogLineBytes caps one log line.
	MaxLogLineBytes int
}

// The settings that raise each limit, named in errors.
const (
	SettingMaxMessage = "YUKTA_MAX_MESSAGE_BYTES"
	SettingMaxOutput  = "YUKTA_MAX_OUTPUT_BYTES"
)

func (l ValueLimits) withDefaults() ValueLimits {
	if l.MaxMessageBytes <= 0 {
		l.MaxMessageBytes = DefaultMaxMessageBytes
	}
	if l.MaxOutputBytes <= 0 {
		l.MaxOutputBytes = DefaultMaxOutputBytes
	}
	if l.MaxLogLineBytes <= 0 {
		l.MaxLogLineBytes = DefaultMaxLogLineBytes
	}
	return l
}

// check makes an attempt's outcome safe to commit, before any transaction:
// every value it emits, stores or asks with is one PostgreSQL can store
// (jsonvalue.Check) within the limits, and its log lines are cleaned and
// cut. An error here is the node's own fault and permanent: running the
// plugin again would not change a value it computed.
func (l ValueLimits) check(out *Outcome) error {
	total := 0
	for i, em := range out.Emits {
		root := "message"
		if len(out.Emits) > 1 {
			root = fmt.Sprintf("message %d of %d", i+1, len(out.Emits))
		}
		n, err := jsonvalue.Measure(em.Payload, root, jsonvalue.Limits{MaxBytes: l.MaxMessageBytes, What: "message", Setting: SettingMaxMessage})
		if err != nil {
			return err
		}
		if total += n; total > l.MaxOutputBytes {
			return fmt.Errorf("the node's messages together are larger than the limit of %s (after %d of %d messages); raise %s or emit less",
				jsonvalue.FormatBytes(l.MaxOutputBytes), i+1, len(out.Emits), SettingMaxOutput)
		}
	}
	if out.HasResult {
		if err := jsonvalue.Check(out.Result, "result", jsonvalue.Limits{MaxBytes: l.MaxMessageBytes, What: "result", Setting: SettingMaxMessage}); err != nil {
			return err
		}
	}
	if p := out.Park; p != nil {
		if err := jsonvalue.Check(p.Prompt, "prompt", jsonvalue.Limits{MaxBytes: l.MaxMessageBytes, What: "prompt", Setting: SettingMaxMessage}); err != nil {
			return err
		}
		if p.Schema != nil {
			if err := jsonvalue.Check(p.Schema, "schema", jsonvalue.Limits{MaxBytes: l.MaxMessageBytes, What: "schema", Setting: SettingMaxMessage}); err != nil {
				return err
			}
		}
	}
	for i := range out.Logs {
		out.Logs[i].Message = jsonvalue.Cut(jsonvalue.Clean(out.Logs[i].Message), l.MaxLogLineBytes)
	}
	return nil
}

// errorText is a failure as it is stored: clean text, cut to a sane size.
// Errors quote upstream bodies and payload values, which may hold anything.
func errorText(err error) string {
	return jsonvalue.Cut(jsonvalue.Clean(err.Error()), maxErrorBytes)
}
