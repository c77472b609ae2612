package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/yukta/yukta/adapters/postgres/pgtest"
	"github.com/yukta/yukta/api/apiclient"
)

// spendDoc is a run's spend as every door shows it (REST Execution.spend,
// MCP get_workflow_status's spend, the journal projection's spend), decoded
// by the test itself so each door is read as a client reads it.
type spendDoc struct {
	Nodes     map[string]nodeSpendDoc `json:"nodes"`
	Total     nodeSpendDoc            `json:"total"`
	SpendGaps []string                `json:"spendGaps"`
	CostGaps  []string                `json:"costGaps"`
}

type nodeSpendDoc struct {
	Tasks        int64 `json:"tasks"`
	UsageReports int64 `json:"usageReports"`
	CostReports  int64 `json:"costReports"`
	Usage        *struct {
		Input       int64  `json:"input"`
		Output      int64  `json:"output"`
		CacheRead   *int64 `json:"cacheRead"`
		CacheWrite  *int64 `json:"cacheWrite"`
		Reasoning   *int64 `json:"reasoning"`
		TokensKnown bool   `json:"tokensKnown"`
	} `json:"usage"`
	Cost *struct {
		USD        float64 `json:"usd"`
		USDKnown   bool    `json:"usdKnown"`
		Provenance string  `json:"provenance"`
	} `json:"cost"`
	UsageKnown bool `json:"usageKnown"`
	CostKnown  bool `json:"costKnown"`
}

// spendEverywhere reads the spend of a settled run over REST, MCP and the
// journal projection, checks the answers against the contract and each
// other, and that the run's journal still verifies VALID (the endpoint, and
// the CLI offline on an export). It returns the spend and the raw spend
// object of the REST answer.
func spendEverywhere(t *testing.T, s *server, key, sid, eid string) (spendDoc, map[string]any) {
	t.Helper()
	auth := []string{}
	if key != "" {
		auth = []string{"Authorization", "Bearer " + key}
	}
	read := func(path string, into any) map[string]any {
		t.Helper()
		res, body := s.do(t, "GET", path, "", nil, auth...)
		checkAnswer(t, "GET", path, res.StatusCode, res.Header, body)
		if res.StatusCode != http.StatusOK {
			t.Fatalf("GET %s: %d %s", path, res.StatusCode, body)
		}
		var doc struct {
			Spend json.RawMessage `json:"spend"`
		}
		if err := json.Unmarshal(body, &doc); err != nil || doc.Spend == nil {
			t.Fatalf("GET %s has no spend: %v\n%s", path, err, body)
		}
		if err := json.Unmarshal(doc.Spend, into); err != nil {
			t.Fatal(err)
		}
		var raw map[string]any
		_ = json.Unmarshal(doc.Spend, &raw)
		return raw
	}
	base := "/api/sessions/" + sid + "/executions/" + eid
	var rest, projected spendDoc
	raw := read(base, &rest)

	// The journal has caught up once verify reports no lag; the projection
	// then covers the same chain.
	deadline := time.Now().Add(waitLimit)
	for {
		res, body := s.do(t, "GET", base+"/journal/verify", "", nil, auth...)
		checkAnswer(t, "GET", base+"/journal/verify", res.StatusCode, res.Header, body)
		var v struct {
			Result    string `json:"result"`
			LagEvents int64  `json:"lagEvents"`
		}
		_ = json.Unmarshal(body, &v)
		if v.Result == "VALID" && v.LagEvents == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the journal of %s is not VALID with no lag within %s: %s", eid, waitLimit, body)
		}
		time.Sleep(20 * time.Millisecond)
	}
	read(base+"/projection", &projected)

	cs := mustConnect(t, s.URL, key)
	res, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "get_workflow_status", Arguments: map[string]any{"sessionId": sid, "executionId": eid}})
	if err != nil || res.IsError {
		t.Fatalf("get_workflow_status: %v %s", err, text(res))
	}
	b, _ := json.Marshal(res.StructuredContent)
	var status struct {
		Spend *spendDoc `json:"spend"`
	}
	if err := json.Unmarshal(b, &status); err != nil || status.Spend == nil {
		t.Fatalf("get_workflow_status has no spend: %v\n%s", err, b)
	}
	if !reflect.DeepEqual(rest, *status.Spend) || !reflect.DeepEqual(rest, projected) {
		t.Fatalf("the doors disagree:\nREST       %s\nMCP        %s\nprojection %s", mustMarshal(t, rest), mustMarshal(t, *status.Spend), mustMarshal(t, projected))
	}

	// The offline verifier: an export verifies VALID with the published keys.
	dir := t.TempDir()
	out := yuktaAs(t, s.URL, key, "journal", "export", sid, eid)
	cliWant(t, out, 0)
	file, keys := filepath.Join(dir, "journal.ndjson"), filepath.Join(dir, "keys.json")
	if err := os.WriteFile(file, []byte(out.stdout), 0o600); err != nil {
		t.Fatal(err)
	}
	_, body := s.do(t, "GET", "/api/journal/public-key", "", nil, auth...)
	if err := os.WriteFile(keys, body, 0o600); err != nil {
		t.Fatal(err)
	}
	cliWant(t, yuktaAs(t, s.URL, key, "journal", "verify", file, "--public-key", keys), 0, "result: VALID")
	if tasks := int64(bytes.Count([]byte(out.stdout), []byte(`"type":"TaskCompleted"`))); tasks != rest.Total.Tasks {
		t.Errorf("the export holds %d TaskCompleted records, the spend counts %d tasks", tasks, rest.Total.Tasks)
	}
	return rest, raw
}

func mustMarshal(t *testing.T, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// checkIssueSpend checks the issue's run: summarize and classify reported
// usage and cost, fetch reported neither. fetch is the run's spend gap (and
// cost gap) and shows no usage at all, never a 0; the total is partial.
func checkIssueSpend(t *testing.T, s spendDoc, raw map[string]any) {
	t.Helper()
	if len(s.Nodes) != 3 || !slices.Equal(s.SpendGaps, []string{"fetch"}) || !slices.Equal(s.CostGaps, []string{"fetch"}) {
		t.Fatalf("spend %s, want nodes summarize, classify, fetch with spendGaps and costGaps [fetch]", mustMarshal(t, s))
	}
	sum := s.Nodes["summarize"]
	if sum.Tasks != 2 || sum.Usage == nil || sum.Usage.Input != 1500 || sum.Usage.Output != 300 || sum.Usage.CacheRead == nil ||
		*sum.Usage.CacheRead != 100 || sum.Usage.Reasoning != nil || !sum.Usage.TokensKnown || sum.Cost == nil || sum.Cost.USD != 0.03 ||
		sum.Cost.Provenance != "reported" || !sum.UsageKnown || !sum.CostKnown {
		t.Errorf("summarize: %s", mustMarshal(t, sum))
	}
	cls := s.Nodes["classify"]
	if cls.Tasks != 1 || cls.Usage == nil || cls.Usage.Input != 40 || cls.Usage.Output != 2 || cls.Cost == nil || cls.Cost.USD != 0.0001 ||
		cls.Cost.Provenance != "estimated" || !cls.UsageKnown || !cls.CostKnown {
		t.Errorf("classify: %s", mustMarshal(t, cls))
	}
	fetch := s.Nodes["fetch"]
	if fetch.Tasks != 1 || fetch.UsageReports != 0 || fetch.Usage != nil || fetch.Cost != nil || fetch.UsageKnown || fetch.CostKnown {
		t.Errorf("fetch: %s", mustMarshal(t, fetch))
	}
	if f, _ := raw["nodes"].(map[string]any)["fetch"].(map[string]any); f == nil || f["usage"] != nil || f["cost"] != nil {
		t.Errorf("fetch shows a usage or cost it never reported: %v", f)
	}
	tot := s.Total
	if tot.Tasks != 4 || tot.UsageReports != 3 || tot.CostReports != 3 || tot.Usage == nil || tot.Usage.Input != 1540 ||
		tot.Usage.Output != 302 || tot.Cost == nil || tot.Cost.USD != 0.0301 || tot.Cost.Provenance != "partial" || tot.UsageKnown || tot.CostKnown {
		t.Errorf("total: %s, want 4 tasks, 1540/302 tokens, $0.0301 partial, usage and cost not known", mustMarshal(t, tot))
	}
}

// The issue's reports: what each completed task carries.
var (
	spendUsage = []map[string]any{
		{"input": 1000, "output": 200, "cacheRead": 60, "tokensKnown": true},
		{"input": 500, "output": 100, "cacheRead": 40, "tokensKnown": true},
		{"input": 40, "output": 2, "tokensKnown": true},
	}
	spendCost = []map[string]any{
		{"usd": 0.02, "usdKnown": true, "provenance": "reported"},
		{"usd": 0.01, "usdKnown": true, "provenance": "reported"},
		{"usd": 0.0001, "usdKnown": true, "provenance": "estimated"},
	}
)

// TestSpendOverEveryDoor: a run whose tasks' TaskCompleted events (as the
// worker API appends them to the outbox) carry usage and cost shows per-node
// and per-run spend with spendGaps [fetch] over REST, MCP and the journal
// projection, all three the same fold, and its journal still verifies
// VALID online and offline.
func TestSpendOverEveryDoor(t *testing.T) {
	t.Parallel()
	dsn := pgtest.NewDatabase(t)
	s := startServer(t, serverOptions{DSN: dsn})
	e := &env{t: t, s: s, c: s.Client, ctx: context.Background()}
	e.apply("spend", line("agents", nd("start", "MANUAL", ""), nd("summarize", "TRANSFORM", `{"expression":"payload"}`),
		nd("classify", "TRANSFORM", `{"expression":"payload"}`), nd("fetch", "TRANSFORM", `{"expression":"payload"}`), nd("out", "RESULT", "")))
	eid := e.start("spend", "agents", map[string]any{"q": 1})
	e.waitExec("spend", eid, "the end", func(x apiclient.Execution) bool { return x.EndedAt != nil })

	conn, err := pgx.Connect(t.Context(), dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	type task struct {
		node  string
		usage map[string]any
		cost  map[string]any
	}
	for i, tk := range []task{
		{"summarize", spendUsage[0], spendCost[0]}, {"summarize", spendUsage[1], spendCost[1]},
		{"classify", spendUsage[2], spendCost[2]}, {"fetch", nil, nil},
	} {
		data := map[string]any{"itemId": fmt.Sprint(i + 1), "attempt": 1, "port": "output"}
		if tk.usage != nil {
			data["usage"], data["cost"] = tk.usage, tk.cost
		}
		if _, err := conn.Exec(t.Context(), `
			INSERT INTO events (type, at, session_id, workflow_id, execution_id, node_id, actor, channel, data)
			VALUES ('TaskCompleted', now(), 'spend', 'agents', $1, $2, 'worker:w1', 'worker', $3::text::jsonb)`,
			eid, tk.node, string(mustMarshal(t, data))); err != nil {
			t.Fatal(err)
		}
	}
	spend, raw := spendEverywhere(t, s, "", "spend", eid)
	checkIssueSpend(t, spend, raw)
	// docs/journal.md shows this run's spend as the doors answer it.
	var doc map[string]any
	if err := json.Unmarshal([]byte(testedBlocks(t, "docs/journal.md", "TestSpendOverEveryDoor", 1)[0].Body), &doc); err != nil {
		t.Fatalf("docs/journal.md's spend example: %v", err)
	}
	if !reflect.DeepEqual(doc, raw) {
		t.Errorf("docs/journal.md's spend example differs from the answer:\ndoc    %s\nanswer %s", mustMarshal(t, doc), mustMarshal(t, raw))
	}

	// A run without tasks has an empty spend that is complete, not absent.
	other := e.start("spend", "agents", map[string]any{"q": 2})
	e.waitExec("spend", other, "the end", func(x apiclient.Execution) bool { return x.EndedAt != nil })
	empty, _ := spendEverywhere(t, s, "", "spend", other)
	if len(empty.Nodes) != 0 || empty.Total.Tasks != 0 || !empty.Total.UsageKnown || !empty.Total.CostKnown ||
		empty.SpendGaps == nil || len(empty.SpendGaps) != 0 || empty.Total.Usage != nil {
		t.Errorf("spend of a run without tasks: %s", mustMarshal(t, empty))
	}
}

// TestSpendFromWorkers: the issue's run over the worker API. Four TASK
// messages are polled and completed, two summarize tasks and one classify
// task with usage and cost, one fetch task with neither; the run shows
// per-node and per-run spend and spendGaps [fetch] over REST, MCP and the
// journal projection, and the journal verifies VALID online and offline.
// A report the strict parsers refuse is a 400 naming the member, and
// changes nothing: the same task then completes.
func TestSpendFromWorkers(t *testing.T) {
	t.Parallel()
	dsn := pgtest.NewDatabase(t)
	s := startServer(t, serverOptions{DSN: dsn})
	e := &env{t: t, s: s, c: s.Client, ctx: context.Background()}
	task := func(id string) string { return nd(id, "TASK", fmt.Sprintf(`{"queue":%q}`, id)) }
	// The trigger's two items reach summarize through a SPLIT; classify and
	// fetch get the trigger once each: four tasks, and the run ends.
	e.apply("spend", wf("agents",
		[]string{nd("start", "MANUAL", ""), nd("split", "SPLIT", ""), task("summarize"), task("classify"), task("fetch")},
		[]string{ed("start", "split", ""), ed("split", "summarize", ""), ed("start", "classify", ""), ed("start", "fetch", "")}))
	eid := e.start("spend", "agents", []any{map[string]any{"n": 1}, map[string]any{"n": 2}})

	post := func(path string, body any) (int, []byte) {
		t.Helper()
		res, b := s.do(t, "POST", path, "application/json", mustMarshal(t, body))
		checkAnswer(t, "POST", path, res.StatusCode, res.Header, b)
		return res.StatusCode, b
	}
	type polled struct {
		TaskID      string `json:"taskId"`
		LeaseToken  string `json:"leaseToken"`
		NodeID      string `json:"nodeId"`
		ExecutionID string `json:"executionId"`
	}
	poll := func(queue string) polled {
		t.Helper()
		deadline := time.Now().Add(waitLimit)
		for {
			code, b := post("/api/worker/v1/poll", map[string]any{"queues": []string{queue}, "wait": 5, "max": 1})
			var out struct {
				Tasks []polled `json:"tasks"`
			}
			if code != http.StatusOK || json.Unmarshal(b, &out) != nil {
				t.Fatalf("poll %s: %d %s", queue, code, b)
			}
			if len(out.Tasks) == 1 {
				if out.Tasks[0].ExecutionID != eid || out.Tasks[0].NodeID != queue {
					t.Fatalf("poll %s delivered %+v", queue, out.Tasks[0])
				}
				return out.Tasks[0]
			}
			if time.Now().After(deadline) {
				t.Fatalf("no task on queue %s within %s", queue, waitLimit)
			}
		}
	}
	complete := func(tk polled, usage, cost map[string]any) (int, []byte) {
		t.Helper()
		body := map[string]any{"leaseToken": tk.LeaseToken, "output": map[string]any{"done": tk.NodeID}}
		if usage != nil {
			body["usage"] = usage
		}
		if cost != nil {
			body["cost"] = cost
		}
		return post("/api/worker/v1/tasks/"+tk.TaskID+"/complete", body)
	}
	mustComplete := func(tk polled, usage, cost map[string]any) {
		t.Helper()
		if code, b := complete(tk, usage, cost); code != http.StatusOK {
			t.Fatalf("complete %s: %d %s", tk.TaskID, code, b)
		}
	}
	mustComplete(poll("summarize"), spendUsage[0], spendCost[0])
	mustComplete(poll("summarize"), spendUsage[1], spendCost[1])

	// Reports the parsers refuse: 400 naming the member, and nothing
	// changes (the same lease then completes the task).
	cls := poll("classify")
	for _, bad := range []struct {
		usage, cost map[string]any
		path, says  string
	}{
		{spendUsage[2], map[string]any{"usd": 0.0001, "usdKnown": true, "provenance": "price-table"}, "cost.provenance", "reported"},
		{spendUsage[2], map[string]any{"usd": 0.0001, "usdKnown": true, "provenance": "unknown"}, "cost.usdKnown", "must be false when provenance is unknown"},
		{map[string]any{"input": -1, "output": 2, "tokensKnown": true}, spendCost[2], "usage.input", ""},
		{map[string]any{"input": 1e13, "output": 2, "tokensKnown": true}, spendCost[2], "usage.input", ""},
		{map[string]any{"input": 40, "output": 2}, spendCost[2], "usage.tokensKnown", ""},
		{spendUsage[2], map[string]any{"usd": 2e6, "usdKnown": true, "provenance": "reported"}, "cost.usd", ""},
	} {
		code, b := complete(cls, bad.usage, bad.cost)
		var p struct {
			Errors []struct{ Path, Message string } `json:"errors"`
		}
		_ = json.Unmarshal(b, &p)
		named := false
		for _, v := range p.Errors {
			named = named || strings.HasSuffix(v.Path, bad.path) && strings.Contains(v.Path+" "+v.Message, bad.says)
		}
		if code != http.StatusBadRequest || !named {
			t.Errorf("complete with usage %v cost %v: %d %s, want 400 naming %s", bad.usage, bad.cost, code, b, bad.path)
		}
	}
	mustComplete(cls, spendUsage[2], spendCost[2])
	mustComplete(poll("fetch"), nil, nil)
	e.waitExec("spend", eid, "the end", func(x apiclient.Execution) bool { return x.EndedAt != nil })
	spend, raw := spendEverywhere(t, s, "", "spend", eid)
	checkIssueSpend(t, spend, raw)
	if !strings.Contains(string(mustMarshal(t, raw)), `"spendGaps":["fetch"]`) {
		t.Errorf("spendGaps not [fetch]: %v", raw)
	}
}
