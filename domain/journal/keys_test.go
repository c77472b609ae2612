package journal

import (
	"bytes"
	"crypto/ed25519"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/hex"
	"encoding/pem"
	"errors"
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/yukta/yukta/domain/fault"
)

// TestKeyIDIsTheDocumentedPrefix: a key id is the lowercase hex of the
// first 8 bytes of the SHA-256 of the raw public key, and nothing else has
// one.
func TestKeyIDIsTheDocumentedPrefix(t *testing.T) {
	pub, _ := serverKey(t, 1)
	sum := sha256.Sum256(pub)
	if got, want := KeyID(pub), hex.EncodeToString(sum[:8]); got != want || !validKeyID(got) {
		t.Errorf("KeyID = %q, want %q", got, want)
	}
	if KeyID(pub[:31]) != "" || KeyID(nil) != "" {
		t.Error("a short key has a key id")
	}
}

func pemOf(t *testing.T, pub ed25519.PublicKey) string {
	der, err := x509.MarshalPKIXPublicKey(pub)
	if err != nil {
		t.Fatal(err)
	}
	return string(pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: der}))
}

// TestParseKeySetForms: every form a verifier may be given reads to the
// same keys; the public-key answer of a server with a key registry gives
// every key it lists.
func TestParseKeySetForms(t *testing.T) {
	a, _ := serverKey(t, 1)
	b, _ := serverKey(t, 2)
	ba, bb := base64.StdEncoding.EncodeToString(a), base64.StdEncoding.EncodeToString(b)
	both := []string{KeyID(a), KeyID(b)}
	if both[0] > both[1] {
		both[0], both[1] = both[1], both[0]
	}
	for _, c := range []struct {
		name, text string
		want       []string
	}{
		{"base64", " " + ba + "\n", []string{KeyID(a)}},
		{"two base64", ba + "\n" + bb, both},
		{"old answer", `{"algorithm":"ed25519","publicKey":"` + ba + `"}`, []string{KeyID(a)}},
		{"answer with keys", fmt.Sprintf(`{"algorithm":"ed25519","publicKey":%q,"keyId":%q,"keys":[{"keyId":%q,"publicKey":%q,"status":"current"},{"keyId":%q,"publicKey":%q,"status":"retired","retiredAt":"2026-01-01T00:00:00Z"}],"future":1}`,
			bb, KeyID(b), KeyID(b), bb, KeyID(a), ba), both},
		{"keys only", fmt.Sprintf(`{"keys":[{"publicKey":%q}]}`, ba), []string{KeyID(a)}},
		{"pem", pemOf(t, a), []string{KeyID(a)}},
		{"two pem", pemOf(t, a) + "\n" + pemOf(t, b), both},
	} {
		set, err := ParseKeySet([]byte(c.text))
		if err != nil {
			t.Errorf("%s: %v", c.name, err)
			continue
		}
		if got := strings.Join(set.IDs(), ","); got != strings.Join(c.want, ",") {
			t.Errorf("%s: keys %s, want %s", c.name, got, strings.Join(c.want, ","))
		}
	}
}

// TestParseKeySetRefuses: text that holds no usable key is refused with an
// ErrInvalid that says what is wrong.
func TestParseKeySetRefuses(t *testing.T) {
	a, _ := serverKey(t, 1)
	ba := base64.StdEncoding.EncodeToString(a)
	priv := pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: []byte{1, 2, 3}})
	for _, c := range []struct{ name, text, want string }{
		{"empty", "  \n", "nothing given"},
		{"not base64", "not-a-key", "key 1"},
		{"short key", base64.StdEncoding.EncodeToString(a[:16]), "32-byte"},
		{"second bad", ba + " xyz", "key 2"},
		{"bad json", `{"publicKey":`, "not JSON"},
		{"json without keys", `{"algorithm":"ed25519"}`, "no key found"},
		{"json bad key", `{"publicKey":"abc"}`, "$.publicKey"},
		{"json wrong id", `{"publicKey":"` + ba + `","keyId":"0000000000000000"}`, "is not the id of its key"},
		{"json keys not array", `{"keys":{}}`, "keys must be an array"},
		{"json key not object", `{"keys":[1]}`, "keys[0] must be an object"},
		{"json key without publicKey", `{"keys":[{"keyId":"x"}]}`, "keys[0].publicKey"},
		{"pem private", string(priv), "not a PUBLIC KEY"},
		{"pem garbage", "-----BEGIN PUBLIC KEY-----\nnope", "does not parse"},
		{"too many", manyKeys(MaxKeySetKeys + 1), fmt.Sprintf("more than %d keys", MaxKeySetKeys)},
	} {
		_, err := ParseKeySet([]byte(c.text))
		if err == nil || !errors.Is(err, fault.ErrInvalid) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want an invalid-input error saying %q", c.name, err, c.want)
		}
	}
}

func manyKeys(n int) string {
	var b strings.Builder
	for i := range n {
		sum := sha256.Sum256([]byte(fmt.Sprint(i)))
		priv := ed25519.NewKeyFromSeed(sum[:])
		b.WriteString(base64.StdEncoding.EncodeToString(priv.Public().(ed25519.PublicKey)) + "\n")
	}
	return b.String()
}

// TestVerifyWithAKeySet: with the current and retired keys, a checkpoint
// signed by either verifies VALID (picked by its key id); one signed before
// keys were named verifies with whichever key of the set signed it; a set
// lacking the signer says which key it lacks.
func TestVerifyWithAKeySet(t *testing.T) {
	orig, cp, pub := fixture(t) // signed by key 1
	newPub, newPriv := serverKey(t, 9)
	last := orig[len(orig)-1]
	cpNew, err := SignCheckpoint(newPriv, last.ExecutionID, last.Sequence, last.Digest)
	if err != nil {
		t.Fatal(err)
	}
	if cpNew.KeyID != KeyID(newPub) || cp.KeyID != KeyID(pub) {
		t.Fatalf("checkpoints name keys %q %q", cpNew.KeyID, cp.KeyID)
	}
	set := NewKeySet(newPub, pub)
	unnamed := cp
	unnamed.KeyID = ""
	for name, c := range map[string]Checkpoint{"old key": cp, "new key": cpNew, "no key id": unnamed} {
		if res := VerifyCheckpointKeys(orig, c, set); res.Result != VerdictValid {
			t.Errorf("%s: %+v", name, res)
		}
	}
	res := VerifyCheckpointKeys(orig, cp, NewKeySet(newPub))
	if res.Result != VerdictUnanchored || res.Reason != ReasonUnknownKey || !strings.Contains(res.Detail, cp.KeyID) || !strings.Contains(res.Detail, KeyID(newPub)) {
		t.Errorf("a set without the signer: %+v", res)
	}
	if res := VerifyCheckpointKeys(orig, cp, KeySet{}); res.Reason != ReasonNoPublicKey {
		t.Errorf("an empty set: %+v", res)
	}
	if res := VerifyCheckpointKeys(orig, unnamed, NewKeySet(newPub, mustPub(t, 4))); res.Reason != ReasonBadSignature || !strings.Contains(res.Detail, "any of the 2 keys") {
		t.Errorf("no key id, no key of the set signed it: %+v", res)
	}
	// The export line carries the key id, and reads back with it.
	line, err := CheckpointLine(cpNew)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(line), `"keyId":"`+cpNew.KeyID+`"`) {
		t.Errorf("checkpoint line %s has no keyId", line)
	}
	back, err := ParseCheckpointLine(line)
	if err != nil || back.KeyID != cpNew.KeyID {
		t.Errorf("checkpoint line read back: %+v %v", back, err)
	}
	for _, bad := range []string{`"keyId":"ABC"`, `"keyId":7`, `"keyId":""`} {
		edited := strings.Replace(string(line), `"keyId":"`+cpNew.KeyID+`"`, bad, 1)
		if _, err := ParseCheckpointLine([]byte(edited)); err == nil || !strings.Contains(err.Error(), "keyId must be 16 lowercase hex digits") {
			t.Errorf("checkpoint line with %s: %v", bad, err)
		}
	}
}

func mustPub(t *testing.T, seed byte) ed25519.PublicKey {
	pub, _ := serverKey(t, seed)
	return pub
}

// FuzzParseKeySet: any text either is refused with an ErrInvalid or reads
// to at least one and at most MaxKeySetKeys ed25519 keys, each under its
// own id; it never panics.
func FuzzParseKeySet(f *testing.F) {
	pub := ed25519.NewKeyFromSeed(make([]byte, 32)).Public().(ed25519.PublicKey)
	b := base64.StdEncoding.EncodeToString(pub)
	der, _ := x509.MarshalPKIXPublicKey(pub)
	for _, s := range []string{b, b + "\n" + b, `{"publicKey":"` + b + `"}`, `{"keys":[{"publicKey":"` + b + `","keyId":"` + KeyID(pub) + `"}]}`,
		string(pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: der})), "", "{", "-----BEGIN", `{"keys":[null]}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, text []byte) {
		set, err := ParseKeySet(text)
		if err != nil {
			if !errors.Is(err, fault.ErrInvalid) {
				t.Fatalf("error %v is not ErrInvalid", err)
			}
			if set.Len() != 0 {
				t.Fatal("a refused set holds keys")
			}
			return
		}
		if set.Len() < 1 || set.Len() > MaxKeySetKeys {
			t.Fatalf("%d keys", set.Len())
		}
		for _, id := range set.IDs() {
			k, ok := set.Key(id)
			if !ok || len(k) != ed25519.PublicKeySize || KeyID(k) != id {
				t.Fatalf("key %s is %x", id, k)
			}
		}
	})
}

// FuzzParseCheckpointLine: a checkpoint line that parses (with or without
// a keyId) writes back to a line that parses to the same checkpoint; no
// line panics the parser.
func FuzzParseCheckpointLine(f *testing.F) {
	priv := ed25519.NewKeyFromSeed(make([]byte, 32))
	cp, _ := SignCheckpoint(priv, "e-1", 3, "sha256:"+strings.Repeat("ab", 32))
	named, _ := CheckpointLine(cp)
	cp.KeyID = ""
	unnamed, _ := CheckpointLine(cp)
	for _, s := range [][]byte{named, unnamed, []byte(`{"checkpoint":{}}`), []byte(`{"checkpoint":{"keyId":"zz"}}`), []byte("{")} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, line []byte) {
		cp, err := ParseCheckpointLine(line)
		if err != nil {
			if !errors.Is(err, fault.ErrInvalid) {
				t.Fatalf("error %v is not ErrInvalid", err)
			}
			return
		}
		if cp.KeyID != "" && !validKeyID(cp.KeyID) {
			t.Fatalf("key id %q parsed", cp.KeyID)
		}
		again, err := CheckpointLine(cp)
		if err != nil {
			t.Fatal(err)
		}
		back, err := ParseCheckpointLine(again)
		if err != nil || back.KeyID != cp.KeyID || back.Digest != cp.Digest || back.Sequence != cp.Sequence ||
			back.ExecutionID != cp.ExecutionID || !bytes.Equal(back.Signature, cp.Signature) {
			t.Fatalf("round trip of %s: %+v %v", again, back, err)
		}
	})
}

// TestDocsKeyAnswerIsTrue: the public-key answer docs/journal.md prints
// reads as a key set whose key ids are those of its keys.
func TestDocsKeyAnswerIsTrue(t *testing.T) {
	b, err := os.ReadFile("../../docs/journal.md")
	if err != nil {
		t.Fatal(err)
	}
	_, rest, ok := strings.Cut(string(b), "The public-key answer:\n")
	_, rest, ok1 := strings.Cut(rest, "```json\n")
	block, _, ok2 := strings.Cut(rest, "\n```\n")
	if !ok || !ok1 || !ok2 {
		t.Fatal("docs/journal.md does not print the public-key answer")
	}
	set, err := ParseKeySet([]byte(block))
	if err != nil || strings.Join(set.IDs(), ",") != "0e26b1de28579822,4576e81edafdc049" {
		t.Fatalf("the documented answer reads as %v, %v", set.IDs(), err)
	}
}
