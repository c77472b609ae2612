package plugins

import (
	"fmt"
	"regexp"
	"slices"
	"strings"

	"github.com/yukta/yukta/domain/fault"
	"github.com/yukta/yukta/domain/plugin"
)

// The ports of the types whose ports are not just "default".
const (
	errorPort    = "error"
	approvedPort = "approved"
	rejectedPort = "rejected"
)

// maxResponseBytes bounds what maxResponseBytes may be set to: the answer
// becomes a message payload, stored in PostgreSQL and copied to every
// downstream item.
const maxResponseBytes = 16 << 20

func httpRequest() plugin.Descriptor {
	return withRunFields(plugin.Descriptor{
		Type:        "HTTP_REQUEST",
		Category:    plugin.Processor,
		Description: "Calls an HTTP endpoint through the egress policy and emits the answer.",
		Usage: `Pattern: MANUAL -> HTTP_REQUEST -(default)-> TRANSFORM
                              -(error)->   LOG
Both ports carry {"status": 404, "headers": {...}, "body": ...} (body decoded when the answer is JSON, else text). "default" gets 2xx answers, "error" every other status, and neither is retried. No answer (refused address, connection failure, timeout, oversized answer) fails the attempt, and "retry" applies. Connect "error": a message sent to an unconnected port ends there. Each request carries an Idempotency-Key header that is stable across retries of the same message.
Credentials go in the secret fields, which read "***" on every read path: authorization (the Authorization header), secretHeaders (X-API-Key, Cookie, …) and secretQuery (api_key=…). A plain header, or a url query parameter, whose name looks like a credential is refused, and so is user:password@ in the url.
Example config: {"url": "https://api.example.com/orders", "method": "POST", "headers": {"Content-Type": "application/json"}, "secretHeaders": {"X-API-Key": "key-value"}, "body": {"sku": "A-1"}, "authorization": "Bearer token-value"}`,
		Fields: []plugin.Field{
			urlField("address to call"),
			{Name: "method", Type: plugin.String, Options: []string{"GET", "POST", "PUT", "PATCH", "DELETE", "HEAD"}, Default: "GET", Description: "HTTP method"},
			headersField(),
			secretHeadersField(),
			secretQueryField(),
			{Name: "body", Type: plugin.Any, Description: "request body, sent as JSON; absent (or null): POST, PUT and PATCH send the message payload, other methods send no body"},
			authorizationField(),
			{Name: "timeout", Type: plugin.Duration, Default: defaultTimeout, Description: "time limit for one attempt, from connecting to reading the whole answer; a slower attempt fails and retry applies"},
			{Name: "maxResponseBytes", Type: plugin.Integer, Default: 1 << 20, Description: fmt.Sprintf("largest answer body read, in bytes (1 to %d); a longer answer fails the attempt", maxResponseBytes)},
		},
		PortsFunc: func(map[string]any) []string { return []string{plugin.DefaultPort, errorPort} },
		CheckFunc: func(config map[string]any) []fault.Violation {
			vs := checkOutbound(config)
			if n, ok := number(config["maxResponseBytes"]); ok && (n < 1 || n > maxResponseBytes) {
				vs = append(vs, fault.Violation{Path: "maxResponseBytes", Message: fmt.Sprintf("must be between 1 and %d, got %v", maxResponseBytes, config["maxResponseBytes"])})
			}
			return vs
		},
	})
}

func transform() plugin.Descriptor {
	return withRunFields(plugin.Descriptor{
		Type:        "TRANSFORM",
		Category:    plugin.Processor,
		Description: "Replaces the payload with the value of a CEL expression.",
		Usage: `Pattern: HTTP_REQUEST -> TRANSFORM -> RESULT
The expression sees the incoming payload as "payload"; its value is emitted on "default" as the new payload. An evaluation error fails the attempt.
Example config: {"expression": "{\"id\": payload.body.id, \"count\": size(payload.body.items)}"}`,
		Fields: []plugin.Field{
			{Name: "expression", Type: plugin.Expression, Required: true, Description: `CEL expression over "payload" whose value becomes the new payload`},
		},
	})
}

func filter() plugin.Descriptor {
	return withRunFields(plugin.Descriptor{
		Type:        "FILTER",
		Category:    plugin.Processor,
		Description: "Passes a message on unchanged when a CEL condition holds and drops it otherwise.",
		Usage: `Pattern: WEBHOOK -> FILTER -> HTTP_REQUEST
The condition sees the payload as "payload" and must evaluate to a boolean; true emits the message unchanged on "default", false drops it (the run goes on without it). A non-boolean value or an evaluation error fails the attempt.
Example config: {"condition": "payload.amount > 100"}`,
		Fields: []plugin.Field{
			{Name: "condition", Type: plugin.Expression, Required: true, Description: `CEL boolean over "payload"; messages for which it is false are dropped`},
		},
	})
}

// portName is the shape of a ROUTER port: the same shape as the ids of a
// session, so a port is safe in paths, logs and CLI arguments.
var portName = regexp.MustCompile(`^[a-z0-9][a-z0-9_-]{0,63}$`)

func router() plugin.Descriptor {
	return withRunFields(plugin.Descriptor{
		Type:        "ROUTER",
		Category:    plugin.Processor,
		Description: "Sends each message, unchanged, to the port of the first route whose CEL condition holds.",
		Usage: `Pattern: MANUAL -> ROUTER -(big)->     HTTP_REQUEST
                        -(small)->   LOG
                        -(default)-> RESULT
Routes are tried in order and the first whose condition is true wins; each route is one port. With fallback true, a message no route takes goes to "default"; with fallback false it is dropped.
Example config: {"routes": [{"port": "big", "condition": "payload.amount >= 1000"}, {"port": "small", "condition": "payload.amount < 10"}], "fallback": true}`,
		Fields: []plugin.Field{
			{
				Name: "routes", Type: plugin.Array, Required: true,
				Description: "the branches, tried in order",
				Items: &plugin.Field{
					Name: "route", Type: plugin.Object, Description: "one branch: a port and the condition that sends a message to it",
					Fields: []plugin.Field{
						{Name: "port", Type: plugin.String, Required: true, Description: "output port of this branch, unique, matching " + portName.String()},
						{Name: "condition", Type: plugin.Expression, Required: true, Description: `CEL boolean over "payload"`},
					},
				},
			},
			{Name: "fallback", Type: plugin.Boolean, Default: true, Description: `whether messages no route takes go to the "default" port (true) or are dropped (false)`},
		},
		PortsFunc: routerPorts,
		CheckFunc: checkRoutes,
	})
}

// routerPorts returns the ports of the valid, distinct routes followed by the
// fallback port. It is also called on configs that never passed validation
// (the catalogue answers for any config), so it skips what it cannot read.
func routerPorts(config map[string]any) []string {
	ports := []string{}
	routes, _ := config["routes"].([]any)
	for _, r := range routes {
		m, _ := r.(map[string]any)
		p, _ := m["port"].(string)
		if portName.MatchString(p) && !slices.Contains(ports, p) {
			ports = append(ports, p)
		}
	}
	if fallback(config) && !slices.Contains(ports, plugin.DefaultPort) {
		ports = append(ports, plugin.DefaultPort)
	}
	return ports
}

// fallback reads the fallback field, treating anything but false as its
// default, true.
func fallback(config map[string]any) bool {
	b, ok := config["fallback"].(bool)
	return !ok || b
}

func checkRoutes(config map[string]any) []fault.Violation {
	routes, ok := config["routes"].([]any)
	if !ok {
		return nil
	}
	if len(routes) == 0 {
		return []fault.Violation{{Path: "routes", Message: "must list at least one route; a ROUTER without routes only forwards, so use no node at all"}}
	}
	var vs []fault.Violation
	first := map[string]int{}
	for i, r := range routes {
		m, _ := r.(map[string]any)
		p, ok := m["port"].(string)
		if !ok {
			continue
		}
		path := fmt.Sprintf("routes[%d].port", i)
		switch j, dup := first[p]; {
		case !portName.MatchString(p):
			vs = append(vs, fault.Violation{Path: path, Message: fmt.Sprintf("must match %s (lowercase letters, digits, '-' and '_', starting with a letter or digit), got %q", portName, p)})
		case dup:
			vs = append(vs, fault.Violation{Path: path, Message: fmt.Sprintf("repeats port %q of routes[%d]; each route needs its own port", p, j)})
		case p == plugin.DefaultPort && fallback(config):
			vs = append(vs, fault.Violation{Path: path, Message: `is "default", the fallback port; rename the route or set fallback to false`})
		default:
			first[p] = i
		}
	}
	return vs
}

func split() plugin.Descriptor {
	return withRunFields(plugin.Descriptor{
		Type:        "SPLIT",
		Category:    plugin.Processor,
		Description: "Emits one message per element of an array in the payload.",
		Usage: `Pattern: HTTP_REQUEST -> SPLIT -> HTTP_REQUEST -> RESULT
Each element of the array is emitted on "default" as a payload of its own, in order; an empty array emits nothing. A missing value, one that is not an array, or an array of more than 10,000 elements fails the attempt.
Example config: {"field": "body.items"}`,
		Fields: []plugin.Field{
			{Name: "field", Type: plugin.String, Description: `dotted path to the array inside the payload, such as "body.items"; absent means the payload itself`},
		},
		CheckFunc: func(config map[string]any) []fault.Violation {
			if s, ok := config["field"].(string); ok && slices.Contains(strings.Split(s, "."), "") {
				return []fault.Violation{{Path: "field", Message: fmt.Sprintf(`must be a dotted path of non-empty names such as "body.items", got %q; omit it to split the payload itself`, s)}}
			}
			return nil
		},
	})
}

func delay() plugin.Descriptor {
	return withRunFields(plugin.Descriptor{
		Type:        "DELAY",
		Category:    plugin.Processor,
		Description: "Holds each message for a fixed time, then passes it on unchanged.",
		Usage: `Pattern: WEBHOOK -> DELAY -> HTTP_REQUEST
The wait is a durable timer: it survives restarts, holds no worker, and does not count against "timeout". After it the message is emitted unchanged on "default".
Example config: {"duration": "10m"}`,
		Fields: []plugin.Field{
			{Name: "duration", Type: plugin.Duration, Required: true, Description: `how long to hold each message, such as "90s" or "24h"`},
		},
	})
}

// The modes of INPUT_REQUEST.
const (
	approvalMode = "approval"
	answerMode   = "answer"
)

func inputRequest() plugin.Descriptor {
	return withRunFields(plugin.Descriptor{
		Type:        "INPUT_REQUEST",
		Category:    plugin.Processor,
		Description: "Parks each message until a person, agent or supervisor answers a prompt.",
		Usage: `Pattern: MANUAL -> INPUT_REQUEST -(approved)-> HTTP_REQUEST
                                -(rejected)-> LOG
The node waits (status WAITING) without holding a worker, and the wait does not count against "timeout". Mode "approval" sends the message unchanged to "approved" or "rejected"; mode "answer" merges the answer object into the payload (the answer's keys win) and emits it on "default".
Example config: {"prompt": "Refund this order?", "mode": "approval"}`,
		Fields: []plugin.Field{
			{Name: "prompt", Type: plugin.String, Required: true, Description: "question shown to whoever answers"},
			{Name: "schema", Type: plugin.Object, Description: `JSON schema the answer must satisfy (mode "answer" only); absent means any object`},
			{Name: "mode", Type: plugin.String, Options: []string{approvalMode, answerMode}, Default: approvalMode, Description: `"approval" for a yes/no decision routed to "approved" or "rejected"; "answer" to merge the answer into the payload`},
		},
		PortsFunc: func(config map[string]any) []string {
			if config["mode"] == answerMode {
				return []string{plugin.DefaultPort}
			}
			return []string{approvedPort, rejectedPort}
		},
		CheckFunc: func(config map[string]any) []fault.Violation {
			var vs []fault.Violation
			if s, ok := config["prompt"].(string); ok && strings.TrimSpace(s) == "" {
				vs = append(vs, fault.Violation{Path: "prompt", Message: "must not be empty: it is all the answerer sees"})
			}
			// A mode that failed its own check is absent: the schema's
			// fate waits on the mode the user meant.
			if _, ok := config["schema"]; ok && config["mode"] != nil && config["mode"] != answerMode {
				// Silently ignoring it would suggest the answer is checked.
				vs = append(vs, fault.Violation{Path: "schema", Message: `applies only to mode "answer"; remove it or set mode to "answer"`})
			}
			return vs
		},
	})
}

func logNode() plugin.Descriptor {
	return withRunFields(plugin.Descriptor{
		Type:        "LOG",
		Category:    plugin.Processor,
		Description: "Writes a line to the execution log and passes the message on unchanged.",
		Usage: `Pattern: HTTP_REQUEST -(error)-> LOG -> RESULT
Writes the message (or, without one, the payload as JSON) at the given level, then emits the message unchanged on "default". A line longer than 1,024 bytes keeps its first 1,024 (cut on a character boundary) followed by "…". Secrets are redacted before logs are read.
Example config: {"message": "order rejected by the API", "level": "warn"}`,
		Fields: []plugin.Field{
			{Name: "message", Type: plugin.String, Description: "text of the log line; absent means the payload as JSON"},
			{Name: "level", Type: plugin.String, Options: []string{"debug", "info", "warn", "error"}, Default: "info", Description: "level of the log line"},
		},
	})
}

func fail() plugin.Descriptor {
	return withRunFields(plugin.Descriptor{
		Type:        "FAIL",
		Category:    plugin.Processor,
		Description: "Fails every attempt with a fixed message, to test failure handling and demonstrate control.",
		Usage: `Pattern: MANUAL -> FAIL -> RESULT
Every attempt fails, so retry and then execution failure follow. It keeps a "default" port so that skipping the node (SKIP) lets messages through to what follows.
Example config: {"message": "simulated outage", "retry": {"maxAttempts": 3, "backoff": "2s"}}`,
		Fields: []plugin.Field{
			{Name: "message", Type: plugin.String, Default: "failed on purpose", Description: "error message of each failed attempt"},
		},
	})
}
