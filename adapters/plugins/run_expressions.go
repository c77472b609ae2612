package plugins

import (
	"context"
	"fmt"

	"github.com/yukta/yukta/adapters/cel"
	"github.com/yukta/yukta/application/executionapp"
	"github.com/yukta/yukta/domain/plugin"
)

// runTransform emits the expression's value as the new payload.
func runTransform(ctx context.Context, ev *cel.Evaluator, in executionapp.Invocation) (executionapp.Outcome, error) {
	v, err := ev.Eval(ctx, str(in.Config, "expression"), vars(in))
	if err != nil {
		return executionapp.Outcome{}, err
	}
	return emit(plugin.DefaultPort, v), nil
}

// runFilter passes the message on when the condition holds. A dropped
// message is logged so that a run that "did nothing" can be explained from
// its log.
func runFilter(ctx context.Context, ev *cel.Evaluator, in executionapp.Invocation) (executionapp.Outcome, error) {
	ok, err := ev.EvalBool(ctx, str(in.Config, "condition"), vars(in))
	if err != nil {
		return executionapp.Outcome{}, err
	}
	if !ok {
		return executionapp.Outcome{Logs: []executionapp.LogLine{executionapp.Info("filtered out: the condition is false")}}, nil
	}
	return emit(plugin.DefaultPort, in.Payload), nil
}

// runRouter sends the message to the first route whose condition holds.
func runRouter(ctx context.Context, ev *cel.Evaluator, in executionapp.Invocation) (executionapp.Outcome, error) {
	routes, _ := in.Config["routes"].([]any)
	for i, r := range routes {
		m, _ := r.(map[string]any)
		ok, err := ev.EvalBool(ctx, str(m, "condition"), vars(in))
		if err != nil {
			return executionapp.Outcome{}, fmt.Errorf("routes[%d].condition: %w", i, err)
		}
		if ok {
			return emit(str(m, "port"), in.Payload), nil
		}
	}
	if fallback(in.Config) {
		return emit(plugin.DefaultPort, in.Payload), nil
	}
	return executionapp.Outcome{Logs: []executionapp.LogLine{executionapp.Info("dropped: no route matched and fallback is false")}}, nil
}

// runResult stores the expression's value, or the payload, as the result.
func runResult(ctx context.Context, ev *cel.Evaluator, in executionapp.Invocation) (executionapp.Outcome, error) {
	src := str(in.Config, "expression")
	if src == "" {
		return executionapp.Outcome{Result: in.Payload, HasResult: true}, nil
	}
	v, err := ev.Eval(ctx, src, vars(in))
	if err != nil {
		return executionapp.Outcome{}, err
	}
	return executionapp.Outcome{Result: v, HasResult: true}, nil
}
