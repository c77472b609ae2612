package journal

import (
	"bytes"
	"crypto/ed25519"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/hex"
	"encoding/pem"
	"fmt"
	"slices"
	"strings"

	"github.com/yukta/yukta/domain/fault"
)

// KeyIDBytes is how many bytes of the SHA-256 of a public key make its key
// id: 8 bytes, written as 16 lowercase hex digits.
const KeyIDBytes = 8

// MaxKeySetKeys bounds the keys one key set (a file, the public-key answer)
// may hold, so a hostile file cannot make the verifier hold millions.
const MaxKeySetKeys = 1000

// KeyID names a checkpoint signing key: the lowercase hex of the first
// KeyIDBytes bytes of the SHA-256 of the raw 32-byte ed25519 public key.
// It is "" for anything that is not an ed25519 public key.
func KeyID(pub ed25519.PublicKey) string {
	if len(pub) != ed25519.PublicKeySize {
		return ""
	}
	sum := sha256.Sum256(pub)
	return hex.EncodeToString(sum[:KeyIDBytes])
}

// validKeyID reports whether s has the form of a key id.
func validKeyID(s string) bool {
	if len(s) != 2*KeyIDBytes {
		return false
	}
	for i := 0; i < len(s); i++ {
		if !(s[i] >= '0' && s[i] <= '9' || s[i] >= 'a' && s[i] <= 'f') {
			return false
		}
	}
	return true
}

// KeySet is the public keys a verifier trusts, by key id. The zero KeySet
// holds none.
type KeySet struct{ keys map[string]ed25519.PublicKey }

// NewKeySet returns the set of the given keys; anything that is not a
// 32-byte ed25519 public key is left out.
func NewKeySet(keys ...ed25519.PublicKey) KeySet {
	var s KeySet
	for _, k := range keys {
		s.Add(k)
	}
	return s
}

// Add puts a key in the set (a key that is not an ed25519 public key is
// ignored).
func (s *KeySet) Add(k ed25519.PublicKey) {
	id := KeyID(k)
	if id == "" {
		return
	}
	if s.keys == nil {
		s.keys = map[string]ed25519.PublicKey{}
	}
	s.keys[id] = slices.Clone(k)
}

// Len is how many keys the set holds.
func (s KeySet) Len() int { return len(s.keys) }

// IDs are the set's key ids, sorted.
func (s KeySet) IDs() []string {
	ids := make([]string, 0, len(s.keys))
	for id := range s.keys {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	return ids
}

// Key returns the key with this id.
func (s KeySet) Key(id string) (ed25519.PublicKey, bool) {
	k, ok := s.keys[id]
	return k, ok
}

// ParseKeySet reads the public keys a verifier is given, in any of these
// forms (surrounding space ignored):
//
//   - the JSON of GET /api/journal/public-key: {"publicKey": "…"} and, from
//     servers that keep a key registry, "keys": [{"keyId", "publicKey", …}]
//     (every listed key, current and retired); a "keyId" given must be the
//     key's id, other members are ignored;
//   - one or more PEM "PUBLIC KEY" blocks;
//   - one or more standard base64 raw 32-byte keys, separated by space or
//     newlines.
//
// It refuses text that holds no key, a key that is not ed25519, a keyId
// that does not match its key, and more than MaxKeySetKeys keys, saying
// which.
func ParseKeySet(text []byte) (KeySet, error) {
	text = bytes.TrimSpace(text)
	bad := func(format string, args ...any) (KeySet, error) {
		return KeySet{}, fault.Newf(fault.ErrInvalid, "public keys: "+format, args...)
	}
	var set KeySet
	add := func(k ed25519.PublicKey) error {
		if set.Len() >= MaxKeySetKeys {
			return fault.Newf(fault.ErrInvalid, "public keys: more than %d keys", MaxKeySetKeys)
		}
		set.Add(k)
		return nil
	}
	switch {
	case len(text) == 0:
		return bad("nothing given: want the public-key JSON, PEM or base64")
	case text[0] == '{':
		if err := parseKeyJSON(text, add); err != nil {
			return KeySet{}, err
		}
	case bytes.HasPrefix(text, []byte("-----BEGIN")):
		for n := 1; len(text) > 0; n++ {
			block, rest := pem.Decode(text)
			if block == nil {
				return bad("PEM block %d does not parse", n)
			}
			if block.Type != "PUBLIC KEY" {
				return bad("PEM block %d is a %q, not a PUBLIC KEY", n, block.Type)
			}
			k, err := x509.ParsePKIXPublicKey(block.Bytes)
			pk, ok := k.(ed25519.PublicKey)
			if err != nil || !ok {
				return bad("PEM block %d is not an ed25519 public key", n)
			}
			if err := add(pk); err != nil {
				return KeySet{}, err
			}
			text = bytes.TrimSpace(rest)
		}
	default:
		for i, f := range strings.Fields(string(text)) {
			k, err := decodeRawKey(f)
			if err != nil {
				return bad("key %d: %v", i+1, err)
			}
			if err := add(k); err != nil {
				return KeySet{}, err
			}
		}
	}
	if set.Len() == 0 {
		return bad("no key found")
	}
	return set, nil
}

// decodeRawKey reads the standard base64 of a raw 32-byte ed25519 key.
func decodeRawKey(s string) (ed25519.PublicKey, error) {
	raw, err := base64.StdEncoding.DecodeString(s)
	if err != nil || len(raw) != ed25519.PublicKeySize {
		return nil, fmt.Errorf("%q is not the standard base64 of a %d-byte ed25519 public key", shorten(s), ed25519.PublicKeySize)
	}
	return ed25519.PublicKey(raw), nil
}

// parseKeyJSON reads the public-key answer.
func parseKeyJSON(text []byte, add func(ed25519.PublicKey) error) error {
	bad := func(format string, args ...any) error {
		return fault.Newf(fault.ErrInvalid, "public keys: "+format, args...)
	}
	v, err := decodeJSON(text)
	if err != nil {
		return bad("not JSON: %v", err)
	}
	doc, _ := v.(map[string]any)
	one := func(path string, m map[string]any) error {
		s, ok := m["publicKey"].(string)
		if !ok {
			return bad("%s.publicKey must be a base64 string", path)
		}
		k, err := decodeRawKey(s)
		if err != nil {
			return bad("%s.publicKey: %v", path, err)
		}
		if id, present := m["keyId"]; present {
			if id != KeyID(k) {
				return bad("%s.keyId %v is not the id of its key (%s)", path, id, KeyID(k))
			}
		}
		return add(k)
	}
	if _, ok := doc["publicKey"]; ok {
		if err := one("$", doc); err != nil {
			return err
		}
	}
	if list, present := doc["keys"]; present {
		items, ok := list.([]any)
		if !ok {
			return bad("keys must be an array")
		}
		for i, it := range items {
			m, ok := it.(map[string]any)
			if !ok {
				return bad("keys[%d] must be an object", i)
			}
			if err := one(fmt.Sprintf("keys[%d]", i), m); err != nil {
				return err
			}
		}
	}
	return nil
}

// shorten cuts text quoted in an error.
func shorten(s string) string {
	if len(s) > 60 {
		return strings.ToValidUTF8(s[:60], "") + "…"
	}
	return s
}
