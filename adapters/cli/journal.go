package cli

import (
	"bufio"
	"bytes"
	"crypto/ed25519"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"

	"github.com/yukta/yukta/domain/journal"
)

// Exit codes of `yukta journal verify` beyond exitOK (VALID) and exitFailed
// (INVALID, or the file could not be read).
const exitUnanchored = 3 // the chain holds but no valid checkpoint vouches for its end

// maxJournalLine bounds one NDJSON line of an export (a record's body is an
// outbox event; 16 MiB is far beyond any).
const maxJournalLine = 16 << 20

func runJournal(e *env, args []string) int {
	if len(args) == 0 || args[0] == "-h" || args[0] == "--help" || args[0] == "help" {
		fmt.Fprintf(e.stderr, "Usage: %s %s\n  %s\n", e.name, e.cmd.args, strings.ReplaceAll(e.cmd.summary, "\n      ", "\n  "))
		if len(args) == 0 {
			return exitUsage
		}
		return exitOK
	}
	switch args[0] {
	case "export":
		return runJournalExport(e, args[1:])
	case "verify":
		return runJournalVerify(e, args[1:])
	}
	return e.usageError("unknown journal command %q; use export or verify", args[0])
}

// runJournalExport writes an execution's journal (NDJSON) to stdout as the
// server sends it.
func runJournalExport(e *env, args []string) int {
	e.name += " export"
	fs := e.flags()
	pos, code, ok := e.parse(fs, args, 2, 2)
	if !ok {
		return code
	}
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
func runJournalVerify(e *env, args []string) int {
	e.name += " verify"
	fs := flag.NewFlagSet(e.name, flag.ContinueOnError)
	fs.SetOutput(e.stderr)
	var keyArg string
	fs.StringVar(&keyArg, "public-key", "", "the server's ed25519 public key: base64 (as GET /api/journal/public-key gives it), or a file holding it, that JSON, or a PEM PUBLIC KEY")
	fs.StringVar(&keyArg, "key", "", "same as --public-key")
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "Usage: %s FILE --public-key KEY\n  verify an exported journal offline (FILE - reads stdin); exit 0 VALID, 1 INVALID, %d UNANCHORED\n\nFlags:\n", e.name, exitUnanchored)
		fs.PrintDefaults()
	}
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				return exitOK
			}
			return exitUsage
		}
		if fs.NArg() == 0 {
			break
		}
		pos, args = append(pos, fs.Arg(0)), fs.Args()[1:]
	}
	if len(pos) != 1 {
		fmt.Fprintf(e.stderr, "%s: want one FILE\nUsage: %s FILE --public-key KEY\n", e.name, e.name)
		return exitUsage
	}
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
	if pos[0] == "-" {
		in = os.Stdin
	} else {
		f, err := os.Open(pos[0])
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
		fmt.Fprintf(e.stderr, "%s: reading %s: %v\n", e.name, pos[0], err)
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
