package plugins

import (
	"slices"

	"github.com/yukta/yukta/domain/plugin"
	"github.com/yukta/yukta/domain/supervisor"
)

func result() plugin.Descriptor {
	return withRunFields(plugin.Descriptor{
		Type:        "RESULT",
		Category:    plugin.Terminal,
		Description: "Stores a value as the result of the execution.",
		Usage: `Pattern: MANUAL -> HTTP_REQUEST -> RESULT
The stored value is returned with the execution's status.
Example config: {"expression": "payload.body"}`,
		Fields: []plugin.Field{
			{Name: "expression", Type: plugin.Expression, Description: `CEL expression over "payload" whose value is stored; absent means the payload itself`},
		},
	})
}

func webhookOut() plugin.Descriptor {
	return withRunFields(plugin.Descriptor{
		Type:        "WEBHOOK_OUT",
		Category:    plugin.Terminal,
		Description: "Posts the payload as JSON to an HTTP endpoint through the egress policy.",
		Usage: `Pattern: MANUAL -> TRANSFORM -> WEBHOOK_OUT
Sends POST with the payload as the JSON body and an Idempotency-Key header stable across retries. A 2xx answer ends the path; any other answer, or none, fails the attempt and "retry" applies. Credentials go in authorization, secretHeaders or secretQuery, which read "***" on every read path, never in headers or the url.
Example config: {"url": "https://hooks.example.com/yukta", "headers": {"X-Source": "yukta"}, "secretHeaders": {"X-Hook-Token": "token-value"}, "retry": {"maxAttempts": 5, "backoff": "10s"}}`,
		Fields: []plugin.Field{
			urlField("address to post to"),
			headersField(),
			secretHeadersField(),
			secretQueryField(),
			authorizationField(),
			{Name: "timeout", Type: plugin.Duration, Default: defaultTimeout, Description: "time limit for one attempt, from connecting to reading the answer; a slower attempt fails and retry applies"},
		},
		CheckFunc: checkOutbound,
	})
}

func supervisorDecision() plugin.Descriptor {
	return withRunFields(plugin.Descriptor{
		Type:        "SUPERVISOR_DECISION",
		Category:    plugin.Terminal,
		Description: "Reports a workflow supervisor's decision on the signal that started the run.",
		Usage: `Pattern: SUPERVISOR_SIGNAL -> ROUTER -(stalled)-> SUPERVISOR_DECISION
Ends a run that a "workflow" supervisor engine started for a signal, reporting the outcome for that signal.
With SUCCESS (the default) the message is {"commands"?: [...], "verdict"?, "reason"?}; a command the supervisor contract cannot read fails the run, naming its path (payload.commands[0].type).
Example config: {"outcome": "ESCALATE", "reason": "three failures in ten minutes"}`,
		Fields: []plugin.Field{
			{Name: "outcome", Type: plugin.String, Default: supervisor.DefaultOutcome, Options: slices.Clone(supervisor.DecisionOutcomes),
				Description: "the decision: SUCCESS (the default: send the message's commands), ESCALATE (hand the signal to the parent supervisor), RETRY or FAILED"},
			{Name: "reason", Type: plugin.String, Description: "why, reported with the outcome"},
		},
	})
}
