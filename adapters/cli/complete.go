package cli

import (
	"context"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/yukta/yukta/api/apiclient"
)

// completeFor bounds the server calls of dynamic completion: a slow or
// absent server costs a Tab press this long at most, and offers nothing.
const completeFor = 2 * time.Second

// completeSession offers session ids (one page of them) for the first
// argument.
func (a *App) completeSession(cmd *cobra.Command, args []string, toComplete string) ([]cobra.Completion, cobra.ShellCompDirective) {
	if len(args) > 0 {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	return a.sessionIDs(cmd, "", toComplete), cobra.ShellCompDirectiveNoFileComp
}

// completeWorkflow offers SESSION/ for the part before the slash, then the
// session's workflows as SESSION/WORKFLOW.
func (a *App) completeWorkflow(cmd *cobra.Command, args []string, toComplete string) ([]cobra.Completion, cobra.ShellCompDirective) {
	if len(args) > 0 {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	sid, _, found := strings.Cut(toComplete, "/")
	if !found {
		return a.sessionIDs(cmd, "/", toComplete), cobra.ShellCompDirectiveNoFileComp | cobra.ShellCompDirectiveNoSpace
	}
	e, ctx, cancel := a.completing(cmd)
	defer cancel()
	if e == nil {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	res, err := e.api.GetSessionWithResponse(ctx, sid)
	if err != nil || res.JSON200 == nil {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	var out []cobra.Completion
	for _, w := range res.JSON200.Workflows {
		if id := sid + "/" + w.WorkflowId; strings.HasPrefix(id, toComplete) {
			out = append(out, cobra.CompletionWithDesc(id, deref(w.Description)))
		}
	}
	return out, cobra.ShellCompDirectiveNoFileComp
}

// documentFiles offers the files apply reads.
func documentFiles(_ *cobra.Command, args []string, _ string) ([]cobra.Completion, cobra.ShellCompDirective) {
	if len(args) > 0 {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	return []cobra.Completion{"json", "yaml", "yml"}, cobra.ShellCompDirectiveFilterFileExt
}

func (a *App) sessionIDs(cmd *cobra.Command, suffix, toComplete string) []cobra.Completion {
	e, ctx, cancel := a.completing(cmd)
	defer cancel()
	if e == nil {
		return nil
	}
	res, err := e.api.ListSessionsWithResponse(ctx, &apiclient.ListSessionsParams{Limit: ptr(200)})
	if err != nil || res.JSON200 == nil {
		return nil
	}
	var out []cobra.Completion
	for _, s := range res.JSON200.Sessions {
		if strings.HasPrefix(s.SessionId, toComplete) {
			out = append(out, cobra.CompletionWithDesc(s.SessionId+suffix, s.Name))
		}
	}
	return out
}

// completing connects for a completion; e is nil when the server setting
// is unusable.
func (a *App) completing(cmd *cobra.Command) (*env, context.Context, context.CancelFunc) {
	e := a.env(cmd)
	ctx, cancel := context.WithTimeout(cmd.Context(), completeFor)
	if e.connect() != nil {
		return nil, ctx, cancel
	}
	return e, ctx, cancel
}

// completePlugin offers the plugin types.
func (a *App) completePlugin(cmd *cobra.Command, args []string, toComplete string) ([]cobra.Completion, cobra.ShellCompDirective) {
	if len(args) > 0 {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	e, ctx, cancel := a.completing(cmd)
	defer cancel()
	if e == nil {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	res, err := e.api.ListPluginsWithResponse(ctx)
	if err != nil || res.JSON200 == nil {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	var out []cobra.Completion
	for _, p := range res.JSON200.Plugins {
		if strings.HasPrefix(p.Type, toComplete) {
			out = append(out, cobra.CompletionWithDesc(p.Type, p.Description))
		}
	}
	return out, cobra.ShellCompDirectiveNoFileComp
}
