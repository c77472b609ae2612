// Package plugins provides Yukta's built-in node types. For now it holds their
// descriptors only: session validation and the plugin catalogue need to know
// each type's fields and config-dependent ports before any behaviour exists,
// and keeping the descriptors next to the behaviour that will honour them
// stops the two from drifting apart.
//
// Field names are camelCase because they appear verbatim in session
// documents, whose own fields are camelCase.
package plugins

import (
	"fmt"
	"slices"
	"time"

	"github.com/yukta/yukta/domain/fault"
	"github.com/yukta/yukta/domain/plugin"
)

// Descriptors returns the descriptors of every built-in node type. Each call
// builds new values, so a caller may keep or change them freely.
func Descriptors() []plugin.Descriptor {
	return []plugin.Descriptor{
		manual(), webhook(), schedule(), supervisorSignal(),
		httpRequest(), transform(), filter(), router(), split(), delay(), inputRequest(), logNode(), fail(),
		task(), result(), webhookOut(), supervisorDecision(),
	}
}

// The limits of the common run fields. A per-node limit of zero would fail
// every run, and hundreds of attempts keep a broken run alive for hours while
// hiding the fault, so both are refused when the session is applied.
const (
	defaultTimeout = "30s"
	maxAttempts    = 100
)

// withRunFields adds the fields every processor and terminal accepts because
// the runtime, not the plugin, enforces them: a time limit per run and a
// retry policy. A type that needs its own wording for "timeout" declares it
// and keeps it. Triggers do not take them: they start runs, they do not run
// messages.
func withRunFields(d plugin.Descriptor) plugin.Descriptor {
	d.Fields = slices.Clone(d.Fields)
	if !slices.ContainsFunc(d.Fields, func(f plugin.Field) bool { return f.Name == "timeout" }) {
		d.Fields = append(d.Fields, plugin.Field{
			Name: "timeout",
			Type: plugin.Duration,
			Description: "time limit for one run of the node on one message; a run past it is cancelled and counts as a failed attempt. " +
				"Time a message spends parked (a DELAY timer, an INPUT_REQUEST waiting for its answer) does not count",
			Default: defaultTimeout,
		})
	}
	d.Fields = append(d.Fields, plugin.Field{
		Name:        "retry",
		Type:        plugin.Object,
		Description: "what to do when a run fails: try again up to maxAttempts times in all, waiting backoff before the second attempt and twice as long before each further one (at most 10 minutes); absent means one attempt. When the attempts are used up the node and its execution fail",
		Fields: []plugin.Field{
			{Name: "maxAttempts", Type: plugin.Integer, Default: 1, Description: fmt.Sprintf("attempts in all, the first included (1 to %d); 1 means no retry", maxAttempts)},
			{Name: "backoff", Type: plugin.Duration, Default: "1s", Description: `wait before the second attempt, such as "1s" or "2m"; it doubles for each further attempt, up to 10 minutes`},
		},
	})
	own := d.CheckFunc
	d.CheckFunc = func(config map[string]any) []fault.Violation {
		vs := checkRunFields(config)
		if own != nil {
			vs = append(vs, own(config)...)
		}
		return vs
	}
	return d
}

func checkRunFields(config map[string]any) []fault.Violation {
	var vs []fault.Violation
	if d, ok := duration(config["timeout"]); ok && d <= 0 {
		vs = append(vs, fault.Violation{Path: "timeout", Message: `must be longer than zero, such as "30s"; a zero limit would fail every run`})
	}
	retry, _ := config["retry"].(map[string]any)
	if n, ok := number(retry["maxAttempts"]); ok && (n < 1 || n > maxAttempts) {
		vs = append(vs, fault.Violation{Path: "retry.maxAttempts", Message: fmt.Sprintf("must be between 1 and %d, got %v", maxAttempts, retry["maxAttempts"])})
	}
	return vs
}

// duration reads a Duration field; ok is false when v is absent or malformed,
// because field checks report those and a CheckFunc must not repeat them.
func duration(v any) (time.Duration, bool) {
	s, ok := v.(string)
	if !ok {
		return 0, false
	}
	d, err := time.ParseDuration(s)
	return d, err == nil
}

// number reads an Integer or Number field in any form encoding/json produces
// (config numbers arrive as json.Number when sessions are parsed, and "1e3"
// is a valid integer there).
func number(v any) (float64, bool) {
	switch n := v.(type) {
	case int:
		return float64(n), true
	case int64:
		return float64(n), true
	case float64:
		return n, true
	case interface{ Float64() (float64, error) }: // json.Number
		f, err := n.Float64()
		return f, err == nil
	}
	return 0, false
}
