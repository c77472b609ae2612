package session_test

import (
	"testing"

	"github.com/yukta/yukta/domain/retention"
	"github.com/yukta/yukta/domain/session"
)

func TestParseRetention(t *testing.T) {
	t.Parallel()
	s, _, err := session.Parse(encode(t, docWith(set("retention", obj{"days": 7, "journals": "delete"}))), catalog, session.ParseOptions{})
	if err != nil {
		t.Fatalf("Parse: %v", err)
	}
	global, _ := retention.NewPolicy(90, "keep")
	if p := s.Retention().Over(global); p.Days() != 7 || p.Journals() != retention.Delete {
		t.Errorf("retention over 90/keep: got %d/%s, want 7/delete", p.Days(), p.Journals())
	}
	if m := s.Masked(catalog); m.Retention() != s.Retention() {
		t.Errorf("Masked dropped the retention: %+v", m.Retention())
	}
	// Absent, null and {} inherit everything; days 0 keeps this session's
	// runs forever whatever the server's policy.
	for _, r := range []any{nil, obj{}, obj{"days": nil, "journals": nil}} {
		s, _, err := session.Parse(encode(t, docWith(set("retention", r))), catalog, session.ParseOptions{})
		if err != nil || !s.Retention().IsZero() {
			t.Errorf("retention %v: got (%+v, %v), want it to inherit", r, s.Retention(), err)
		}
	}
	s, _, err = session.Parse(encode(t, docWith(set("retention", obj{"days": 0}))), catalog, session.ParseOptions{})
	if err != nil || s.Retention().Over(global).Deletes() {
		t.Errorf("days 0: got (%+v, %v), want keep forever", s.Retention(), err)
	}
}

func TestParseRetentionListsEveryProblem(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		r    any
		path string
		want []string
	}{
		{obj{"days": -1}, "retention.days", []string{"is -1", "from 0 (keep this session's runs forever) to 36500"}},
		{obj{"days": 1.5}, "retention.days", []string{"is 1.5"}},
		{obj{"days": "7"}, "retention.days", []string{"must be a number, got a string"}},
		{obj{"journals": "archive"}, "retention.journals", []string{`is "archive"; use keep`}},
		{obj{"journals": ""}, "retention.journals", []string{"is empty; use keep or delete"}},
		{obj{"journals": 1}, "retention.journals", []string{"must be a string"}},
		{obj{"hours": 1}, "retention.hours", []string{`unknown field "hours"`}},
		{arr{}, "retention", []string{"must be an object"}},
	} {
		_, _, err := session.Parse(encode(t, docWith(set("retention", c.r))), catalog, session.ParseOptions{})
		checkViolations(t, err, []want{{c.path, c.want}})
	}
}
