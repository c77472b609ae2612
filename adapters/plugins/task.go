package plugins

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/yukta/yukta/application/executionapp"
	"github.com/yukta/yukta/domain/access"
	"github.com/yukta/yukta/domain/fault"
	"github.com/yukta/yukta/domain/plugin"
)

// The bounds of a TASK node, declared once: the catalogue text, the config
// checks and the lease code read these.
const (
	taskDefaultTimeout   = "5m"
	taskDefaultHeartbeat = "30s"
	taskDefaultAttempts  = 3
	taskMinHeartbeat     = time.Second
	taskMaxHeartbeat     = 10 * time.Minute
	taskMaxTimeout       = 24 * time.Hour
	taskMaxPorts         = 16
)

func task() plugin.Descriptor {
	d := withRunFields(plugin.Descriptor{
		Type:        "TASK",
		Category:    plugin.Processor,
		Description: "Hands each message to a remote worker polling a named queue, and emits the worker's output.",
		Usage: `Pattern: MANUAL -> TASK -> RESULT
Workers in any language take the node's messages from its queue over the worker API (POST /api/worker/v1/poll with a WORKER key), heartbeat them, and answer each once with complete (the output goes out on "default" or another declared port) or fail. A delivery is leased: a worker that goes silent for heartbeatTimeout, or an attempt that runs past timeout, fails that attempt, and "retry" delivers the message again with attempt + 1 (3 attempts by default, since a worker can die). Each delivery carries an idempotencyKey that is the same on every attempt of the message. Pause, step, skip, breakpoints and stops act on TASK nodes as on every node. docs/workers.md.
Example config: {"queue": "images", "timeout": "2m", "heartbeatTimeout": "20s", "outputSchema": {"type": "object", "required": ["url"]}}`,
		Fields: []plugin.Field{
			{Name: "queue", Type: plugin.String, Required: true, Description: "the queue workers take this node's messages from: lower-case letters, digits, '.', '_' and '-', starting with a letter or digit, at most 64"},
			{Name: "timeout", Type: plugin.Duration, Default: taskDefaultTimeout, Description: fmt.Sprintf("time limit for one attempt, from its delivery to a worker (at most %s); an attempt past it fails and retry applies", taskMaxTimeout)},
			{Name: "heartbeatTimeout", Type: plugin.Duration, Default: taskDefaultHeartbeat, Description: fmt.Sprintf("how long a delivery holds without a heartbeat (%s to %s, and no longer than timeout); a worker silent for longer loses the message, and retry applies", taskMinHeartbeat, taskMaxHeartbeat)},
			{Name: "inputSchema", Type: plugin.Object, Description: "JSON Schema (2020-12) each message must satisfy before it is handed to a worker; a message that does not fails the node with the schema's error"},
			{Name: "outputSchema", Type: plugin.Object, Description: "JSON Schema (2020-12) each worker output must satisfy; an output that does not fails that attempt with the schema's error, and retry applies"},
			{Name: "ports", Type: plugin.Array, Items: &plugin.Field{Name: "port", Type: plugin.String, Description: "one output port name"},
				Description: fmt.Sprintf(`output ports a worker may answer on besides "default" (at most %d), such as ["rejected"]`, taskMaxPorts)},
		},
		PortsFunc: func(config map[string]any) []string {
			ports := []string{plugin.DefaultPort}
			list, _ := config["ports"].([]any)
			for _, p := range list {
				if s, ok := p.(string); ok && !slices.Contains(ports, s) {
					ports = append(ports, s)
				}
			}
			return ports
		},
		CheckFunc: checkTask,
		TaskFunc: func(config map[string]any) plugin.Task {
			t := plugin.Task{Queue: str(config, "queue")}
			t.Timeout, _ = duration(config["timeout"])
			t.Lease, _ = duration(config["heartbeatTimeout"])
			return t
		},
	})
	for i, f := range d.Fields {
		if f.Name == "retry" {
			f.Fields = slices.Clone(f.Fields)
			for j := range f.Fields {
				if f.Fields[j].Name == "maxAttempts" {
					f.Fields[j].Default = taskDefaultAttempts
				}
			}
			d.Fields[i] = f
		}
	}
	return d
}

func checkTask(config map[string]any) []fault.Violation {
	var vs []fault.Violation
	if q, ok := config["queue"].(string); ok {
		if err := access.ValidateQueueName(q); err != nil {
			vs = append(vs, fault.Violation{Path: "queue", Message: err.Error()})
		}
	}
	timeout, tok := duration(config["timeout"])
	if tok && timeout > taskMaxTimeout {
		vs = append(vs, fault.Violation{Path: "timeout", Message: fmt.Sprintf("must be at most %s, got %s", taskMaxTimeout, timeout)})
	}
	if hb, ok := duration(config["heartbeatTimeout"]); ok {
		switch {
		case hb < taskMinHeartbeat || hb > taskMaxHeartbeat:
			vs = append(vs, fault.Violation{Path: "heartbeatTimeout", Message: fmt.Sprintf("must be between %s and %s, got %s", taskMinHeartbeat, taskMaxHeartbeat, hb)})
		case tok && timeout > 0 && hb > timeout:
			vs = append(vs, fault.Violation{Path: "heartbeatTimeout", Message: fmt.Sprintf("must not be longer than timeout (%s), got %s", timeout, hb)})
		}
	}
	for _, name := range []string{"inputSchema", "outputSchema"} {
		if s, ok := config[name].(map[string]any); ok {
			if _, err := compileSchema(s); err != nil {
				vs = append(vs, fault.Violation{Path: name, Message: "is not a usable JSON Schema: " + err.Error()})
			}
		}
	}
	if list, ok := config["ports"].([]any); ok {
		if len(list) > taskMaxPorts {
			vs = append(vs, fault.Violation{Path: "ports", Message: fmt.Sprintf("lists %d ports; at most %d", len(list), taskMaxPorts)})
		}
		seen := map[string]bool{plugin.DefaultPort: true}
		for i, p := range list {
			s, _ := p.(string)
			if seen[s] {
				vs = append(vs, fault.Violation{Path: fmt.Sprintf("ports[%d]", i), Message: fmt.Sprintf("port %q is listed twice (\"default\" is always there)", s)})
			}
			seen[s] = true
		}
	}
	return vs
}

// TaskRunner is the behaviour of TASK: the engine never runs it (its
// messages wait in their queue for a worker); it checks what goes out to
// workers and what comes back against the node's schemas.
type TaskRunner struct{}

var _ executionapp.Remote = TaskRunner{}

// Run implements executionapp.Runner; the engine's claims never take a
// queued message, so reaching it is a bug worth a clear failure.
func (TaskRunner) Run(context.Context, executionapp.Invocation) (executionapp.Outcome, error) {
	return executionapp.Outcome{}, errors.New("TASK messages are taken by remote workers from their queue, not run by the engine")
}

// CheckInput implements executionapp.Remote.
func (TaskRunner) CheckInput(config map[string]any, payload any) error {
	return checkAgainst(config, "inputSchema", "the message", payload)
}

// CheckOutput implements executionapp.Remote.
func (TaskRunner) CheckOutput(config map[string]any, output any) error {
	return checkAgainst(config, "outputSchema", "the worker's output", output)
}

func checkAgainst(config map[string]any, field, what string, v any) error {
	s, ok := config[field].(map[string]any)
	if !ok {
		return nil
	}
	sch, err := compileSchema(s)
	if err != nil {
		return fmt.Errorf("the node's %s is not usable: %v", field, err)
	}
	doc, err := roundTrip(v)
	if err != nil {
		return err
	}
	if err := sch.Validate(doc); err != nil {
		return fmt.Errorf("%s does not match the node's %s: %v", what, field, err)
	}
	return nil
}

// schemas caches compiled schemas by their text: one TASK node sees the
// same schema on every message, and compiling costs far more than checking.
var schemas = struct {
	sync.Mutex
	m map[string]*jsonschema.Schema
}{m: map[string]*jsonschema.Schema{}}

// maxCachedSchemas bounds the cache; it is cleared when full, and schemas
// compile again on their next use.
const maxCachedSchemas = 1000

func compileSchema(s map[string]any) (*jsonschema.Schema, error) {
	key, err := json.Marshal(s)
	if err != nil {
		return nil, err
	}
	schemas.Lock()
	sch, ok := schemas.m[string(key)]
	schemas.Unlock()
	if ok {
		return sch, nil
	}
	doc, err := roundTrip(s)
	if err != nil {
		return nil, err
	}
	c := jsonschema.NewCompiler()
	c.DefaultDraft(jsonschema.Draft2020)
	if err := c.AddResource("task.json", doc); err != nil {
		return nil, err
	}
	if sch, err = c.Compile("task.json"); err != nil {
		return nil, err
	}
	schemas.Lock()
	if len(schemas.m) >= maxCachedSchemas {
		clear(schemas.m)
	}
	schemas.m[string(key)] = sch
	schemas.Unlock()
	return sch, nil
}
