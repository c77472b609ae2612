package access_test

import (
	"slices"
	"testing"

	"github.com/yukta/yukta/domain/access"
)

// TestPermissionMatrix checks the permission table cell by cell against the
// matrix of DESIGN §7 and issue 4, written out here in full.
func TestPermissionMatrix(t *testing.T) {
	t.Parallel()
	const y, n = true, false
	matrix := []struct {
		op                      access.Operation
		viewer, operator, admin bool
	}{
		{access.ReadSessions, y, y, y},
		{access.ApplySession, n, n, y},
		{access.DeleteSession, n, n, y},
		{access.StartExecution, n, y, y},
		{access.ControlExecution, n, y, y},
		{access.SetBreakpoint, n, y, y},
		{access.AnswerInput, n, y, y},
		{access.PostWebhook, n, y, y},
		{access.ReadExecutions, y, y, y},
		{access.ReadLogs, y, y, y},
		{access.ReadEvents, y, y, y},
		{access.ReadPlugins, y, y, y},
		{access.ManageSupervisors, n, n, y},
		{access.ManageCredentials, n, n, y},
		{access.DecideApprovals, n, n, y},
		{access.ReadMetrics, y, y, y},
		{access.ReadSupervisors, y, y, y},
		{access.ManageAPIKeys, n, n, y},
	}
	var listed []access.Operation
	for _, row := range matrix {
		listed = append(listed, row.op)
		for _, cell := range []struct {
			role access.Role
			want bool
		}{{access.Viewer, row.viewer}, {access.Operator, row.operator}, {access.Admin, row.admin}} {
			if got := access.Allowed(cell.role, row.op); got != cell.want {
				t.Errorf("Allowed(%s, %s): got %v, want %v", cell.role, row.op, got, cell.want)
			}
		}
		if got := access.Allowed(0, row.op); got {
			t.Errorf("Allowed(zero role, %s): got true, want false", row.op)
		}
	}
	// A new operation must get a row here before this test passes.
	if got := access.Operations(); !slices.Equal(got, listed) {
		t.Errorf("Operations(): got %v, want %v (add a row to the matrix for every operation)", got, listed)
	}
}

func TestMinRole(t *testing.T) {
	t.Parallel()
	tests := []struct {
		op   access.Operation
		want access.Role
	}{
		{access.ReadSessions, access.Viewer},
		{access.StartExecution, access.Operator},
		{access.DecideApprovals, access.Admin},
		{0, 0},
		{access.ManageAPIKeys + 1, 0},
		{255, 0},
	}
	for _, tt := range tests {
		if got := tt.op.MinRole(); got != tt.want {
			t.Errorf("%s.MinRole(): got %s, want %s", tt.op, got, tt.want)
		}
	}
}

func TestUnknownOperationIsDenied(t *testing.T) {
	t.Parallel()
	for _, op := range []access.Operation{0, access.ManageAPIKeys + 1, 255} {
		for _, r := range access.Roles() {
			if access.Allowed(r, op) {
				t.Errorf("Allowed(%s, %s): got true, want false", r, op)
			}
		}
		if op.Valid() {
			t.Errorf("%s.Valid(): got true, want false", op)
		}
	}
}

func TestOperationString(t *testing.T) {
	t.Parallel()
	tests := []struct {
		op   access.Operation
		want string
	}{
		{access.ReadSessions, "ReadSessions"},
		{access.ManageCredentials, "ManageCredentials"},
		{access.ReadMetrics, "ReadMetrics"},
		{0, "Operation(0)"},
		{200, "Operation(200)"},
	}
	for _, tt := range tests {
		if got := tt.op.String(); got != tt.want {
			t.Errorf("String(): got %q, want %q", got, tt.want)
		}
	}
}
