package cli

import (
	"fmt"
	"net/http"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/yukta/yukta/api/apiclient"
)

func (a *App) controlCmd() *cobra.Command {
	c := &cobra.Command{
		Use: "control SESSION EXECUTION [--node NODE] ACTION [flags]",
		Short: `execution: PAUSE RESUME STOP RESTART RESTART_FROM_NODE
node (--node): PAUSE RESUME STOP STEP_ENABLE STEP STEP_DISABLE SKIP UNSKIP RETRY
BREAKPOINT BREAKPOINT_CLEAR`,
		Args:              argsBetween(3, 3),
		ValidArgsFunction: a.completeSession,
	}
	fs := c.Flags()
	node := fs.String("node", "", "send the action to this node instead of the execution")
	mode := fs.String("mode", "", "STOP: DRAIN, CANCEL (default) or KILL")
	from := fs.String("from", "", "RESTART_FROM_NODE: the node to restart from")
	reason := fs.String("reason", "", "why, recorded in the journal")
	key := fs.String("key", "", "idempotency key: the same key gives the same answer and no second effect")
	ifStatus := fs.String("if-status", "", "apply only if the target has this status")
	wait := fs.Float64("wait", 0, "seconds (≤ 60) to wait until the effect is visible")
	immediate := fs.Bool("immediate", false, "node STOP: also cancel the message being processed")
	field := fs.String("field", "", "node BREAKPOINT: dotted path into the payload")
	equals := fs.String("equals", "", "node BREAKPOINT: the JSON value of --field that pauses the node")
	condition := fs.String("condition", "", "node BREAKPOINT: a CEL condition instead of --field/--equals")
	return a.leaf(c, func(e *env, pos []string) int {
		set := map[string]bool{}
		fs.Visit(func(f *pflag.Flag) { set[f.Name] = true })
		return runControl(e, pos, set, controlFlags{node: *node, mode: *mode, from: *from, reason: *reason, key: *key, ifStatus: *ifStatus,
			wait: *wait, immediate: *immediate, field: *field, equals: *equals, condition: *condition})
	})
}

// controlFlags are control's flag values.
type controlFlags struct {
	node, mode, from, reason, key, ifStatus string
	wait                                    float64
	immediate                               bool
	field, equals, condition                string
}

func runControl(e *env, pos []string, set map[string]bool, fl controlFlags) int {
	node, mode, from, reason, key, ifStatus := &fl.node, &fl.mode, &fl.from, &fl.reason, &fl.key, &fl.ifStatus
	wait, immediate, field, equals, condition := &fl.wait, &fl.immediate, &fl.field, &fl.equals, &fl.condition
	sid, eid, action := pos[0], pos[1], strings.ToUpper(pos[2])

	if *node == "" {
		for _, name := range []string{"immediate", "field", "equals", "condition"} {
			if set[name] {
				return e.usageError("--%s applies to node commands; add --node NODE", name)
			}
		}
		body := apiclient.ExecutionCommand{Action: apiclient.ExecutionCommandAction(action),
			Reason: nonEmpty(*reason), Key: nonEmpty(*key), IfStatus: nonEmpty(*ifStatus), FromNodeId: nonEmpty(*from)}
		if *mode != "" {
			body.Mode = ptr(apiclient.ExecutionCommandMode(strings.ToUpper(*mode)))
		}
		if set["wait"] {
			body.Wait = ptr(float32(*wait))
		}
		res, err := e.api.ControlExecutionWithResponse(e.ctx, sid, eid,
			&apiclient.ControlExecutionParams{YuktaChannel: ptr(apiclient.ControlExecutionParamsYuktaChannel(channel))}, body)
		if err != nil {
			return e.callError(err)
		}
		return e.commandAnswer(res.HTTPResponse, res.Body, res.JSON200, res.JSON202)
	}

	for _, name := range []string{"mode", "from"} {
		if set[name] {
			return e.usageError("--%s applies to execution commands, not to a node", name)
		}
	}
	if action == "BREAKPOINT" {
		if set["immediate"] || set["if-status"] || set["wait"] {
			return e.usageError("BREAKPOINT takes --field with --equals, or --condition (and --reason, --key)")
		}
		body := apiclient.BreakpointRequest{Field: nonEmpty(*field), Condition: nonEmpty(*condition), Reason: nonEmpty(*reason), Key: nonEmpty(*key)}
		if set["equals"] {
			raw, err := jsonArg("--equals", *equals)
			if err != nil {
				return e.usageError("%v", err)
			}
			body.Equals = raw
		}
		res, err := e.api.SetBreakpointWithResponse(e.ctx, sid, eid, *node,
			&apiclient.SetBreakpointParams{YuktaChannel: ptr(apiclient.SetBreakpointParamsYuktaChannel(channel))}, body)
		if err != nil {
			return e.callError(err)
		}
		return e.commandAnswer(res.HTTPResponse, res.Body, res.JSON200, res.JSON202)
	}
	for _, name := range []string{"field", "equals", "condition"} {
		if set[name] {
			return e.usageError("--%s applies to the node action BREAKPOINT", name)
		}
	}
	body := apiclient.NodeCommand{Action: apiclient.NodeCommandAction(action),
		Reason: nonEmpty(*reason), Key: nonEmpty(*key), IfStatus: nonEmpty(*ifStatus)}
	if set["immediate"] {
		body.Immediate = immediate
	}
	if set["wait"] {
		body.Wait = ptr(float32(*wait))
	}
	res, err := e.api.ControlNodeWithResponse(e.ctx, sid, eid, *node,
		&apiclient.ControlNodeParams{YuktaChannel: ptr(apiclient.ControlNodeParamsYuktaChannel(channel))}, body)
	if err != nil {
		return e.callError(err)
	}
	return e.commandAnswer(res.HTTPResponse, res.Body, res.JSON200, res.JSON202)
}

func (a *App) stopAllCmd() *cobra.Command {
	c := &cobra.Command{
		Use:               "stop-all SESSION WORKFLOW [--mode DRAIN|CANCEL|KILL]",
		Short:             "stop every active execution of a workflow (SESSION/WORKFLOW works too)",
		Args:              argsBetween(1, 2),
		ValidArgsFunction: a.completeSession,
	}
	mode := c.Flags().String("mode", "", "DRAIN, CANCEL (default) or KILL")
	reason := c.Flags().String("reason", "", "why, recorded in the journal")
	key := c.Flags().String("key", "", "idempotency key: the same key gives the same answer and no second effect")
	return a.leaf(c, func(e *env, pos []string) int { return runStopAll(e, pos, mode, reason, key) })
}

func runStopAll(e *env, pos []string, mode, reason, key *string) int {
	sid, wid := pos[0], ""
	if len(pos) == 2 {
		wid = pos[1]
	} else if s, w, found := strings.Cut(pos[0], "/"); found {
		sid, wid = s, w
	}
	if sid == "" || wid == "" {
		return e.usageError("missing the workflow")
	}
	body := apiclient.StopAllRequest{Reason: nonEmpty(*reason), Key: nonEmpty(*key)}
	if *mode != "" {
		body.Mode = ptr(apiclient.StopAllRequestMode(strings.ToUpper(*mode)))
	}
	res, err := e.api.StopWorkflowWithResponse(e.ctx, sid, wid,
		&apiclient.StopWorkflowParams{YuktaChannel: ptr(apiclient.StopWorkflowParamsYuktaChannel(channel))}, body)
	if err != nil {
		return e.callError(err)
	}
	return e.commandAnswer(res.HTTPResponse, res.Body, res.JSON200, res.JSON202)
}

// commandAnswer writes a command's answer: its result (200), the ticket of
// the review a supervisor holds it for (202), or the problem.
func (e *env) commandAnswer(res *http.Response, body []byte, done *apiclient.CommandResult, held *apiclient.ReviewTicket) int {
	switch {
	case done != nil:
		return e.printCommand(done)
	case held != nil:
		return e.printTicket(held)
	}
	return e.problem(res, body)
}

// printCommand writes a command's answer.
func (e *env) printCommand(r *apiclient.CommandResult) int {
	fmt.Fprintf(e.stdout, "command: %s\n", r.CommandId)
	fmt.Fprintf(e.stdout, "status: %s\n", r.Status)
	fmt.Fprintf(e.stdout, "message: %s\n", escape(r.Message))
	for _, id := range r.ResultExecutionIds {
		fmt.Fprintf(e.stdout, "new-execution: %s\n", id)
	}
	return exitOK
}

func nonEmpty(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

func (a *App) pauseWorkflowCmd() *cobra.Command {
	c := &cobra.Command{
		Use:               "pause-workflow SESSION WORKFLOW",
		Short:             "pause a workflow: its active runs, and every new start until resume-workflow (SESSION/WORKFLOW works too)",
		Args:              argsBetween(1, 2),
		ValidArgsFunction: a.completeSession,
	}
	reason := c.Flags().String("reason", "", "why, recorded with the pause and shown to every refused start")
	key := c.Flags().String("key", "", "idempotency key: the same key gives the same answer and no second effect")
	return a.leaf(c, func(e *env, pos []string) int { return runWorkflowPause(e, pos, true, reason, key) })
}

func (a *App) resumeWorkflowCmd() *cobra.Command {
	c := &cobra.Command{
		Use:               "resume-workflow SESSION WORKFLOW",
		Short:             "lift a workflow's pause: starts go through again and the runs it paused resume (SESSION/WORKFLOW works too)",
		Args:              argsBetween(1, 2),
		ValidArgsFunction: a.completeSession,
	}
	reason := c.Flags().String("reason", "", "why, recorded in the journal")
	key := c.Flags().String("key", "", "idempotency key: the same key gives the same answer and no second effect")
	return a.leaf(c, func(e *env, pos []string) int { return runWorkflowPause(e, pos, false, reason, key) })
}

func runWorkflowPause(e *env, pos []string, pause bool, reason, key *string) int {
	sid, wid, ok := workflowArgs(pos)
	if !ok {
		return e.usageError("missing the workflow")
	}
	body := apiclient.WorkflowPauseRequest{Reason: nonEmpty(*reason), Key: nonEmpty(*key)}
	if pause {
		res, err := e.api.PauseWorkflowWithResponse(e.ctx, sid, wid,
			&apiclient.PauseWorkflowParams{YuktaChannel: ptr(apiclient.PauseWorkflowParamsYuktaChannel(channel))}, body)
		if err != nil {
			return e.callError(err)
		}
		return e.workflowAnswer(res.HTTPResponse, res.Body, res.JSON200, res.JSON202, "paused")
	}
	res, err := e.api.ResumeWorkflowWithResponse(e.ctx, sid, wid,
		&apiclient.ResumeWorkflowParams{YuktaChannel: ptr(apiclient.ResumeWorkflowParamsYuktaChannel(channel))}, body)
	if err != nil {
		return e.callError(err)
	}
	return e.workflowAnswer(res.HTTPResponse, res.Body, res.JSON200, res.JSON202, "resumed")
}

// workflowArgs reads SESSION WORKFLOW or SESSION/WORKFLOW.
func workflowArgs(pos []string) (sid, wid string, ok bool) {
	sid = pos[0]
	if len(pos) == 2 {
		wid = pos[1]
	} else if s, w, found := strings.Cut(pos[0], "/"); found {
		sid, wid = s, w
	}
	return sid, wid, sid != "" && wid != ""
}

// workflowAnswer writes the answer of a workflow pause or resume: the runs
// it paused or resumed are not new executions.
func (e *env) workflowAnswer(res *http.Response, body []byte, done *apiclient.CommandResult, held *apiclient.ReviewTicket, verb string) int {
	if done == nil {
		return e.commandAnswer(res, body, done, held)
	}
	fmt.Fprintf(e.stdout, "command: %s\n", done.CommandId)
	fmt.Fprintf(e.stdout, "status: %s\n", done.Status)
	fmt.Fprintf(e.stdout, "message: %s\n", escape(done.Message))
	for _, id := range done.ResultExecutionIds {
		fmt.Fprintf(e.stdout, "%s-execution: %s\n", verb, id)
	}
	return exitOK
}
