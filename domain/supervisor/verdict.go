package supervisor

import (
	"fmt"
	"math"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/yukta/yukta/domain/fault"
)

// Decision is what a verdict decides.
type Decision string

// The decisions.
const (
	// Allow lets the command apply.
	Allow Decision = "ALLOW"
	// Deny refuses the command; a reason is required.
	Deny Decision = "DENY"
	// RequireApproval parks the command until an ADMIN approves or rejects it.
	RequireApproval Decision = "REQUIRE_APPROVAL"
	// NoOpinion leaves the decision to the parent supervisor (at the root,
	// to the configured default).
	NoOpinion Decision = "NO_OPINION"
)

// Decisions lists every decision.
var Decisions = []Decision{Allow, Deny, RequireApproval, NoOpinion}

// Valid reports whether d is a known decision.
func (d Decision) Valid() bool { return slices.Contains(Decisions, d) }

// Final reports whether d settles a review (everything but NoOpinion).
func (d Decision) Final() bool { return d.Valid() && d != NoOpinion }

// Verdict answers a review.
type Verdict struct {
	decision Decision
	reason   string
}

// NewVerdict checks a verdict: a known decision, a reason for DENY, and a
// reason of at most MaxReasonLen characters.
func NewVerdict(d Decision, reason string) (Verdict, error) {
	r := &reader{}
	v := r.verdict(string(d), reason)
	if len(r.vs) > 0 {
		return Verdict{}, &fault.ValidationError{Subject: "verdict", Violations: r.vs}
	}
	return v, nil
}

// ParseVerdict reads a verdict body, {"verdict": "ALLOW"|"DENY"|
// "REQUIRE_APPROVAL"|"NO_OPINION", "reason"?}, strictly.
func ParseVerdict(data []byte) (Verdict, error) {
	doc, err := decode(data, "verdict")
	if err != nil {
		return Verdict{}, err
	}
	r := &reader{}
	var v Verdict
	if m := r.object(doc, "", "verdict", "reason"); m != nil {
		d := r.str(m, "verdict", "", true, 64)
		reason := r.str(m, "reason", "", false, math.MaxInt)
		if !r.has("verdict") {
			v = r.verdict(d, reason)
		}
	}
	if len(r.vs) > 0 {
		return Verdict{}, &fault.ValidationError{Subject: "verdict", Violations: r.vs}
	}
	return v, nil
}

func (r *reader) verdict(d, reason string) Verdict {
	dec := Decision(strings.ToUpper(d))
	switch {
	case d == "":
		r.add("verdict", "is required; one of %s", oneOf(Decisions))
	case !dec.Valid():
		r.add("verdict", "%q is not a verdict; use %s", clip(d), oneOf(Decisions))
	case dec == Deny && strings.TrimSpace(reason) == "":
		r.add("reason", "is required with DENY: say why, so the caller learns what to change")
	}
	if n := utf8.RuneCountInString(reason); n > MaxReasonLen {
		r.add("reason", "is %d characters long; the limit is %d", n, MaxReasonLen)
	}
	return Verdict{decision: dec, reason: reason}
}

// Decision returns the decision.
func (v Verdict) Decision() Decision { return v.decision }

// Reason returns the reason ("" when none was given).
func (v Verdict) Reason() string { return v.reason }

// Final reports whether the verdict settles the review.
func (v Verdict) Final() bool { return v.decision.Final() }

// MarshalJSON writes {"verdict", "reason"?}.
func (v Verdict) MarshalJSON() ([]byte, error) {
	return ordered{{"verdict", string(v.decision)}}.with(v.reason != "", "reason", v.reason).MarshalJSON()
}

// ParseDefaultDecision reads the configured decision a review takes when
// no supervisor up the chain gives one, or when it times out: ALLOW, DENY
// or REQUIRE_APPROVAL.
func ParseDefaultDecision(s string) (Decision, error) {
	d := Decision(strings.ToUpper(strings.TrimSpace(s)))
	if !d.Final() {
		return "", fault.Newf(fault.ErrInvalid, "default review decision %q is not ALLOW, DENY or REQUIRE_APPROVAL", clip(s))
	}
	return d, nil
}

// DefaultVerdict is the verdict a review settles with when nobody decided:
// def with a reason that says why (the review timed out, or every
// supervisor up the chain had no opinion).
func DefaultVerdict(def Decision, why string) Verdict {
	if !def.Final() {
		def = RequireApproval
	}
	return Verdict{decision: def, reason: fmt.Sprintf("%s; the default decision %s applies", why, def)}
}
