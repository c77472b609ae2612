package cli

import (
	"fmt"
	"text/tabwriter"
	"time"

	"github.com/yukta/yukta/api/apiclient"
)

// historyLimit is how many executions `yukta status SESSION` lists.
const historyLimit = 20

func runStatus(e *env, args []string) int {
	fs := e.flags()
	pos, code, ok := e.parse(fs, args, 1, 2)
	if !ok {
		return code
	}
	if len(pos) == 2 {
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
	list := res.JSON200.Executions
	if len(list) == 0 {
		fmt.Fprintf(e.stdout, "no executions in session %s; start one with: yukta run %s/WORKFLOW\n", pos[0], pos[0])
		return exitOK
	}
	now := time.Now()
	tw := tabwriter.NewWriter(e.stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "EXECUTION\tWORKFLOW\tSTATUS\tSTARTED\tDURATION\tRESTART-OF")
	for _, x := range list {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", x.ExecutionId, x.WorkflowId, x.Status, stamp(x.StartedAt),
			took(x.StartedAt, nonZero(x.EndedAt), now), orDash(deref(x.RestartOf)))
	}
	_ = tw.Flush()
	if res.JSON200.NextCursor != nil {
		fmt.Fprintf(e.stderr, "%s: showing the newest %d executions\n", e.name, historyLimit)
	}
	return exitOK
}
