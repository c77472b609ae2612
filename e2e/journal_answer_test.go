package e2e

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/yukta/yukta/api/apiclient"
	"github.com/yukta/yukta/domain/journal"
)

// TestJournalRecordsTheAnswer answers inputs through the CLI and checks
// the signed record of each InputAnswered: it holds the answer, with the
// members that name a secret and credential-shaped text masked, who gave it
// (actor and channel), and, for an answer larger than the bound, its head,
// length and SHA-256 instead of the whole. The export still verifies VALID
// offline with the key the server lists.
func TestJournalRecordsTheAnswer(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	// The workflow owns a secret (an HTTP node's authorization, never run):
	// an answer that quotes it records it masked, as its logs would be.
	const secret = "answer-canary-7Kq2Zx9w"
	e.apply("jr", wf("ask", []string{nd("start", "MANUAL", ""), nd("q", "INPUT_REQUEST", `{"prompt":"details?","mode":"answer"}`), nd("out", "RESULT", ""),
		nd("holder", "HTTP_REQUEST", fmt.Sprintf(`{"url":"https://example.com/x","authorization":"Bearer %s"}`, secret))},
		[]string{ed("start", "q", ""), ed("q", "out", "")}))
	small := e.start("jr", "ask", nil)
	big := e.start("jr", "ask", nil)

	answer := `{"approved":true,"note":"ship it","apiToken":"tok-123456789","nested":{"Password":"hunter2","list":["see password=hunter22 here"]},"why":"the key is ` + secret + `"}`
	cliWant(t, yukta(t, e.s.URL, "answer", e.openInput(small), answer), 0, "status: answered")
	long := strings.Repeat("é", 5000) // 10,000 bytes of UTF-8
	bigAnswer := fmt.Sprintf(`{"text":%q}`, long)
	cliWant(t, yukta(t, e.s.URL, "answer", e.openInput(big), bigAnswer), 0, "status: answered")
	for _, id := range []string{small, big} {
		e.waitStatus("jr", id, apiclient.ExecutionStatusSUCCESS)
		e.verifyJournal(id)
	}

	rec := e.answeredRecord(small)
	data, _ := rec["data"].(map[string]any)
	got, _ := data["answer"].(map[string]any)
	nested, _ := got["nested"].(map[string]any)
	list, _ := nested["list"].([]any)
	if got["approved"] != true || got["note"] != "ship it" || got["apiToken"] != "***" || nested["Password"] != "***" ||
		len(list) != 1 || list[0] != "see password=*** here" || got["why"] != "the key is ***" {
		t.Errorf("recorded answer %v, want the answer with its secrets masked", data["answer"])
	}
	by, _ := data["answeredBy"].(map[string]any)
	if by["channel"] != "cli (claimed)" || by["actor"] == nil || by["actor"] == "" || by["actor"] != rec["actor"] {
		t.Errorf("answeredBy %v (record actor %v), want the actor and the channel cli (claimed)", data["answeredBy"], rec["actor"])
	}
	if text := fmt.Sprint(rec); strings.Contains(text, "hunter2") || strings.Contains(text, "tok-123456789") || strings.Contains(text, secret) {
		t.Errorf("a secret reached the journal: %v", rec)
	}
	if data["answerTruncated"] != nil || data["answerBytes"] == nil {
		t.Errorf("a small answer is recorded whole: %v", data)
	}

	rec = e.answeredRecord(big)
	data, _ = rec["data"].(map[string]any)
	canon, err := journal.Canonical(map[string]any{"text": long})
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(canon)
	head, _ := data["answerHead"].(string)
	if data["answer"] != nil || data["answerTruncated"] != true || fmt.Sprint(data["answerBytes"]) != fmt.Sprint(len(canon)) ||
		data["answerSha256"] != "sha256:"+hex.EncodeToString(sum[:]) || len(head) > journal.MaxRecordedAnswer ||
		len(head) < journal.MaxRecordedAnswer-3 || !strings.HasPrefix(string(canon), head) {
		t.Errorf("large answer recorded as %v (head %d bytes), want its head of at most %d bytes, its length %d and SHA-256",
			truncateForLog(fmt.Sprint(data)), len(head), journal.MaxRecordedAnswer, len(canon))
	}

	// The export verifies offline with the key list the server publishes.
	dir := t.TempDir()
	out := yukta(t, e.s.URL, "journal", "export", "jr", small)
	cliWant(t, out, 0)
	file := filepath.Join(dir, "small.ndjson")
	keys := filepath.Join(dir, "keys.json")
	if err := os.WriteFile(file, []byte(out.stdout), 0o600); err != nil {
		t.Fatal(err)
	}
	_, body := e.s.do(t, "GET", "/api/journal/public-key", "", nil)
	if err := os.WriteFile(keys, body, 0o600); err != nil {
		t.Fatal(err)
	}
	cliWant(t, yukta(t, e.s.URL, "journal", "verify", file, "--public-key", keys), 0, "result: VALID")

	// And with the independent implementation of docs/journal.md, the large
	// answer's export too.
	node := nodeProject(t, journalJSDir, "canonicalize")
	script := filepath.Join(dir, "verify.js")
	if err := os.WriteFile(script, []byte(testedBlocks(t, "docs/journal.md", "TestJournalRecipeJavaScript", 1)[0].Body), 0o600); err != nil {
		t.Fatal(err)
	}
	kr, err := e.c.GetJournalPublicKeyWithResponse(e.ctx)
	if err != nil || kr.JSON200 == nil {
		t.Fatalf("public key: %v %v", err, kr)
	}
	for _, id := range []string{small, big} {
		out := yukta(t, e.s.URL, "journal", "export", "jr", id)
		cliWant(t, out, 0)
		f := filepath.Join(dir, id+".ndjson")
		if err := os.WriteFile(f, []byte(out.stdout), 0o600); err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		cmd := exec.CommandContext(ctx, node, script, f, kr.JSON200.PublicKey)
		cmd.Env = []string{"NODE_PATH=" + filepath.Join(mustAbs(t, journalJSDir), "node_modules")}
		b, err := cmd.CombinedOutput()
		cancel()
		if err != nil || strings.TrimSpace(string(b)) != "VALID" {
			t.Errorf("the JavaScript recipe on the export of %s: %v\n%s", id, err, b)
		}
	}
}

// openInput waits for the open input of an execution and returns its id.
func (e *env) openInput(execID string) string {
	e.t.Helper()
	deadline := time.Now().Add(waitLimit)
	for {
		r, err := e.c.ListInputsWithResponse(e.ctx, &apiclient.ListInputsParams{SessionId: ptr("jr")})
		if err != nil || r.JSON200 == nil {
			e.t.Fatalf("inputs: %v %v", err, r)
		}
		for _, in := range r.JSON200.Inputs {
			if in.ExecutionId == execID {
				return in.InputId
			}
		}
		if time.Now().After(deadline) {
			e.t.Fatalf("execution %s asked for no input", execID)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// answeredRecord returns the event of the InputAnswered record of an
// execution's exported journal.
func (e *env) answeredRecord(execID string) map[string]any {
	e.t.Helper()
	out := yukta(e.t, e.s.URL, "journal", "export", "jr", execID)
	cliWant(e.t, out, 0)
	for l := range strings.Lines(out.stdout) {
		if journal.IsCheckpointLine([]byte(l)) {
			continue
		}
		r, err := journal.ParseRecord([]byte(l))
		if err != nil {
			e.t.Fatal(err)
		}
		if r.Event != nil && r.Event["type"] == "InputAnswered" {
			return r.Event
		}
	}
	e.t.Fatalf("no InputAnswered record in the journal of %s:\n%s", execID, out.stdout)
	return nil
}

func truncateForLog(s string) string {
	if len(s) > 600 {
		return s[:600] + "…"
	}
	return s
}
