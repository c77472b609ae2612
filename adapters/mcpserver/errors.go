package mcpserver

import (
	"errors"
	"fmt"
	"strings"

	"go.uber.org/zap"

	"github.com/yukta/yukta/application/executionapp"
	"github.com/yukta/yukta/application/pluginapp"
	"github.com/yukta/yukta/domain/execution"
	"github.com/yukta/yukta/domain/fault"
	"github.com/yukta/yukta/domain/session"
	"github.com/yukta/yukta/domain/supervisor"
)

// subject names what a tool call addressed, so an error can name it.
type subject struct {
	Session, Workflow, Execution, Plugin, Supervisor, Input, Approval string
}

// messages is the one table from errors to the sentences an agent reads. The
// first matching entry wins; sentinel errors come before their fault kind.
// Each sentence names the next tool to call. Texts of the seed's table are
// kept word for word.
var messages = []struct {
	is   error
	text func(err error, s subject) string
}{
	{executionapp.ErrExecutionDeleted, func(err error, _ subject) string {
		return sentence(err.Error()) + " Use get_workflow_history to list the executions that remain."
	}},
	{executionapp.ErrExecutionNotFound, func(_ error, s subject) string {
		if s.Execution != "" && !execution.ValidID(s.Execution) {
			return fmt.Sprintf("Invalid executionId %q: an execution id is a UUID such as 01a231ed-6402-76d6-8a7f-cfe7d4a66ae9. Use get_workflow_history to list executions.", s.Execution)
		}
		return fmt.Sprintf("Execution not found: %s. Use get_workflow_history to list executions.", s.Execution)
	}},
	{executionapp.ErrInputNotFound, func(_ error, s subject) string {
		return fmt.Sprintf("Input not found: %s. Use list_inputs to see the open inputs.", s.Input)
	}},
	{executionapp.ErrNodeNotFound, func(err error, _ subject) string {
		return sentence(err.Error()) + " Use get_workflow_status to see the nodes."
	}},
	{session.ErrSessionNotFound, func(_ error, s subject) string {
		return fmt.Sprintf("Session not found: %s. Use list_sessions to see available sessions.", s.Session)
	}},
	{session.ErrWorkflowNotFound, func(_ error, s subject) string {
		return fmt.Sprintf("Workflow not found: %s in session %s. Use get_session_details to list its workflows.", s.Workflow, s.Session)
	}},
	{pluginapp.ErrPluginNotFound, func(_ error, s subject) string {
		return fmt.Sprintf("Plugin not found: %s. Use list_plugins to see the registered types (names match exactly, including case).", s.Plugin)
	}},
	{supervisor.ErrSupervisorNotFound, func(_ error, s subject) string {
		return fmt.Sprintf("Supervisor not found: %s. Use list_supervisors to see the supervisors that exist.", s.Supervisor)
	}},
	{supervisor.ErrReviewNotFound, func(err error, s subject) string {
		if s.Approval == "" {
			return sentence(err.Error()) + " Use list_approvals to see the reviews (status ALL for every one)."
		}
		return fmt.Sprintf("Approval not found: %s. Use list_approvals to see the commands waiting for a decision (status ALL for every review).", s.Approval)
	}},
	{supervisor.ErrCommandDenied, func(err error, _ subject) string {
		return sentence(err.Error()) + " list_approvals with the review's id as approvalId shows every step; sending the same command again is reviewed again."
	}},
	{supervisor.ErrReviewSettled, func(err error, _ subject) string {
		return sentence(err.Error()) + " Use list_approvals with this approvalId to see how it was decided."
	}},
	{supervisor.ErrCredentialNotFound, func(_ error, s subject) string {
		return fmt.Sprintf("Supervisor %s has no credential. Nothing was changed; an ADMIN issues one with create_credential.", s.Supervisor)
	}},
	{errCredentialsDisabled, func(error, subject) string {
		return "Supervisor credentials are not enabled on this server. Nothing was changed; get_supervisor shows the supervisor."
	}},
	{supervisor.ErrNotHeld, func(err error, _ subject) string {
		return sentence(err.Error()) + " Nothing was changed; list_holds shows who holds the run."
	}},
	{errHoldsDisabled, func(error, subject) string {
		return "Supervisors are not enabled on this server, so no run is held. Nothing was changed."
	}},
	{supervisor.ErrEngineNotFound, func(err error, _ subject) string {
		return sentence(err.Error()) + " Use list_supervisor_engines to see them."
	}},
	{execution.ErrWorkflowPaused, func(err error, _ subject) string {
		return sentence(err.Error()) // it names the tool that resumes the workflow
	}},
	{fault.ErrInvalid, func(err error, _ subject) string { return invalidText(err) }},
	{fault.ErrNotFound, func(err error, _ subject) string { return err.Error() }},
	{fault.ErrConflict, func(err error, _ subject) string {
		return sentence(err.Error()) + " Use get_workflow_status to see the current state."
	}},
	{fault.ErrForbidden, func(err error, _ subject) string { return "Forbidden: " + err.Error() }},
	{fault.ErrUnavailable, func(error, subject) string {
		return "The database is unavailable right now; nothing was changed. Retry the same call in a few seconds."
	}},
}

// toolError turns a use case error into the error the SDK reports as an
// isError result. An error of no known kind is logged once here and reported
// without its internal text.
func (s *server) toolError(tool string, err error, subj subject) error {
	for _, m := range append(keyMessages[:len(keyMessages):len(keyMessages)], messages...) {
		if errors.Is(err, m.is) {
			return errors.New(sanitizeText(m.text(err, subj), maxErrorText))
		}
	}
	s.log.Error("mcp tool failed", zap.String("tool", tool), zap.Error(err))
	//lint:ignore ST1005 the text is the sentence an MCP client shows its user, not an error to wrap
	return fmt.Errorf("Internal error in %s; the server log has the details. Retry later or use get_control_bus_status to check the server.", tool)
}

// invalidText shows a validation error. The log filter's single-violation
// errors read as the seed's sentences ("Regex pattern too long ...").
func invalidText(err error) string {
	ve, ok := errors.AsType[*fault.ValidationError](err)
	if !ok {
		return err.Error()
	}
	if len(ve.Violations) == 1 && ve.Subject == "log filter" {
		return ve.Violations[0].Message
	}
	text := sentence(ve.Error()) + " Nothing was changed; fix every problem listed and call again."
	seen := map[string]bool{}
	for _, v := range ve.Violations {
		if hint := argumentHints[v.Path]; hint != "" && !seen[hint] {
			seen[hint] = true
			text += " " + hint
		}
	}
	return text
}

// argumentHints name the tool that finds a valid value for an argument the
// use case refused; the core's texts name no tool.
var argumentHints = map[string]string{
	"workflowId":  "Use get_session_details to list the workflows.",
	"executionId": "Use get_workflow_history to list executions.",
	"fromNodeId":  "Use get_workflow_status to see the nodes.",
	"nodeId":      "Use get_workflow_status to see the nodes.",
}

// sentence ends s with one period.
func sentence(s string) string { return strings.TrimRight(s, ". ") + "." }

// maxErrorText caps an error sentence.
const maxErrorText = 8 << 10
