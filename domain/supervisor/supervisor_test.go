package supervisor

import (
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/yukta/yukta/domain/fault"
)

// seedRule is the example rule of seed 000: pause after three node
// failures within a minute.
func seedRule() obj {
	return obj{"id": "pause-on-repeated-failure",
		"when": obj{"event": "NodeStatusChanged", "status": "FAILURE", "count": 3, "withinSeconds": 60},
		"then": obj{"command": "PauseWorkflow"}}
}

func rulesSupervisor(rules ...any) obj {
	return obj{"id": "guard", "name": "Guard", "engine": obj{"type": "rules", "settings": obj{"rules": arr(rules)}},
		"owns": arr{"session:ci"}}
}

func TestParseSupervisorDefaults(t *testing.T) {
	t.Parallel()
	s, err := Parse(mustJSON(t, rulesSupervisor(seedRule(), obj{"id": "gate", "requireApproval": obj{"command": "RestartWorkflow"}})), ParseOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got := s.AllowedCommands(); !slices.Equal(got, CommandTypes) {
		t.Errorf("allowedCommands: got %v, want every command (the rules default)", got)
	}
	if got, want := s.Reviews(), []CommandType{RestartWorkflow}; !slices.Equal(got, want) {
		t.Errorf("reviews: got %v, want %v (the commands requireApproval names)", got, want)
	}
	if !s.Enabled() {
		t.Error("enabled: got false, want true by default")
	}
	if s.TickSeconds() != 0 || s.Tick() != 0 {
		t.Errorf("tick: got %d s, want none", s.TickSeconds())
	}
	if got := s.Owns(); len(got) != 1 || got[0] != SessionUnit("ci") {
		t.Errorf("owns: got %v, want [session:ci]", got)
	}
	if !s.Takes(KindTick) || s.Takes(KindStarted) {
		t.Errorf("Takes: rules takes TICK and not STARTED, got tick=%v started=%v", s.Takes(KindTick), s.Takes(KindStarted))
	}
	doc, ok, err := s.RuleDocument(nil)
	if err != nil || !ok || len(doc.Rules()) != 2 {
		t.Fatalf("RuleDocument: got %d rules, ok=%v, err=%v", len(doc.Rules()), ok, err)
	}
	w, _ := doc.Rules()[0].When()
	if w.Per() != PerWorkflow {
		t.Errorf("per: got %q, want the default %q", w.Per(), PerWorkflow)
	}
}

func TestParseSupervisorEngineDefaults(t *testing.T) {
	t.Parallel()
	tests := []struct {
		engine   obj
		allowed  []CommandType
		takeTick bool
	}{
		{obj{"type": "http", "settings": obj{"url": "https://agent.example.com/yukta/signals"}}, CommandTypes, false},
		{obj{"type": "workflow", "settings": obj{"sessionId": "supervisors", "workflowId": "triage", "events": arr{"InputRequested"}}}, []CommandType{}, true},
		{obj{"type": "process", "settings": obj{"command": "/opt/yukta/decide"}}, CommandTypes, false},
	}
	for _, tt := range tests {
		t.Run(tt.engine["type"].(string), func(t *testing.T) {
			t.Parallel()
			s, err := Parse(mustJSON(t, obj{"id": "s", "name": "S", "engine": tt.engine, "owns": arr{"server"}}), ParseOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if got := s.AllowedCommands(); !slices.Equal(got, tt.allowed) {
				t.Errorf("allowedCommands: got %v, want %v", got, tt.allowed)
			}
			if got := s.Takes(KindTick); got != tt.takeTick {
				t.Errorf("Takes(TICK): got %v, want %v", got, tt.takeTick)
			}
		})
	}
}

// TestEngineExamplesParse keeps the catalogue's examples valid supervisors.
func TestEngineExamplesParse(t *testing.T) {
	t.Parallel()
	for _, e := range Engines() {
		var engine any
		if err := json.Unmarshal([]byte(e.Example), &engine); err != nil {
			t.Fatalf("%s example: %v", e.Type, err)
		}
		doc := obj{"id": "ex", "name": "Example", "engine": engine, "owns": arr{"session:ci"}}
		if _, err := Parse(mustJSON(t, doc), ParseOptions{}); err != nil {
			t.Errorf("%s example: got %v, want a valid supervisor", e.Type, err)
		}
	}
}

func TestParseSupervisorViolations(t *testing.T) {
	t.Parallel()
	with := func(edit func(obj)) []byte {
		d := rulesSupervisor(seedRule())
		edit(d)
		return mustJSON(t, d)
	}
	tests := []struct {
		name string
		doc  []byte
		opts ParseOptions
		want []violation
	}{
		{"not json", []byte(`{"id":`), ParseOptions{}, []violation{{"", "not valid JSON"}}},
		{"not an object", []byte(`[]`), ParseOptions{}, []violation{{"", "must be an object"}}},
		{"unknown field", with(func(d obj) { d["owner"] = "x" }), ParseOptions{}, []violation{{"owner", `unknown field "owner"; allowed fields: id, name`}}},
		{"missing id and name", with(func(d obj) { delete(d, "id"); delete(d, "name") }), ParseOptions{},
			[]violation{{"id", "is required"}, {"name", "is required"}}},
		{"bad id", with(func(d obj) { d["id"] = "Guard!" }), ParseOptions{}, []violation{{"id", `supervisor id "Guard!" must be 1 to 64 lowercase`}}},
		{"id from the url", with(func(d obj) { delete(d, "id") }), ParseOptions{ID: "guard"}, nil},
		{"id differs from the url", with(func(d obj) {}), ParseOptions{ID: "other"}, []violation{{"id", `the URL names supervisor "other"`}}},
		{"name too long", with(func(d obj) { d["name"] = strings.Repeat("ü", 257) }), ParseOptions{}, []violation{{"name", "is 257 characters long; the limit is 256"}}},
		{"no engine", with(func(d obj) { delete(d, "engine") }), ParseOptions{}, []violation{{"engine", "is required"}}},
		{"unknown engine", with(func(d obj) { d["engine"] = obj{"type": "cron"} }), ParseOptions{},
			[]violation{{"engine.type", `"cron" is not an engine; use one of rules, http, workflow, process`}}},
		{"settings not an object", with(func(d obj) { d["engine"] = obj{"type": "rules", "settings": arr{}} }), ParseOptions{},
			[]violation{{"engine.settings", "must be an object, got an array"}}},
		{"bad units", with(func(d obj) { d["owns"] = arr{"session:ci", "workflow:ci/build", "session:CI", "team", "session:ci", 3} }), ParseOptions{},
			[]violation{{"owns[1]", "workflow:ci/build is already covered by session:ci"}, {"owns[2]", `"session:CI" does not name a session`},
				{"owns[3]", `"team" is not a unit; use session:<id>, workflow:<session>/<workflow> or server`}, {"owns[4]", "repeats session:ci"},
				{"owns[5]", "must be a string, got a number"}}},
		{"server with others", with(func(d obj) { d["owns"] = arr{"workflow:ci/build", "server"} }), ParseOptions{},
			[]violation{{"owns[1]", "server covers workflow:ci/build (owns[0]); keep only one of them"}}},
		{"parent is self", with(func(d obj) { d["parentId"] = "guard" }), ParseOptions{}, []violation{{"parentId", "is the supervisor itself"}}},
		{"bad command lists", with(func(d obj) {
			d["allowedCommands"] = arr{"PauseWorkflow", "pauseWorkflow", "Nope", "PauseWorkflow"}
			d["reviews"] = arr{"StartWorkflow", "StartWorkflow"}
		}), ParseOptions{}, []violation{{"allowedCommands[1]", "did you mean PauseWorkflow?"}, {"allowedCommands[2]", `"Nope" is not a command type`},
			{"allowedCommands[3]", "repeats PauseWorkflow"}, {"reviews[1]", "repeats StartWorkflow"}}},
		{"then outside allowed commands", with(func(d obj) { d["allowedCommands"] = arr{"StopWorkflow"} }), ParseOptions{},
			[]violation{{"engine.settings.rules[0].then.command", "PauseWorkflow is not in allowedCommands"}}},
		{"gate outside reviews", mustJSON(t, func() obj {
			d := rulesSupervisor(obj{"id": "g", "deny": obj{"command": "StartWorkflow"}})
			d["reviews"] = arr{"RestartWorkflow"}
			return d
		}()), ParseOptions{}, []violation{{"engine.settings.rules[0].deny.command", "StartWorkflow is not in reviews"}}},
		{"tick rule without ticks", mustJSON(t, rulesSupervisor(obj{"id": "t", "when": obj{"tick": true}, "then": obj{"command": "PauseWorkflow"}})),
			ParseOptions{}, []violation{{"engine.settings.rules[0].when.tick", "set tickSeconds"}}},
		{"tick too short", with(func(d obj) { d["tickSeconds"] = 1 }), ParseOptions{}, []violation{{"tickSeconds", "must be from 5 to 86400 seconds, got 1"}}},
		{"tick not a whole number", with(func(d obj) { d["tickSeconds"] = 1.5 }), ParseOptions{}, []violation{{"tickSeconds", "must be a whole number"}}},
		{"enabled not a boolean", with(func(d obj) { d["enabled"] = "yes" }), ParseOptions{}, []violation{{"enabled", "must be true or false"}}},
		{"bad rule document", mustJSON(t, rulesSupervisor(obj{"id": "x", "when": obj{"event": "Nope"}, "then": obj{"command": "PauseWorkflow"}})),
			ParseOptions{}, []violation{{"engine.settings.rules[0].when.event", `"Nope" is not an event type`}}},
		{"no rules", with(func(d obj) { d["engine"] = obj{"type": "rules"} }), ParseOptions{}, []violation{{"engine.settings.rules", "is required"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, err := Parse(tt.doc, tt.opts)
			if tt.want == nil {
				if err != nil {
					t.Fatalf("got %v, want no error", err)
				}
				return
			}
			checkViolations(t, err, tt.want...)
		})
	}
}

func TestParseEngineSettingsViolations(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		engine obj
		extra  obj
		want   []violation
	}{
		{"http unknown and out of range", obj{"type": "http", "settings": obj{"url": "ftp://x", "timeoutMs": 20000, "maxConcurrent": 0, "retries": 3}}, nil,
			[]violation{{"engine.settings.url", "is not an absolute http or https URL"}, {"engine.settings.timeoutMs", "must be from 1 to 10000, got 20000"},
				{"engine.settings.maxConcurrent", "must be from 1 to 32, got 0"}, {"engine.settings.retries", `unknown setting "retries"; the http engine takes: url, headers`}}},
		{"http credentials in the url", obj{"type": "http", "settings": obj{"url": "https://u:p@agent.example.com/"}}, nil,
			[]violation{{"engine.settings.url", "must not carry a user or password"}}},
		{"http headers", obj{"type": "http", "settings": obj{
			"headers":       obj{"Host": "x", "X-Team": "${env.TEAM}-${TEAM}", "Bad Name": "x", "X-N": 1, "X-Line": "a\nb"},
			"secretHeaders": obj{"x-team": "s"}}}, nil,
			[]violation{{"engine.settings.headers.Host", "Yukta sets Host itself"}, {"engine.settings.headers.X-Team", "is not ${env.NAME}"},
				{`engine.settings.headers["Bad Name"]`, "is not a header name"}, {"engine.settings.headers.X-N", "must be a string, got a number"},
				{"engine.settings.headers.X-Line", "must not contain line breaks"}, {"engine.settings.secretHeaders.x-team", "is also in headers"}}},
		{"http secret-named plain headers", obj{"type": "http", "settings": obj{
			"headers": obj{"AUTHORIZATION": "Bearer abc", "x-API-key": "k1", "Cookie": "a=b", "X-Auth-Token": "Bearer ${env.AGENT_TOKEN}", "X-Team": "ops"}}}, nil,
			[]violation{{"engine.settings.headers.AUTHORIZATION", "move it to secretHeaders, or take its value from the environment"},
				{"engine.settings.headers.Cookie", "carries a secret by its name"}, {"engine.settings.headers.x-API-key", "plain headers show on every read"}}},
		{"http reviews and ticks", obj{"type": "http"}, obj{"reviews": arr{"StartWorkflow"}, "tickSeconds": 30},
			[]violation{{"tickSeconds", "the http engine takes no Tick signals"}}},
		{"workflow required settings", obj{"type": "workflow", "settings": obj{}}, nil,
			[]violation{{"engine.settings.sessionId", "is required by the workflow engine"}, {"engine.settings.workflowId", "is required"},
				{"engine.settings.events", "is required"}}},
		{"workflow bad settings", obj{"type": "workflow", "settings": obj{"sessionId": "Sup", "workflowId": "t", "events": arr{"InputRequested", "Nope", "InputRequested"},
			"when": "command.type == 'x'", "timeout": 601}}, nil,
			[]violation{{"engine.settings.sessionId", `"Sup" is not an id`}, {"engine.settings.events[1]", `"Nope" is not an event type`},
				{"engine.settings.events[2]", "repeats InputRequested"}, {"engine.settings.when", "reads command, which the workflow engine's when cannot read"},
				{"engine.settings.timeout", "must be from 1 to 600, got 601"}}},
		{"process relative command", obj{"type": "process", "settings": obj{"command": "decide", "args": 3}}, obj{"reviews": arr{"StartWorkflow"}},
			[]violation{{"engine.settings.command", `"decide" is not an absolute path`}, {"engine.settings.args", "must be a string, got a number"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			d := obj{"id": "s", "name": "S", "engine": tt.engine, "owns": arr{"session:ci"}}
			for k, v := range tt.extra {
				d[k] = v
			}
			_, err := Parse(mustJSON(t, d), ParseOptions{})
			checkViolations(t, err, tt.want...)
		})
	}
}

func TestReviewsNeedOwnedUnits(t *testing.T) {
	t.Parallel()
	d := obj{"id": "s", "name": "S", "engine": obj{"type": "http"}, "owns": arr{}, "reviews": arr{"StartWorkflow"}}
	_, err := Parse(mustJSON(t, d), ParseOptions{})
	checkViolations(t, err, violation{"reviews", "owns is empty"})
}

func TestParseUsesExprChecker(t *testing.T) {
	t.Parallel()
	var got [][]string
	check := func(expr string, vars []string) error {
		got = append(got, append([]string{expr}, vars...))
		if strings.Contains(expr, "bad") {
			return errors.New(`CEL expression "bad" does not compile`)
		}
		return nil
	}
	rule := seedRule()
	rule["when"].(obj)["if"] = "event.nodeId == 'bad'"
	_, err := Parse(mustJSON(t, rulesSupervisor(rule)), ParseOptions{Check: check})
	checkViolations(t, err, violation{"engine.settings.rules[0].when.if", `CEL expression "bad" does not compile`})
	if want := [][]string{{"event.nodeId == 'bad'", "event", "execution", "now"}}; !reflect.DeepEqual(got, want) {
		t.Errorf("checker calls: got %q, want %q", got, want)
	}
}

func TestNewAndSpecRoundTrip(t *testing.T) {
	t.Parallel()
	spec := Spec{ID: "agent", Name: "Agent", EngineType: "http",
		Settings: map[string]any{"url": "https://a.example.com/s", "timeoutMs": 5000, "secretHeaders": map[string]any{"Authorization": "Bearer t"}},
		Owns:     []string{"workflow:ci/build", "session:ops"}, ParentID: "root",
		AllowedCommands: []CommandType{StopWorkflow, PauseWorkflow}, Reviews: []CommandType{StartWorkflow}, Enabled: true}
	s, err := New(spec, nil)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := s.AllowedCommands(), []CommandType{PauseWorkflow, StopWorkflow}; !slices.Equal(got, want) {
		t.Errorf("allowedCommands: got %v, want %v in table order", got, want)
	}
	back := Restore(s.Spec())
	if !reflect.DeepEqual(back, s) {
		t.Errorf("Restore(Spec()): got %+v, want %+v", back, s)
	}
	b, err := json.Marshal(s)
	if err != nil {
		t.Fatal(err)
	}
	again, err := Parse(b, ParseOptions{})
	if err != nil {
		t.Fatalf("Parse(Marshal): %v\n%s", err, b)
	}
	if again.ID() != "agent" || again.ParentID() != "root" || !slices.Equal(again.Reviews(), []CommandType{StartWorkflow}) || again.Settings()["timeoutMs"] == nil {
		t.Errorf("Parse(Marshal): got %+v", again)
	}
	spec.Settings["url"] = "changed"
	if s.Settings()["url"] != "https://a.example.com/s" {
		t.Error("New kept the caller's settings map; it must copy it")
	}
	s.Settings()["url"] = "changed"
	if s.Settings()["url"] != "https://a.example.com/s" {
		t.Error("Settings returned the supervisor's own map; it must copy it")
	}
}

func TestNewReportsLikeParse(t *testing.T) {
	t.Parallel()
	_, err := New(Spec{ID: "x", Name: "X", EngineType: "process", Settings: map[string]any{}, Owns: []string{"nope"}}, nil)
	checkViolations(t, err, violation{"owns[0]", `"nope" is not a unit`}, violation{"engine.settings.command", "is required"})
}

func TestRestoreKeepsStoredValues(t *testing.T) {
	t.Parallel()
	// Restore does not validate: an engine or unit this version does not
	// know must still load.
	s := Restore(Spec{ID: "old", Name: "Old", EngineType: "gone", Owns: []string{"session:ci", "team:x"}, AllowedCommands: []CommandType{"Gone"}})
	if s.EngineType() != "gone" || len(s.Owns()) != 2 || s.Owns()[1].Kind() != "" {
		t.Errorf("got %+v, want the stored values with the unknown unit covering nothing", s)
	}
	if s.OwnsPlace(Place{SessionID: "x"}) || !s.OwnsPlace(Place{SessionID: "ci", WorkflowID: "w"}) {
		t.Error("OwnsPlace: the unreadable unit must cover nothing, session:ci must cover ci")
	}
}

func TestMaskedAndKeepSecrets(t *testing.T) {
	t.Parallel()
	s, err := New(Spec{ID: "a", Name: "A", EngineType: "http", Enabled: true, Owns: []string{"server"},
		Settings: map[string]any{"headers": map[string]any{"X-Team": "ops"}, "secretHeaders": map[string]any{"Authorization": "Bearer t"}}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	m := s.Masked()
	if got := m.Settings()["secretHeaders"].(map[string]any)["Authorization"]; got != "***" {
		t.Errorf("masked secret: got %v, want ***", got)
	}
	if got := m.Settings()["headers"].(map[string]any)["X-Team"]; got != "ops" {
		t.Errorf("masked plain header: got %v, want ops", got)
	}
	if got := s.Settings()["secretHeaders"].(map[string]any)["Authorization"]; got != "Bearer t" {
		t.Errorf("Masked changed the original: got %v", got)
	}
	kept, err := m.KeepSecrets(&s)
	if err != nil {
		t.Fatal(err)
	}
	if got := kept.Settings()["secretHeaders"].(map[string]any)["Authorization"]; got != "Bearer t" {
		t.Errorf("KeepSecrets: got %v, want the stored secret", got)
	}
	_, err = m.KeepSecrets(nil)
	checkViolations(t, err, violation{"engine.settings.secretHeaders.Authorization", "no stored value to keep"})
}

func TestUnits(t *testing.T) {
	t.Parallel()
	tests := []struct {
		in     string
		covers []Place
		misses []Place
	}{
		{"server", []Place{{SessionID: "a"}, {SessionID: "b", WorkflowID: "w"}, {}}, nil},
		{"session:ci", []Place{{SessionID: "ci"}, {SessionID: "ci", WorkflowID: "build"}}, []Place{{SessionID: "cd"}, {}}},
		{"workflow:ci/build", []Place{{SessionID: "ci", WorkflowID: "build"}}, []Place{{SessionID: "ci"}, {SessionID: "ci", WorkflowID: "test"}, {SessionID: "cd", WorkflowID: "build"}}},
	}
	for _, tt := range tests {
		u, err := ParseUnit(tt.in)
		if err != nil {
			t.Fatalf("ParseUnit(%q): %v", tt.in, err)
		}
		if u.String() != tt.in {
			t.Errorf("String: got %q, want %q", u.String(), tt.in)
		}
		for _, p := range tt.covers {
			if !u.Covers(p) {
				t.Errorf("%s must cover %+v", tt.in, p)
			}
		}
		for _, p := range tt.misses {
			if u.Covers(p) {
				t.Errorf("%s must not cover %+v", tt.in, p)
			}
		}
	}
	for _, bad := range []string{"", "session:", "workflow:ci", "workflow:ci/", "Server", "session:a/b"} {
		if _, err := ParseUnit(bad); !errors.Is(err, fault.ErrInvalid) {
			t.Errorf("ParseUnit(%q): got %v, want ErrInvalid", bad, err)
		}
	}
}

func TestCheckParent(t *testing.T) {
	t.Parallel()
	stored := map[string]string{"root": "", "team": "root", "a": "team", "b": "a", "loop1": "loop2", "loop2": "loop1", "orphan": "gone",
		"d1": "", "d2": "d1", "d3": "d2", "d4": "d3", "d5": "d4", "d6": "d5", "d7": "d6"}
	parentOf := func(id string) (string, bool) { p, ok := stored[id]; return p, ok }
	sup := func(id, parent string) Supervisor { return Restore(Spec{ID: id, ParentID: parent}) }
	tests := []struct {
		name string
		s    Supervisor
		want string // "" for no error
	}{
		{"root", sup("new", ""), ""},
		{"under a chain", sup("new", "b"), ""},
		{"missing parent", sup("new", "nope"), `supervisor "nope" does not exist`},
		{"move under own descendant", sup("team", "b"), "team -> b -> a -> team is a cycle"},
		{"self", sup("team", "team"), "team -> team is a cycle"},
		{"stored cycle", sup("new", "loop1"), `cycles at "loop1"`},
		{"missing ancestor", sup("new", "orphan"), `supervisor "gone" in the chain`},
		{"depth 8 is allowed", sup("new", "d7"), ""},
		{"too deep", sup("new2", "new"), "deeper than 8"},
	}
	stored["new"] = "d7"
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			err := CheckParent(tt.s, parentOf)
			if tt.want == "" {
				if err != nil {
					t.Fatalf("got %v, want nil", err)
				}
				return
			}
			checkViolations(t, err, violation{"parentId", tt.want})
		})
	}
}

// TestSettingChecksMatchCatalogue keeps the machine-readable setting bounds
// and the catalogue in step: every bound names a real setting, every
// setting type of the engines checked by settings() is handled, and the
// bounds the descriptions state are the ones enforced.
func TestSettingChecksMatchCatalogue(t *testing.T) {
	t.Parallel()
	handled := []string{"number", "number (seconds)", "string", "expression", "map", "secret map", "list of event type names"}
	names := map[string]Setting{}
	for _, e := range Engines() {
		for _, s := range e.Settings {
			names[e.Type+"."+s.Name] = s
			if e.Type != "rules" && !slices.Contains(handled, s.Type) {
				t.Errorf("%s.%s: setting type %q is not checked", e.Type, s.Name, s.Type)
			}
		}
	}
	for key, c := range settingChecks {
		s, ok := names[key]
		if !ok {
			t.Errorf("settingChecks names %s, which the catalogue lacks", key)
			continue
		}
		if c.max > 0 && !strings.Contains(s.Description, "at most "+strconvItoa(c.max)) && !strings.Contains(s.Description, "to "+strconvItoa(c.max)) {
			t.Errorf("%s: enforced maximum %d is not in its description %q", key, c.max, s.Description)
		}
	}
	// Defaults in the catalogue must pass the checks.
	for key, s := range names {
		if s.Default == "" || strings.HasPrefix(key, "rules.") {
			continue
		}
		engine, name, _ := strings.Cut(key, ".")
		settings := obj{name: json.Number(s.Default)}
		switch engine {
		case "workflow":
			settings["sessionId"], settings["workflowId"], settings["events"] = "s", "w", arr{"InputRequested"}
		case "process":
			settings["command"] = "/bin/true"
		}
		d := obj{"id": "s", "name": "S", "engine": obj{"type": engine, "settings": settings}, "owns": arr{"session:ci"}}
		if _, err := Parse(mustJSON(t, d), ParseOptions{}); err != nil {
			t.Errorf("%s default %s: %v", key, s.Default, err)
		}
	}
}

func strconvItoa(n int64) string { return fmt.Sprint(n) }
