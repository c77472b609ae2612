package cli

import (
	"fmt"
	"net/http"
	"os"
	"os/signal"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/yukta/yukta/api/apiclient"
)

// maxApprovals is the most reviews one list returns (the server's cap).
const maxApprovals = 500

func (a *App) approvalsCmd() *cobra.Command {
	list := &cobra.Command{
		Use:   "list [--status S] [--limit N]",
		Short: "commands supervisors hold for review, newest first: those waiting for an ADMIN's approval (--status ALL: every review)",
		Args:  argsBetween(0, 0),
	}
	status := list.Flags().String("status", "", "AWAITING_APPROVAL (default), PENDING, ALLOWED, APPLIED, DENIED or ALL")
	limit := list.Flags().Int("limit", 0, fmt.Sprintf("at most this many reviews, 1 to %d (default %d)", maxApprovals, maxApprovals))
	addOutput(list)
	a.leaf(list, func(e *env, _ []string) int { return runApprovalList(e, *status, *limit) })

	show := &cobra.Command{Use: "show ID", Short: "one review, whatever its status, with its steps", Args: argsBetween(1, 1)}
	addOutput(show)
	a.leaf(show, runApprovalShow)

	decide := func(d apiclient.ApprovalDecisionDecision, short string) *cobra.Command {
		c := &cobra.Command{Use: strings.ToLower(string(d)) + " ID [--reason R]", Short: short, Args: argsBetween(1, 1)}
		reason := c.Flags().String("reason", "", "why, recorded with the decision in the journal")
		return a.leaf(c, func(e *env, pos []string) int { return runApprovalDecide(e, pos[0], d, *reason) })
	}
	return a.group("approvals", "commands supervisors hold for review: list, show, approve or reject them", list, show,
		decide(apiclient.ApprovalDecisionDecisionAPPROVE, "apply a command that waits for approval (an ADMIN key)"),
		decide(apiclient.ApprovalDecisionDecisionREJECT, "refuse a command that waits for approval (an ADMIN key)"))
}

// runApprovalList prints the reviews as a table, newest first: by default
// the commands waiting for an ADMIN's approval.
func runApprovalList(e *env, status string, limit int) int {
	params := &apiclient.ListApprovalsParams{}
	if status != "" {
		params.Status = ptr(strings.ToUpper(status))
	}
	if limit != 0 {
		if limit < 1 || limit > maxApprovals {
			return e.usageError("--limit must be from 1 to %d", maxApprovals)
		}
		params.Limit = &limit
	}
	res, err := e.api.ListApprovalsWithResponse(e.ctx, params)
	if err != nil {
		return e.callError(err)
	}
	if res.JSON200 == nil {
		return e.problem(res.HTTPResponse, res.Body)
	}
	if e.machine() {
		return e.emit(res.Body, "reviews")
	}
	if len(res.JSON200.Reviews) == 0 {
		if params.Status == nil || *params.Status == string(apiclient.ReviewStatusAWAITINGAPPROVAL) {
			fmt.Fprintln(e.stdout, "no commands wait for approval; --status ALL lists every review")
		} else {
			fmt.Fprintln(e.stdout, "no reviews")
		}
		return exitOK
	}
	tw := tabwriter.NewWriter(e.stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "APPROVAL\tSTATUS\tSESSION\tCOMMAND\tTARGET\tBY\tCREATED\tWHY")
	for _, r := range res.JSON200.Reviews {
		typ, _ := r.Command["type"].(string)
		target, _ := r.Command["target"].(string)
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", escape(r.ReviewId), r.Status, escape(r.SessionId), orDash(escape(typ)),
			orDash(escape(target)), escape(r.Actor), stamp(r.CreatedAt), orDash(escape(truncate(why(r), 120))))
	}
	_ = tw.Flush()
	return exitOK
}

// why is the reason a review stands where it does: its last step's, or
// the sender's while nobody has decided.
func why(r apiclient.Review) string {
	if n := len(r.Steps); n > 1 {
		return deref(r.Steps[n-1].Reason)
	}
	return deref(r.Reason)
}

// runApprovalShow prints one review, whatever its status, with its steps.
func runApprovalShow(e *env, pos []string) int {
	res, err := e.api.GetApprovalWithResponse(e.ctx, pos[0])
	if err != nil {
		return e.callError(err)
	}
	if e.machine() && res.JSON200 != nil {
		return e.emit(res.Body, "")
	}
	return e.printReview(res.HTTPResponse, res.Body, res.JSON200)
}

// runApprovalDecide approves or rejects a command that waits for approval
// and prints the review as it stands afterwards.
func runApprovalDecide(e *env, id string, d apiclient.ApprovalDecisionDecision, reason string) int {
	res, err := e.api.DecideApprovalWithResponse(e.ctx, id, apiclient.ApprovalDecision{Decision: d, Reason: nonEmpty(reason)})
	if err != nil {
		return e.callError(err)
	}
	return e.printReview(res.HTTPResponse, res.Body, res.JSON200)
}

// printReview writes a review as `key: value` lines and its steps as a
// table; the command and outcome keep the numbers the server sent.
func (e *env) printReview(res *http.Response, body []byte, r *apiclient.Review) int {
	if r == nil {
		return e.problem(res, body)
	}
	var exact apiclient.Review
	if decodeExact(body, &exact) {
		r = &exact
	}
	w := e.stdout
	fmt.Fprintf(w, "approval: %s\n", escape(r.ReviewId))
	fmt.Fprintf(w, "status: %s\n", r.Status)
	fmt.Fprintf(w, "session: %s\n", escape(r.SessionId))
	for _, f := range []struct{ key, value string }{{"workflow", deref(r.WorkflowId)}, {"execution", deref(r.ExecutionId)}, {"node", deref(r.NodeId)}} {
		if f.value != "" {
			fmt.Fprintf(w, "%s: %s\n", f.key, escape(f.value))
		}
	}
	fmt.Fprintf(w, "command: %s\n", escape(compactJSON(r.Command)))
	fmt.Fprintf(w, "actor: %s\n", escape(r.Actor))
	fmt.Fprintf(w, "channel: %s\n", escape(r.Channel))
	if s := deref(r.Reason); s != "" {
		fmt.Fprintf(w, "reason: %s\n", escape(s))
	}
	fmt.Fprintf(w, "reviewers: %s\n", orDash(escape(strings.Join(r.Reviewers, ","))))
	if a := deref(r.Asking); a != "" {
		fmt.Fprintf(w, "asking: %s\n", escape(a))
	}
	if r.Deadline != nil {
		fmt.Fprintf(w, "deadline: %s\n", stamp(*r.Deadline))
	}
	fmt.Fprintf(w, "created: %s\n", stamp(r.CreatedAt))
	if r.Outcome != nil {
		fmt.Fprintf(w, "outcome: %s\n", escape(compactJSON(*r.Outcome)))
	}
	fmt.Fprintln(w)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "AT\tBY\tMOVE\tSTATUS\tREASON")
	for _, s := range r.Steps {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", stamp(s.At), escape(s.By), s.Move, s.Status, orDash(escape(truncate(deref(s.Reason), 200))))
	}
	_ = tw.Flush()
	return exitOK
}

// printTicket writes the answer to a command or start a supervisor holds
// for review (202): nothing was applied yet. It is not a failure; the
// review decides, and `yukta approvals show` follows it.
func (e *env) printTicket(t *apiclient.ReviewTicket) int {
	w := e.stdout
	fmt.Fprintf(w, "status: review\n")
	fmt.Fprintf(w, "review: %s\n", escape(t.ReviewId))
	fmt.Fprintf(w, "review-status: %s\n", t.Status)
	if a := deref(t.Asking); a != "" {
		fmt.Fprintf(w, "asking: %s\n", escape(a))
	}
	if t.Deadline != nil {
		fmt.Fprintf(w, "deadline: %s\n", stamp(*t.Deadline))
	}
	fmt.Fprintf(w, "message: %s\n", escape(t.Message))
	fmt.Fprintf(w, "follow: yukta approvals show %s\n", escape(t.ReviewId))
	if t.Status == apiclient.ReviewStatusAWAITINGAPPROVAL {
		fmt.Fprintf(w, "decide: yukta approvals approve %s (or reject), with an ADMIN key\n", escape(t.ReviewId))
	}
	return exitOK
}

// reviewPoll is how often run --watch reads a held start's review.
const reviewPoll = 500 * time.Millisecond

// awaitReview follows a held start's review until it settles: the started
// run's id when it was applied, or the exit code when it was denied, refused,
// or the user stopped waiting.
func (e *env) awaitReview(id string) (executionID string, code int) {
	ctx, stop := signal.NotifyContext(e.ctx, os.Interrupt)
	defer stop()
	last := ""
	for {
		res, err := e.api.GetApprovalWithResponse(ctx, id)
		switch {
		case ctx.Err() != nil && e.ctx.Err() == nil:
			fmt.Fprintf(e.stderr, "%s: stopped waiting; the review goes on: yukta approvals show %s\n", e.name, id)
			return "", exitInterrupted
		case err != nil:
			return "", e.callError(err)
		case res.JSON200 == nil:
			return "", e.problem(res.HTTPResponse, res.Body)
		}
		r := res.JSON200
		if s := string(r.Status); s != last {
			last = s
			fmt.Fprintf(e.stdout, "review %s\n", s)
		}
		switch r.Status {
		case apiclient.ReviewStatusDENIED:
			fmt.Fprintf(e.stderr, "%s: the start was denied: %s\n", e.name, escape(why(*r)))
			return "", exitFailed
		case apiclient.ReviewStatusAPPLIED:
			var o struct{ ExecutionId, Refused string }
			if r.Outcome != nil {
				o.ExecutionId, _ = (*r.Outcome)["executionId"].(string)
				o.Refused, _ = (*r.Outcome)["refused"].(string)
			}
			if o.ExecutionId == "" {
				fmt.Fprintf(e.stderr, "%s: the start was allowed but refused: %s\n", e.name, orDash(escape(o.Refused)))
				return "", exitFailed
			}
			return o.ExecutionId, exitOK
		}
		select {
		case <-ctx.Done():
		case <-time.After(reviewPoll):
		}
	}
}
