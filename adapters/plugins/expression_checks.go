package plugins

import (
	"fmt"

	"github.com/yukta/yukta/adapters/cel"
	"github.com/yukta/yukta/domain/fault"
	"github.com/yukta/yukta/domain/plugin"
)

// WithExpressionChecks returns copies of ds whose CheckFunc also compiles
// every Expression field of the config, including those nested in objects
// and arrays (ROUTER's routes[i].condition), so a session with an invalid
// expression is refused when it is applied instead of failing its first
// run. A field named "condition" must also be able to yield a bool.
//
// Descriptors stays free of CEL so that callers needing only the catalogue
// do not build an evaluator; wiring that validates sessions wraps it:
//
//	registry, err := pluginapp.NewRegistry(plugins.WithExpressionChecks(plugins.Descriptors(), ev)...)
func WithExpressionChecks(ds []plugin.Descriptor, ev *cel.Evaluator) []plugin.Descriptor {
	out := make([]plugin.Descriptor, len(ds))
	for i, d := range ds {
		if !hasExpression(d.Fields) {
			out[i] = d
			continue
		}
		own, fields := d.CheckFunc, d.Fields
		d.CheckFunc = func(config map[string]any) []fault.Violation {
			var vs []fault.Violation
			if own != nil {
				vs = own(config)
			}
			return append(vs, checkExpressions(ev, fields, config, "")...)
		}
		out[i] = d
	}
	return out
}

func hasExpression(fs []plugin.Field) bool {
	for _, f := range fs {
		if f.Type == plugin.Expression || hasExpression(f.Fields) || f.Items != nil && hasExpression([]plugin.Field{*f.Items}) {
			return true
		}
	}
	return false
}

// checkExpressions compiles the expressions in m described by fields. It
// runs after the field checks passed, so the shapes are the declared ones;
// anything else is skipped rather than reported twice.
func checkExpressions(ev *cel.Evaluator, fields []plugin.Field, m map[string]any, prefix string) []fault.Violation {
	var vs []fault.Violation
	for _, f := range fields {
		v, ok := m[f.Name]
		if !ok || v == nil {
			continue
		}
		vs = append(vs, checkExpressionValue(ev, f, v, prefix+f.Name)...)
	}
	return vs
}

func checkExpressionValue(ev *cel.Evaluator, f plugin.Field, v any, path string) []fault.Violation {
	switch f.Type {
	case plugin.Expression:
		src, ok := v.(string)
		if !ok {
			return nil
		}
		compile := ev.Compile
		if f.Name == "condition" {
			compile = ev.CompileBool
		}
		if err := compile(src); err != nil {
			return []fault.Violation{{Path: path, Message: fmt.Sprintf("is not a valid expression: %v", err)}}
		}
	case plugin.Object:
		if m, ok := v.(map[string]any); ok {
			return checkExpressions(ev, f.Fields, m, path+".")
		}
	case plugin.Array:
		a, ok := v.([]any)
		if !ok || f.Items == nil {
			return nil
		}
		var vs []fault.Violation
		for i, e := range a {
			vs = append(vs, checkExpressionValue(ev, *f.Items, e, fmt.Sprintf("%s[%d]", path, i))...)
		}
		return vs
	}
	return nil
}
