package cli

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"text/tabwriter"

	"github.com/yukta/yukta/api/apiclient"
)

// runSupervisors dispatches `yukta supervisors apply|list|show|delete`.
func runSupervisors(e *env, args []string) int {
	if len(args) == 0 || args[0] == "-h" || args[0] == "--help" || args[0] == "help" {
		fmt.Fprintf(e.stderr, "Usage: %s %s\n  %s\n", e.name, e.cmd.args, strings.ReplaceAll(e.cmd.summary, "\n      ", "\n  "))
		if len(args) == 0 {
			return exitUsage
		}
		return exitOK
	}
	switch args[0] {
	case "apply":
		return runSupervisorApply(e, args[1:])
	case "list":
		return runSupervisorList(e, args[1:])
	case "show":
		return runSupervisorShow(e, args[1:])
	case "delete":
		return runSupervisorDelete(e, args[1:])
	}
	return e.usageError("unknown supervisors command %q; use apply, list, show or delete", args[0])
}

// runSupervisorApply PUTs a supervisor document as it is on disk: the
// server parses it and lists every problem at once.
func runSupervisorApply(e *env, args []string) int {
	e.name += " apply"
	fs := e.flags()
	id := fs.String("id", "", "supervisor id (default: the document's id)")
	pos, code, ok := e.parse(fs, args, 1, 1)
	if !ok {
		return code
	}
	file := pos[0]
	body, sid, code, ok := readDocument(e, file, *id, "id", "supervisor", "SUPERVISOR")
	if !ok {
		return code
	}
	res, err := e.api.PutSupervisorWithBodyWithResponse(e.ctx, sid, &apiclient.PutSupervisorParams{YuktaChannel: ptr(apiclient.PutSupervisorParamsYuktaChannel(channel))},
		"application/json", bytes.NewReader(body))
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
	fmt.Fprintf(e.stdout, "supervisor: %s\n", escape(out.Id))
	fmt.Fprintf(e.stdout, "action: %s\n", action)
	fmt.Fprintf(e.stdout, "engine: %s\n", escape(out.Engine.Type))
	for _, u := range out.Owns {
		fmt.Fprintf(e.stdout, "owns: %s\n", escape(u))
	}
	if p := deref(out.ParentId); p != "" {
		fmt.Fprintf(e.stdout, "parent: %s\n", escape(p))
	}
	fmt.Fprintf(e.stdout, "enabled: %t\n", out.Enabled)
	return exitOK
}

// runSupervisorList prints the supervisors as a table.
func runSupervisorList(e *env, args []string) int {
	e.name += " list"
	fs := e.flags()
	if _, code, ok := e.parse(fs, args, 0, 0); !ok {
		return code
	}
	res, err := e.api.ListSupervisorsWithResponse(e.ctx)
	if err != nil {
		return e.callError(err)
	}
	if res.JSON200 == nil {
		return e.problem(res.HTTPResponse, res.Body)
	}
	if len(res.JSON200.Supervisors) == 0 {
		fmt.Fprintf(e.stdout, "no supervisors; create one with: yukta supervisors apply FILE\n")
		return exitOK
	}
	tw := tabwriter.NewWriter(e.stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "SUPERVISOR\tENGINE\tENABLED\tPARENT\tOWNS\tUPDATED\tBY")
	for _, s := range res.JSON200.Supervisors {
		owns := strings.Join(s.Owns, ",")
		fmt.Fprintf(tw, "%s\t%s\t%t\t%s\t%s\t%s\t%s\n", escape(s.Id), escape(s.Engine), s.Enabled, orDash(escape(deref(s.ParentId))),
			orDash(escape(owns)), stamp(s.UpdatedAt), escape(s.UpdatedBy))
	}
	_ = tw.Flush()
	return exitOK
}

// shownSupervisor is a supervisor document in the order people write it,
// settings kept as the server sent them (exact numbers).
type shownSupervisor struct {
	ID     string `json:"id"`
	Name   string `json:"name"`
	Engine struct {
		Type     string          `json:"type"`
		Settings json.RawMessage `json:"settings"`
	} `json:"engine"`
	Owns            []string `json:"owns"`
	ParentID        string   `json:"parentId,omitempty"`
	AllowedCommands []string `json:"allowedCommands"`
	Reviews         []string `json:"reviews"`
	TickSeconds     int      `json:"tickSeconds,omitempty"`
	Enabled         bool     `json:"enabled"`
}

// runSupervisorShow prints a supervisor document (secret settings read
// ***), ready to edit and apply again: *** keeps a stored secret.
func runSupervisorShow(e *env, args []string) int {
	e.name += " show"
	fs := e.flags()
	pos, code, ok := e.parse(fs, args, 1, 1)
	if !ok {
		return code
	}
	res, err := e.api.GetSupervisorWithResponse(e.ctx, pos[0])
	if err != nil {
		return e.callError(err)
	}
	if res.StatusCode() != http.StatusOK {
		return e.problem(res.HTTPResponse, res.Body)
	}
	var doc shownSupervisor
	if !decodeExact(res.Body, &doc) {
		fmt.Fprintf(e.stderr, "%s: the answer of %s is not a supervisor document\n", e.name, e.server)
		return exitFailed
	}
	if len(doc.Engine.Settings) == 0 {
		doc.Engine.Settings = json.RawMessage("{}")
	}
	b, err := json.MarshalIndent(doc, "", "  ")
	if err != nil {
		fmt.Fprintf(e.stderr, "%s: %v\n", e.name, err)
		return exitFailed
	}
	fmt.Fprintf(e.stdout, "%s\n", b)
	return exitOK
}

// runSupervisorDelete deletes a supervisor.
func runSupervisorDelete(e *env, args []string) int {
	e.name += " delete"
	fs := e.flags()
	pos, code, ok := e.parse(fs, args, 1, 1)
	if !ok {
		return code
	}
	res, err := e.api.DeleteSupervisorWithResponse(e.ctx, pos[0],
		&apiclient.DeleteSupervisorParams{YuktaChannel: ptr(apiclient.DeleteSupervisorParamsYuktaChannel(channel))})
	if err != nil {
		return e.callError(err)
	}
	if res.StatusCode() != http.StatusNoContent {
		return e.problem(res.HTTPResponse, res.Body)
	}
	fmt.Fprintf(e.stdout, "supervisor: %s\naction: deleted\n", escape(pos[0]))
	return exitOK
}
