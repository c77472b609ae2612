package e2e

import (
	"context"
	"crypto/ed25519"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/yukta/yukta/adapters/postgres/pgtest"
	"github.com/yukta/yukta/api/apiclient"
)

// publishedKeys is GET /api/journal/public-key as this test reads it.
type publishedKeys struct {
	Algorithm string `json:"algorithm"`
	PublicKey string `json:"publicKey"`
	KeyID     string `json:"keyId"`
	Keys      []struct {
		KeyID     string  `json:"keyId"`
		Algorithm string  `json:"algorithm"`
		PublicKey string  `json:"publicKey"`
		Status    string  `json:"status"`
		RetiredAt *string `json:"retiredAt"`
	} `json:"keys"`
}

// keyIDOf is the documented key id: the lowercase hex of the first 8 bytes
// of the SHA-256 of the raw 32-byte public key.
func keyIDOf(pub ed25519.PublicKey) string {
	sum := sha256.Sum256(pub)
	return hex.EncodeToString(sum[:8])
}

// TestJournalKeysTwoInstances runs two instances on one database. Sharing
// a key, an export verifies VALID with the keys the server lists; a third
// instance started with another key refuses to start, naming both key ids
// and the two ways forward; started again with --rotate-journal-key it
// makes its key current and retires the old one: new checkpoints name the
// new key id, old exports still verify, the list shows both, and the old
// key can no longer start an instance; an instance still running with it
// signs no more checkpoints.
func TestJournalKeysTwoInstances(t *testing.T) {
	t.Parallel()
	dsn := pgtest.NewDatabase(t)
	a := startServer(t, serverOptions{DSN: dsn})
	b := startServer(t, serverOptions{DSN: dsn})
	oldID := keyIDOf(journalPublicKey(dsn))
	seed2 := sha256.Sum256([]byte("yukta e2e second journal key\x00" + dsn))
	pub2 := ed25519.NewKeyFromSeed(seed2[:]).Public().(ed25519.PublicKey)
	newID := keyIDOf(pub2)
	key2 := "YUKTA_JOURNAL_KEY=" + base64.StdEncoding.EncodeToString(seed2[:])
	dir := t.TempDir()

	eb := &env{t: t, s: b, c: b.Client, ctx: context.Background()}
	eb.apply("jr", line("ok", nd("start", "MANUAL", ""), nd("out", "RESULT", "")))
	first := eb.start("jr", "ok", nil)
	eb.waitStatus("jr", first, apiclient.ExecutionStatusSUCCESS)
	eb.verifyJournal(first)
	firstFile := exportTo(t, b, dir, first)
	if got := checkpointKeyID(t, firstFile); got != oldID {
		t.Errorf("checkpoint keyId %q, want %q", got, oldID)
	}
	keys := publicKeys(t, a)
	if keys.PublicKey != base64.StdEncoding.EncodeToString(journalPublicKey(dsn)) || keys.KeyID != oldID || keys.Algorithm != "ed25519" ||
		len(keys.Keys) != 1 || keys.Keys[0].KeyID != oldID || keys.Keys[0].Status != "current" {
		t.Fatalf("public keys %+v, want the shared key %s, current", keys, oldID)
	}
	keysFile := saveKeys(t, a, dir, "keys1.json")
	cliWant(t, yukta(t, a.URL, "journal", "verify", firstFile, "--public-key", keysFile), 0, "result: VALID")

	// An instance with another key refuses to start, and says why and what to do.
	code, logs := startRefused(t, dsn, key2)
	for _, want := range []string{oldID, newID, "YUKTA_JOURNAL_KEY", "--rotate-journal-key"} {
		if !strings.Contains(logs, want) {
			t.Errorf("refused start (exit %d) does not name %q:\n%s", code, want, logs)
		}
	}
	// docs/journal.md prints the refusal as the server words it.
	if got, want := refusalLine(logs, oldID, newID), docRefusal(t); got != want {
		t.Errorf("the refusal reads\n%s\ndocs/journal.md prints\n%s", got, want)
	}
	if keys := publicKeys(t, a); len(keys.Keys) != 1 {
		t.Errorf("a refused start changed the key list: %+v", keys)
	}

	// Rotation: the new key becomes current, the old one retired.
	if err := b.Stop(); err != nil {
		t.Fatal(err)
	}
	// a goes on running with the old key: once it is retired, a signs nothing.
	c := startServer(t, serverOptions{DSN: dsn, Env: []string{key2}, Args: []string{"--rotate-journal-key"}})
	keys = publicKeys(t, c)
	status := map[string]string{}
	for _, k := range keys.Keys {
		status[k.KeyID] = k.Status
		if k.Status == "retired" && k.RetiredAt == nil {
			t.Errorf("retired key %s has no retiredAt", k.KeyID)
		}
	}
	if keys.KeyID != newID || keys.PublicKey != base64.StdEncoding.EncodeToString(pub2) || len(keys.Keys) != 2 ||
		status[newID] != "current" || status[oldID] != "retired" {
		t.Fatalf("after rotation the keys are %+v, want %s current and %s retired", keys, newID, oldID)
	}
	ec := &env{t: t, s: c, c: c.Client, ctx: context.Background()}
	second := ec.start("jr", "ok", nil)
	ec.waitStatus("jr", second, apiclient.ExecutionStatusSUCCESS)
	ec.verifyJournal(second)
	ec.verifyJournal(first) // the server verifies an old checkpoint with the retired key
	secondFile := exportTo(t, c, dir, second)
	if got := checkpointKeyID(t, secondFile); got != newID {
		t.Errorf("checkpoint after rotation names key %q, want %q", got, newID)
	}
	// yukta journal keys prints the same answer, ready for --public-key.
	keysOut := yukta(t, c.URL, "journal", "keys")
	cliWant(t, keysOut, 0, `"keys":[`, newID, oldID)
	keysFile = filepath.Join(dir, "keys2.json")
	if err := os.WriteFile(keysFile, []byte(keysOut.stdout), 0o600); err != nil {
		t.Fatal(err)
	}
	cliWant(t, yukta(t, c.URL, "journal", "verify", firstFile, "--public-key", keysFile), 0, "result: VALID")
	cliWant(t, yukta(t, c.URL, "journal", "verify", secondFile, "--public-key", keysFile), 0, "result: VALID")
	// Several keys given one by one pick the same way; the wrong one alone names the key it lacks.
	cliWant(t, yukta(t, c.URL, "journal", "verify", firstFile, "--public-key", base64.StdEncoding.EncodeToString(pub2),
		"--public-key", base64.StdEncoding.EncodeToString(journalPublicKey(dsn))), 0, "result: VALID")
	out := yukta(t, c.URL, "journal", "verify", firstFile, "--public-key", base64.StdEncoding.EncodeToString(pub2))
	cliWant(t, out, 3, "result: UNANCHORED", "reason: unknown_key", oldID)

	// The retired key no longer starts an instance.
	code, logs = startRefused(t, dsn)
	for _, want := range []string{oldID, newID, "retired"} {
		if !strings.Contains(logs, want) {
			t.Errorf("start with the retired key (exit %d) does not name %q:\n%s", code, want, logs)
		}
	}
}

// startRefused starts the binary on dsn (with the harness key unless env
// sets one) and expects it to exit before serving; it returns the exit
// code and the log.
func startRefused(t *testing.T, dsn string, env ...string) (int, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, binary(t), "serve", "--addr", "127.0.0.1:0", "--log-format", "json")
	cmd.Env = append([]string{"PATH=" + os.Getenv("PATH"), "HOME=" + os.TempDir(), "YUKTA_DATABASE_URL=" + dsn}, env...)
	cmd.Env = append(cmd.Env, journalKeyEnv(dsn, env)...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	b, err := cmd.CombinedOutput()
	if strings.Contains(string(b), "yukta serving on ") {
		t.Fatalf("the server started:\n%s", b)
	}
	ee, ok := err.(*exec.ExitError)
	if !ok || ee.ExitCode() == 0 {
		t.Fatalf("the server did not refuse to start (%v):\n%s", err, b)
	}
	return ee.ExitCode(), string(b)
}

func publicKeys(t *testing.T, s *server) publishedKeys {
	t.Helper()
	res, body := s.do(t, "GET", "/api/journal/public-key", "", nil)
	var k publishedKeys
	if res.StatusCode != 200 || json.Unmarshal(body, &k) != nil {
		t.Fatalf("public key: %d %s", res.StatusCode, body)
	}
	return k
}

func saveKeys(t *testing.T, s *server, dir, name string) string {
	t.Helper()
	_, body := s.do(t, "GET", "/api/journal/public-key", "", nil)
	file := filepath.Join(dir, name)
	if err := os.WriteFile(file, body, 0o600); err != nil {
		t.Fatal(err)
	}
	return file
}

func exportTo(t *testing.T, s *server, dir, id string) string {
	t.Helper()
	out := yukta(t, s.URL, "journal", "export", "jr", id)
	cliWant(t, out, 0)
	file := filepath.Join(dir, id+".ndjson")
	if err := os.WriteFile(file, []byte(out.stdout), 0o600); err != nil {
		t.Fatal(err)
	}
	return file
}

// checkpointKeyID is the keyId the export's checkpoint line names.
func checkpointKeyID(t *testing.T, file string) string {
	t.Helper()
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	var cp struct {
		Checkpoint map[string]any `json:"checkpoint"`
	}
	if err := json.Unmarshal([]byte(lines[len(lines)-1]), &cp); err != nil || cp.Checkpoint == nil {
		t.Fatalf("the export has no checkpoint line:\n%s", b)
	}
	id, _ := cp.Checkpoint["keyId"].(string)
	return id
}

// refusalLine is the "yukta serve:" line of a refused start, with the key
// ids replaced by NEW and CURRENT.
func refusalLine(logs, current, own string) string {
	for l := range strings.Lines(logs) {
		if strings.HasPrefix(l, "yukta serve: ") {
			return strings.NewReplacer(current, "CURRENT", own, "NEW").Replace(strings.TrimSpace(l))
		}
	}
	return ""
}

// docRefusal is the refusal docs/journal.md prints, with its key ids
// replaced the same way.
func docRefusal(t *testing.T) string {
	t.Helper()
	line := strings.TrimSpace(testedBlocks(t, "docs/journal.md", "TestJournalKeysTwoInstances", 1)[0].Body)
	if !strings.HasPrefix(line, "yukta serve: journal signing key ") {
		t.Fatalf("docs/journal.md's refusal block does not start with the refusal: %q", line)
	}
	fields := strings.Fields(line)
	own, current := fields[5], fields[12] // "... key OWN is not this database's current key CURRENT: ..."
	return strings.NewReplacer(strings.TrimSuffix(current, ":"), "CURRENT", own, "NEW").Replace(line)
}
