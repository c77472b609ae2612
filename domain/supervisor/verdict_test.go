package supervisor

import (
	"errors"
	"strings"
	"testing"

	"github.com/yukta/yukta/domain/fault"
)

func TestParseVerdict(t *testing.T) {
	t.Parallel()
	tests := []struct {
		in     string
		want   Decision
		reason string
		final  bool
		wire   string
	}{
		{`{"verdict":"ALLOW"}`, Allow, "", true, `{"verdict":"ALLOW"}`},
		{`{"verdict":"deny","reason":"not on Fridays"}`, Deny, "not on Fridays", true, `{"verdict":"DENY","reason":"not on Fridays"}`},
		{`{"verdict":"REQUIRE_APPROVAL","reason":"big change"}`, RequireApproval, "big change", true, `{"verdict":"REQUIRE_APPROVAL","reason":"big change"}`},
		{`{"verdict":"NO_OPINION"}`, NoOpinion, "", false, `{"verdict":"NO_OPINION"}`},
	}
	for _, tt := range tests {
		v, err := ParseVerdict([]byte(tt.in))
		if err != nil {
			t.Errorf("%s: %v", tt.in, err)
			continue
		}
		if v.Decision() != tt.want || v.Reason() != tt.reason || v.Final() != tt.final {
			t.Errorf("%s: got %s %q final=%v, want %s %q final=%v", tt.in, v.Decision(), v.Reason(), v.Final(), tt.want, tt.reason, tt.final)
		}
		b, _ := v.MarshalJSON()
		if string(b) != tt.wire {
			t.Errorf("%s: wire got %s, want %s", tt.in, b, tt.wire)
		}
	}
}

func TestParseVerdictViolations(t *testing.T) {
	t.Parallel()
	tests := []struct {
		in   string
		want []violation
	}{
		{`{}`, []violation{{"verdict", "is required"}}},
		{`{"verdict":"MAYBE"}`, []violation{{"verdict", `"MAYBE" is not a verdict; use ALLOW, DENY, REQUIRE_APPROVAL or NO_OPINION`}}},
		{`{"verdict":"DENY"}`, []violation{{"reason", "is required with DENY"}}},
		{`{"verdict":"DENY","reason":"  "}`, []violation{{"reason", "is required with DENY"}}},
		{`{"verdict":"ALLOW","why":"x"}`, []violation{{"why", `unknown field "why"`}}},
		{`{"verdict":"ALLOW","reason":"` + strings.Repeat("r", 1025) + `"}`, []violation{{"reason", "the limit is 1024"}}},
		{`"ALLOW"`, []violation{{"", "must be an object"}}},
	}
	for _, tt := range tests {
		t.Run(tt.in[:min(len(tt.in), 30)], func(t *testing.T) {
			t.Parallel()
			_, err := ParseVerdict([]byte(tt.in))
			checkViolations(t, err, tt.want...)
		})
	}
	if _, err := NewVerdict(Deny, ""); err == nil {
		t.Error("NewVerdict(DENY, no reason): got no error")
	}
}

// TestDefaults: the default decision is final (REQUIRE_APPROVAL when it is
// not), and its configured text is read leniently. How no opinion climbs
// to the parent is Review.Answer's (review_test.go).
func TestDefaults(t *testing.T) {
	t.Parallel()
	if d := DefaultVerdict(Deny, "timed out"); d.Decision() != Deny || !strings.Contains(d.Reason(), "the default decision DENY applies") {
		t.Errorf("DefaultVerdict(DENY): got %s %q", d.Decision(), d.Reason())
	}
	if d := DefaultVerdict(NoOpinion, "timed out"); d.Decision() != RequireApproval {
		t.Errorf("a default that is not final: got %s, want REQUIRE_APPROVAL", d.Decision())
	}
	if _, err := ParseDefaultDecision("NO_OPINION"); !errors.Is(err, fault.ErrInvalid) {
		t.Errorf("ParseDefaultDecision(NO_OPINION): got %v, want ErrInvalid", err)
	}
	if d, err := ParseDefaultDecision(" allow "); err != nil || d != Allow {
		t.Errorf("ParseDefaultDecision(allow): got %s %v", d, err)
	}
}
