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
		op                              access.Operation
		viewer, operator, admin, worker bool
	}{
		{access.ReadSessions, y, y, y, n},
		{access.ApplySession, n, n, y, n},
		{access.DeleteSession, n, n, y, n},
		{access.StartExecution, n, y, y, n},
		{access.ControlExecution, n, y, y, n},
		{access.SetBreakpoint, n, y, y, n},
		{access.AnswerInput, n, y, y, n},
		{access.PostWebhook, n, y, y, n},
		{access.ReadExecutions, y, y, y, n},
		{access.ReadLogs, y, y, y, n},
		{access.ReadEvents, y, y, y, n},
		{access.ReadPlugins, y, y, y, n},
		{access.ManageSupervisors, n, n, y, n},
		{access.ManageCredentials, n, n, y, n},
		{access.DecideApprovals, n, n, y, n},
		{access.ReadMetrics, y, y, y, n},
		{access.ReadSupervisors, y, y, y, n},
		{access.ManageAPIKeys, n, n, y, n},
		// WORKER stands outside the order: it may the worker operations
		// alone, and no other role may those.
		{access.WorkTasks, n, n, n, y},
	}
	var listed []access.Operation
	for _, row := range matrix {
		listed = append(listed, row.op)
		for _, cell := range []struct {
			role access.Role
			want bool
		}{{access.Viewer, row.viewer}, {access.Operator, row.operator}, {access.Admin, row.admin}, {access.Worker, row.worker}} {
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
		{access.WorkTasks, access.Worker},
		{0, 0},
		{access.WorkTasks + 1, 0},
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
	for _, op := range []access.Operation{0, access.WorkTasks + 1, 255} {
		for _, r := range access.AllRoles() {
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
		{access.WorkTasks, "WorkTasks"},
		{0, "Operation(0)"},
		{200, "Operation(200)"},
	}
	for _, tt := range tests {
		if got := tt.op.String(); got != tt.want {
			t.Errorf("String(): got %q, want %q", got, tt.want)
		}
	}
}
