package access

import "fmt"

// Operation is one thing a caller may ask of the server. The set is closed:
// every operation is listed in the table below, and Allowed denies any value
// that is not.
type Operation uint8

// The operations. Each edge maps every route and tool to one of them.
const (
	ReadSessions      Operation = iota + 1 // list and read sessions and workflows
	ApplySession                           // create or replace a session
	DeleteSession                          // delete a session
	StartExecution                         // start a workflow
	ControlExecution                       // pause, resume, stop, restart, step, skip, retry
	SetBreakpoint                          // set or clear a breakpoint
	AnswerInput                            // answer an open input request
	PostWebhook                            // trigger a workflow through its webhook
	ReadExecutions                         // list and read executions, status and history
	ReadLogs                               // read node logs
	ReadEvents                             // read and stream events
	ReadPlugins                            // list and describe plugin types
	ManageSupervisors                      // create, change and delete supervisors
	ManageCredentials                      // issue, rotate and revoke supervisor credentials
	DecideApprovals                        // approve or deny a parked command
	ReadMetrics                            // read /metrics
	ReadSupervisors                        // list and read supervisors and the engine catalogue
	ManageAPIKeys                          // list, read, create, rotate and revoke API keys
	WorkTasks                              // take and answer tasks of worker queues (the worker API); WORKER only
)

// operations is the permission table: for each operation, its name, what it
// does (for error messages) and the least role that may perform it. It is the
// only place a permission is decided.
var operations = [...]struct {
	name, does string
	min        Role
}{
	ReadSessions:      {"ReadSessions", "read sessions", Viewer},
	ApplySession:      {"ApplySession", "create or replace sessions", Admin},
	DeleteSession:     {"DeleteSession", "delete sessions", Admin},
	StartExecution:    {"StartExecution", "start executions", Operator},
	ControlExecution:  {"ControlExecution", "control executions", Operator},
	SetBreakpoint:     {"SetBreakpoint", "set breakpoints", Operator},
	AnswerInput:       {"AnswerInput", "answer inputs", Operator},
	PostWebhook:       {"PostWebhook", "post webhooks", Operator},
	ReadExecutions:    {"ReadExecutions", "read executions", Viewer},
	ReadLogs:          {"ReadLogs", "read logs", Viewer},
	ReadEvents:        {"ReadEvents", "read events", Viewer},
	ReadPlugins:       {"ReadPlugins", "read plugins", Viewer},
	ManageSupervisors: {"ManageSupervisors", "manage supervisors", Admin},
	ManageCredentials: {"ManageCredentials", "manage credentials", Admin},
	DecideApprovals:   {"DecideApprovals", "decide approvals", Admin},
	ReadMetrics:       {"ReadMetrics", "read metrics", Viewer},
	ReadSupervisors:   {"ReadSupervisors", "read supervisors", Viewer},
	ManageAPIKeys:     {"ManageAPIKeys", "manage API keys", Admin},
	// The worker API: its need is WORKER, outside the order, so only a
	// WORKER key may (Allowed), and a WORKER key may nothing else.
	WorkTasks: {"WorkTasks", "take and answer tasks of worker queues", Worker},
}

// Operations returns every operation, in declaration order.
func Operations() []Operation {
	ops := make([]Operation, 0, len(operations)-1)
	for op := ReadSessions; int(op) < len(operations); op++ {
		ops = append(ops, op)
	}
	return ops
}

// Valid reports whether op is in the permission table.
func (op Operation) Valid() bool { return op >= ReadSessions && int(op) < len(operations) }

// MinRole returns the least role that may perform op, or the zero Role for
// an operation outside the table. For the worker operations it is WORKER,
// which is also the only role that may perform them.
func (op Operation) MinRole() Role {
	if !op.Valid() {
		return 0
	}
	return operations[op].min
}

// String returns the operation's Go name ("StartExecution").
func (op Operation) String() string {
	if !op.Valid() {
		return fmt.Sprintf("Operation(%d)", uint8(op))
	}
	return operations[op].name
}

// does says what op does, for sentences: "start executions".
func (op Operation) does() string {
	if !op.Valid() {
		return fmt.Sprintf("perform unknown operation %d", uint8(op))
	}
	return operations[op].does
}

// Allowed reports whether role may perform op. It is false for an invalid
// role and for an operation outside the table. An operation whose need is
// WORKER is allowed to WORKER alone; every other one to the ordered roles
// from its need up, never to WORKER.
func Allowed(role Role, op Operation) bool {
	if !op.Valid() {
		return false
	}
	if need := op.MinRole(); need == Worker {
		return role == Worker
	}
	return role.AtLeast(op.MinRole())
}

// reads reports whether a session-limited principal may perform op across
// sessions (sessionID ""), with what it reaches filtered to its sessions:
// the reads, and the worker operations (a poll takes tasks of the key's
// sessions only; an answer names a task, whose session the use case
// checks).
func (op Operation) reads() bool { need := op.MinRole(); return need == Viewer || need == Worker }
