// Package cel evaluates the CEL expressions of workflow nodes (TRANSFORM,
// FILTER, ROUTER, RESULT) with cel.dev/cel-go.
//
// One Evaluator holds one CEL environment and a bounded cache of compiled
// programs, so an expression is parsed and checked once however many
// messages it sees. Every evaluation is bounded twice: by a runtime cost
// limit, which stops runaway comprehensions deterministically, and by a
// wall-clock limit, which catches what the cost model underestimates.
//
// Data model: expressions see three variables, "payload" (any JSON value),
// "execution" (a map describing the run) and "now" (a timestamp). JSON
// numbers keep their exact value (jsonvalue.Number): an integer is a CEL int
// (int64), a larger positive integer up to 2^64-1 a CEL uint, and every other
// number (fractions, exponents, "2.0", integers beyond uint64) a CEL double.
// Comparisons mix freely ("payload.amount > 99.5"); arithmetic does not, as
// in CEL itself: "double(payload.n) * 1.1", or int literals with ints. Results
// come back as plain JSON values: map[string]any, []any, string, bool, nil,
// int64, uint64, and doubles as json.Number text that keeps a fraction
// ("42.0"), so a double stays a double in the next node.
package cel

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	celgo "cel.dev/cel-go/cel"
	"cel.dev/cel-go/common/types"
	"cel.dev/cel-go/common/types/ref"
	"cel.dev/cel-go/ext"
	"cel.dev/cel-go/interpreter"
	"golang.org/x/sync/singleflight"

	"github.com/yukta/yukta/domain/jsonvalue"
)

// The defaults of an Evaluator. The cost limit allows a few hundred
// thousand simple operations, far beyond any sensible per-message
// expression, while stopping an O(n²) comprehension over a few thousand
// elements; the time limit is a backstop for work the cost model prices
// low, set well above what legitimate expressions take on a loaded machine.
const (
	DefaultCostLimit = 1_000_000
	DefaultTimeout   = 500 * time.Millisecond
	DefaultCacheSize = 4096

	// maxSourceLen (code points) and maxNesting keep the parser's work and
	// stack bounded for any input, including fuzzed or hostile configs.
	maxSourceLen = 8192
	maxNesting   = 128
	// interruptEvery is how many comprehension iterations run between two
	// checks of the context, trading a little speed for prompt cancellation.
	interruptEvery = 100
)

// Vars are the values an expression sees.
type Vars struct {
	// Payload is the message, "payload" in the expression.
	Payload any
	// Execution describes the run, "execution" in the expression; nil is an
	// empty map.
	Execution map[string]any
	// Now is "now"; the zero time means the current time.
	Now time.Time
}

// Option changes a default of New.
type Option func(*Evaluator)

// WithCostLimit sets the runtime cost limit of one evaluation.
func WithCostLimit(n uint64) Option { return func(e *Evaluator) { e.costLimit = n } }

// WithTimeout sets the wall-clock limit of one evaluation.
func WithTimeout(d time.Duration) Option { return func(e *Evaluator) { e.timeout = d } }

// WithMaxOutput caps the size of an expression's value (as JSON); a larger
// value is an error naming the limit and setting. Zero means no cap.
func WithMaxOutput(bytes int, setting string) Option {
	return func(e *Evaluator) { e.maxOutput, e.outputSetting = bytes, setting }
}

// WithCacheSize sets how many compiled expressions are kept.
func WithCacheSize(n int) Option { return func(e *Evaluator) { e.cacheSize = max(n, 1) } }

// Evaluator compiles, caches and evaluates expressions. It is safe for
// concurrent use; create one per process.
type Evaluator struct {
	env       *celgo.Env
	costLimit uint64
	timeout   time.Duration
	cacheSize int
	// maxOutput caps an expression's value; outputSetting names the
	// configuration that raises it.
	maxOutput     int
	outputSetting string

	mu    sync.RWMutex
	cache map[string]*entry
	group singleflight.Group
}

// entry is one cached compilation. Failed compilations are cached too, so a
// stored invalid expression costs one parse, not one per message.
type entry struct {
	prg    celgo.Program
	output *celgo.Type
	err    error
}

// New returns an Evaluator with the default limits, changed by opts.
func New(opts ...Option) (*Evaluator, error) {
	env, err := celgo.NewEnv(
		celgo.Variable("payload", celgo.DynType),
		celgo.Variable("execution", celgo.MapType(celgo.StringType, celgo.DynType)),
		celgo.Variable("now", celgo.TimestampType),
		// Extension libraries default to their latest version, so an
		// upgrade of cel-go could silently change what stored expressions
		// may call. Pinned to the newest in v0.33.2, which also price their
		// functions for the cost limit.
		ext.Strings(ext.StringsVersion(5)),
		ext.Math(ext.MathVersion(3)),
		ext.Lists(ext.ListsVersion(5)),
		ext.Encoders(ext.EncodersVersion(2)),
		celgo.OptionalTypes(), // payload.?coupon.orValue("")
		// JSON numbers are doubles; without this "payload.n == 1" would be
		// a type error rather than true.
		celgo.CrossTypeNumericComparisons(true),
		celgo.DefaultUTCTimeZone(true),
		celgo.ParserExpressionSizeLimit(maxSourceLen),
		celgo.ParserRecursionLimit(maxNesting),
	)
	if err != nil {
		return nil, fmt.Errorf("cel: building the environment: %w", err)
	}
	e := &Evaluator{env: env, costLimit: DefaultCostLimit, timeout: DefaultTimeout, cacheSize: DefaultCacheSize, cache: map[string]*entry{}}
	for _, o := range opts {
		o(e)
	}
	return e, nil
}

// Compile checks that src is a valid expression, for validating configs
// before they are stored. The program is cached for later evaluations.
func (e *Evaluator) Compile(src string) error {
	return e.compile(src).err
}

// CompileBool checks that src is a valid expression that can yield a bool:
// its static type is bool or dyn (a payload member, whose type is known only
// at run time). It is for conditions (FILTER, ROUTER).
func (e *Evaluator) CompileBool(src string) error {
	en := e.compile(src)
	if en.err != nil {
		return en.err
	}
	if t := en.output; t.Kind() != types.BoolKind && t.Kind() != types.DynKind {
		return &Error{Expr: src, Reason: fmt.Sprintf("must evaluate to a bool, but its type is %s", t)}
	}
	return nil
}

// Eval evaluates src with vars and returns its value as plain JSON values
// (see the package comment).
func (e *Evaluator) Eval(ctx context.Context, src string, vars Vars) (any, error) {
	out, err := e.eval(ctx, src, vars)
	if err != nil {
		return nil, err
	}
	v, err := toJSON(out, 0)
	if err != nil {
		return nil, &Error{Expr: src, Reason: err.Error()}
	}
	// Checked on the converted value, which shares the strings of the
	// CEL value: a list of 200 references to one large string costs 200
	// headers here, and the walk stops as soon as the cap is passed.
	// The error wraps the *jsonvalue.Error, which tells the engine the
	// value itself is bad: running the expression again cannot help.
	if err := jsonvalue.Check(v, "value", jsonvalue.Limits{MaxBytes: e.maxOutput, What: "expression's value", Setting: e.outputSetting}); err != nil {
		return nil, &Error{Expr: src, Reason: err.Error(), err: err}
	}
	return v, nil
}

// EvalBool evaluates a condition; a value that is not a bool is an error
// naming its type.
func (e *Evaluator) EvalBool(ctx context.Context, src string, vars Vars) (bool, error) {
	out, err := e.eval(ctx, src, vars)
	if err != nil {
		return false, err
	}
	b, ok := out.(types.Bool)
	if !ok {
		return false, &Error{Expr: src, Reason: fmt.Sprintf("must evaluate to a bool, got %s", out.Type().TypeName())}
	}
	return bool(b), nil
}

func (e *Evaluator) eval(ctx context.Context, src string, vars Vars) (ref.Val, error) {
	en := e.compile(src)
	if en.err != nil {
		return nil, en.err
	}
	if ctx.Err() != nil {
		// Short expressions never reach an interrupt check, so a run that
		// is already cancelled would otherwise go on.
		return nil, &Error{Expr: src, Reason: "evaluation cancelled", err: ctx.Err()}
	}
	payload, err := normalize(vars.Payload)
	if err != nil {
		return nil, &Error{Expr: src, Reason: "payload: " + err.Error()}
	}
	execution := map[string]any{}
	if vars.Execution != nil {
		n, err := normalize(vars.Execution)
		if err != nil {
			return nil, &Error{Expr: src, Reason: "execution: " + err.Error()}
		}
		execution = n.(map[string]any)
	}
	now := vars.Now
	if now.IsZero() {
		now = time.Now()
	}
	tctx, cancel := context.WithTimeout(ctx, e.timeout)
	defer cancel()
	out, _, err := en.prg.ContextEval(tctx, map[string]any{"payload": payload, "execution": execution, "now": now.UTC()})
	if err != nil {
		return nil, e.runtimeError(ctx, src, err)
	}
	if types.IsUnknown(out) {
		// Cannot happen with every variable bound; guards the conversions.
		return nil, &Error{Expr: src, Reason: "evaluated to an unknown value"}
	}
	return out, nil
}

// runtimeError words an evaluation error. A cancellation by the caller
// (KILL, node timeout) wraps ctx.Err() so the engine can tell it from a
// fault of the expression.
func (e *Evaluator) runtimeError(ctx context.Context, src string, err error) error {
	var cancelled interpreter.EvalCancelledError
	switch {
	case ctx.Err() != nil:
		return &Error{Expr: src, Reason: "evaluation cancelled", err: ctx.Err()}
	case errors.As(err, &cancelled) && cancelled.Cause == interpreter.CostLimitExceeded:
		return &Error{Expr: src, Reason: fmt.Sprintf("stopped: exceeded the cost limit of %d operations; simplify the expression or reduce nested loops over large lists", e.costLimit)}
	case errors.As(err, &cancelled) || errors.Is(err, interpreter.InterruptError{}) || errors.Is(err, context.DeadlineExceeded):
		return &Error{Expr: src, Reason: fmt.Sprintf("stopped: took longer than the limit of %s", e.timeout)}
	}
	return &Error{Expr: src, Reason: withNumberHint(err.Error())}
}

// withNumberHint explains the one type error JSON numbers cause: CEL has no
// arithmetic between ints and doubles, and JSON integers are ints.
func withNumberHint(reason string) string {
	if reason == "no such overload" || strings.Contains(reason, "no matching overload") &&
		(strings.Contains(reason, "int, double") || strings.Contains(reason, "double, int") ||
			strings.Contains(reason, "uint, double") || strings.Contains(reason, "double, uint") ||
			strings.Contains(reason, "int, uint") || strings.Contains(reason, "uint, int")) {
		return reason + " (JSON integers are CEL ints and other numbers doubles, and arithmetic does not mix them: write double(payload.n) * 1.5, or an int literal such as payload.n * 2)"
	}
	return reason
}

// compile returns the cached compilation of src, compiling it at most once
// however many callers ask at the same time.
func (e *Evaluator) compile(src string) *entry {
	e.mu.RLock()
	en, ok := e.cache[src]
	e.mu.RUnlock()
	if ok {
		return en
	}
	v, _, _ := e.group.Do(src, func() (any, error) {
		en := e.build(src)
		e.mu.Lock()
		defer e.mu.Unlock()
		if len(e.cache) >= e.cacheSize {
			// Evict an arbitrary entry (map order is random): O(1), and an
			// expression still in use is simply compiled again.
			for k := range e.cache {
				delete(e.cache, k)
				break
			}
		}
		e.cache[src] = en
		return en, nil
	})
	return v.(*entry)
}

func (e *Evaluator) build(src string) *entry {
	ast, iss := e.env.Compile(src)
	if iss != nil && iss.Err() != nil {
		return &entry{err: compileError(src, iss.Errors())}
	}
	prg, err := e.env.Program(ast,
		celgo.CostLimit(e.costLimit),
		celgo.InterruptCheckFrequency(interruptEvery),
		celgo.EvalOptions(celgo.OptOptimize),
	)
	if err != nil {
		// Planning can fail where checking passed, such as a constant
		// regular expression that does not compile.
		return &entry{err: &Error{Expr: src, Reason: err.Error()}}
	}
	return &entry{prg: prg, output: ast.OutputType()}
}

func compileError(src string, errs []*celgo.Error) error {
	if len(errs) == 0 {
		return &Error{Expr: src, Reason: "invalid expression"}
	}
	first := errs[0]
	out := &Error{Expr: src, Line: first.Location.Line(), Column: first.Location.Column() + 1, Reason: withNumberHint(first.Message)}
	for _, more := range errs[1:] {
		out.Reason += fmt.Sprintf("; also at line %d, column %d: %s", more.Location.Line(), more.Location.Column()+1, more.Message)
	}
	// Every CEL field compiles here, so each says the same of a SpEL
	// condition (the engines reference's syntax): what CEL expects, and
	// the CEL form of what was written.
	if hint := spelHint(src); hint != "" {
		out.Reason = hint + " (the CEL parser said: " + out.Reason + ")"
	}
	return out
}

// Error is a compile or runtime error of one expression.
type Error struct {
	// Expr is the expression's source.
	Expr string
	// Line and Column (both from 1) locate a compile error; zero for
	// runtime errors.
	Line, Column int
	Reason       string
	err          error
}

// maxQuoted keeps a huge expression from flooding logs and API answers.
const maxQuoted = 256

// Error returns `CEL expression "<src>" at line L, column C: <reason>` for
// compile errors and `CEL expression "<src>": <reason>` otherwise.
func (e *Error) Error() string {
	src := e.Expr
	if len(src) > maxQuoted {
		cut := maxQuoted
		for cut > 0 && !utf8Start(src[cut]) {
			cut--
		}
		src = src[:cut] + "…"
	}
	if e.Line > 0 {
		return fmt.Sprintf("CEL expression %q at line %d, column %d: %s", src, e.Line, e.Column, e.Reason)
	}
	return fmt.Sprintf("CEL expression %q: %s", src, e.Reason)
}

// Unwrap returns the context error of a cancelled evaluation.
func (e *Error) Unwrap() error { return e.err }

func utf8Start(b byte) bool { return b&0xC0 != 0x80 }

// normalize returns v with every number as the CEL type of the package
// comment's rule (json.Number by jsonvalue.Number, Go integers as int64 or
// uint64, float32 as float64), copying only the maps and slices that change:
// payloads the engine built once per run are already converted, and copying
// them would cost every evaluation.
func normalize(v any) (any, error) {
	n, _, err := normalized(v)
	return n, err
}

func normalized(v any) (out any, changed bool, err error) {
	switch x := v.(type) {
	case json.Number:
		n, err := jsonvalue.Number(x)
		if err != nil {
			return nil, false, err
		}
		return n, true, nil
	case int:
		return int64(x), true, nil
	case int32:
		return int64(x), true, nil
	case uint:
		return uint64(x), true, nil
	case uint32:
		return uint64(x), true, nil
	case float32:
		return float64(x), true, nil
	case map[string]any:
		var copied map[string]any
		for k, e := range x {
			n, ch, err := normalized(e)
			if err != nil {
				return nil, false, err
			}
			if ch && copied == nil {
				copied = maps.Clone(x)
			}
			if ch {
				copied[k] = n
			}
		}
		if copied == nil {
			return x, false, nil
		}
		return copied, true, nil
	case []any:
		var copied []any
		for i, e := range x {
			n, ch, err := normalized(e)
			if err != nil {
				return nil, false, err
			}
			if ch && copied == nil {
				copied = slices.Clone(x)
			}
			if ch {
				copied[i] = n
			}
		}
		if copied == nil {
			return x, false, nil
		}
		return copied, true, nil
	}
	return v, false, nil
}
