package cli

import (
	"encoding/json"
	"fmt"
	"text/tabwriter"

	openapi_types "github.com/oapi-codegen/runtime/types"
	"github.com/spf13/cobra"

	"github.com/yukta/yukta/api/apiclient"
)

func (a *App) inputsCmd() *cobra.Command {
	c := &cobra.Command{
		Use:               "inputs [SESSION] [--all] [--execution ID] [--limit N] [--cursor C]",
		Short:             "inputs that INPUT_REQUEST nodes are waiting for, oldest first: every page, or one with --limit or --cursor",
		Args:              argsBetween(0, 1),
		ValidArgsFunction: a.completeSession,
	}
	all := c.Flags().Bool("all", false, "also answered and cancelled inputs")
	execution := c.Flags().String("execution", "", "only this execution's inputs (needs SESSION)")
	var p paging
	addPageFlags(c, &p, "inputs")
	addOutput(c)
	return a.leaf(c, func(e *env, pos []string) int { return runInputs(e, pos, *all, *execution, p) })
}

func runInputs(e *env, pos []string, all bool, execution string, p paging) int {
	params := &apiclient.ListInputsParams{}
	if len(pos) == 1 {
		params.SessionId = ptr(pos[0])
	}
	if execution != "" {
		if params.SessionId == nil {
			return e.usageError("--execution needs the SESSION argument")
		}
		var id openapi_types.UUID
		if err := id.UnmarshalText([]byte(execution)); err != nil {
			return e.usageError("--execution %q is not an execution id (a UUID)", execution)
		}
		params.ExecutionId = ptr(id.String())
	}
	if all {
		params.Status = ptr(apiclient.ListInputsParamsStatus("all"))
	}
	// A person asking what waits for an answer wants all of it: every page,
	// unless --limit or --cursor asks for one.
	p.all = !p.cmd.Flags().Changed("limit") && !p.cmd.Flags().Changed("cursor")
	fetch := func(limit *int, cursor *string) ([]byte, *failure) {
		params.Limit, params.Cursor = limit, cursor
		res, err := e.api.ListInputsWithResponse(e.ctx, params)
		if err != nil {
			return pageBody(err, nil, nil, false)
		}
		return pageBody(nil, res.HTTPResponse, res.Body, res.JSON200 != nil)
	}
	return e.list(p, "inputs", fetch, func(items []json.RawMessage) int {
		list, ok := decodeItems[apiclient.Input](e, items)
		if !ok {
			return exitFailed
		}
		if len(list) == 0 {
			if all {
				fmt.Fprintln(e.stdout, "no inputs")
			} else {
				fmt.Fprintln(e.stdout, "no open inputs")
			}
			return exitOK
		}
		tw := tabwriter.NewWriter(e.stdout, 0, 0, 2, ' ', 0)
		fmt.Fprintln(tw, "INPUT\tSESSION\tEXECUTION\tNODE\tSTATUS\tCREATED\tPROMPT")
		for _, in := range list {
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", in.InputId, in.SessionId, in.ExecutionId, escape(in.NodeId), in.Status,
				stamp(in.CreatedAt), escape(truncate(in.Prompt, 200)))
		}
		_ = tw.Flush()
		return exitOK
	})
}

func (a *App) answerCmd() *cobra.Command {
	c := &cobra.Command{
		Use:   "answer INPUT_ID JSON",
		Short: `answer an input (approvals: {"approved": true, "comment": "…"}); JSON may be @FILE or - for stdin`,
		Args:  argsBetween(2, 2),
	}
	return a.leaf(c, runAnswer)
}

func runAnswer(e *env, pos []string) int {
	var id openapi_types.UUID
	if err := id.UnmarshalText([]byte(pos[0])); err != nil {
		return e.usageError("%q is not an input id (a UUID; yukta inputs lists them)", pos[0])
	}
	answer, err := jsonArg("the answer", pos[1])
	if err != nil {
		return e.usageError("%v", err)
	}
	res, err := e.api.AnswerInputWithResponse(e.ctx, id,
		&apiclient.AnswerInputParams{YuktaChannel: ptr(apiclient.AnswerInputParamsYuktaChannel(channel))},
		apiclient.AnswerRequest{Answer: answer})
	if err != nil {
		return e.callError(err)
	}
	if res.JSON200 == nil {
		return e.problem(res.HTTPResponse, res.Body)
	}
	in := res.JSON200
	var exact apiclient.Input
	if decodeExact(res.Body, &exact) {
		in = &exact // the answer's numbers as the server sent them
	}
	fmt.Fprintf(e.stdout, "input: %s\n", in.InputId)
	fmt.Fprintf(e.stdout, "status: %s\n", in.Status)
	fmt.Fprintf(e.stdout, "session: %s\n", in.SessionId)
	fmt.Fprintf(e.stdout, "execution: %s\n", in.ExecutionId)
	fmt.Fprintf(e.stdout, "node: %s\n", escape(in.NodeId))
	if in.AnsweredBy != nil {
		fmt.Fprintf(e.stdout, "answered-by: %s\n", escape(*in.AnsweredBy))
	}
	fmt.Fprintf(e.stdout, "answer: %s\n", compactJSON(in.Answer))
	return exitOK
}
