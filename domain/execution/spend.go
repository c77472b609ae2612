package execution

import (
	"encoding/json"
	"fmt"
	"math"
	"math/big"
	"slices"
	"strconv"
	"strings"

	"github.com/yukta/yukta/domain/fault"
)

// Spend with provenance (issue 23): a remote worker that completes a TASK may
// report the tokens its work used (Usage) and what it cost (Cost). Each
// report is stored with the task's TaskCompleted event, and every reader
// (the execution read over REST and MCP, the journal projection) folds those
// events with FoldSpend, so they agree.
//
// Absent is not zero. A task that reported no usage, or usage with
// tokensKnown false, did work nobody counted: its node's sums are a floor,
// the node is named in the run's SpendGaps, and the run total says it is
// partial (UsageKnown false). Nothing here turns a missing report or a
// missing token class into a 0, because a made-up zero cannot be told from
// free work.

// EventTaskCompleted is the type of the outbox event each completed TASK
// appends; its data carries the report ("usage", "cost": ToData's forms).
const EventTaskCompleted = "TaskCompleted"

// The bounds of one report, declared once.
const (
	// MaxReportTokens is the most tokens of one class one report may carry
	// (10^12: far beyond any model call, small enough that sums stay exact
	// in every JSON reader for millions of tasks).
	MaxReportTokens = 1_000_000_000_000
	// MaxReportUSD is the largest usd one report may carry.
	MaxReportUSD = 1_000_000
	// MaxTokenSum is where a token sum stops growing (2^53-1, the largest
	// integer every JSON reader holds exactly). Reaching it takes millions
	// of reports at MaxReportTokens.
	MaxTokenSum = 1<<53 - 1
)

// CostProvenance says where a dollar figure came from, which decides
// whether it may be compared or summed.
type CostProvenance string

// The provenances (the observer-journal reference's PursuitCostProvenance).
const (
	// ProvenanceReported: a provider billed all of it.
	ProvenanceReported CostProvenance = "reported"
	// ProvenanceEstimated: a model catalog priced all of it.
	ProvenanceEstimated CostProvenance = "estimated"
	// ProvenancePartial: a provider billed part and a catalog priced the rest.
	ProvenancePartial CostProvenance = "partial"
	// ProvenanceUnknown: nothing priced it, so usd is a floor, never the
	// cost; a report with it has usdKnown false.
	ProvenanceUnknown CostProvenance = "unknown"
)

// Provenances lists the provenances a report may name, in the order the
// messages show them.
var Provenances = []CostProvenance{ProvenanceReported, ProvenanceEstimated, ProvenancePartial, ProvenanceUnknown}

// Valid reports whether p is one of Provenances.
func (p CostProvenance) Valid() bool { return slices.Contains(Provenances, p) }

// rank orders provenances for combining: reported and estimated are both
// 0 (they combine to partial), partial 1, unknown 2.
func (p CostProvenance) rank() int {
	switch p {
	case ProvenancePartial:
		return 1
	case ProvenanceUnknown:
		return 2
	}
	return 0
}

// combine is the provenance of a sum of a and b: the same provenance when
// they agree, unknown when either is unknown, otherwise partial (some was
// billed, some priced by a catalog). It is commutative and associative, so a
// sum's provenance does not depend on the order of its reports.
func combine(a, b CostProvenance) CostProvenance {
	switch {
	case a == b:
		return a
	case a.rank() == 2 || b.rank() == 2:
		return ProvenanceUnknown
	}
	return ProvenancePartial
}

// Usage is the tokens one task's work used, by class. Input and output are
// required; the cache and reasoning classes are nil when the worker did not
// report them (absent, not zero). TokensKnown false says work happened whose
// tokens nobody reported, so the counts are a floor.
//
// As a sum (NodeSpend.Usage) input and output add over the reports; a class
// adds over the reports that carried it and is absent when none did;
// TokensKnown is true when every report summed had it true.
type Usage struct {
	Input       int64  `json:"input"`
	Output      int64  `json:"output"`
	CacheRead   *int64 `json:"cacheRead,omitempty"`
	CacheWrite  *int64 `json:"cacheWrite,omitempty"`
	Reasoning   *int64 `json:"reasoning,omitempty"`
	TokensKnown bool   `json:"tokensKnown"`
}

// Cost is the dollars one task's work cost and where the figure came from.
// USDKnown false says some of the work is not priced, so USD is a floor.
//
// As a sum (NodeSpend.Cost) USD adds exactly over the reports as decimals
// (0.1 + 0.2 is 0.3; one rounding, at the end, whatever their order), USDKnown is true when every report
// summed had it true, and Provenance combines: the same when all agree,
// unknown when any is unknown, partial otherwise.
type Cost struct {
	USD        float64        `json:"usd"`
	USDKnown   bool           `json:"usdKnown"`
	Provenance CostProvenance `json:"provenance"`
}

var (
	usageMembers = []string{"input", "output", "cacheRead", "cacheWrite", "reasoning", "tokensKnown"}
	costMembers  = []string{"usd", "usdKnown", "provenance"}
)

// ParseUsage reads the "usage" member of a worker's answer, a decoded JSON
// value (objects as map[string]any, numbers as json.Number). nil (the member
// absent or null) is no report: nil and no violation. Otherwise every
// violation is returned at once, each with its path ("usage.input"): input
// and output required, every class a whole number from 0 to
// MaxReportTokens, tokensKnown a required boolean, no other member.
func ParseUsage(v any) (*Usage, []fault.Violation) {
	if v == nil {
		return nil, nil
	}
	m, ok := v.(map[string]any)
	if !ok {
		return nil, []fault.Violation{{Path: "usage", Message: "must be an object {input, output, cacheRead?, cacheWrite?, reasoning?, tokensKnown}, or absent when the work reported no usage"}}
	}
	var bad []fault.Violation
	bad = append(bad, unknownMembers("usage", m, usageMembers)...)
	var u Usage
	tokens := func(name string, required bool) *int64 {
		raw, present := m[name]
		if !present {
			if required {
				bad = append(bad, fault.Violation{Path: "usage." + name,
					Message: fmt.Sprintf("is required: a whole number of tokens from 0 to %d", MaxReportTokens)})
			}
			return nil
		}
		n, ok := wholeNumber(raw)
		if !ok || n < 0 || n > MaxReportTokens {
			bad = append(bad, fault.Violation{Path: "usage." + name,
				Message: fmt.Sprintf("must be a whole number of tokens from 0 to %d; leave it out when the provider did not report it", MaxReportTokens)})
			return nil
		}
		return &n
	}
	if n := tokens("input", true); n != nil {
		u.Input = *n
	}
	if n := tokens("output", true); n != nil {
		u.Output = *n
	}
	u.CacheRead, u.CacheWrite, u.Reasoning = tokens("cacheRead", false), tokens("cacheWrite", false), tokens("reasoning", false)
	u.TokensKnown = boolean(m, "usage", "tokensKnown",
		"true when every token of the work is counted here, false when some work's tokens were not reported", &bad)
	if len(bad) > 0 {
		return nil, sortedViolations(bad)
	}
	return &u, nil
}

// ParseCost reads the "cost" member of a worker's answer, as ParseUsage
// reads "usage": usd a number from 0 to MaxReportUSD, usdKnown a required
// boolean, provenance one of Provenances (usdKnown false when it is
// unknown), no other member.
func ParseCost(v any) (*Cost, []fault.Violation) {
	if v == nil {
		return nil, nil
	}
	m, ok := v.(map[string]any)
	if !ok {
		return nil, []fault.Violation{{Path: "cost", Message: "must be an object {usd, usdKnown, provenance}, or absent when the work reported no cost"}}
	}
	var bad []fault.Violation
	bad = append(bad, unknownMembers("cost", m, costMembers)...)
	var c Cost
	if raw, present := m["usd"]; !present {
		bad = append(bad, fault.Violation{Path: "cost.usd", Message: fmt.Sprintf("is required: the dollars the work cost, from 0 to %d", MaxReportUSD)})
	} else if f, ok := number(raw); !ok || f < 0 || f > MaxReportUSD {
		bad = append(bad, fault.Violation{Path: "cost.usd", Message: fmt.Sprintf("must be a number of dollars from 0 to %d", MaxReportUSD)})
	} else {
		c.USD = f + 0 // -0 is 0
	}
	c.USDKnown = boolean(m, "cost", "usdKnown", "true when all of the work is priced in usd, false when usd is a floor", &bad)
	allowed := make([]string, len(Provenances))
	for i, p := range Provenances {
		allowed[i] = string(p)
	}
	if s, ok := m["provenance"].(string); !ok || !CostProvenance(s).Valid() {
		bad = append(bad, fault.Violation{Path: "cost.provenance", Message: "must be one of " + strings.Join(allowed, ", ") +
			" (reported: a provider billed all of it; estimated: a model catalog priced all of it; partial: some of each; unknown: nothing priced it)"})
	} else {
		c.Provenance = CostProvenance(s)
		if c.Provenance == ProvenanceUnknown && c.USDKnown {
			bad = append(bad, fault.Violation{Path: "cost.usdKnown", Message: "must be false when provenance is unknown: nothing priced the work, so usd is a floor"})
		}
	}
	if len(bad) > 0 {
		return nil, sortedViolations(bad)
	}
	return &c, nil
}

// ToData is the usage as stored in a TaskCompleted event: input, output,
// tokensKnown, and the classes that were reported.
func (u Usage) ToData() map[string]any {
	d := map[string]any{"input": u.Input, "output": u.Output, "tokensKnown": u.TokensKnown}
	for name, p := range map[string]*int64{"cacheRead": u.CacheRead, "cacheWrite": u.CacheWrite, "reasoning": u.Reasoning} {
		if p != nil {
			d[name] = *p
		}
	}
	return d
}

// ToData is the cost as stored in a TaskCompleted event.
func (c Cost) ToData() map[string]any {
	return map[string]any{"usd": c.USD, "usdKnown": c.USDKnown, "provenance": string(c.Provenance)}
}

// SpendReport is what one completed task reported: its node, and its usage
// and cost, each nil when the task reported none.
type SpendReport struct {
	NodeID string
	Usage  *Usage
	Cost   *Cost
}

// SpendReportFromEventData reads a TaskCompleted event's data back (its
// "usage" and "cost" members, as ToData wrote them). A member that does not
// parse is treated as absent, never as zero, so the node shows as a gap.
func SpendReportFromEventData(nodeID string, data map[string]any) SpendReport {
	r := SpendReport{NodeID: nodeID}
	if u, bad := ParseUsage(data["usage"]); len(bad) == 0 {
		r.Usage = u
	}
	if c, bad := ParseCost(data["cost"]); len(bad) == 0 {
		r.Cost = c
	}
	return r
}

// NodeSpend is the spend of one node (or of the whole run, as
// Spend.Total): how many tasks completed, how many of them reported usage
// and cost, and the sums of those reports.
type NodeSpend struct {
	Tasks        int64 `json:"tasks"`
	UsageReports int64 `json:"usageReports"`
	CostReports  int64 `json:"costReports"`
	// Usage is the sum of the usage reports; nil when there were none.
	Usage *Usage `json:"usage,omitempty"`
	// Cost is the sum of the cost reports; nil when there were none.
	Cost *Cost `json:"cost,omitempty"`
	// UsageKnown: every task reported usage with tokensKnown true, so
	// Usage is the whole count. False: Usage is a floor (a spend gap).
	UsageKnown bool `json:"usageKnown"`
	// CostKnown: every task reported a cost with usdKnown true, so Cost is
	// the whole cost. False: Cost is a floor (a cost gap).
	CostKnown bool `json:"costKnown"`
}

// Spend is a run's spend folded from its TaskCompleted events: each node
// that completed a task, the run total, and the gaps.
type Spend struct {
	Nodes map[string]NodeSpend `json:"nodes"`
	Total NodeSpend            `json:"total"`
	// SpendGaps are the nodes (sorted) that completed a task whose usage
	// was absent or had tokensKnown false: their usage, and the run's, is
	// partial. Never nil.
	SpendGaps []string `json:"spendGaps"`
	// CostGaps are the nodes (sorted) that completed a task whose cost was
	// absent or had usdKnown false: their cost, and the run's, is a floor.
	// A gap in usage and one in cost are told apart because workers that
	// count tokens often price nothing. Never nil.
	CostGaps []string `json:"costGaps"`
}

// spendSum accumulates one NodeSpend.
type spendSum struct {
	tasks, usageReports, costReports int64
	input, output                    int64
	classes                          [3]*int64 // cacheRead, cacheWrite, reasoning
	tokensKnown                      bool      // every usage report had tokensKnown
	usd                              decimalSum
	usdKnown                         bool // every cost report had usdKnown
	provenance                       CostProvenance
}

func (s *spendSum) add(r SpendReport) {
	if s.tasks == 0 {
		s.tokensKnown, s.usdKnown = true, true
	}
	s.tasks++
	if u := r.Usage; u != nil {
		s.usageReports++
		s.input, s.output = addTokens(s.input, u.Input), addTokens(s.output, u.Output)
		for i, c := range [3]*int64{u.CacheRead, u.CacheWrite, u.Reasoning} {
			if c == nil {
				continue
			}
			if s.classes[i] == nil {
				s.classes[i] = new(int64)
			}
			*s.classes[i] = addTokens(*s.classes[i], *c)
		}
		s.tokensKnown = s.tokensKnown && u.TokensKnown
	}
	if c := r.Cost; c != nil {
		s.usd.add(c.USD)
		s.usdKnown = s.usdKnown && c.USDKnown
		if s.costReports == 0 {
			s.provenance = c.Provenance
		} else {
			s.provenance = combine(s.provenance, c.Provenance)
		}
		s.costReports++
	}
}

func (s *spendSum) view() NodeSpend {
	n := NodeSpend{Tasks: s.tasks, UsageReports: s.usageReports, CostReports: s.costReports,
		UsageKnown: s.usageReports == s.tasks && s.tokensKnown, CostKnown: s.costReports == s.tasks && s.usdKnown}
	if s.usageReports > 0 {
		u := Usage{Input: s.input, Output: s.output, TokensKnown: s.tokensKnown}
		copied := [3]*int64{}
		for i, c := range s.classes {
			if c != nil {
				v := *c
				copied[i] = &v
			}
		}
		u.CacheRead, u.CacheWrite, u.Reasoning = copied[0], copied[1], copied[2]
		n.Usage = &u
	}
	if s.costReports > 0 {
		n.Cost = &Cost{USD: s.usd.float(), USDKnown: s.usdKnown, Provenance: s.provenance}
	}
	return n
}

// decimalSum adds numbers exactly as the decimals they were written as
// (their shortest form), so 0.1 + 0.2 is 0.3 and the order of the terms
// does not matter: the sum is mant × 10^-scale.
type decimalSum struct {
	mant  big.Int
	scale int
	term  big.Int // scratch
}

var ten = big.NewInt(10)

func pow10(n int) *big.Int { return new(big.Int).Exp(ten, big.NewInt(int64(n)), nil) }

// add adds f; NaN and infinities (never parsed) add nothing.
func (d *decimalSum) add(f float64) {
	if math.IsNaN(f) || math.IsInf(f, 0) || f == 0 {
		return
	}
	// d.ddddde±x: digits × 10^(x - (len(digits)-1)).
	text := strconv.FormatFloat(f, 'e', -1, 64)
	mantissa, expText, _ := strings.Cut(text, "e")
	digits := strings.Replace(mantissa, ".", "", 1)
	exp, _ := strconv.Atoi(expText)
	exp -= len(digits) - 1 - strings.Count(digits, "-")
	if _, ok := d.term.SetString(digits, 10); !ok {
		return
	}
	if -exp > d.scale {
		d.mant.Mul(&d.mant, pow10(-exp-d.scale))
		d.scale = -exp
	}
	if shift := exp + d.scale; shift > 0 {
		d.term.Mul(&d.term, pow10(shift))
	}
	d.mant.Add(&d.mant, &d.term)
}

// float is the sum, rounded once.
func (d *decimalSum) float() float64 {
	f, _ := new(big.Rat).SetFrac(&d.mant, pow10(d.scale)).Float64()
	return f + 0
}

// addTokens adds without passing MaxTokenSum.
func addTokens(a, b int64) int64 {
	if b > MaxTokenSum-a {
		return MaxTokenSum
	}
	return a + b
}

// FoldSpend folds the reports of one run's completed tasks into its spend.
// The result does not depend on the order of the reports. It is the one fold
// every reader uses (the execution read, the journal projection).
func FoldSpend(reports []SpendReport) Spend {
	nodes := map[string]*spendSum{}
	var total spendSum
	for _, r := range reports {
		s := nodes[r.NodeID]
		if s == nil {
			s = &spendSum{}
			nodes[r.NodeID] = s
		}
		s.add(r)
		total.add(r)
	}
	out := Spend{Nodes: make(map[string]NodeSpend, len(nodes)), Total: total.view(), SpendGaps: []string{}, CostGaps: []string{}}
	if len(reports) == 0 {
		out.Total.UsageKnown, out.Total.CostKnown = true, true
	}
	for id, s := range nodes {
		v := s.view()
		out.Nodes[id] = v
		if !v.UsageKnown {
			out.SpendGaps = append(out.SpendGaps, id)
		}
		if !v.CostKnown {
			out.CostGaps = append(out.CostGaps, id)
		}
	}
	slices.Sort(out.SpendGaps)
	slices.Sort(out.CostGaps)
	return out
}

// unknownMembers names the members of m that are not allowed.
func unknownMembers(prefix string, m map[string]any, allowed []string) []fault.Violation {
	var bad []fault.Violation
	for k := range m {
		if !slices.Contains(allowed, k) {
			bad = append(bad, fault.Violation{Path: prefix + "." + k,
				Message: fmt.Sprintf("is not a %s member; the members are %s", prefix, strings.Join(allowed, ", "))})
		}
	}
	return bad
}

// boolean reads a required boolean member.
func boolean(m map[string]any, prefix, name, meaning string, bad *[]fault.Violation) bool {
	b, ok := m[name].(bool)
	if !ok {
		*bad = append(*bad, fault.Violation{Path: prefix + "." + name, Message: "is required and must be a boolean: " + meaning})
	}
	return b
}

func sortedViolations(v []fault.Violation) []fault.Violation {
	slices.SortStableFunc(v, func(a, b fault.Violation) int { return strings.Compare(a.Path, b.Path) })
	return v
}

// wholeNumber reads a JSON number that is a whole number (1000, 1e3 and
// 1000.0 alike), as decoded (json.Number, float64) or as a Go integer.
func wholeNumber(v any) (int64, bool) {
	switch x := v.(type) {
	case json.Number:
		if n, err := strconv.ParseInt(string(x), 10, 64); err == nil {
			return n, true
		}
		f, err := strconv.ParseFloat(string(x), 64)
		if err != nil {
			return 0, false
		}
		return wholeNumber(f)
	case float64:
		if x == math.Trunc(x) && math.Abs(x) <= MaxTokenSum {
			return int64(x), true
		}
	case int:
		return int64(x), true
	case int64:
		return x, true
	}
	return 0, false
}

// number reads a finite JSON number.
func number(v any) (float64, bool) {
	var f float64
	switch x := v.(type) {
	case json.Number:
		var err error
		if f, err = strconv.ParseFloat(string(x), 64); err != nil {
			return 0, false
		}
	case float64:
		f = x
	case int:
		f = float64(x)
	case int64:
		f = float64(x)
	default:
		return 0, false
	}
	return f, !math.IsNaN(f) && !math.IsInf(f, 0)
}
