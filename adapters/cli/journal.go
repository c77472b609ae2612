package cli

import (
	"bufio"
	"bytes"
	"crypto/ed25519"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"io"
	"net/http"
	"os"

	"github.com/spf13/cobra"

	"github.com/yukta/yukta/domain/journal"
)

// maxJournalLine bounds one NDJSON line of an export (a record's body is an
// outbox event; 16 MiB is far beyond any).
const maxJournalLine = 16 << 20

func (a *App) journalCmd() *cobra.Command {
	export := &cobra.Command{
		Use:               "export SESSION EXECUTION",
		Short:             "export an execution's journal (NDJSON, to stdout)",
		Args:              argsBetween(2, 2),
		ValidArgsFunction: a.completeSession,
	}
	a.leaf(export, runJournalExport)
	verify := &cobra.Command{
		Use:   "verify FILE --public-key KEY",
		Short: fmt.Sprintf("verify an exported journal offline, no server needed (FILE - reads stdin); exit 0 VALID, 1 INVALID, %d UNANCHORED", exitUnanchored),
		Args:  argsBetween(1, 1),
	}
	var keyArg string
	verify.Flags().StringVar(&keyArg, "public-key", "", "the server's ed25519 public key: base64 (as GET /api/journal/public-key gives it), or a file holding it, that JSON, or a PEM PUBLIC KEY")
	verify.Flags().StringVar(&keyArg, "key", "", "same as --public-key")
	a.local(verify, func(e *env, pos []string) int { return runJournalVerify(e, pos[0], keyArg) })
	return a.group("journal", "export an execution's journal, or verify an export offline", export, verify)
}

// runJournalExport writes an execution's journal (NDJSON) to stdout as the
// server sends it.
func runJournalExport(e *env, pos []string) int {
	res, err := e.api.ExportJournal(e.ctx, pos[0], pos[1])
	if err != nil {
		return e.callError(err)
	}
	defer res.Body.Close()
	if res.StatusCode != http.StatusOK {
		body, _ := io.ReadAll(io.LimitReader(res.Body, 1<<20))
		return e.problem(res, body)
	}
	if _, err := io.Copy(e.stdout, res.Body); err != nil {
		fmt.Fprintf(e.stderr, "%s: %v\n", e.name, err)
		return exitFailed
	}
	return exitOK
}

// runJournalVerify verifies an export offline: no server, no database.
func runJournalVerify(e *env, file, keyArg string) int {
	var pub ed25519.PublicKey
	if keyArg != "" {
		var err error
		if pub, err = readPublicKey(keyArg); err != nil {
			fmt.Fprintf(e.stderr, "%s: --public-key: %v\n", e.name, err)
			return exitUsage
		}
	} else {
		fmt.Fprintf(e.stderr, "%s: no --public-key: the checkpoint cannot be checked, so the best answer is UNANCHORED\n", e.name)
	}
	var in io.Reader
	if file == "-" {
		in = os.Stdin
	} else {
		f, err := os.Open(file)
		if err != nil {
			fmt.Fprintf(e.stderr, "%s: %v\n", e.name, err)
			return exitFailed
		}
		defer f.Close()
		in = f
	}
	var lines [][]byte
	sc := bufio.NewScanner(in)
	sc.Buffer(make([]byte, 0, 64<<10), maxJournalLine)
	for sc.Scan() {
		lines = append(lines, bytes.Clone(sc.Bytes()))
	}
	if err := sc.Err(); err != nil {
		fmt.Fprintf(e.stderr, "%s: reading %s: %v\n", e.name, file, err)
		return exitFailed
	}
	res := journal.VerifyExport(lines, pub)
	fmt.Fprintf(e.stdout, "result: %s\nsequence: %d\n", res.Result, res.Sequence)
	if res.ChainTip != "" {
		fmt.Fprintf(e.stdout, "chainTip: %s\n", res.ChainTip)
	}
	if res.FirstBadSequence != 0 {
		fmt.Fprintf(e.stdout, "firstBadSequence: %d\n", res.FirstBadSequence)
	}
	if res.Reason != "" {
		fmt.Fprintf(e.stdout, "reason: %s\n", res.Reason)
	}
	if res.Detail != "" {
		fmt.Fprintf(e.stdout, "detail: %s\n", escape(res.Detail))
	}
	switch res.Result {
	case journal.VerdictValid:
		return exitOK
	case journal.VerdictUnanchored:
		return exitUnanchored
	}
	return exitFailed
}

// readPublicKey reads an ed25519 public key given inline (base64) or in a
// file (base64, the public-key endpoint's JSON, or PEM).
func readPublicKey(arg string) (ed25519.PublicKey, error) {
	if k, ok := decodeKeyText([]byte(arg)); ok {
		return k, nil
	}
	b, err := os.ReadFile(arg)
	if err != nil {
		return nil, fmt.Errorf("%q is neither a base64 ed25519 key nor a readable file: %v", arg, err)
	}
	if k, ok := decodeKeyText(b); ok {
		return k, nil
	}
	return nil, fmt.Errorf("%s holds no ed25519 public key (base64, {\"publicKey\": …} or PEM)", arg)
}

func decodeKeyText(b []byte) (ed25519.PublicKey, bool) {
	b = bytes.TrimSpace(b)
	if block, _ := pem.Decode(b); block != nil {
		k, err := x509.ParsePKIXPublicKey(block.Bytes)
		if pk, ok := k.(ed25519.PublicKey); err == nil && ok {
			return pk, true
		}
		return nil, false
	}
	var doc struct {
		PublicKey string `json:"publicKey"`
	}
	if json.Unmarshal(b, &doc) == nil && doc.PublicKey != "" {
		b = []byte(doc.PublicKey)
	}
	raw, err := base64.StdEncoding.DecodeString(string(b))
	if err != nil || len(raw) != ed25519.PublicKeySize {
		return nil, false
	}
	return ed25519.PublicKey(raw), true
}
