package cel

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	celgo "cel.dev/cel-go/cel"
	"cel.dev/cel-go/common/types"
	"cel.dev/cel-go/ext"
	"golang.org/x/sync/singleflight"

	"github.com/yukta/yukta/domain/supervisor"
)

// Conditions evaluates the CEL conditions of supervisors: a rule's when.if,
// a deny or requireApproval rule's if, and the workflow engine's when. Each
// is compiled against exactly the variables its context may read
// (supervisor.Variables), so an expression that reads a variable of another
// context does not compile. The variables are typed as docs/supervisors.md
// says: objects are maps, now and the timestamps inside event and execution
// are CEL timestamps (pass time.Time values), counts are ints.
//
// Compilations are cached per context and source, and every evaluation is
// bounded by the same cost and time limits as node expressions. It is safe
// for concurrent use.
type Conditions struct {
	costLimit uint64
	timeout   time.Duration
	cacheSize int

	mu    sync.RWMutex
	envs  map[string]*celgo.Env
	cache map[string]*entry
	group singleflight.Group
}

// NewConditions returns an evaluator of supervisor conditions with the
// default limits (cost, time, cache size), changed by opts.
func NewConditions(opts ...Option) (*Conditions, error) {
	e := &Evaluator{costLimit: DefaultCostLimit, timeout: DefaultTimeout, cacheSize: DefaultCacheSize}
	for _, o := range opts {
		o(e)
	}
	c := &Conditions{costLimit: e.costLimit, timeout: e.timeout, cacheSize: e.cacheSize,
		envs: map[string]*celgo.Env{}, cache: map[string]*entry{}}
	// Build the environment of every context now, so a broken option fails
	// at start-up rather than on the first rule.
	for _, ctx := range []supervisor.ExprContext{supervisor.EventRule, supervisor.TickRule, supervisor.ReviewRule, supervisor.EngineWhen} {
		if _, err := c.env(supervisor.VariableNames(ctx)); err != nil {
			return nil, err
		}
	}
	return c, nil
}

// Check compiles a condition against the named variables and says why it
// does not compile or cannot yield a bool; nil when it is fine. It is a
// supervisor.ExprChecker.
func (c *Conditions) Check(expr string, vars []string) error {
	en, err := c.compile(expr, vars)
	if err != nil {
		return err
	}
	return en.err
}

// Checker returns Check as a supervisor.ExprChecker.
func (c *Conditions) Checker() supervisor.ExprChecker { return c.Check }

// EvalBool evaluates a condition with vars, whose keys are the variables
// the condition may read (every variable of its context must be present).
// A value that is not a bool, a missing map key and a type error are
// errors, never false.
func (c *Conditions) EvalBool(ctx context.Context, expr string, vars map[string]any) (bool, error) {
	names := slices.Sorted(maps.Keys(vars))
	en, err := c.compile(expr, names)
	if err != nil {
		return false, err
	}
	if en.err != nil {
		return false, en.err
	}
	if ctx.Err() != nil {
		return false, &Error{Expr: expr, Reason: "evaluation cancelled", err: ctx.Err()}
	}
	act := make(map[string]any, len(vars))
	for k, v := range vars {
		if t, ok := v.(time.Time); ok {
			act[k] = t.UTC()
			continue
		}
		n, err := normalize(v)
		if err != nil {
			return false, &Error{Expr: expr, Reason: k + ": " + err.Error()}
		}
		act[k] = n
	}
	tctx, cancel := context.WithTimeout(ctx, c.timeout)
	defer cancel()
	out, _, err := en.prg.ContextEval(tctx, act)
	if err != nil {
		ev := &Evaluator{costLimit: c.costLimit, timeout: c.timeout}
		return false, ev.runtimeError(ctx, expr, err)
	}
	b, ok := out.(types.Bool)
	if !ok {
		return false, &Error{Expr: expr, Reason: fmt.Sprintf("must evaluate to a bool, got %s", out.Type().TypeName())}
	}
	return bool(b), nil
}

// variableType is the CEL type of a documented variable.
func variableType(name string) *celgo.Type {
	for _, ctx := range []supervisor.ExprContext{supervisor.EventRule, supervisor.ReviewRule} {
		for _, v := range supervisor.Variables(ctx) {
			if v.Name != name {
				continue
			}
			switch v.Type {
			case "timestamp":
				return celgo.TimestampType
			case "string":
				return celgo.StringType
			case "int":
				return celgo.IntType
			case "object", "map":
				return celgo.MapType(celgo.StringType, celgo.DynType)
			}
		}
	}
	return celgo.DynType
}

// env returns the environment that declares exactly vars.
func (c *Conditions) env(vars []string) (*celgo.Env, error) {
	key := strings.Join(vars, ",")
	c.mu.RLock()
	env, ok := c.envs[key]
	c.mu.RUnlock()
	if ok {
		return env, nil
	}
	opts := []celgo.EnvOption{
		// The same pinned extensions and limits as node expressions.
		ext.Strings(ext.StringsVersion(5)),
		ext.Math(ext.MathVersion(3)),
		ext.Lists(ext.ListsVersion(5)),
		ext.Encoders(ext.EncodersVersion(2)),
		celgo.OptionalTypes(),
		celgo.CrossTypeNumericComparisons(true),
		celgo.DefaultUTCTimeZone(true),
		celgo.ParserExpressionSizeLimit(maxSourceLen),
		celgo.ParserRecursionLimit(maxNesting),
	}
	for _, v := range vars {
		opts = append(opts, celgo.Variable(v, variableType(v)))
	}
	env, err := celgo.NewEnv(opts...)
	if err != nil {
		return nil, fmt.Errorf("cel: building the environment of %s: %w", key, err)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.envs) < 64 { // a handful of contexts; never grows without bound
		c.envs[key] = env
	}
	return env, nil
}

// compile returns the cached compilation of expr against vars.
func (c *Conditions) compile(expr string, vars []string) (*entry, error) {
	key := strings.Join(vars, ",") + "\x00" + expr
	c.mu.RLock()
	en, ok := c.cache[key]
	c.mu.RUnlock()
	if ok {
		return en, nil
	}
	env, err := c.env(vars)
	if err != nil {
		return nil, err
	}
	v, _, _ := c.group.Do(key, func() (any, error) {
		en := c.build(env, expr)
		c.mu.Lock()
		defer c.mu.Unlock()
		if len(c.cache) >= c.cacheSize {
			for k := range c.cache {
				delete(c.cache, k)
				break
			}
		}
		c.cache[key] = en
		return en, nil
	})
	return v.(*entry), nil
}

func (c *Conditions) build(env *celgo.Env, expr string) *entry {
	ast, iss := env.Compile(expr)
	if iss != nil && iss.Err() != nil {
		return &entry{err: compileError(expr, iss.Errors())}
	}
	if t := ast.OutputType(); t.Kind() != types.BoolKind && t.Kind() != types.DynKind {
		return &entry{err: &Error{Expr: expr, Reason: fmt.Sprintf("must evaluate to a bool, but its type is %s", t)}}
	}
	prg, err := env.Program(ast,
		celgo.CostLimit(c.costLimit),
		celgo.InterruptCheckFrequency(interruptEvery),
		celgo.EvalOptions(celgo.OptOptimize),
	)
	if err != nil {
		return &entry{err: &Error{Expr: expr, Reason: err.Error()}}
	}
	return &entry{prg: prg, output: ast.OutputType()}
}
