package access

import (
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base32"
	"fmt"
	"io"
	"strings"

	"github.com/yukta/yukta/domain/fault"
)

// A token is a secret the server draws and shows once: a stored API key's
// secret (APIKeyTokens, "yk_") and a supervisor credential
// (domain/supervisor, "yks_"). The server keeps only its SHA-256.
//
// A token is its kind's prefix followed by 48 characters of lowercase RFC
// 4648 base32 (a-z, 2-7: safe in URLs, headers and shells) that encode 30
// bytes: 25 random bytes (200 bits) and a 5-byte checksum, the first 40
// bits of SHA-256 over the prefix and the random bytes. The prefix makes a
// leaked token easy to recognise (and to scan for); the checksum refuses a
// typo or a made-up string before anything is looked up. The checksum is
// no secret: anyone can compute it, so passing it proves nothing but the
// format. The hint (the prefix and the first 6 characters, 30 bits) names
// a token in lists and logs and still leaves 170 random bits unknown.
const (
	tokenRandomBytes = 25
	tokenCheckBytes  = 5
	// TokenBodyLen is the length of every token after its prefix.
	TokenBodyLen = (tokenRandomBytes + tokenCheckBytes) * 8 / 5
	hintBodyLen  = 6
)

// tokenAlphabet is lowercase RFC 4648 base32. 30 bytes are exactly 48
// characters, so no padding, and no two strings decode to the same bytes.
const tokenAlphabet = "abcdefghijklmnopqrstuvwxyz234567"

var tokenEncoding = base32.NewEncoding(tokenAlphabet).WithPadding(base32.NoPadding)

// ErrTokenMalformed: the string is not a token of the kind (prefix,
// length, alphabet or checksum).
var ErrTokenMalformed = fmt.Errorf("access: token is malformed: %w", fault.ErrInvalid)

// TokenHash is the SHA-256 of a whole token: all the server stores of it.
type TokenHash [sha256.Size]byte

// TokenKind is one kind of token, told apart by its prefix.
type TokenKind struct{ prefix string }

// NewTokenKind returns the kind of tokens that start with prefix.
func NewTokenKind(prefix string) TokenKind { return TokenKind{prefix: prefix} }

// APIKeyTokens are the secrets of stored API keys: "yk_" and 48
// characters. A supervisor credential's "yks_" differs in its fourth
// character, so neither parses as the other.
var APIKeyTokens = NewTokenKind("yk_")

// Prefix is what every token of the kind starts with.
func (k TokenKind) Prefix() string { return k.prefix }

// Len is the length of every token of the kind.
func (k TokenKind) Len() int { return len(k.prefix) + TokenBodyLen }

// HintLen is the length of every token's hint.
func (k TokenKind) HintLen() int { return len(k.prefix) + hintBodyLen }

// New draws a token's 200 random bits from random (crypto/rand.Reader in
// the server) and adds the checksum.
func (k TokenKind) New(random io.Reader) (Token, error) {
	var raw [tokenRandomBytes + tokenCheckBytes]byte
	if _, err := io.ReadFull(random, raw[:tokenRandomBytes]); err != nil {
		return Token{}, fmt.Errorf("access: draw %s token: %w", k.prefix, err)
	}
	sum := k.checksum(raw[:tokenRandomBytes])
	copy(raw[tokenRandomBytes:], sum[:])
	return Token{s: k.prefix + tokenEncoding.EncodeToString(raw[:]), hintLen: k.HintLen()}, nil
}

func (k TokenKind) checksum(random []byte) [tokenCheckBytes]byte {
	h := sha256.New()
	h.Write([]byte(k.prefix))
	h.Write(random)
	var out [tokenCheckBytes]byte
	copy(out[:], h.Sum(nil))
	return out
}

// Parse checks that s is a well-formed token of the kind (prefix, length,
// alphabet, checksum) and returns its hash, or ErrTokenMalformed. It reads
// nothing but s, so a malformed token costs no lookup. The error never
// repeats s.
func (k TokenKind) Parse(s string) (TokenHash, error) {
	body, ok := strings.CutPrefix(s, k.prefix)
	if !ok || len(body) != TokenBodyLen {
		return TokenHash{}, ErrTokenMalformed
	}
	// The decoder skips line breaks; only the alphabet is accepted here.
	for i := 0; i < len(body); i++ {
		if strings.IndexByte(tokenAlphabet, body[i]) < 0 {
			return TokenHash{}, ErrTokenMalformed
		}
	}
	raw, err := tokenEncoding.DecodeString(body)
	if err != nil || len(raw) != tokenRandomBytes+tokenCheckBytes {
		return TokenHash{}, ErrTokenMalformed
	}
	sum := k.checksum(raw[:tokenRandomBytes])
	if subtle.ConstantTimeCompare(sum[:], raw[tokenRandomBytes:]) != 1 {
		return TokenHash{}, ErrTokenMalformed
	}
	return sha256.Sum256([]byte(s)), nil
}

// Hint returns the prefix and first characters of s, or "" when s is too
// short to have one.
func (k TokenKind) Hint(s string) string {
	if len(s) < k.HintLen() || !strings.HasPrefix(s, k.prefix) {
		return ""
	}
	return s[:k.HintLen()]
}

// Token is a secret the server drew. It prints as its hint, never as
// itself (String, GoString, MarshalText), so a token that reaches a log
// line or an error by mistake shows nothing usable; Reveal is the one way
// to the secret, for the answer that hands it over once.
type Token struct {
	s       string
	hintLen int
}

// Reveal returns the secret.
func (t Token) Reveal() string { return t.s }

// Hash returns the token's SHA-256.
func (t Token) Hash() TokenHash { return sha256.Sum256([]byte(t.s)) }

// Hint returns the prefix and the first characters of the token.
func (t Token) Hint() string {
	if t.hintLen == 0 || len(t.s) < t.hintLen {
		return ""
	}
	return t.s[:t.hintLen]
}

// IsZero reports whether t is the zero Token.
func (t Token) IsZero() bool { return t.s == "" }

// String returns the hint followed by "…".
func (t Token) String() string { return t.Hint() + "…" }

// GoString is String, so %#v hides the secret too.
func (t Token) GoString() string { return t.String() }

// MarshalText is String, so encoders hide the secret too.
func (t Token) MarshalText() ([]byte, error) { return []byte(t.String()), nil }
