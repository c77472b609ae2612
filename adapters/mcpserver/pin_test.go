package mcpserver

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// pinFile holds the SHA-256 of the published tool catalogue (names,
// descriptions, annotations, schemas). A change to any of them must be
// deliberate: rerun with YUKTA_UPDATE_TOOL_PIN=1 and commit the new pin.
const pinFile = "testdata/tools.sha256"

func TestToolCatalogPinned(t *testing.T) {
	t.Parallel()
	ts, _ := newTestServer(t)
	cs := connect(t, ts.URL, secretOf("admin"))
	lt, err := cs.ListTools(t.Context(), nil)
	if err != nil {
		t.Fatal(err)
	}
	tools := slices.Clone(lt.Tools)
	slices.SortFunc(tools, func(a, b *mcp.Tool) int { return strings.Compare(a.Name, b.Name) })
	b, err := json.Marshal(tools)
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(b)
	got := hex.EncodeToString(sum[:])
	if os.Getenv("YUKTA_UPDATE_TOOL_PIN") != "" {
		if err := os.WriteFile(pinFile, []byte(got+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(pinFile)
	if err != nil {
		t.Fatal(err)
	}
	if got != strings.TrimSpace(string(want)) {
		t.Errorf("tools/list hash %s, pinned %s: the catalogue changed; if on purpose, run with YUKTA_UPDATE_TOOL_PIN=1", got, strings.TrimSpace(string(want)))
	}
}

func TestListResultsArePrivate(t *testing.T) {
	t.Parallel()
	ts, _ := newTestServer(t)
	for _, method := range []string{"tools/list", "prompts/list", "resources/list"} {
		res := post(t, ts.URL, secretOf("viewer"), `{"jsonrpc":"2.0","id":1,"method":"`+method+`"}`)
		if !strings.Contains(res, `"cacheScope":"private"`) {
			t.Errorf("%s is not private to the caller: %.200s", method, res)
		}
	}
}
