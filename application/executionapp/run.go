package executionapp

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/yukta/yukta/domain/execution"
	"github.com/yukta/yukta/domain/jsonvalue"
	"github.com/yukta/yukta/domain/plugin"
	"github.com/yukta/yukta/domain/session"
)

// Defaults for nodes whose config does not say otherwise.
const (
	DefaultNodeTimeout = 30 * time.Second
	DefaultBackoff     = time.Second
	maxBackoff         = 10 * time.Minute
)

// run is an execution as the engine needs it: its graph and each node's
// type, config (defaults applied) and policies. Definitions never change
// after start, so a run is built once per instance and cached.
type run struct {
	src   RunSource
	graph execution.Graph
	nodes map[string]runNode
	vars  map[string]any // the CEL `execution` variable
	// secrets replaces the secret config values of the run's workflow
	// with the mask; nil when it has none.
	secrets *strings.Replacer
}

// mask removes the run's secret values from text that is about to be
// stored (errors, log lines, prompts, the result): what is stored is read
// by VIEWERs, streamed, and journaled for ever.
func (r *run) mask(s string) string {
	if r == nil || r.secrets == nil {
		return s
	}
	return r.secrets.Replace(s)
}

// maskValue is mask for every string of a JSON value, copying only what
// it changes.
func (r *run) maskValue(v any) any {
	if r == nil || r.secrets == nil {
		return v
	}
	switch x := v.(type) {
	case string:
		return r.secrets.Replace(x)
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			out[r.secrets.Replace(k)] = r.maskValue(e)
		}
		return out
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = r.maskValue(e)
		}
		return out
	}
	return v
}

type runNode struct {
	typ         string
	config      map[string]any
	timeout     time.Duration
	maxAttempts int
	backoff     time.Duration
	missing     bool // the plugin type is no longer installed
	// task is set for a node remote workers run: its messages wait in
	// this queue.
	task *plugin.Task
}

func buildRun(src RunSource, c session.Catalog) (*run, error) {
	w, err := session.RestoreWorkflow(src.WorkflowID, "", src.Definition)
	if err != nil {
		return nil, err
	}
	r := &run{src: src, nodes: map[string]runNode{}}
	var ids []string
	for _, n := range w.Nodes() {
		ids = append(ids, n.ID())
		rn := runNode{typ: n.Type(), config: n.Config(), timeout: DefaultNodeTimeout, maxAttempts: 1, backoff: DefaultBackoff}
		d, ok := c.Describe(n.Type())
		if !ok {
			rn.missing = true
		} else {
			rn.config = d.WithDefaults(rn.config)
			if t, ok := d.Task(rn.config); ok {
				rn.task = &t
			}
		}
		if s, ok := rn.config["timeout"].(string); ok {
			if d, err := time.ParseDuration(s); err == nil && d > 0 {
				rn.timeout = d
			}
		}
		if rp, ok := rn.config["retry"].(map[string]any); ok {
			if n, ok := plugin.NumberValue(rp["maxAttempts"]); ok && n >= 1 {
				rn.maxAttempts = int(n)
			}
			if s, ok := rp["backoff"].(string); ok {
				if d, err := time.ParseDuration(s); err == nil && d >= 0 {
					rn.backoff = d
				}
			}
		}
		r.nodes[n.ID()] = rn
	}
	var edges []execution.Edge
	for _, e := range w.Edges() {
		edges = append(edges, execution.Edge{Source: e.Source(), Target: e.Target(), Port: e.SourcePort()})
	}
	r.graph = execution.NewGraph(ids, edges)
	if pairs := SecretValues(w, c); len(pairs) > 0 {
		r.secrets = strings.NewReplacer(pairs...)
	}
	// Built once per run and handed to every expression of it, so its
	// numbers are converted here rather than on every evaluation.
	r.vars = map[string]any{
		"executionId": src.ExecutionID, "sessionId": src.SessionID, "workflowId": src.WorkflowID,
		"startedAt": src.StartedAt.UTC().Format(time.RFC3339Nano), "input": exprNumbers(src.Payload),
	}
	return r, nil
}

// retryDelay is the wait before attempt+1: backoff doubled per attempt.
func (n runNode) retryDelay(attempt int) time.Duration {
	d := n.backoff
	for i := 1; i < attempt && d < maxBackoff; i++ {
		d *= 2
	}
	return min(d, maxBackoff)
}

// runCache builds each run once per instance.
type runCache struct {
	mu      sync.Mutex
	runs    map[string]*run
	catalog session.Catalog
	load    func(ctx context.Context, id string) (RunSource, error)
}

func (c *runCache) get(ctx context.Context, id string) (*run, error) {
	c.mu.Lock()
	r, ok := c.runs[id]
	c.mu.Unlock()
	if ok {
		return r, nil
	}
	src, err := c.load(ctx, id)
	if err != nil {
		return nil, fmt.Errorf("load execution %s: %w", id, err)
	}
	r, err = buildRun(src, c.catalog)
	if err != nil {
		return nil, err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.runs) > 10_000 { // a crude bound; definitions reload cheaply
		clear(c.runs)
	}
	c.runs[id] = r
	return r, nil
}

func (c *runCache) forget(id string) {
	c.mu.Lock()
	delete(c.runs, id)
	c.mu.Unlock()
}

// exprNumbers returns v with every json.Number turned into the Go number
// expressions compute with (jsonvalue.Number: int64, uint64 or float64), so
// the expression adapter has nothing left to convert on each evaluation. A
// number out of range stays as it is; the expression that reads it fails.
func exprNumbers(v any) any {
	switch x := v.(type) {
	case json.Number:
		if n, err := jsonvalue.Number(x); err == nil {
			return n
		}
		return v
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			out[k] = exprNumbers(e)
		}
		return out
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = exprNumbers(e)
		}
		return out
	}
	return v
}
