package cli

import (
	"fmt"
	"io"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/yukta/yukta/api/apiclient"
)

// historyLimit is how many executions `yukta status SESSION` lists.
const historyLimit = 20

func (a *App) statusCmd() *cobra.Command {
	c := &cobra.Command{
		Use:               "status SESSION [EXECUTION]",
		Short:             "one execution's status and nodes, or the session's last 20 executions",
		Args:              argsBetween(1, 2),
		ValidArgsFunction: a.completeSession,
	}
	addOutput(c)
	return a.leaf(c, runStatus)
}

func runStatus(e *env, pos []string) int {
	if len(pos) == 2 {
		if e.machine() {
			res, err := e.api.GetExecutionWithResponse(e.ctx, pos[0], pos[1])
			if err != nil {
				return e.callError(err)
			}
			if res.JSON200 == nil {
				return e.problem(res.HTTPResponse, res.Body)
			}
			return e.emit(res.Body, "")
		}
		ex, f := e.getExecution(e.ctx, pos[0], pos[1])
		if f != nil {
			return e.report(f)
		}
		executionReport(e.stdout, ex, time.Now())
		fmt.Fprintln(e.stdout)
		nodeTable(e.stdout, ex.Nodes)
		return exitOK
	}
	res, err := e.api.ListExecutionsWithResponse(e.ctx, pos[0], &apiclient.ListExecutionsParams{Limit: ptr(historyLimit)})
	if err != nil {
		return e.callError(err)
	}
	if res.JSON200 == nil {
		return e.problem(res.HTTPResponse, res.Body)
	}
	if e.machine() {
		return e.emit(res.Body, "executions")
	}
	list := res.JSON200.Executions
	if len(list) == 0 {
		fmt.Fprintf(e.stdout, "no executions in session %s; start one with: yukta run %s/WORKFLOW\n", pos[0], pos[0])
		return exitOK
	}
	executionRows(e.stdout, list)
	if res.JSON200.NextCursor != nil {
		fmt.Fprintf(e.stderr, "%s: showing the newest %d executions\n", e.name, historyLimit)
	}
	return exitOK
}

// executionRows writes executions as a table, newest first as listed.
func executionRows(w io.Writer, list []apiclient.ExecutionSummary) {
	now := time.Now()
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "EXECUTION\tWORKFLOW\tSTATUS\tSTARTED\tDURATION\tRESTART-OF")
	for _, x := range list {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", x.ExecutionId, x.WorkflowId, x.Status, stamp(x.StartedAt),
			took(x.StartedAt, nonZero(x.EndedAt), now), orDash(deref(x.RestartOf)))
	}
	_ = tw.Flush()
}
