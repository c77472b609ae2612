package cli

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"

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
	var body []byte
	var err error
	if file == "-" {
		body, err = io.ReadAll(os.Stdin)
	} else {
		body, err = os.ReadFile(file)
	}
	if err != nil {
		fmt.Fprintf(e.stderr, "%s: %v\n", e.name, err)
		return exitFailed
	}
	sid := *id
	if sid == "" {
		var doc struct {
			SessionID any `json:"sessionId"`
		}
		if err := json.Unmarshal(body, &doc); err != nil {
			fmt.Fprintf(e.stderr, "%s: %s is not a JSON session document: %v\n", e.name, file, err)
			return exitFailed
		}
		s, _ := doc.SessionID.(string)
		if s == "" {
			fmt.Fprintf(e.stderr, "%s: %s has no \"sessionId\"; add one or pass --id SESSION\n", e.name, file)
			return exitUsage
		}
		sid = s
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
