package access_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/yukta/yukta/domain/access"
	"github.com/yukta/yukta/domain/fault"
)

func TestParseRole(t *testing.T) {
	t.Parallel()
	tests := []struct {
		in   string
		want access.Role
	}{
		{"VIEWER", access.Viewer},
		{"OPERATOR", access.Operator},
		{"ADMIN", access.Admin},
		{"admin", access.Admin},
		{" Operator\t", access.Operator},
	}
	for _, tt := range tests {
		got, err := access.ParseRole(tt.in)
		if err != nil || got != tt.want {
			t.Errorf("ParseRole(%q): got %s, %v, want %s, nil", tt.in, got, err, tt.want)
		}
	}
}

func TestParseRoleRefuses(t *testing.T) {
	t.Parallel()
	tests := []struct {
		in, wantText string
	}{
		{"", `role "" is not a role; use VIEWER (read only), OPERATOR (also start and control executions), ADMIN (everything but the worker API) or WORKER (only take and answer tasks of worker queues, through the worker API)`},
		{"VEIWER", `role "VEIWER" is not a role; use VIEWER (read only), OPERATOR (also start and control executions), ADMIN (everything but the worker API) or WORKER (only take and answer tasks of worker queues, through the worker API)`},
		{"ROOT", `role "ROOT" is not a role; use VIEWER (read only), OPERATOR (also start and control executions), ADMIN (everything but the worker API) or WORKER (only take and answer tasks of worker queues, through the worker API)`},
		// A long value in a role's place may be a secret: it is not repeated.
		{"Zp0c3Wq7yq1H3mD8sR2vT5xK", `the role given is not a role; use VIEWER (read only), OPERATOR (also start and control executions), ADMIN (everything but the worker API) or WORKER (only take and answer tasks of worker queues, through the worker API)`},
	}
	for _, tt := range tests {
		got, err := access.ParseRole(tt.in)
		if err == nil {
			t.Errorf("ParseRole(%q): got %s, nil, want an error", tt.in, got)
			continue
		}
		if !errors.Is(err, access.ErrUnknownRole) || !errors.Is(err, fault.ErrInvalid) {
			t.Errorf("ParseRole(%q) error %v: got no match for ErrUnknownRole and fault.ErrInvalid, want both", tt.in, err)
		}
		if err.Error() != tt.wantText {
			t.Errorf("ParseRole(%q) error: got %q, want %q", tt.in, err, tt.wantText)
		}
	}
}

func TestRoleOrder(t *testing.T) {
	t.Parallel()
	tests := []struct {
		r, min access.Role
		want   bool
	}{
		{access.Viewer, access.Viewer, true},
		{access.Viewer, access.Operator, false},
		{access.Viewer, access.Admin, false},
		{access.Operator, access.Viewer, true},
		{access.Operator, access.Operator, true},
		{access.Operator, access.Admin, false},
		{access.Admin, access.Viewer, true},
		{access.Admin, access.Operator, true},
		{access.Admin, access.Admin, true},
		{0, access.Viewer, false},
		{access.Admin, 0, false},
		{access.Admin + 1, access.Viewer, false},
	}
	for _, tt := range tests {
		if got := tt.r.AtLeast(tt.min); got != tt.want {
			t.Errorf("%s.AtLeast(%s): got %v, want %v", tt.r, tt.min, got, tt.want)
		}
	}
}

func TestRoleString(t *testing.T) {
	t.Parallel()
	var names []string
	for _, r := range access.Roles() {
		names = append(names, r.String())
	}
	if got, want := strings.Join(names, " < "), "VIEWER < OPERATOR < ADMIN"; got != want {
		t.Errorf("Roles(): got %s, want %s", got, want)
	}
	if got, want := access.Role(0).String(), "Role(0)"; got != want {
		t.Errorf("Role(0).String(): got %q, want %q", got, want)
	}
}
