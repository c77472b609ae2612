package cel_test

import (
	"context"
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/yukta/yukta/adapters/cel"
)

func evaluator(t testing.TB, opts ...cel.Option) *cel.Evaluator {
	t.Helper()
	ev, err := cel.New(opts...)
	if err != nil {
		t.Fatalf("New: got error %v, want nil", err)
	}
	return ev
}

// payload decodes JSON the way the engine does, numbers as json.Number.
func payload(t testing.TB, src string) any {
	t.Helper()
	dec := json.NewDecoder(strings.NewReader(src))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		t.Fatalf("test payload %s: %v", src, err)
	}
	return v
}

func TestEval(t *testing.T) {
	now := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	exec := map[string]any{"executionId": "ex-1", "input": map[string]any{"n": json.Number("3")}}
	tests := []struct {
		name, expr, payload string
		want                any
	}{
		{"json.Number compares with an int literal", `payload.amount > 100`, `{"amount": 150}`, true},
		{"a JSON integer is an int", `payload.amount + 1`, `{"amount": 1}`, int64(2)},
		{"a JSON fraction is a double", `payload.amount + 1.5`, `{"amount": 1.0}`, json.Number("2.5")},
		{"converted for mixed arithmetic", `double(payload.amount) * 1.5`, `{"amount": 3}`, json.Number("4.5")},
		{"an integral double keeps its fraction", `payload.amount * 2.0`, `{"amount": 21.0}`, json.Number("42.0")},
		{"2^53+1 stays exact", `payload.id + 0`, `{"id": 9007199254740993}`, int64(9007199254740993)},
		{"2^63+1 is a uint", `payload.id`, `{"id": 9223372036854775809}`, uint64(9223372036854775809)},
		{"uint arithmetic", `payload.id + 1u`, `{"id": 9223372036854775809}`, uint64(9223372036854775810)},
		{"beyond uint64 is a double", `payload.id`, `{"id": 18446744073709551616}`, json.Number("18446744073709552000.0")},
		{"int compares with a double", `payload.amount > 99.5`, `{"amount": 100}`, true},
		{"ints come back as int64", `size(payload.items)`, `{"items": [1, 2, 3]}`, int64(3)},
		{"object literal", `{"id": payload.id, "skus": payload.items.map(i, i.sku)}`, `{"id": "o-1", "items": [{"sku": "a"}, {"sku": "b"}]}`,
			map[string]any{"id": "o-1", "skus": []any{"a", "b"}}},
		{"optional member", `payload.?coupon.orValue("none")`, `{}`, "none"},
		{"null", `payload.x`, `{"x": null}`, nil},
		{"execution variable", `execution.executionId + ":" + string(int(execution.input.n))`, `{}`, "ex-1:3"},
		{"now is a UTC timestamp", `now.getHours()`, `{}`, int64(12)},
		{"timestamp becomes RFC 3339 text", `now`, `{}`, "2026-11-30T12:00:00Z"},
		{"strings extension", `"a,b".split(",")`, `{}`, []any{"a", "b"}},
		{"math extension", `math.greatest([1, 5, 3])`, `{}`, int64(5)},
		{"lists extension", `[3, 1, 2].sort()`, `{}`, []any{int64(1), int64(2), int64(3)}},
		{"encoders extension", `base64.encode(b"hi")`, `{}`, "aGk="},
		{"payload that is not an object", `payload * 2`, `21`, int64(42)},
	}
	ev := evaluator(t)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ev.Eval(context.Background(), tt.expr, cel.Vars{Payload: payload(t, tt.payload), Execution: exec, Now: now})
			if err != nil {
				t.Fatalf("Eval(%s): got error %v, want %v", tt.expr, err, tt.want)
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("Eval(%s): got %#v, want %#v", tt.expr, got, tt.want)
			}
		})
	}
}

func TestEvalDoesNotChangeThePayload(t *testing.T) {
	p := payload(t, `{"a": {"n": 1}, "list": [1, {"m": 2}], "s": "x"}`)
	before, _ := json.Marshal(p)
	if _, err := evaluator(t).Eval(context.Background(), `payload.a.n + payload.list[1].m`, cel.Vars{Payload: p}); err != nil {
		t.Fatalf("Eval: got error %v, want nil", err)
	}
	if n := p.(map[string]any)["a"].(map[string]any)["n"]; n != json.Number("1") {
		t.Errorf("payload.a.n after Eval: got %#v, want json.Number(\"1\") untouched", n)
	}
	after, _ := json.Marshal(p)
	if string(before) != string(after) {
		t.Errorf("payload after Eval: got %s, want %s", after, before)
	}
}

func TestEvalBool(t *testing.T) {
	ev := evaluator(t)
	ok, err := ev.EvalBool(context.Background(), `payload.amount >= 100`, cel.Vars{Payload: payload(t, `{"amount": 100}`)})
	if err != nil || !ok {
		t.Fatalf("EvalBool: got %v, %v; want true, nil", ok, err)
	}
	_, err = ev.EvalBool(context.Background(), `payload.amount`, cel.Vars{Payload: payload(t, `{"amount": 100}`)})
	if err == nil || !strings.Contains(err.Error(), "must evaluate to a bool, got int") || !strings.Contains(err.Error(), `"payload.amount"`) {
		t.Errorf("EvalBool of a number: got error %v, want one naming the expression and the type int", err)
	}
}

func TestCompileErrorHasLineAndColumn(t *testing.T) {
	err := evaluator(t).Compile("payload.a &&\n  payload.b ++ 1")
	var ce *cel.Error
	if !errors.As(err, &ce) {
		t.Fatalf("Compile: got %v, want a *cel.Error", err)
	}
	if ce.Line != 2 || ce.Column != 14 {
		t.Errorf("Compile error location: got line %d, column %d; want line 2, column 14", ce.Line, ce.Column)
	}
	want := `CEL expression "payload.a &&\n  payload.b ++ 1" at line 2, column 14: `
	if !strings.HasPrefix(err.Error(), want) {
		t.Errorf("Compile error: got %q, want it to start with %q", err, want)
	}
}

func TestCompileRefusesUnknownNames(t *testing.T) {
	err := evaluator(t).Compile(`event.kind == "x"`)
	if err == nil || !strings.Contains(err.Error(), "undeclared reference to 'event'") || !strings.Contains(err.Error(), "line 1, column 1") {
		t.Errorf("Compile: got %v, want an undeclared reference error at line 1, column 1", err)
	}
}

func TestCompileBool(t *testing.T) {
	ev := evaluator(t)
	for _, src := range []string{`payload.a`, `payload.n > 1`, `has(payload.x) && payload.x`} {
		if err := ev.CompileBool(src); err != nil {
			t.Errorf("CompileBool(%s): got %v, want nil", src, err)
		}
	}
	if err := ev.CompileBool(`size(payload.items) + 1`); err == nil || !strings.Contains(err.Error(), "must evaluate to a bool, but its type is int") {
		t.Errorf("CompileBool of an int expression: got %v, want a type error", err)
	}
}

func TestRuntimeErrorNamesTheExpression(t *testing.T) {
	_, err := evaluator(t).Eval(context.Background(), `payload.missing > 1`, cel.Vars{Payload: map[string]any{}})
	want := `CEL expression "payload.missing > 1": no such key: missing`
	if err == nil || err.Error() != want {
		t.Errorf("Eval: got error %v, want %q", err, want)
	}
}

func TestCostLimitStopsNestedLoops(t *testing.T) {
	items := make([]any, 2000)
	for i := range items {
		items[i] = float64(i)
	}
	// The time limit is raised so that only the cost limit can stop it.
	ev := evaluator(t, cel.WithTimeout(time.Minute))
	_, err := ev.Eval(context.Background(), `payload.items.all(x, payload.items.all(y, x + y >= 0.0))`, cel.Vars{Payload: map[string]any{"items": items}})
	if err == nil || !strings.Contains(err.Error(), "exceeded the cost limit of 1000000") {
		t.Errorf("Eval: got error %v, want the cost limit to stop it", err)
	}
}

func TestTimeLimitStopsSlowExpressions(t *testing.T) {
	items := make([]any, 3000)
	for i := range items {
		items[i] = float64(i)
	}
	ev := evaluator(t, cel.WithCostLimit(1<<62), cel.WithTimeout(5*time.Millisecond))
	start := time.Now()
	_, err := ev.Eval(context.Background(), `payload.items.all(x, payload.items.all(y, x + y >= 0.0))`, cel.Vars{Payload: map[string]any{"items": items}})
	if err == nil || !strings.Contains(err.Error(), "took longer than the limit of 5ms") {
		t.Errorf("Eval: got error %v, want the time limit to stop it", err)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("Eval stopped after %s, want promptly", d)
	}
}

func TestCancelledContextIsReported(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := evaluator(t).Eval(ctx, `[1, 2, 3].all(x, x > 0)`, cel.Vars{})
	if !errors.Is(err, context.Canceled) {
		t.Errorf("Eval with a cancelled context: got %v, want an error wrapping context.Canceled", err)
	}
}

func TestValuesJSONCannotCarryAreRefused(t *testing.T) {
	_, err := evaluator(t).Eval(context.Background(), `{"x": 1.0 / 0.0}`, cel.Vars{})
	if err == nil || !strings.Contains(err.Error(), "JSON cannot represent") {
		t.Errorf("Eval of an infinity: got %v, want a refusal", err)
	}
}

func TestConcurrentEvaluationsShareOneCompilation(t *testing.T) {
	ev := evaluator(t, cel.WithCacheSize(2))
	var wg sync.WaitGroup
	for i := range 32 {
		wg.Go(func() {
			src := []string{`payload.n + 1.0`, `payload.n * 2.0`, `payload.n - 1.0`}[i%3]
			if _, err := ev.Eval(context.Background(), src, cel.Vars{Payload: map[string]any{"n": 1.0}}); err != nil {
				t.Errorf("Eval(%s): got %v, want nil", src, err)
			}
		})
	}
	wg.Wait()
}

func TestLongExpressionsAreTruncatedInErrors(t *testing.T) {
	src := "payload.x + " + strings.Repeat("1 + ", 200) + ")"
	err := evaluator(t).Compile(src)
	if err == nil || len(err.Error()) > 2000 || !strings.Contains(err.Error(), "…") {
		t.Errorf("Compile of a long bad expression: got %v, want a short error with the source truncated", err)
	}
}

func BenchmarkEvalCached(b *testing.B) {
	ev := evaluator(b)
	vars := cel.Vars{Payload: payload(b, `{"amount": 150, "country": "FR", "items": [{"sku": "a"}, {"sku": "b"}]}`)}
	src := `payload.amount > 100 && payload.country == "FR" && size(payload.items) > 1`
	ctx := context.Background()
	for b.Loop() {
		if ok, err := ev.EvalBool(ctx, src, vars); err != nil || !ok {
			b.Fatalf("EvalBool: got %v, %v; want true, nil", ok, err)
		}
	}
}

func FuzzCompile(f *testing.F) {
	for _, s := range []string{
		`payload.amount > 100`,
		`{"id": payload.id, "n": size(payload.items)}`,
		`payload.?coupon.orValue("")`,
		`payload.items.map(i, i.sku).filter(s, s.startsWith("A"))`,
		`"%s-%s".format([execution.executionId, payload.country])`,
		`now - duration("1h") > timestamp(execution.startedAt)`,
		`((((((((((1))))))))))`,
		`payload.a &&`,
		`"unterminated`,
		`[1, 2, 3].all(x, x > 0) ? 1 : 2`,
		"\x00\xff",
		``,
	} {
		f.Add(s)
	}
	ev, err := cel.New()
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, src string) {
		err := ev.Compile(src)
		if err == nil {
			// A valid expression must also evaluate without panicking,
			// within the limits, whatever it computes.
			_, _ = ev.Eval(context.Background(), src, cel.Vars{Payload: map[string]any{"a": 1.0, "items": []any{"x"}}})
			return
		}
		if !strings.HasPrefix(err.Error(), "CEL expression ") {
			t.Errorf("Compile(%q): got error %q, want one starting with \"CEL expression \"", src, err)
		}
	})
}

func TestGoIntegersAreInts(t *testing.T) {
	got, err := evaluator(t).Eval(context.Background(), `payload.n + payload.m + 1`, cel.Vars{Payload: map[string]any{"n": 2, "m": int64(3), "u": uint(4)}})
	if err != nil || got != int64(6) {
		t.Errorf("Eval: got %#v, %v; want int64(6), nil", got, err)
	}
}

func TestMixedArithmeticErrorSaysHow(t *testing.T) {
	_, err := evaluator(t).Eval(context.Background(), `payload.n * 1.5`, cel.Vars{Payload: payload(t, `{"n": 2}`)})
	if err == nil || !strings.Contains(err.Error(), "double(payload.n)") {
		t.Errorf("Eval(int * double): got %v, want an error showing the conversion", err)
	}
}

// TestOutputCap: a value over the cap is refused before anything is encoded,
// however large it would be (200 references to one 500 KB string is 100 MB
// as JSON).
func TestOutputCap(t *testing.T) {
	ev := evaluator(t, cel.WithMaxOutput(1<<20, "YUKTA_MAX_MESSAGE_BYTES"))
	l := make([]any, 200)
	p := map[string]any{"l": l, "s": strings.Repeat("x", 500_000)}
	_, err := ev.Eval(context.Background(), `payload.l.map(a, payload.s)`, cel.Vars{Payload: p})
	if err == nil || !strings.Contains(err.Error(), "larger than the limit of 1 MiB") || !strings.Contains(err.Error(), "YUKTA_MAX_MESSAGE_BYTES") {
		t.Fatalf("got %v, want the limit named", err)
	}
	if _, err := ev.Eval(context.Background(), `payload.l.map(a, 1)`, cel.Vars{Payload: p}); err != nil {
		t.Errorf("a small value: %v", err)
	}
}
