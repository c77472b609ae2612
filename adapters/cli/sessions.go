package cli

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/yukta/yukta/api/apiclient"
)

// maxPage is the most items one page of sessions or executions holds (the
// server's cap).
const maxPage = 500

// paging holds the paging flags of a list command.
type paging struct {
	cmd    *cobra.Command
	limit  int
	cursor string
	all    bool
}

func addPaging(c *cobra.Command, p *paging, what string) {
	addPageFlags(c, p, what)
	c.Flags().BoolVar(&p.all, "all", false, "follow the cursors to the last page")
	c.MarkFlagsMutuallyExclusive("cursor", "all")
}

// addPageFlags gives c --limit and --cursor only, for a list that follows
// every page unless one of them is given.
func addPageFlags(c *cobra.Command, p *paging, what string) {
	p.cmd = c
	c.Flags().IntVar(&p.limit, "limit", 0, fmt.Sprintf("at most this many %s per page, 1 to %d (default: the server's)", what, maxPage))
	c.Flags().StringVar(&p.cursor, "cursor", "", "start at this page (the next cursor a page printed)")
}

// page is one page of a list answer: its items as the server sent them.
type page struct {
	body  []byte
	items []json.RawMessage
	next  string
}

// pageBody is a list call's answer as list wants it: the body of a 200, or
// the failure to report.
func pageBody(err error, res *http.Response, body []byte, ok bool) ([]byte, *failure) {
	if err != nil {
		return nil, &failure{err: err}
	}
	if !ok {
		return nil, &failure{res: res, body: body}
	}
	return body, nil
}

// list fetches one page (or, with --all, every page) and prints it per -o:
// json prints the server's answer (with --all, one object holding every
// item, without nextCursor), jsonl one item per line, and the table is
// table's; in table mode the next cursor goes to stderr.
func (e *env) list(p paging, listKey string, fetch func(limit *int, cursor *string) ([]byte, *failure), table func(items []json.RawMessage) int) int {
	var limit *int
	if p.cmd.Flags().Changed("limit") {
		if p.limit < 1 || p.limit > maxPage {
			return e.usageError("--limit %d: want 1 to %d", p.limit, maxPage)
		}
		limit = &p.limit
	}
	cursor := nonEmpty(p.cursor)
	var pages []page
	for {
		body, f := fetch(limit, cursor)
		if f != nil {
			return e.report(f)
		}
		var raw map[string]json.RawMessage
		pg := page{body: body}
		if err := json.Unmarshal(body, &raw); err != nil {
			return e.badAnswer(err)
		}
		if err := json.Unmarshal(raw[listKey], &pg.items); err != nil {
			return e.badAnswer(err)
		}
		if n, ok := raw["nextCursor"]; ok {
			_ = json.Unmarshal(n, &pg.next)
		}
		pages = append(pages, pg)
		if !p.all || pg.next == "" {
			break
		}
		cursor = &pg.next
	}
	var items []json.RawMessage
	for _, pg := range pages {
		items = append(items, pg.items...)
	}
	last := pages[len(pages)-1]
	switch {
	case e.output == outJSON && !p.all:
		return e.emit(last.body, "")
	case e.output == outJSON:
		var b bytes.Buffer
		b.WriteString(`{"` + listKey + `":[`)
		for i, it := range items {
			if i > 0 {
				b.WriteByte(',')
			}
			b.Write(it)
		}
		b.WriteString("]}")
		return e.emit(b.Bytes(), "")
	case e.output == outJSONL:
		for _, it := range items {
			if code := e.emitLine(it); code != exitOK {
				return code
			}
		}
		return exitOK
	}
	if code := table(items); code != exitOK {
		return code
	}
	if last.next != "" {
		fmt.Fprintf(e.stderr, "%s: more: --cursor %s (or --all)\n", e.name, last.next)
	}
	return exitOK
}

// decodeItems decodes raw list items into T.
func decodeItems[T any](e *env, items []json.RawMessage) ([]T, bool) {
	out := make([]T, len(items))
	for i, it := range items {
		if !decodeExact(it, &out[i]) {
			e.badAnswer(fmt.Errorf("item %d does not have the documented shape", i))
			return nil, false
		}
	}
	return out, true
}

func (a *App) sessionsCmd() *cobra.Command {
	list := &cobra.Command{Use: "list [--limit N] [--cursor C | --all]", Short: "the sessions, by id", Args: argsBetween(0, 0)}
	var p paging
	addPaging(list, &p, "sessions")
	addOutput(list)
	a.leaf(list, func(e *env, _ []string) int { return runSessionList(e, p) })

	show := &cobra.Command{Use: "show SESSION", Short: "a session: its settings and workflows (-o json: the whole document)",
		Args: argsBetween(1, 1), ValidArgsFunction: a.completeSession}
	addOutput(show)
	a.leaf(show, runSessionShow)

	del := &cobra.Command{Use: "delete SESSION", Short: "delete a session with its executions, logs and inputs",
		Args: argsBetween(1, 1), ValidArgsFunction: a.completeSession}
	a.leaf(del, runSessionDelete)
	return a.group("sessions", "sessions: list, show or delete them (yukta apply creates or replaces one)", list, show, del)
}

func runSessionList(e *env, p paging) int {
	fetch := func(limit *int, cursor *string) ([]byte, *failure) {
		res, err := e.api.ListSessionsWithResponse(e.ctx, &apiclient.ListSessionsParams{Limit: limit, Cursor: cursor})
		if err != nil {
			return pageBody(err, nil, nil, false)
		}
		return pageBody(nil, res.HTTPResponse, res.Body, res.JSON200 != nil)
	}
	return e.list(p, "sessions", fetch, func(items []json.RawMessage) int {
		list, ok := decodeItems[apiclient.SessionSummary](e, items)
		if !ok {
			return exitFailed
		}
		if len(list) == 0 {
			fmt.Fprintln(e.stdout, "no sessions; create one with: yukta apply FILE")
			return exitOK
		}
		tw := tabwriter.NewWriter(e.stdout, 0, 0, 2, ' ', 0)
		fmt.Fprintln(tw, "SESSION\tNAME\tWORKFLOWS\tUPDATED\tBY\tVIA")
		for _, s := range list {
			fmt.Fprintf(tw, "%s\t%s\t%d\t%s\t%s\t%s\n", escape(s.SessionId), orDash(escape(truncate(s.Name, 60))), s.WorkflowCount,
				stamp(s.UpdatedAt), escape(s.UpdatedBy), escape(s.UpdatedVia))
		}
		_ = tw.Flush()
		return exitOK
	})
}

func runSessionShow(e *env, pos []string) int {
	res, err := e.api.GetSessionWithResponse(e.ctx, pos[0])
	if err != nil {
		return e.callError(err)
	}
	if res.JSON200 == nil {
		return e.problem(res.HTTPResponse, res.Body)
	}
	if e.machine() {
		return e.emit(res.Body, "")
	}
	s := res.JSON200
	w := e.stdout
	fmt.Fprintf(w, "session: %s\n", escape(pos[0]))
	fmt.Fprintf(w, "name: %s\n", escape(s.Name))
	if d := deref(s.Description); d != "" {
		fmt.Fprintf(w, "description: %s\n", escape(d))
	}
	if s.Tags != nil && len(*s.Tags) > 0 {
		fmt.Fprintf(w, "tags: %s\n", escape(strings.Join(*s.Tags, ",")))
	}
	if s.Limits != nil {
		fmt.Fprintf(w, "limits: %s\n", compactJSON(s.Limits))
	}
	fmt.Fprintln(w)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "WORKFLOW\tNODES\tEDGES\tDESCRIPTION")
	for _, wf := range s.Workflows {
		edges := 0
		if wf.Edges != nil {
			edges = len(*wf.Edges)
		}
		fmt.Fprintf(tw, "%s\t%d\t%d\t%s\n", escape(wf.WorkflowId), len(wf.Nodes), edges, orDash(escape(truncate(deref(wf.Description), 80))))
	}
	_ = tw.Flush()
	return exitOK
}

func runSessionDelete(e *env, pos []string) int {
	res, err := e.api.DeleteSessionWithResponse(e.ctx, pos[0],
		&apiclient.DeleteSessionParams{YuktaChannel: ptr(apiclient.DeleteSessionParamsYuktaChannel(channel))})
	if err != nil {
		return e.callError(err)
	}
	if res.StatusCode() != http.StatusNoContent {
		return e.problem(res.HTTPResponse, res.Body)
	}
	fmt.Fprintf(e.stdout, "session: %s\naction: deleted\n", escape(pos[0]))
	return exitOK
}

func (a *App) workflowsCmd() *cobra.Command {
	show := &cobra.Command{Use: "show SESSION/WORKFLOW", Short: "a workflow: its nodes and edges (-o json: as stored)",
		Args: argsBetween(1, 1), ValidArgsFunction: a.completeWorkflow}
	addOutput(show)
	a.leaf(show, runWorkflowShow)
	return a.group("workflows", "a session's workflows: show one", show)
}

// splitWorkflow reads SESSION/WORKFLOW.
func splitWorkflow(s string) (sid, wid string, ok bool) {
	sid, wid, found := strings.Cut(s, "/")
	return sid, wid, found && sid != "" && wid != "" && !strings.Contains(wid, "/")
}

func runWorkflowShow(e *env, pos []string) int {
	sid, wid, ok := splitWorkflow(pos[0])
	if !ok {
		return e.usageError("%q is not SESSION/WORKFLOW (e.g. hello/greet)", pos[0])
	}
	res, err := e.api.GetWorkflowWithResponse(e.ctx, sid, wid)
	if err != nil {
		return e.callError(err)
	}
	if res.JSON200 == nil {
		return e.problem(res.HTTPResponse, res.Body)
	}
	if e.machine() {
		return e.emit(res.Body, "")
	}
	var wf apiclient.Workflow
	if !decodeExact(res.Body, &wf) {
		wf = *res.JSON200
	}
	w := e.stdout
	fmt.Fprintf(w, "session: %s\nworkflow: %s\n", escape(wf.SessionId), escape(wf.WorkflowId))
	if wf.Description != "" {
		fmt.Fprintf(w, "description: %s\n", escape(wf.Description))
	}
	if wf.Limits != nil {
		fmt.Fprintf(w, "limits: %s\n", compactJSON(wf.Limits))
	}
	fmt.Fprintln(w)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "NODE\tTYPE\tCONFIG")
	for _, n := range wf.Nodes {
		cfg := "-"
		if n.Config != nil {
			cfg = escape(truncate(compactJSON(*n.Config), 100))
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\n", escape(n.NodeId), escape(n.Type), cfg)
	}
	_ = tw.Flush()
	fmt.Fprintln(w)
	tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "SOURCE\tPORT\tTARGET")
	for _, ed := range wf.Edges {
		fmt.Fprintf(tw, "%s\t%s\t%s\n", escape(ed.Source), orDash(escape(deref(ed.SourcePort))), escape(ed.Target))
	}
	_ = tw.Flush()
	return exitOK
}

func (a *App) runsCmd() *cobra.Command {
	list := &cobra.Command{
		Use:               "list SESSION [--workflow W] [--status S] [--limit N] [--cursor C | --all]",
		Short:             "a session's executions, newest first, a page at a time",
		Args:              argsBetween(1, 1),
		ValidArgsFunction: a.completeSession,
	}
	var p paging
	workflow := list.Flags().String("workflow", "", "only this workflow's executions")
	status := list.Flags().String("status", "", "only executions with this status: PENDING, RUNNING, PAUSED, SUCCESS, FAILURE or STOPPED")
	_ = list.RegisterFlagCompletionFunc("status", cobra.FixedCompletions([]string{"PENDING", "RUNNING", "PAUSED", "SUCCESS", "FAILURE", "STOPPED"}, cobra.ShellCompDirectiveNoFileComp))
	addPaging(list, &p, "executions")
	addOutput(list)
	a.leaf(list, func(e *env, pos []string) int { return runRunsList(e, pos[0], *workflow, *status, p) })
	return a.group("runs", "a session's executions: list them", list)
}

func runRunsList(e *env, sid, workflow, status string, p paging) int {
	params := apiclient.ListExecutionsParams{WorkflowId: nonEmpty(workflow)}
	if status != "" {
		params.Status = ptr(apiclient.ExecutionStatus(strings.ToUpper(status)))
	}
	fetch := func(limit *int, cursor *string) ([]byte, *failure) {
		params.Limit, params.Cursor = limit, cursor
		res, err := e.api.ListExecutionsWithResponse(e.ctx, sid, &params)
		if err != nil {
			return pageBody(err, nil, nil, false)
		}
		return pageBody(nil, res.HTTPResponse, res.Body, res.JSON200 != nil)
	}
	return e.list(p, "executions", fetch, func(items []json.RawMessage) int {
		list, ok := decodeItems[apiclient.ExecutionSummary](e, items)
		if !ok {
			return exitFailed
		}
		if len(list) == 0 {
			fmt.Fprintf(e.stdout, "no executions; start one with: yukta run %s/WORKFLOW\n", sid)
			return exitOK
		}
		executionRows(e.stdout, list)
		return exitOK
	})
}

func (a *App) pluginsCmd() *cobra.Command {
	list := &cobra.Command{Use: "list", Short: "the plugin types nodes can have", Args: argsBetween(0, 0)}
	addOutput(list)
	a.leaf(list, runPluginList)
	show := &cobra.Command{Use: "show TYPE [--config JSON]", Short: "a plugin type: its config fields, ports and usage", Args: argsBetween(1, 1)}
	config := show.Flags().String("config", "", "a node config (JSON, @FILE or -): the ports it gives")
	show.ValidArgsFunction = a.completePlugin
	addOutput(show)
	a.leaf(show, func(e *env, pos []string) int { return runPluginShow(e, pos[0], *config) })
	return a.group("plugins", "the plugin catalogue: list it, or show one type", list, show)
}

func runPluginList(e *env, _ []string) int {
	res, err := e.api.ListPluginsWithResponse(e.ctx)
	if err != nil {
		return e.callError(err)
	}
	if res.JSON200 == nil {
		return e.problem(res.HTTPResponse, res.Body)
	}
	if e.machine() {
		return e.emit(res.Body, "plugins")
	}
	tw := tabwriter.NewWriter(e.stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "TYPE\tCATEGORY\tDESCRIPTION")
	for _, p := range res.JSON200.Plugins {
		fmt.Fprintf(tw, "%s\t%s\t%s\n", escape(p.Type), p.Category, escape(truncate(p.Description, 100)))
	}
	_ = tw.Flush()
	return exitOK
}

func runPluginShow(e *env, typ, config string) int {
	params := &apiclient.GetPluginParams{}
	if config != "" {
		raw, err := jsonArg("--config", config)
		if err != nil {
			return e.usageError("%v", err)
		}
		params.Config = ptr(string(raw))
	}
	res, err := e.api.GetPluginWithResponse(e.ctx, typ, params)
	if err != nil {
		return e.callError(err)
	}
	if res.JSON200 == nil {
		return e.problem(res.HTTPResponse, res.Body)
	}
	if e.machine() {
		return e.emit(res.Body, "")
	}
	p := res.JSON200
	w := e.stdout
	fmt.Fprintf(w, "type: %s\ncategory: %s\ndescription: %s\n", escape(p.Type), p.Category, escape(p.Description))
	fmt.Fprintf(w, "ports: %s\n\n", orDash(escape(strings.Join(p.Ports, ","))))
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "FIELD\tTYPE\tREQUIRED\tDEFAULT\tDESCRIPTION")
	for _, f := range p.ConfigFields {
		def := "-"
		if f.Default != nil {
			def = escape(truncate(compactJSON(f.Default), 40))
		}
		fmt.Fprintf(tw, "%s\t%s\t%t\t%s\t%s\n", escape(f.Name), f.Type, f.Required, def, escape(truncate(f.Description, 120)))
	}
	_ = tw.Flush()
	fmt.Fprintln(w)
	for l := range strings.Lines(strings.TrimRight(p.Usage, "\n")) {
		fmt.Fprintln(w, escape(strings.TrimRight(l, "\n")))
	}
	return exitOK
}
