package plugins

import (
	"fmt"
	"slices"
	"strings"
	"time"
	// The zone database is embedded so that a SCHEDULE's timezone is valid or
	// invalid the same way on every host, including minimal containers that
	// ship no /usr/share/zoneinfo.
	_ "time/tzdata"

	"github.com/robfig/cron/v3"

	"github.com/yukta/yukta/domain/fault"
	"github.com/yukta/yukta/domain/plugin"
)

func manual() plugin.Descriptor {
	return plugin.Descriptor{
		Type:        "MANUAL",
		Category:    plugin.Trigger,
		Description: "Starts a run when someone calls start, sending the body of that call as the payload.",
		Usage: `Pattern: MANUAL -> TRANSFORM -> RESULT
Started by the start call (REST, MCP start_workflow, CLI); the body of that call is the payload emitted on "default".
Example config: {}`,
	}
}

func webhook() plugin.Descriptor {
	return plugin.Descriptor{
		Type:        "WEBHOOK",
		Category:    plugin.Trigger,
		Description: "Starts a run for each HTTP POST to the workflow's webhook address, with the request body as the payload.",
		Usage: `Pattern: WEBHOOK -> FILTER -> HTTP_REQUEST -> RESULT
The JSON body of the POST is emitted on "default". With a secret set, a request must carry the header X-Yukta-Signature: sha256=<hex HMAC-SHA256 of the raw body keyed with the secret>; requests without a valid signature are refused and start nothing.
Example config: {"secret": "a-long-random-shared-secret"}`,
		Fields: []plugin.Field{
			{Name: "secret", Type: plugin.String, Secret: true, Description: "shared secret (at least 16 characters) that callers sign the body with; absent means unsigned requests are accepted"},
		},
		CheckFunc: func(config map[string]any) []fault.Violation {
			// The value is never echoed: violations reach logs and clients.
			if s, ok := config["secret"].(string); ok && len(s) < minSecretLen {
				return []fault.Violation{{Path: "secret", Message: fmt.Sprintf("must be at least %d characters long, or omitted to accept unsigned requests", minSecretLen)}}
			}
			return nil
		},
	}
}

// minSecretLen keeps webhook signatures from resting on a guessable key.
const minSecretLen = 16

func schedule() plugin.Descriptor {
	return plugin.Descriptor{
		Type:        "SCHEDULE",
		Category:    plugin.Trigger,
		Description: "Starts a run each time a cron schedule fires, with a fixed payload.",
		Usage: `Pattern: SCHEDULE -> HTTP_REQUEST -> RESULT
Fires once per tick across all Yukta instances sharing the database; the payload is emitted on "default". Cron uses 5 fields (minute hour day-of-month month day-of-week) or a descriptor (@hourly, @daily, @weekly, @monthly, @yearly, @every 15m).
Example config: {"cron": "0 9 * * 1-5", "timezone": "Europe/Paris", "payload": {"report": "daily"}}`,
		Fields: []plugin.Field{
			{Name: "cron", Type: plugin.Cron, Required: true, Description: `when to fire: 5 cron fields such as "0 9 * * 1-5", or a descriptor such as "@hourly" or "@every 15m"`},
			{Name: "timezone", Type: plugin.String, Default: "UTC", Description: `IANA time zone the cron fields are read in, such as "Europe/Paris"`},
			{Name: "payload", Type: plugin.Any, Description: "payload of every run it starts; absent means an empty object"},
		},
		CheckFunc: func(config map[string]any) []fault.Violation {
			spec, _ := config["cron"].(string)
			tz, _ := config["timezone"].(string)
			_, vs := parseSchedule(spec, tz)
			return vs
		},
	}
}

// scheduleParser reads standard cron specs; it is also what will fire the
// schedules, so a spec that validates is a spec that runs.
var scheduleParser = cron.NewParser(cron.Minute | cron.Hour | cron.Dom | cron.Month | cron.Dow | cron.Descriptor)

// parseSchedule returns the schedule of a SCHEDULE config, or the violations
// that make it unusable.
func parseSchedule(spec, timezone string) (s cron.Schedule, vs []fault.Violation) {
	loc, err := loadLocation(timezone)
	if err != nil {
		vs = append(vs, fault.Violation{Path: "timezone", Message: err.Error()})
	}
	trimmed := strings.TrimSpace(spec)
	// The parser's own zone prefix would compete with the timezone field, and
	// in cron v3.0.1 it panics when no space follows it.
	if strings.HasPrefix(trimmed, "TZ=") || strings.HasPrefix(trimmed, "CRON_TZ=") {
		return nil, append(vs, fault.Violation{Path: "cron", Message: `must not start with a TZ= or CRON_TZ= prefix; set the "timezone" field instead`})
	}
	s, err = parseCron(trimmed)
	if err != nil {
		return nil, append(vs, fault.Violation{Path: "cron", Message: fmt.Sprintf(`is not a valid cron expression (%v); use 5 fields (minute hour day-of-month month day-of-week) such as "0 9 * * 1-5", or a descriptor such as "@hourly"`, err)})
	}
	if loc != nil && s.Next(time.Now().In(loc)).IsZero() {
		// The parser accepts dates that do not exist, such as 30 February;
		// such a schedule would sit in the catalogue and never start a run.
		return nil, append(vs, fault.Violation{Path: "cron", Message: fmt.Sprintf("never fires: no date in the next five years matches %q", spec)})
	}
	if len(vs) > 0 {
		return nil, vs
	}
	return s, nil
}

// parseCron guards the third-party parser: a panic on user input must become
// a violation, not a failed request.
func parseCron(spec string) (s cron.Schedule, err error) {
	defer func() {
		if r := recover(); r != nil {
			s, err = nil, fmt.Errorf("unparseable: %v", r)
		}
	}()
	return scheduleParser.Parse(spec)
}

func loadLocation(name string) (*time.Location, error) {
	// "Local" names whatever zone the host runs in, which may differ between
	// the instances sharing one database; "" would silently mean UTC.
	if name == "" || name == "Local" {
		return nil, fmt.Errorf(`must be an IANA time zone name such as "UTC" or "Europe/Paris", got %q`, name)
	}
	loc, err := time.LoadLocation(name)
	if err != nil {
		return nil, fmt.Errorf(`is not a known IANA time zone (%q); use a name such as "UTC" or "Europe/Paris"`, name)
	}
	return loc, nil
}

// signalKinds are the supervisor signal kinds of DESIGN §9.
var signalKinds = []string{"EVENT", "TICK", "REVIEW", "DELEGATED", "STARTED", "CONSULTED"}

func supervisorSignal() plugin.Descriptor {
	return plugin.Descriptor{
		Type:        "SUPERVISOR_SIGNAL",
		Category:    plugin.Trigger,
		Description: "Starts a run for each signal delivered to a workflow supervisor, with the signal as the payload.",
		Usage: `Pattern: SUPERVISOR_SIGNAL -> ROUTER -> SUPERVISOR_DECISION
Used by workflows of an internal session that a "workflow" supervisor engine runs; the payload {"cursor", "kind", "signal"} is emitted on "default".
Example config: {"kinds": ["EVENT", "REVIEW"]}`,
		Fields: []plugin.Field{
			{
				Name: "kinds", Type: plugin.Array,
				Description: "signal kinds that start a run; absent means every kind",
				Items:       &plugin.Field{Name: "kind", Type: plugin.String, Options: slices.Clone(signalKinds), Description: "one signal kind"},
			},
		},
		CheckFunc: func(config map[string]any) []fault.Violation {
			if a, ok := config["kinds"].([]any); ok && len(a) == 0 {
				return []fault.Violation{{Path: "kinds", Message: "must list at least one kind; omit it to start on every kind"}}
			}
			return nil
		},
	}
}
