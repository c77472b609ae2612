package supervisor

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/yukta/yukta/domain/fault"
	"github.com/yukta/yukta/domain/jsonvalue"
	"github.com/yukta/yukta/domain/session"
)

// Limits of a supervisor document.
const (
	MaxNameLen     = 256
	MaxOwns        = 100
	MinTickSeconds = 5
	MaxTickSeconds = 86400
)

// ValidID reports whether s may be a supervisor id: the same rule as
// session, workflow and node ids (lowercase letters, digits, '-' and '_',
// at most 64 characters).
func ValidID(s string) bool { return session.ValidID(s) }

// Spec is a supervisor as a caller describes it, before validation.
type Spec struct {
	ID         string
	Name       string
	EngineType string
	// Settings are the engine's settings, as decoded JSON values
	// (json.Number numbers); for the rules engine, the rule document.
	Settings map[string]any
	// Owns lists units: session:<id>, workflow:<session>/<workflow>, server.
	Owns     []string
	ParentID string
	// AllowedCommands are the command types the supervisor may send; nil
	// means the engine's default (every command, none for workflow).
	AllowedCommands []CommandType
	// Reviews are the command types on owned units that wait for its
	// verdict before they apply; nil means the default: for the rules
	// engine, the types its deny and requireApproval rules name; otherwise
	// none.
	Reviews []CommandType
	// TickSeconds is how often a TICK signal is sent; 0 sends none.
	TickSeconds int
	Enabled     bool
}

// Supervisor is the shell every engine shares: who it is, what it owns,
// what it may send and what it reviews. A Supervisor that exists passed New
// or Parse (or was restored from storage, where it had).
type Supervisor struct {
	id          string
	name        string
	engine      string
	settings    map[string]any
	owns        []Unit
	parentID    string
	allowed     []CommandType
	reviews     []CommandType
	tickSeconds int
	enabled     bool
}

// ExprChecker compiles one CEL expression against the named variables
// (each dynamically typed) and returns why it does not compile, or nil. The
// cel adapter provides it; nil skips compiling (the structure is still
// checked, including which variables and fields an expression reads).
type ExprChecker func(expr string, vars []string) error

// ParseOptions tune Parse.
type ParseOptions struct {
	// ID is the supervisor id the caller addressed (the URL path). When
	// set, the document's id may be omitted and, if present, must equal it.
	ID string
	// Check compiles expressions (rule if, workflow when); nil skips it.
	Check ExprChecker
}

// New validates a spec and reports every problem at once as a
// *fault.ValidationError with paths as in the document form (engine.settings.url).
func New(s Spec, check ExprChecker) (Supervisor, error) {
	r := &reader{}
	sup := r.validate(s, s.AllowedCommands != nil, s.Reviews != nil, check)
	if len(r.vs) > 0 {
		return Supervisor{}, &fault.ValidationError{Subject: "supervisor", Violations: r.vs}
	}
	return sup, nil
}

// Parse reads a supervisor document strictly (unknown members are refused)
// and validates it like New:
//
//	{"id", "name", "engine": {"type", "settings"}, "owns", "parentId"?,
//	 "allowedCommands"?, "reviews"?, "tickSeconds"?, "enabled"?}
//
// enabled defaults to true.
func Parse(data []byte, o ParseOptions) (Supervisor, error) {
	v, err := decode(data, "supervisor")
	if err != nil {
		return Supervisor{}, err
	}
	r := &reader{}
	if _, ok := v.(map[string]any); !ok {
		r.add("", `must be an object such as {"id": "guard", "name": "Guard", "engine": {"type": "rules", "settings": {...}}, "owns": ["session:ci"]}, got %s`, kind(v))
		return Supervisor{}, &fault.ValidationError{Subject: "supervisor", Violations: r.vs}
	}
	spec, hasAllowed, hasReviews := r.spec(v, o)
	sup := r.validate(spec, hasAllowed, hasReviews, o.Check)
	if len(r.vs) > 0 {
		return Supervisor{}, &fault.ValidationError{Subject: "supervisor", Violations: r.vs}
	}
	return sup, nil
}

// Restore rebuilds a stored supervisor without checking the rules: they
// held when it was saved, and a later change of the rules must not make a
// stored supervisor unreadable. A default setting it was stored without
// (before defaults were stored) is filled in, so every read shows it. A unit it cannot read covers nothing.
// Only storage adapters call it.
func Restore(s Spec) Supervisor {
	sup := Supervisor{id: s.ID, name: s.Name, engine: s.EngineType, settings: withDefaults(s.EngineType, copySettings(s.Settings)),
		parentID: s.ParentID, allowed: nonNil(slices.Clone(s.AllowedCommands)), reviews: nonNil(slices.Clone(s.Reviews)),
		tickSeconds: s.TickSeconds, enabled: s.Enabled, owns: []Unit{}}
	for _, u := range s.Owns {
		unit, _ := parseUnit(u)
		sup.owns = append(sup.owns, unit)
	}
	return sup
}

func (r *reader) spec(v any, o ParseOptions) (Spec, bool, bool) {
	// "warnings" is what a read adds beside the document (owned sessions
	// that do not exist); it is accepted and ignored, so a document read
	// can be applied back as it is.
	m := r.object(v, "", "id", "name", "engine", "owns", "parentId", "allowedCommands", "reviews", "tickSeconds", "enabled", "warnings")
	if m == nil {
		return Spec{}, false, false
	}
	var s Spec
	if _, ok := m["id"]; ok || o.ID == "" {
		s.ID = r.str(m, "id", "", true, 64)
	}
	if o.ID != "" {
		switch {
		case s.ID == "":
			s.ID = o.ID
		case s.ID != o.ID:
			r.add("id", "is %q but the URL names supervisor %q; they must match (or omit id)", clip(s.ID), clip(o.ID))
		}
	}
	s.Name = r.str(m, "name", "", true, MaxNameLen)
	if ev, ok := m["engine"]; !ok || ev == nil {
		r.add("engine", `is required, such as {"type": "rules", "settings": {...}}; engines are %s`, engineTypes())
	} else if em := r.object(ev, "engine", "type", "settings"); em != nil {
		s.EngineType = r.str(em, "type", "engine", true, 64)
		switch sv := em["settings"].(type) {
		case nil:
			s.Settings = map[string]any{}
		case map[string]any:
			s.Settings = sv
		default:
			r.add("engine.settings", "must be an object, got %s", kind(sv))
		}
	}
	owns, _ := r.strings(m, "owns", "", MaxOwns)
	s.Owns = owns
	s.ParentID = r.str(m, "parentId", "", false, 64)
	allowed, hasAllowed := r.commandList(m, "allowedCommands")
	reviews, hasReviews := r.commandList(m, "reviews")
	s.AllowedCommands, s.Reviews = allowed, reviews
	if n, ok := r.integer(m, "tickSeconds", "", 0, MaxTickSeconds); ok {
		s.TickSeconds = int(n)
	}
	s.Enabled = r.boolean(m, "enabled", "", true)
	return s, hasAllowed, hasReviews
}

// commandList reads a list of command types; invalid entries are reported
// by validate, so they are kept here.
func (r *reader) commandList(m map[string]any, key string) ([]CommandType, bool) {
	ss, present := r.strings(m, key, "", len(CommandTypes)*2)
	if !present {
		return nil, false
	}
	out := make([]CommandType, 0, len(ss))
	for _, s := range ss {
		out = append(out, CommandType(s))
	}
	return out, true
}

// validate checks every rule of the shell and the engine settings and
// returns the supervisor they describe.
func (r *reader) validate(s Spec, hasAllowed, hasReviews bool, check ExprChecker) Supervisor {
	sup := Supervisor{id: s.ID, name: s.Name, engine: s.EngineType, parentID: s.ParentID,
		tickSeconds: s.TickSeconds, enabled: s.Enabled, owns: []Unit{}}
	switch {
	case s.ID == "":
		if !r.has("id") {
			r.add("id", "is required")
		}
	case !ValidID(s.ID):
		r.add("id", "supervisor id %q must be 1 to 64 lowercase letters, digits, '-' and '_', starting with a letter or digit", clip(s.ID))
	}
	if strings.TrimSpace(s.Name) == "" && !r.has("name") {
		r.add("name", "is required")
	} else if n := len([]rune(s.Name)); n > MaxNameLen && !r.has("name") {
		r.add("name", "is %d characters long; the limit is %d", n, MaxNameLen)
	}

	eng, engOK := Engine{}, false
	switch {
	case s.EngineType == "":
		if !r.has("engine.type") && !r.has("engine") {
			r.add("engine.type", "is required; engines are %s", engineTypes())
		}
	default:
		e, err := EngineByType(s.EngineType)
		if err != nil {
			r.add("engine.type", "%q is not an engine; use one of %s", clip(s.EngineType), engineTypes())
		} else {
			eng, engOK = e, true
		}
	}

	r.owns(&sup, s.Owns)

	switch {
	case s.ParentID == "":
	case !ValidID(s.ParentID):
		r.add("parentId", "%q is not a supervisor id", clip(s.ParentID))
	case s.ParentID == s.ID:
		r.add("parentId", "is the supervisor itself; name another supervisor, or leave parentId out for a root")
	}

	sup.allowed = r.commandSet(s.AllowedCommands, "allowedCommands")
	if !hasAllowed && engOK {
		sup.allowed = commandTypesOf(eng.DefaultCommands)
	}
	sup.reviews = r.commandSet(s.Reviews, "reviews")
	for i, t := range s.Reviews {
		if CommandType(t).Valid() && !Reviewable(CommandType(t)) {
			r.add(fmt.Sprintf("reviews[%d]", i), "%s cannot be reviewed: Hold and Release are a supervisor's own ledger, and an input is answered by whoever it asks; leave it out", t)
		}
	}

	if s.TickSeconds != 0 && (s.TickSeconds < MinTickSeconds || s.TickSeconds > MaxTickSeconds) && !r.has("tickSeconds") {
		r.add("tickSeconds", "must be from %d to %d seconds, got %d (leave it out for no ticks)", MinTickSeconds, MaxTickSeconds, s.TickSeconds)
	}
	if !engOK {
		sup.settings = copySettings(s.Settings)
		return sup
	}
	if s.TickSeconds != 0 && !slices.Contains(eng.Signals, SignalTick) {
		r.add("tickSeconds", "the %s engine takes no Tick signals; leave tickSeconds out", eng.Type)
	}

	var doc *RuleDocument
	if s.Settings == nil {
		s.Settings = map[string]any{}
	}
	switch {
	case r.has("engine.settings"): // not an object; already reported
	case eng.Type == "rules":
		d := r.ruleDocument(s.Settings, "engine.settings", check)
		doc = &d
	default:
		r.settings(eng, s.Settings, "engine.settings", check)
	}
	// Every default explicit: what is stored and every read shows.
	sup.settings = withDefaults(eng.Type, copySettings(s.Settings))

	if doc != nil {
		r.rulesFit(&sup, *doc, hasReviews)
	}
	if len(sup.reviews) > 0 {
		if !slices.Contains(eng.Signals, SignalReview) {
			r.add("reviews", "the %s engine takes no Review signals, so it cannot answer reviews; leave reviews out or use the rules, http or workflow engine", eng.Type)
		}
		if len(sup.owns) == 0 && !r.has("owns") {
			r.add("reviews", "applies to commands on owned units, and owns is empty; add the units to owns or leave reviews out")
		}
	}
	return sup
}

// owns reads the owned units: no repeats and no unit inside another.
func (r *reader) owns(sup *Supervisor, owns []string) {
	if len(owns) > MaxOwns {
		r.add("owns", "has %d units; the limit is %d", len(owns), MaxOwns)
		return
	}
	for i, s := range owns {
		p := jsonvalue.Index("owns", i)
		u, msg := parseUnit(s)
		if msg != "" {
			r.add(p, "%s", msg)
			continue
		}
		for j, o := range sup.owns {
			switch {
			case u == o:
				r.add(p, "repeats %s", u)
			case u.within(o):
				r.add(p, "%s is already covered by %s; leave it out", u, o)
			case o.within(u):
				r.add(p, "%s covers %s (owns[%d]); keep only one of them", u, o, j)
			default:
				continue
			}
			u = Unit{}
			break
		}
		if u.kind != "" {
			sup.owns = append(sup.owns, u)
		}
	}
}

// commandSet checks a list of command types and returns it in table order.
func (r *reader) commandSet(ts []CommandType, path string) []CommandType {
	out := []CommandType{}
	for i, t := range ts {
		p := jsonvalue.Index(path, i)
		switch {
		case !t.Valid():
			hint := ""
			for _, c := range CommandTypes {
				if strings.EqualFold(string(c), string(t)) {
					hint = fmt.Sprintf("; did you mean %s?", c)
				}
			}
			if hint == "" {
				hint = "; use command types such as " + oneOf(CommandTypes[:4]) + " (every type is listed in the supervisor reference)"
			}
			r.add(p, "%q is not a command type%s", clip(string(t)), hint)
		case slices.Contains(out, t):
			r.add(p, "repeats %s", t)
		default:
			out = append(out, t)
		}
	}
	return sortCommands(out)
}

func sortCommands(ts []CommandType) []CommandType {
	slices.SortFunc(ts, func(a, b CommandType) int {
		return slices.Index(CommandTypes, a) - slices.Index(CommandTypes, b)
	})
	return ts
}

// rulesFit checks the rule document against the shell: every then command
// must be allowed, every deny and requireApproval command reviewed (reviews
// defaults to exactly those), and tick rules need tickSeconds.
func (r *reader) rulesFit(sup *Supervisor, doc RuleDocument, hasReviews bool) {
	var gated []CommandType
	for i, rule := range doc.rules {
		p := fmt.Sprintf("engine.settings.rules[%d]", i)
		switch {
		case rule.then != nil:
			if t := rule.then.command; t != "" && !slices.Contains(sup.allowed, t) {
				r.add(p+".then.command", "%s is not in allowedCommands, so the directive would be refused; add it to allowedCommands or choose another command", t)
			}
			if rule.when != nil && rule.when.tick && sup.tickSeconds == 0 && !r.has("tickSeconds") {
				r.add(p+".when.tick", "a tick rule needs ticks; set tickSeconds (for example 60)")
			}
		case rule.gate() != nil:
			t := rule.gate().command
			if t == "" {
				continue
			}
			if !slices.Contains(gated, t) {
				gated = append(gated, t)
			}
			if hasReviews && !slices.Contains(sup.reviews, t) {
				r.add(p+"."+rule.gateKey()+".command", "%s is not in reviews, so this rule never sees it; add it to reviews (or leave reviews out: it then defaults to the commands deny and requireApproval rules name)", t)
			}
		}
	}
	if !hasReviews {
		sup.reviews = sortCommands(nonNil(gated))
	}
}

// ID returns the supervisor id.
func (s Supervisor) ID() string { return s.id }

// Name returns the display name.
func (s Supervisor) Name() string { return s.name }

// EngineType returns the engine type (rules, http, workflow, process).
func (s Supervisor) EngineType() string { return s.engine }

// Settings returns a deep copy of the engine settings, secrets included;
// read paths use Masked.
func (s Supervisor) Settings() map[string]any { return copySettings(s.settings) }

// Owns returns a copy of the owned units.
func (s Supervisor) Owns() []Unit { return slices.Clone(s.owns) }

// ParentID returns the parent supervisor ("" for a root).
func (s Supervisor) ParentID() string { return s.parentID }

// AllowedCommands returns the command types it may send, in table order.
func (s Supervisor) AllowedCommands() []CommandType { return slices.Clone(s.allowed) }

// Reviews returns the command types it reviews, in table order.
func (s Supervisor) Reviews() []CommandType { return slices.Clone(s.reviews) }

// TickSeconds returns the tick period in seconds (0: no ticks).
func (s Supervisor) TickSeconds() int { return s.tickSeconds }

// Tick returns the tick period (0: no ticks).
func (s Supervisor) Tick() time.Duration { return time.Duration(s.tickSeconds) * time.Second }

// Enabled reports whether the supervisor runs and its directives apply.
func (s Supervisor) Enabled() bool { return s.enabled }

// Allows reports whether t is in allowedCommands.
func (s Supervisor) Allows(t CommandType) bool { return slices.Contains(s.allowed, t) }

// ReviewsCommand reports whether commands of type t on owned units wait
// for this supervisor's verdict.
func (s Supervisor) ReviewsCommand(t CommandType) bool { return slices.Contains(s.reviews, t) }

// OwnsPlace reports whether a run or input at p lies in an owned unit.
func (s Supervisor) OwnsPlace(p Place) bool {
	for _, u := range s.owns {
		if u.Covers(p) {
			return true
		}
	}
	return false
}

// Takes reports whether the supervisor's engine receives signals of kind k.
func (s Supervisor) Takes(k SignalKind) bool {
	e, err := EngineByType(s.engine)
	return err == nil && slices.Contains(e.Signals, k.CatalogName())
}

// Hears reports whether the supervisor's engine is handed sig: a kind the
// engine takes (Takes), and no EVENT the supervisor itself caused (actor
// supervisor:<id>) unless its engine hears its own effects (the
// catalogue's HearsOwnEffects). The runtime asks it before every signal,
// so no engine repeats the check.
func (s Supervisor) Hears(sig Signal) bool {
	e, err := EngineByType(s.engine)
	if err != nil || !slices.Contains(e.Signals, sig.Kind().CatalogName()) {
		return false
	}
	ev, ok := sig.Body().(EventSignal)
	return !ok || e.HearsOwnEffects || ev.Actor != "supervisor:"+s.id
}

// Spec returns the supervisor as a spec with every default made explicit:
// what storage keeps and Restore takes back.
func (s Supervisor) Spec() Spec {
	owns := make([]string, len(s.owns))
	for i, u := range s.owns {
		owns[i] = u.String()
	}
	return Spec{ID: s.id, Name: s.name, EngineType: s.engine, Settings: copySettings(s.settings), Owns: owns,
		ParentID: s.parentID, AllowedCommands: slices.Clone(s.allowed), Reviews: slices.Clone(s.reviews),
		TickSeconds: s.tickSeconds, Enabled: s.enabled}
}

// MarshalJSON writes the supervisor document with every default explicit;
// Parse reads it back to an equal Supervisor. Secrets are included: read
// paths marshal Masked().
func (s Supervisor) MarshalJSON() ([]byte, error) {
	owns := make([]string, len(s.owns))
	for i, u := range s.owns {
		owns[i] = u.String()
	}
	o := ordered{{"id", s.id}, {"name", s.name},
		{"engine", ordered{{"type", s.engine}, {"settings", nonNilMap(s.settings)}}},
		{"owns", owns}}
	o = o.with(s.parentID != "", "parentId", s.parentID)
	o = append(o, member{"allowedCommands", nonNil(s.allowed)}, member{"reviews", nonNil(s.reviews)})
	o = o.with(s.tickSeconds != 0, "tickSeconds", s.tickSeconds)
	o = append(o, member{"enabled", s.enabled})
	return o.MarshalJSON()
}

func commandTypesOf(ss []string) []CommandType {
	out := make([]CommandType, len(ss))
	for i, s := range ss {
		out[i] = CommandType(s)
	}
	return out
}

func copySettings(m map[string]any) map[string]any {
	if m == nil {
		return map[string]any{}
	}
	return deepCopy(m).(map[string]any)
}

func nonNil[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}

func nonNilMap(m map[string]any) map[string]any {
	if m == nil {
		return map[string]any{}
	}
	return m
}
