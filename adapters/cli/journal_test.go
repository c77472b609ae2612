package cli

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"crypto/x509"
	"encoding/base64"
	"encoding/pem"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/yukta/yukta/domain/journal"
)

// TestJournalVerifyOffline: `yukta journal verify` needs no server; its exit
// code and output say VALID, INVALID (with where) or UNANCHORED, and the key
// is read in each documented form.
func TestJournalVerifyOffline(t *testing.T) {
	priv := ed25519.NewKeyFromSeed(bytes.Repeat([]byte{4}, ed25519.SeedSize))
	pub := priv.Public().(ed25519.PublicKey)
	var recs []journal.Record
	var b bytes.Buffer
	for i := range 5 {
		var prev *journal.Record
		if i > 0 {
			prev = &recs[i-1]
		}
		r, err := journal.Next(prev, "e-1", journal.KindEvent, time.Unix(1_800_000_000, int64(i)), map[string]any{"type": "NodeStatusChanged", "seq": i + 1})
		if err != nil {
			t.Fatal(err)
		}
		recs = append(recs, r)
		line, _ := r.MarshalJSON()
		b.Write(append(line, '\n'))
	}
	cp, err := journal.SignCheckpoint(priv, "e-1", 5, recs[4].Digest)
	if err != nil {
		t.Fatal(err)
	}
	cpl, _ := journal.CheckpointLine(cp)
	b.Write(append(cpl, '\n'))
	dir := t.TempDir()
	write := func(name string, data []byte) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, data, 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	good := write("good.ndjson", b.Bytes())
	tampered := write("bad.ndjson", bytes.Replace(b.Bytes(), []byte(`"seq":3`), []byte(`"seq":33`), 1))
	key := base64.StdEncoding.EncodeToString(pub)
	der, _ := x509.MarshalPKIXPublicKey(pub)
	pemFile := write("key.pem", pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: der}))
	jsonFile := write("key.json", []byte(`{"algorithm":"ed25519","publicKey":"`+key+`"}`))
	// A rotated server's answer: another key current, this one retired.
	other := ed25519.NewKeyFromSeed(bytes.Repeat([]byte{5}, ed25519.SeedSize)).Public().(ed25519.PublicKey)
	otherKey := base64.StdEncoding.EncodeToString(other)
	keysFile := write("keys.json", []byte(fmt.Sprintf(`{"algorithm":"ed25519","publicKey":%q,"keyId":%q,"keys":[`+
		`{"keyId":%q,"algorithm":"ed25519","publicKey":%q,"status":"current","registeredAt":"2026-01-02T00:00:00Z"},`+
		`{"keyId":%q,"algorithm":"ed25519","publicKey":%q,"status":"retired","registeredAt":"2026-01-01T00:00:00Z","retiredAt":"2026-01-02T00:00:00Z"}]}`,
		otherKey, journal.KeyID(other), journal.KeyID(other), otherKey, journal.KeyID(pub), key)))
	badIDFile := write("badid.json", []byte(`{"keys":[{"keyId":"0000000000000000","publicKey":"`+key+`"}]}`))
	// No server is reachable at this address: verify must not need one.
	getenv := func(k string) string {
		if k == "YUKTA_SERVER" {
			return "http://127.0.0.1:1"
		}
		return ""
	}
	for _, c := range []struct {
		args []string
		code int
		want []string
	}{
		{[]string{"verify", good, "--public-key", key}, 0, []string{"result: VALID", "sequence: 5"}},
		{[]string{"verify", "--public-key", pemFile, good}, 0, []string{"result: VALID"}},
		{[]string{"verify", good, "--key", jsonFile}, 0, []string{"result: VALID"}},
		{[]string{"verify", good}, exitUnanchored, []string{"result: UNANCHORED", "reason: no_public_key"}},
		{[]string{"verify", tampered, "--public-key", key}, exitFailed, []string{"result: INVALID", "firstBadSequence: 3", "reason: digest_mismatch"}},
		{[]string{"verify", good, "--public-key", "not-a-key"}, exitUsage, nil},
		{[]string{"verify", good, "--public-key", keysFile}, 0, []string{"result: VALID"}},
		{[]string{"verify", good, "--public-key", otherKey, "--public-key", key}, 0, []string{"result: VALID"}},
		{[]string{"verify", good, "--public-key", otherKey}, exitUnanchored, []string{"result: UNANCHORED", "reason: unknown_key", journal.KeyID(pub)}},
		{[]string{"verify", good, "--public-key", badIDFile}, exitUsage, nil},
		{[]string{"verify"}, exitUsage, nil},
		{[]string{"frobnicate"}, exitUsage, nil},
	} {
		var out, errOut bytes.Buffer
		code := Run(context.Background(), "journal", c.args, &out, &errOut, getenv)
		if code != c.code {
			t.Errorf("journal %v: exit %d, want %d\n%s%s", c.args, code, c.code, out.String(), errOut.String())
			continue
		}
		for _, w := range c.want {
			if !strings.Contains(out.String(), w) {
				t.Errorf("journal %v: output lacks %q:\n%s", c.args, w, out.String())
			}
		}
	}
}
