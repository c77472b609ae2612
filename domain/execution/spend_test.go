package execution_test

import (
	"bytes"
	"encoding/json"
	"math"
	"math/rand/v2"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/yukta/yukta/domain/execution"
	"github.com/yukta/yukta/domain/fault"
)

// decode reads JSON the way a strict body reader hands it over: numbers as
// json.Number.
func decode(t testing.TB, s string) any {
	t.Helper()
	dec := json.NewDecoder(strings.NewReader(s))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		t.Fatalf("decode %s: %v", s, err)
	}
	return v
}

func ptr(n int64) *int64 { return &n }

func paths(v []fault.Violation) []string {
	out := make([]string, len(v))
	for i, x := range v {
		out[i] = x.Path
	}
	return out
}

func TestParseUsage(t *testing.T) {
	u, bad := execution.ParseUsage(decode(t, `{"input":1200,"output":3.4e2,"cacheRead":100,"reasoning":0,"tokensKnown":true}`))
	if len(bad) != 0 {
		t.Fatalf("violations: %v", bad)
	}
	want := execution.Usage{Input: 1200, Output: 340, CacheRead: ptr(100), Reasoning: ptr(0), TokensKnown: true}
	if !reflect.DeepEqual(*u, want) {
		t.Fatalf("usage = %+v, want %+v", *u, want)
	}
	if u, bad := execution.ParseUsage(nil); u != nil || bad != nil {
		t.Fatalf("absent usage = %v, %v; want nil, nil", u, bad)
	}

	for _, tc := range []struct {
		body  string
		paths []string
		says  string
	}{
		{`[]`, []string{"usage"}, "must be an object"},
		{`{}`, []string{"usage.input", "usage.output", "usage.tokensKnown"}, "is required"},
		{`{"input":-1,"output":1,"tokensKnown":true}`, []string{"usage.input"}, "from 0 to 1000000000000"},
		{`{"input":1.5,"output":1,"tokensKnown":true}`, []string{"usage.input"}, "whole number"},
		{`{"input":"12","output":1,"tokensKnown":true}`, []string{"usage.input"}, "whole number"},
		{`{"input":1e13,"output":1,"tokensKnown":true}`, []string{"usage.input"}, "from 0 to"},
		{`{"input":1,"output":1,"cacheWrite":null,"tokensKnown":true}`, []string{"usage.cacheWrite"}, "leave it out"},
		{`{"input":1,"output":1,"tokensKnown":"yes"}`, []string{"usage.tokensKnown"}, "must be a boolean"},
		{`{"input":1,"output":1,"tokensKnown":true,"total":2}`, []string{"usage.total"}, "the members are input, output"},
	} {
		u, bad := execution.ParseUsage(decode(t, tc.body))
		if u != nil || !slices.Equal(paths(bad), tc.paths) || !strings.Contains(bad[0].Message, tc.says) {
			t.Errorf("ParseUsage(%s) = %v, %v; want paths %v saying %q", tc.body, u, bad, tc.paths, tc.says)
		}
	}
}

func TestParseCost(t *testing.T) {
	c, bad := execution.ParseCost(decode(t, `{"usd":0.0125,"usdKnown":true,"provenance":"reported"}`))
	if len(bad) != 0 || *c != (execution.Cost{USD: 0.0125, USDKnown: true, Provenance: execution.ProvenanceReported}) {
		t.Fatalf("cost = %+v, %v", c, bad)
	}
	if c, bad := execution.ParseCost(decode(t, `{"usd":-0,"usdKnown":false,"provenance":"unknown"}`)); len(bad) != 0 || c.USD != 0 {
		t.Fatalf("cost -0 = %+v, %v", c, bad)
	} else if b, _ := json.Marshal(c.ToData()); !bytes.Contains(b, []byte(`"usd":0`)) {
		t.Fatalf("-0 is stored as %s", b)
	}
	for _, tc := range []struct {
		body  string
		paths []string
		says  string
	}{
		{`"1 dollar"`, []string{"cost"}, "must be an object"},
		{`{}`, []string{"cost.provenance", "cost.usd", "cost.usdKnown"}, "must be one of reported, estimated, partial, unknown"},
		{`{"usd":-0.01,"usdKnown":true,"provenance":"reported"}`, []string{"cost.usd"}, "from 0 to 1000000"},
		{`{"usd":1e400,"usdKnown":true,"provenance":"reported"}`, []string{"cost.usd"}, "from 0 to"},
		{`{"usd":2000000,"usdKnown":true,"provenance":"reported"}`, []string{"cost.usd"}, "from 0 to"},
		{`{"usd":1,"usdKnown":true,"provenance":"guessed"}`, []string{"cost.provenance"}, "must be one of"},
		{`{"usd":1,"usdKnown":true,"provenance":"unknown"}`, []string{"cost.usdKnown"}, "must be false when provenance is unknown"},
		{`{"usd":1,"usdKnown":true,"provenance":"reported","currency":"EUR"}`, []string{"cost.currency"}, "the members are usd, usdKnown, provenance"},
	} {
		c, bad := execution.ParseCost(decode(t, tc.body))
		if c != nil || !slices.Equal(paths(bad), tc.paths) || !strings.Contains(bad[0].Message, tc.says) {
			t.Errorf("ParseCost(%s) = %v, %v; want paths %v saying %q", tc.body, c, bad, tc.paths, tc.says)
		}
	}
}

// TestSpendDataRoundTrip: what ToData stores reads back as the same report,
// through JSON as the outbox and the journal hold it.
func TestSpendDataRoundTrip(t *testing.T) {
	u := execution.Usage{Input: 10, Output: 20, CacheWrite: ptr(5), TokensKnown: false}
	c := execution.Cost{USD: 0.1, USDKnown: false, Provenance: execution.ProvenancePartial}
	data := map[string]any{"itemId": "7", "attempt": 1, "port": "output", "usage": u.ToData(), "cost": c.ToData()}
	raw, err := json.Marshal(data)
	if err != nil {
		t.Fatal(err)
	}
	r := execution.SpendReportFromEventData("llm", decode(t, string(raw)).(map[string]any))
	if r.NodeID != "llm" || !reflect.DeepEqual(*r.Usage, u) || *r.Cost != c {
		t.Fatalf("read back %+v / %+v / %+v", r, r.Usage, r.Cost)
	}
	if got := string(mustJSON(t, u.ToData())); got != `{"cacheWrite":5,"input":10,"output":20,"tokensKnown":false}` {
		t.Fatalf("usage data = %s", got)
	}
	if got := string(mustJSON(t, c.ToData())); got != `{"provenance":"partial","usd":0.1,"usdKnown":false}` {
		t.Fatalf("cost data = %s", got)
	}
	// A member the server cannot read is absent, not zero.
	r = execution.SpendReportFromEventData("llm", map[string]any{"usage": map[string]any{"input": "x"}, "cost": 3})
	if r.Usage != nil || r.Cost != nil {
		t.Fatalf("unreadable members read as %+v", r)
	}
}

func mustJSON(t testing.TB, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestFoldSpend: the run: two nodes report usage and cost, one
// reports nothing. The silent node is a gap, never a zero, and the total
// says it is partial.
func TestFoldSpend(t *testing.T) {
	reported := func(node string, in, out int64, usd float64) execution.SpendReport {
		return execution.SpendReport{NodeID: node, Usage: &execution.Usage{Input: in, Output: out, CacheRead: ptr(in / 10), TokensKnown: true},
			Cost: &execution.Cost{USD: usd, USDKnown: true, Provenance: execution.ProvenanceReported}}
	}
	s := execution.FoldSpend([]execution.SpendReport{
		reported("a", 100, 10, 0.1), reported("a", 200, 20, 0.2), reported("b", 50, 5, 0.05), {NodeID: "c"},
	})
	a := s.Nodes["a"]
	if a.Tasks != 2 || a.UsageReports != 2 || a.CostReports != 2 || !a.UsageKnown || !a.CostKnown ||
		!reflect.DeepEqual(*a.Usage, execution.Usage{Input: 300, Output: 30, CacheRead: ptr(30), TokensKnown: true}) ||
		*a.Cost != (execution.Cost{USD: 0.3, USDKnown: true, Provenance: execution.ProvenanceReported}) {
		t.Fatalf("node a = %+v usage %+v cost %+v", a, a.Usage, a.Cost)
	}
	c := s.Nodes["c"]
	if c.Tasks != 1 || c.UsageReports != 0 || c.Usage != nil || c.Cost != nil || c.UsageKnown || c.CostKnown {
		t.Fatalf("node c (no report) = %+v", c)
	}
	tot := s.Total
	if tot.Tasks != 4 || tot.UsageReports != 3 || tot.Usage.Input != 350 || tot.Usage.Output != 35 || tot.UsageKnown || tot.CostKnown ||
		tot.Cost.USD != 0.35 || !tot.Usage.TokensKnown {
		t.Fatalf("total = %+v usage %+v cost %+v", tot, tot.Usage, tot.Cost)
	}
	if !slices.Equal(s.SpendGaps, []string{"c"}) || !slices.Equal(s.CostGaps, []string{"c"}) {
		t.Fatalf("gaps = %v / %v", s.SpendGaps, s.CostGaps)
	}
	b := mustJSON(t, s)
	for _, want := range []string{`"spendGaps":["c"]`, `"c":{"tasks":1,"usageReports":0,"costReports":0,"usageKnown":false,"costKnown":false}`} {
		if !bytes.Contains(b, []byte(want)) {
			t.Errorf("spend JSON %s lacks %s", b, want)
		}
	}

	empty := execution.FoldSpend(nil)
	if len(empty.Nodes) != 0 || empty.SpendGaps == nil || len(empty.SpendGaps) != 0 || empty.CostGaps == nil ||
		!empty.Total.UsageKnown || !empty.Total.CostKnown || empty.Total.Usage != nil || empty.Total.Cost != nil {
		t.Fatalf("empty spend = %+v", empty)
	}
}

// TestFoldSpendSumsDecimals: dollars add as the decimals workers wrote, so
// ten 0.1s make 1 and 0.1 + 0.2 makes 0.3; tiny and large figures keep their
// size, and a sum is rounded once.
func TestFoldSpendSumsDecimals(t *testing.T) {
	sum := func(usd ...float64) float64 {
		var rs []execution.SpendReport
		for _, u := range usd {
			rs = append(rs, execution.SpendReport{NodeID: "n", Cost: &execution.Cost{USD: u, USDKnown: true, Provenance: execution.ProvenanceReported}})
		}
		return execution.FoldSpend(rs).Total.Cost.USD
	}
	for _, tc := range []struct {
		usd  []float64
		want float64
	}{
		{[]float64{0.1, 0.2}, 0.3},
		{[]float64{0.1, 0.1, 0.1, 0.1, 0.1, 0.1, 0.1, 0.1, 0.1, 0.1}, 1},
		{[]float64{1e6, 1e-9}, 1000000.000000001},
		{[]float64{5e-324, 5e-324}, 1e-323},
		{[]float64{0, 0}, 0},
		{[]float64{123.456, 0.000544}, 123.456544},
		{[]float64{1.5e-7, 2.5e-7, 1e3}, 1000.0000004},
	} {
		if got := sum(tc.usd...); got != tc.want {
			t.Errorf("sum of %v = %v, want %v", tc.usd, got, tc.want)
		}
	}
}

func TestFoldSpendGapsAndProvenance(t *testing.T) {
	s := execution.FoldSpend([]execution.SpendReport{
		// tokensKnown false: counted, and still a gap.
		{NodeID: "floor", Usage: &execution.Usage{Input: 5, Output: 5, TokensKnown: false},
			Cost: &execution.Cost{USD: 1, USDKnown: true, Provenance: execution.ProvenanceReported}},
		// usage without cost: a cost gap only.
		{NodeID: "tokens-only", Usage: &execution.Usage{Input: 1, Output: 1, TokensKnown: true}},
		{NodeID: "mixed", Usage: &execution.Usage{Input: 1, Output: 1, TokensKnown: true},
			Cost: &execution.Cost{USD: 1, USDKnown: true, Provenance: execution.ProvenanceReported}},
		{NodeID: "mixed", Usage: &execution.Usage{Input: 1, Output: 1, TokensKnown: true},
			Cost: &execution.Cost{USD: 2, USDKnown: true, Provenance: execution.ProvenanceEstimated}},
	})
	if !slices.Equal(s.SpendGaps, []string{"floor"}) || !slices.Equal(s.CostGaps, []string{"tokens-only"}) {
		t.Fatalf("gaps = %v / %v", s.SpendGaps, s.CostGaps)
	}
	if f := s.Nodes["floor"]; f.Usage == nil || f.Usage.Input != 5 || f.Usage.TokensKnown || f.UsageKnown {
		t.Fatalf("floor = %+v %+v", f, f.Usage)
	}
	if m := s.Nodes["mixed"]; m.Cost.Provenance != execution.ProvenancePartial || m.Cost.USD != 3 || !m.CostKnown {
		t.Fatalf("mixed = %+v %+v", m, m.Cost)
	}
	if tc := s.Total.Cost; tc.Provenance != execution.ProvenancePartial || tc.USD != 4 {
		t.Fatalf("total cost = %+v", tc)
	}
	if s.Total.Usage.TokensKnown || s.Total.UsageKnown || s.Total.CostKnown {
		t.Fatalf("total = %+v %+v", s.Total, s.Total.Usage)
	}
}

// TestFoldSpendProperties: over random reports, the fold does not depend on
// their order; a node is a spend gap exactly when one of its tasks reported
// no usage or tokensKnown false; each sum is the sum of what was reported
// (a class only over the reports that carried it); the total's tasks are the
// nodes' tasks added up; and the sums never go past MaxTokenSum.
func TestFoldSpendProperties(t *testing.T) {
	rng := rand.New(rand.NewPCG(23, 1))
	provs := execution.Provenances
	for round := range 300 {
		n := rng.IntN(30)
		reports := make([]execution.SpendReport, n)
		for i := range reports {
			r := execution.SpendReport{NodeID: string(rune('a' + rng.IntN(5)))}
			if rng.IntN(4) > 0 {
				u := &execution.Usage{Input: rng.Int64N(execution.MaxReportTokens + 1), Output: rng.Int64N(1000), TokensKnown: rng.IntN(5) > 0}
				if rng.IntN(2) == 0 {
					u.CacheRead = ptr(rng.Int64N(1000))
				}
				r.Usage = u
			}
			if rng.IntN(4) > 0 {
				p := provs[rng.IntN(len(provs))]
				r.Cost = &execution.Cost{USD: float64(rng.IntN(1_000_000)) / 1e4, USDKnown: p != execution.ProvenanceUnknown && rng.IntN(5) > 0, Provenance: p}
			}
			reports[i] = r
		}
		got := execution.FoldSpend(reports)
		shuffled := slices.Clone(reports)
		rng.Shuffle(len(shuffled), func(i, j int) { shuffled[i], shuffled[j] = shuffled[j], shuffled[i] })
		if again := execution.FoldSpend(shuffled); !reflect.DeepEqual(got, again) {
			t.Fatalf("round %d: the fold depends on order:\n%+v\n%+v", round, got, again)
		}
		var tasks int64
		for id, ns := range got.Nodes {
			tasks += ns.Tasks
			var mine []execution.SpendReport
			for _, r := range reports {
				if r.NodeID == id {
					mine = append(mine, r)
				}
			}
			gap, input, cacheRead, cacheSeen := false, int64(0), int64(0), false
			var tenThousandths int64 // the costs are whole ten-thousandths of a dollar
			for _, r := range mine {
				if r.Cost != nil {
					tenThousandths += int64(math.Round(r.Cost.USD * 1e4))
				}
				if r.Usage == nil || !r.Usage.TokensKnown {
					gap = true
				}
				if r.Usage != nil {
					input = min(input+r.Usage.Input, execution.MaxTokenSum)
					if r.Usage.CacheRead != nil {
						cacheRead, cacheSeen = cacheRead+*r.Usage.CacheRead, true
					}
				}
			}
			if gap != slices.Contains(got.SpendGaps, id) || gap == ns.UsageKnown || ns.Tasks != int64(len(mine)) {
				t.Fatalf("round %d node %s: gap %v, spend %+v, gaps %v", round, id, gap, ns, got.SpendGaps)
			}
			if ns.Cost != nil && ns.Cost.USD != float64(tenThousandths)/1e4 {
				t.Fatalf("round %d node %s: usd %v, want exactly %d/10^4", round, id, ns.Cost.USD, tenThousandths)
			}
			if ns.Usage != nil && (ns.Usage.Input != input || (ns.Usage.CacheRead != nil) != cacheSeen ||
				cacheSeen && *ns.Usage.CacheRead != cacheRead || ns.Usage.Input > execution.MaxTokenSum) {
				t.Fatalf("round %d node %s: usage %+v, want input %d cacheRead %d (%v)", round, id, ns.Usage, input, cacheRead, cacheSeen)
			}
		}
		if tasks != got.Total.Tasks || got.Total.UsageKnown != (len(got.SpendGaps) == 0) || got.Total.CostKnown != (len(got.CostGaps) == 0) {
			t.Fatalf("round %d: total %+v over %d tasks, gaps %v / %v", round, got.Total, tasks, got.SpendGaps, got.CostGaps)
		}
	}
}

// FuzzParseSpend decodes fuzzed bytes as a usage and as a cost: neither
// parser panics; a refusal names paths under usage or cost; an accepted
// report is within the bounds and reads back the same through ToData.
func FuzzParseSpend(f *testing.F) {
	for _, seed := range []string{
		`{"input":1,"output":2,"tokensKnown":true}`,
		`{"input":1,"output":2,"cacheRead":3,"cacheWrite":4,"reasoning":5,"tokensKnown":false}`,
		`{"input":-1,"output":1e300,"tokensKnown":1}`,
		`{"usd":0.5,"usdKnown":true,"provenance":"reported"}`,
		`{"usd":1e-320,"usdKnown":false,"provenance":"unknown"}`,
		`{"usd":"1","usdKnown":null,"provenance":"x","extra":{}}`,
		`null`, `[]`, `7`, `{}`,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		dec := json.NewDecoder(bytes.NewReader(b))
		dec.UseNumber()
		var v any
		if dec.Decode(&v) != nil {
			return
		}
		u, bad := execution.ParseUsage(v)
		check := func(what string, bad []fault.Violation) {
			for _, x := range bad {
				if x.Path != what && !strings.HasPrefix(x.Path, what+".") || x.Message == "" {
					t.Fatalf("%s violation %+v", what, x)
				}
			}
		}
		check("usage", bad)
		if u != nil {
			for _, n := range []*int64{&u.Input, &u.Output, u.CacheRead, u.CacheWrite, u.Reasoning} {
				if n != nil && (*n < 0 || *n > execution.MaxReportTokens) {
					t.Fatalf("usage out of bounds: %+v", u)
				}
			}
			back, bad := execution.ParseUsage(decode(t, string(mustJSON(t, u.ToData()))))
			if len(bad) != 0 || !reflect.DeepEqual(back, u) {
				t.Fatalf("usage %+v read back as %+v, %v", u, back, bad)
			}
		} else if v != nil && len(bad) == 0 {
			t.Fatalf("usage refused without a violation")
		}
		c, bad := execution.ParseCost(v)
		check("cost", bad)
		if c != nil {
			if c.USD < 0 || c.USD > execution.MaxReportUSD || !c.Provenance.Valid() || c.Provenance == execution.ProvenanceUnknown && c.USDKnown {
				t.Fatalf("cost out of bounds: %+v", c)
			}
			back, bad := execution.ParseCost(decode(t, string(mustJSON(t, c.ToData()))))
			if len(bad) != 0 || *back != *c {
				t.Fatalf("cost %+v read back as %+v, %v", c, back, bad)
			}
		} else if v != nil && len(bad) == 0 {
			t.Fatalf("cost refused without a violation")
		}
	})
}

// BenchmarkFoldSpend folds 1,000 reports over 5 nodes, each with usage and
// cost: the domain's share of one execution read of such a run.
func BenchmarkFoldSpend(b *testing.B) {
	reports := make([]execution.SpendReport, 1000)
	for i := range reports {
		reports[i] = execution.SpendReport{NodeID: string(rune('a' + i%5)),
			Usage: &execution.Usage{Input: int64(1000 + i), Output: 100, CacheRead: ptr(10), TokensKnown: true},
			Cost:  &execution.Cost{USD: float64(i%97) / 1e4, USDKnown: true, Provenance: execution.ProvenanceReported}}
	}
	for b.Loop() {
		execution.FoldSpend(reports)
	}
}
