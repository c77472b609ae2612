package cli

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/yukta/yukta/api/apiclient"
)

func (a *App) supervisorsCmd() *cobra.Command {
	apply := &cobra.Command{
		Use:   "apply FILE [--id SUPERVISOR]",
		Short: "create or replace a supervisor from a JSON or YAML document (FILE - reads stdin)",
		Args:  argsBetween(1, 1), ValidArgsFunction: documentFiles,
	}
	id := apply.Flags().String("id", "", "supervisor id (default: the document's id)")
	a.leaf(apply, func(e *env, pos []string) int { return runSupervisorApply(e, pos[0], *id) })

	list := &cobra.Command{Use: "list", Short: "the supervisors", Args: argsBetween(0, 0)}
	addOutput(list)
	a.leaf(list, runSupervisorList)

	show := &cobra.Command{Use: "show SUPERVISOR", Short: "a supervisor's document (secret settings read ***; apply it again to keep them)", Args: argsBetween(1, 1)}
	addOutput(show)
	a.leaf(show, runSupervisorShow)

	del := &cobra.Command{Use: "delete SUPERVISOR", Short: "delete a supervisor", Args: argsBetween(1, 1)}
	a.leaf(del, runSupervisorDelete)

	create := &cobra.Command{
		Use:   "create SUPERVISOR [--ttl-hours N] [--allow CIDR]...",
		Short: "issue or rotate a supervisor's agent API credential (the token is printed once)",
		Args:  argsBetween(1, 1),
	}
	ttl := create.Flags().Int("ttl-hours", 0, "hours until the credential expires, 1 to 8760 (default 720: 30 days)")
	allow := create.Flags().StringArray("allow", nil, "a CIDR or address the agent may connect from (repeat the flag, or separate with commas; default any)")
	a.leaf(create, func(e *env, pos []string) int {
		// A --ttl-hours given is sent as given: 0 is refused by the server,
		// never taken silently as the default.
		var t *int
		if create.Flags().Changed("ttl-hours") {
			t = ttl
		}
		return runCredentialCreate(e, pos[0], t, *allow)
	})
	cshow := &cobra.Command{Use: "show SUPERVISOR", Short: "a credential's metadata (the token is not stored)", Args: argsBetween(1, 1)}
	addOutput(cshow)
	a.leaf(cshow, runCredentialShow)
	revoke := &cobra.Command{Use: "revoke SUPERVISOR", Short: "revoke a supervisor's credential", Args: argsBetween(1, 1)}
	a.leaf(revoke, runCredentialRevoke)
	credential := a.group("credential", "a supervisor's agent API credential: create, show or revoke", create, cshow, revoke)

	return a.group("supervisors", "supervisors: apply, list, show or delete them, and manage their agent API credentials", apply, list, show, del, credential)
}

// runSupervisorApply PUTs a supervisor document as it is on disk: the
// server parses it and lists every problem at once.
func runSupervisorApply(e *env, file, id string) int {
	body, sid, code, ok := readDocument(e, file, id, "id", "supervisor", "SUPERVISOR")
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
	for _, w := range deref(out.Warnings) {
		fmt.Fprintf(e.stdout, "warning: %s\n", escape(cliWords(w)))
	}
	return exitOK
}

// runSupervisorList prints the supervisors as a table.
func runSupervisorList(e *env, _ []string) int {
	res, err := e.api.ListSupervisorsWithResponse(e.ctx)
	if err != nil {
		return e.callError(err)
	}
	if res.JSON200 == nil {
		return e.problem(res.HTTPResponse, res.Body)
	}
	if e.machine() {
		return e.emit(res.Body, "supervisors")
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
	// Warnings go to stderr, so the document printed stays the one to
	// edit and apply again.
	Warnings []string `json:"warnings,omitempty"`
}

// runSupervisorShow prints a supervisor document (secret settings read
// ***), ready to edit and apply again: *** keeps a stored secret.
func runSupervisorShow(e *env, pos []string) int {
	res, err := e.api.GetSupervisorWithResponse(e.ctx, pos[0])
	if err != nil {
		return e.callError(err)
	}
	if res.StatusCode() != http.StatusOK {
		return e.problem(res.HTTPResponse, res.Body)
	}
	if e.machine() {
		return e.emit(res.Body, "")
	}
	var doc shownSupervisor
	if !decodeExact(res.Body, &doc) {
		fmt.Fprintf(e.stderr, "%s: the answer of %s is not a supervisor document\n", e.name, e.server)
		return exitFailed
	}
	if len(doc.Engine.Settings) == 0 {
		doc.Engine.Settings = json.RawMessage("{}")
	}
	for _, w := range doc.Warnings {
		fmt.Fprintf(e.stderr, "%s: warning: %s\n", e.name, escape(cliWords(w)))
	}
	doc.Warnings = nil
	b, err := json.MarshalIndent(doc, "", "  ")
	if err != nil {
		fmt.Fprintf(e.stderr, "%s: %v\n", e.name, err)
		return exitFailed
	}
	fmt.Fprintf(e.stdout, "%s\n", b)
	return exitOK
}

// runSupervisorDelete deletes a supervisor and lists the holds it
// released.
func runSupervisorDelete(e *env, pos []string) int {
	res, err := e.api.DeleteSupervisorWithResponse(e.ctx, pos[0],
		&apiclient.DeleteSupervisorParams{YuktaChannel: ptr(apiclient.DeleteSupervisorParamsYuktaChannel(channel))})
	if err != nil {
		return e.callError(err)
	}
	if res.JSON200 == nil {
		return e.problem(res.HTTPResponse, res.Body)
	}
	fmt.Fprintf(e.stdout, "supervisor: %s\naction: deleted\n", escape(pos[0]))
	for _, r := range res.JSON200.ReleasedHolds {
		what := "released"
		if r.Resumed {
			what = "released, resumed"
		}
		fmt.Fprintf(e.stdout, "hold: %s/%s %s\n", escape(r.SessionId), escape(r.ExecutionId), what)
	}
	return exitOK
}

// runCredentialCreate issues or rotates a supervisor's credential and
// prints its token, which the server shows this once.
func runCredentialCreate(e *env, id string, ttl *int, allow []string) int {
	params := &apiclient.IssueCredentialParams{YuktaChannel: ptr(apiclient.IssueCredentialParamsYuktaChannel(channel)), TtlHours: ttl}
	if len(allow) > 0 {
		params.AllowedAddresses = ptr(strings.Join(allow, ","))
	}
	res, err := e.api.IssueCredentialWithResponse(e.ctx, id, params)
	if err != nil {
		return e.callError(err)
	}
	c := res.JSON201
	if c == nil {
		return e.problem(res.HTTPResponse, res.Body)
	}
	action := "issued"
	if c.Rotated {
		action = "rotated (the earlier token no longer works)"
	}
	fmt.Fprintf(e.stdout, "supervisor: %s\naction: %s\ntoken: %s\n", escape(c.SupervisorId), action, escape(c.Token))
	printCredential(e, c.Hint, c.CreatedAt, c.CreatedBy, c.CreatedVia, c.ExpiresAt, c.AllowedAddresses)
	fmt.Fprintf(e.stderr, "%s: the token is shown this once; give it to the agent (Authorization: Bearer <token> on /api/agent/v1)\n", e.name)
	return exitOK
}

// runCredentialShow prints a credential's metadata; the token is not
// stored, so it cannot be shown again.
func runCredentialShow(e *env, pos []string) int {
	res, err := e.api.GetCredentialWithResponse(e.ctx, pos[0])
	if err != nil {
		return e.callError(err)
	}
	c := res.JSON200
	if c == nil {
		return e.problem(res.HTTPResponse, res.Body)
	}
	if e.machine() {
		return e.emit(res.Body, "")
	}
	fmt.Fprintf(e.stdout, "supervisor: %s\n", escape(c.SupervisorId))
	printCredential(e, c.Hint, c.CreatedAt, c.CreatedBy, c.CreatedVia, c.ExpiresAt, c.AllowedAddresses)
	last := "never"
	if c.LastUsedAt != nil {
		last = stamp(*c.LastUsedAt)
	}
	fmt.Fprintf(e.stdout, "last used: %s\n", last)
	return exitOK
}

// printCredential writes a credential's metadata as key: value lines.
func printCredential(e *env, hint string, created time.Time, by, via string, expires time.Time, allowed []string) {
	fmt.Fprintf(e.stdout, "hint: %s\ncreated: %s by %s via %s\nexpires: %s\n", escape(hint), stamp(created), escape(by), escape(via), stamp(expires))
	if len(allowed) == 0 {
		fmt.Fprintf(e.stdout, "allowed: any address\n")
	}
	for _, a := range allowed {
		fmt.Fprintf(e.stdout, "allowed: %s\n", escape(a))
	}
}

// runCredentialRevoke revokes a supervisor's credential.
func runCredentialRevoke(e *env, pos []string) int {
	res, err := e.api.RevokeCredentialWithResponse(e.ctx, pos[0],
		&apiclient.RevokeCredentialParams{YuktaChannel: ptr(apiclient.RevokeCredentialParamsYuktaChannel(channel))})
	if err != nil {
		return e.callError(err)
	}
	if res.StatusCode() != http.StatusNoContent {
		return e.problem(res.HTTPResponse, res.Body)
	}
	fmt.Fprintf(e.stdout, "supervisor: %s\naction: credential revoked\n", escape(pos[0]))
	return exitOK
}
