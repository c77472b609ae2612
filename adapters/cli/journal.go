package cli

import (
	"bufio"
	"bytes"
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
		Use: "verify FILE [--public-key KEYS]...",
		Short: fmt.Sprintf("verify an exported journal offline, no server needed (FILE - reads stdin); exit 0 VALID, 1 INVALID, %d UNANCHORED; "+
			"without --public-key the chain is checked but not the signature, so the best answer is UNANCHORED", exitUnanchored),
		Args: argsBetween(1, 1),
	}
	var keyArgs []string
	usage := "the server's ed25519 public keys: the answer of GET /api/journal/public-key (saved to a file, every key it lists, " +
		"current and retired), a base64 key, or a file holding base64 keys or PEM PUBLIC KEYs; repeat for more keys. " +
		"The checkpoint's keyId picks the key"
	verify.Flags().StringArrayVar(&keyArgs, "public-key", nil, usage)
	verify.Flags().StringArrayVar(&keyArgs, "key", nil, "same as --public-key")
	a.local(verify, func(e *env, pos []string) int { return runJournalVerify(e, pos[0], keyArgs) })
	keys := &cobra.Command{
		Use:   "keys",
		Short: "print the server's journal public keys (current and retired) as JSON, to save for journal verify --public-key",
		Args:  argsBetween(0, 0),
	}
	a.leaf(keys, runJournalKeys)
	return a.group("journal", "export an execution's journal, list the keys that sign them, or verify an export offline", export, keys, verify)
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

// runJournalKeys writes the answer of GET /api/journal/public-key as the
// server sends it: the JSON journal verify --public-key reads.
func runJournalKeys(e *env, _ []string) int {
	res, err := e.api.GetJournalPublicKey(e.ctx)
	if err != nil {
		return e.callError(err)
	}
	defer res.Body.Close()
	body, err := io.ReadAll(io.LimitReader(res.Body, 1<<20))
	if err != nil {
		fmt.Fprintf(e.stderr, "%s: %v\n", e.name, err)
		return exitFailed
	}
	if res.StatusCode != http.StatusOK {
		return e.problem(res, body)
	}
	fmt.Fprintf(e.stdout, "%s\n", bytes.TrimSpace(body))
	return exitOK
}

// runJournalVerify verifies an export offline: no server, no database.
func runJournalVerify(e *env, file string, keyArgs []string) int {
	var keys journal.KeySet
	for _, arg := range keyArgs {
		set, err := readKeySet(arg)
		if err != nil {
			fmt.Fprintf(e.stderr, "%s: --public-key: %v\n", e.name, err)
			return exitUsage
		}
		for _, id := range set.IDs() {
			k, _ := set.Key(id)
			keys.Add(k)
		}
	}
	if len(keyArgs) == 0 {
		fmt.Fprintf(e.stderr, "%s: no --public-key: the chain is checked but not the checkpoint's signature, so the best answer is UNANCHORED; "+
			"save the server's keys with `%s journal keys > keys.json` and pass --public-key keys.json\n", e.name, e.name)
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
	res := journal.VerifyExportKeys(lines, keys)
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

// readKeySet reads public keys given inline (base64, the public-key JSON)
// or in a file (the same, or PEM), as journal.ParseKeySet reads them.
func readKeySet(arg string) (journal.KeySet, error) {
	inline, inlineErr := journal.ParseKeySet([]byte(arg))
	if inlineErr == nil {
		return inline, nil
	}
	b, err := os.ReadFile(arg)
	if err != nil {
		return journal.KeySet{}, fmt.Errorf("%q is neither a key (%v) nor a readable file (%v)", arg, inlineErr, err)
	}
	set, err := journal.ParseKeySet(b)
	if err != nil {
		return journal.KeySet{}, fmt.Errorf("%s: %v", arg, err)
	}
	return set, nil
}
