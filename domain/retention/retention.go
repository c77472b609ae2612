// Package retention holds the rules of how long finished executions are
// kept: a server-wide Policy, a session's Override of it, and what happens to
// the journal of a run that is deleted. The sweeper (application/retentionapp)
// applies them; docs/adr/0008-retention.md gives the design.
package retention

import (
	"fmt"
	"time"

	"github.com/yukta/yukta/domain/fault"
)

// Journals says what a deletion does to the run's observer journal.
type Journals string

// Journal choices. Keep is the default: the journal is the audit record and
// outlives the run, so a deleted run's journal still exports and verifies.
const (
	Keep   Journals = "keep"
	Delete Journals = "delete"
)

// MaxDays bounds a policy: a hundred years is "forever" for any real
// deployment, and a bound keeps the cutoff arithmetic far from overflow.
const MaxDays = 36500

// Policy is how long finished runs are kept. Days 0 keeps them forever.
type Policy struct {
	days     int
	journals Journals
}

// NewPolicy validates a policy; journals "" means Keep.
func NewPolicy(days int, journals string) (Policy, error) {
	var vs []fault.Violation
	if days < 0 || days > MaxDays {
		vs = append(vs, fault.Violation{Path: "days", Message: fmt.Sprintf("is %d; it must be a whole number from 0 (keep forever) to %d", days, MaxDays)})
	}
	j, err := ParseJournals(journals)
	if err != nil {
		vs = append(vs, fault.Violation{Path: "journals", Message: err.Error()})
	}
	if len(vs) > 0 {
		return Policy{}, &fault.ValidationError{Subject: "retention policy", Violations: vs}
	}
	return Policy{days: days, journals: j}, nil
}

// ParseJournals reads "keep" or "delete"; "" is Keep.
func ParseJournals(s string) (Journals, error) {
	switch Journals(s) {
	case "", Keep:
		return Keep, nil
	case Delete:
		return Delete, nil
	}
	return "", fmt.Errorf("is %q; use keep (the journal outlives the run) or delete", s)
}

// Days returns how many days a finished run is kept; 0 is forever.
func (p Policy) Days() int { return p.days }

// Journals returns what a deletion does to the journal.
func (p Policy) Journals() Journals {
	if p.journals == "" {
		return Keep
	}
	return p.journals
}

// Deletes reports whether the policy ever deletes a run.
func (p Policy) Deletes() bool { return p.days > 0 }

// Cutoff is the end time before which a finished run is due at now.
func (p Policy) Cutoff(now time.Time) time.Time { return now.AddDate(0, 0, -p.days) }

// Override is a session's own retention: each part it sets replaces the
// server's, each part it leaves out inherits it. The zero value overrides
// nothing.
type Override struct {
	days     int
	hasDays  bool
	journals Journals // "" inherits
}

// NewOverride validates a session's retention; days nil and journals ""
// inherit the server's.
func NewOverride(days *int, journals string) (Override, error) {
	d, j := 0, string(Keep)
	if days != nil {
		d = *days
	}
	if journals != "" {
		j = journals
	}
	if _, err := NewPolicy(d, j); err != nil {
		return Override{}, err
	}
	return Override{days: d, hasDays: days != nil, journals: Journals(journals)}, nil
}

// IsZero reports whether o overrides nothing.
func (o Override) IsZero() bool { return o == Override{} }

// Days returns the session's days and whether it sets them.
func (o Override) Days() (int, bool) { return o.days, o.hasDays }

// Journals returns the session's journal choice; "" inherits.
func (o Override) Journals() Journals { return o.journals }

// Over returns the policy that holds for the session under the server's.
func (o Override) Over(global Policy) Policy {
	p := global
	if o.hasDays {
		p.days = o.days
	}
	if o.journals != "" {
		p.journals = o.journals
	}
	return p
}
