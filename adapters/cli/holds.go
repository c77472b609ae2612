package cli

import (
	"fmt"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/yukta/yukta/api/apiclient"
)

func (a *App) holdsCmd() *cobra.Command {
	list := &cobra.Command{Use: "list SESSION EXECUTION", Short: "the supervisors that hold a run, since when and why",
		Args: argsBetween(2, 2), ValidArgsFunction: a.completeSession}
	addOutput(list)
	a.leaf(list, runHoldsList)

	release := &cobra.Command{Use: "release SESSION EXECUTION SUPERVISOR [--reason TEXT]",
		Short: "end a supervisor's hold on a run as an ADMIN (journaled; the run resumes when it was the last hold)",
		Args:  argsBetween(3, 3), ValidArgsFunction: a.completeSession}
	reason := release.Flags().String("reason", "", "why, recorded in the run's journal")
	a.leaf(release, func(e *env, pos []string) int { return runHoldRelease(e, pos, *reason) })

	return a.group("holds", "the hold ledger of a run: list its holds, or release one as an ADMIN", list, release)
}

// runHoldsList prints a run's holds as a table.
func runHoldsList(e *env, pos []string) int {
	res, err := e.api.ListHoldsWithResponse(e.ctx, pos[0], pos[1])
	if err != nil {
		return e.callError(err)
	}
	if res.JSON200 == nil {
		return e.problem(res.HTTPResponse, res.Body)
	}
	if e.machine() {
		return e.emit(res.Body, "holds")
	}
	if len(res.JSON200.Holds) == 0 {
		fmt.Fprintf(e.stdout, "no supervisor holds execution %s\n", escape(pos[1]))
		return exitOK
	}
	tw := tabwriter.NewWriter(e.stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "SUPERVISOR\tSINCE\tREASON")
	for _, h := range res.JSON200.Holds {
		fmt.Fprintf(tw, "%s\t%s\t%s\n", escape(h.SupervisorId), stamp(h.Since), escape(h.Reason))
	}
	_ = tw.Flush()
	return exitOK
}

// runHoldRelease ends a supervisor's hold as an ADMIN.
func runHoldRelease(e *env, pos []string, reason string) int {
	res, err := e.api.ReleaseHoldWithResponse(e.ctx, pos[0], pos[1], pos[2],
		&apiclient.ReleaseHoldParams{Reason: nonEmpty(reason), YuktaChannel: ptr(apiclient.ReleaseHoldParamsYuktaChannel(channel))})
	if err != nil {
		return e.callError(err)
	}
	r := res.JSON200
	if r == nil {
		return e.problem(res.HTTPResponse, res.Body)
	}
	fmt.Fprintf(e.stdout, "execution: %s\nsupervisor: %s\naction: released\nheld since: %s\nresumed: %t\n",
		escape(r.ExecutionId), escape(r.SupervisorId), stamp(r.HeldSince), r.Resumed)
	for _, h := range r.Holds {
		fmt.Fprintf(e.stdout, "still held by: %s\n", escape(h.SupervisorId))
	}
	fmt.Fprintf(e.stdout, "message: %s\n", escape(r.Message))
	return exitOK
}
