package cli

import (
	"bytes"
	"fmt"
	"net/http"

	"github.com/yukta/yukta/api/apiclient"
)

// runApply PUTs a session document as it is on disk: the server parses it
// and lists every violation at once.
func runApply(e *env, args []string) int {
	fs := e.flags()
	id := fs.String("id", "", "session id (default: the document's sessionId)")
	pos, code, ok := e.parse(fs, args, 1, 1)
	if !ok {
		return code
	}
	file := pos[0]
	body, sid, code, ok := readDocument(e, file, *id, "sessionId", "session", "SESSION")
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
