package cli

import (
	"bytes"
	"fmt"
	"net/http"

	"github.com/spf13/cobra"

	"github.com/yukta/yukta/api/apiclient"
)

func (a *App) applyCmd() *cobra.Command {
	c := &cobra.Command{
		Use:   "apply FILE [--id SESSION]",
		Short: "create or replace a session from a JSON or YAML document (FILE - reads stdin)",
		Args:  argsBetween(1, 1),
	}
	id := c.Flags().String("id", "", "session id (default: the document's sessionId)")
	c.ValidArgsFunction = documentFiles
	return a.leaf(c, func(e *env, pos []string) int { return runApply(e, pos[0], *id) })
}

// runApply PUTs a session document as it is on disk (YAML converted to the
// same JSON): the server parses it and lists every violation at once.
func runApply(e *env, file, id string) int {
	body, sid, code, ok := readDocument(e, file, id, "sessionId", "session", "SESSION")
	if !ok {
		return code
	}
	res, err := e.api.PutSessionWithBodyWithResponse(e.ctx, sid, &apiclient.PutSessionParams{YuktaChannel: ptr(apiclient.PutSessionParamsYuktaChannel(channel))}, "application/json", bytes.NewReader(body))
	if err != nil {
		return e.callError(err)
	}
	out, action := res.JSON201, "created"
	if out == nil {
		out, action = res.JSON200, "replaced"
	}
	if out == nil {
		if res.StatusCode() == http.StatusBadRequest {
			fmt.Fprintf(e.stderr, "%s: %s was not applied; fix every line below and apply again\n", e.name, file)
		}
		return e.problem(res.HTTPResponse, res.Body)
	}
	fmt.Fprintf(e.stdout, "session: %s\n", out.SessionId)
	fmt.Fprintf(e.stdout, "action: %s\n", action)
	for _, w := range out.Workflows {
		fmt.Fprintf(e.stdout, "workflow: %s\n", w)
	}
	for _, w := range out.RemovedWorkflows {
		fmt.Fprintf(e.stdout, "removed-workflow: %s\n", w)
	}
	for _, w := range out.Warnings {
		fmt.Fprintf(e.stdout, "warning: %s\n", escape(w))
	}
	return exitOK
}
