package mcpserver

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"
)

// TestStatusShowsSpend: get_workflow_status carries the run's spend, folded
// from its TaskCompleted events by the execution read's use case: the
// node that reported usage and cost is summed, the one that reported
// nothing is a spend gap and shows no usage (absent, never 0).
func TestStatusShowsSpend(t *testing.T) {
	t.Parallel()
	ts, env := newTestServer(t)
	cs := connect(t, ts.URL, secretOf("viewer"))
	if _, err := env.admin.Exec(t.Context(), `
		INSERT INTO events (type, at, session_id, workflow_id, execution_id, node_id, actor, channel, data) VALUES
		  ('TaskCompleted', now(), 'own', 'w', $1, 'llm', 'worker:w1', 'worker',
		   '{"itemId":"1","attempt":1,"port":"output","usage":{"input":1200,"output":300,"cacheRead":0,"tokensKnown":true},"cost":{"usd":0.02,"usdKnown":true,"provenance":"estimated"}}'),
		  ('TaskCompleted', now(), 'own', 'w', $1, 'llm', 'worker:w1', 'worker',
		   '{"itemId":"2","attempt":2,"port":"output","usage":{"input":800,"output":100,"tokensKnown":true},"cost":{"usd":0.01,"usdKnown":true,"provenance":"estimated"}}'),
		  ('TaskCompleted', now(), 'own', 'w', $1, 'scrape', 'worker:w2', 'worker', '{"itemId":"3","attempt":1,"port":"output"}')`,
		env.ownExec); err != nil {
		t.Fatal(err)
	}
	res := callOK(t, cs, "get_workflow_status", map[string]any{"sessionId": "own", "executionId": env.ownExec})
	var st ExecutionStatus
	decode(t, res, &st)
	s := st.Spend
	if s == nil || len(s.Nodes) != 2 || !slices.Equal(s.SpendGaps, []string{"scrape"}) || !slices.Equal(s.CostGaps, []string{"scrape"}) {
		t.Fatalf("spend = %+v", s)
	}
	llm := s.Nodes["llm"]
	if llm.Tasks != 2 || llm.Usage == nil || llm.Usage.Input != 2000 || llm.Usage.Output != 400 || llm.Usage.CacheRead == nil ||
		*llm.Usage.CacheRead != 0 || llm.Usage.Reasoning != nil || llm.Cost == nil || llm.Cost.USD != 0.03 ||
		llm.Cost.Provenance != "estimated" || !llm.UsageKnown || !llm.CostKnown {
		t.Fatalf("llm = %+v usage %+v cost %+v", llm, llm.Usage, llm.Cost)
	}
	if s.Total.Tasks != 3 || s.Total.UsageReports != 2 || s.Total.UsageKnown || s.Total.CostKnown || s.Total.Usage.Input != 2000 {
		t.Fatalf("total = %+v", s.Total)
	}
	raw, _ := json.Marshal(res.StructuredContent)
	if !strings.Contains(string(raw), `"scrape":{"costKnown":false,"costReports":0,"tasks":1,"usageKnown":false,"usageReports":0}`) {
		t.Fatalf("the silent node is not shown without usage: %s", raw)
	}
}
