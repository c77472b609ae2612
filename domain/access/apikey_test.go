package access_test

import (
	"bytes"
	"crypto/rand"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/yukta/yukta/domain/access"
	"github.com/yukta/yukta/domain/fault"
)

var keyAt = time.Date(2026, 3, 1, 12, 0, 0, 123456789, time.UTC)

func mustAPIKey(t *testing.T, spec access.APIKeySpec) (access.APIKey, access.Token) {
	t.Helper()
	k, tok, err := access.NewAPIKey(spec, rand.Reader, keyAt, "key:admin", "rest")
	if err != nil {
		t.Fatalf("NewAPIKey(%+v): %v", spec, err)
	}
	return k, tok
}

// violations returns path: message of every violation of err.
func violations(t *testing.T, err error) map[string]string {
	t.Helper()
	ve, ok := errors.AsType[*fault.ValidationError](err)
	if !ok || !errors.Is(err, fault.ErrInvalid) {
		t.Fatalf("error %v is not a validation error", err)
	}
	out := map[string]string{}
	for _, v := range ve.Violations {
		out[v.Path] += v.Message
	}
	return out
}

func TestNewAPIKey(t *testing.T) {
	t.Parallel()
	k, tok := mustAPIKey(t, access.APIKeySpec{Name: "ci-bot", Role: "operator", Sessions: []string{"web", "etl"}, TTL: "720h"})
	if k.Name() != "ci-bot" || k.Role() != access.Operator || strings.Join(k.Sessions(), ",") != "etl,web" ||
		!k.CreatedAt().Equal(keyAt.Truncate(time.Microsecond)) || !k.ExpiresAt().Equal(keyAt.Truncate(time.Microsecond).Add(720*time.Hour)) ||
		k.CreatedBy() != "key:admin" || k.CreatedVia() != "rest" || k.Hash() != tok.Hash() || k.Hint() != tok.Hint() || !k.RotatedAt().IsZero() {
		t.Fatalf("key %+v", k)
	}
	if s := tok.Reveal(); !strings.HasPrefix(s, "yk_") || len(s) != access.APIKeyTokens.Len() || len(s) != 51 || tok.Hint() != s[:9] {
		t.Fatalf("token %q", tok.Hint())
	}
	if p := k.Principal(); p.Actor() != "key:ci-bot" || p.Role() != access.Operator || !p.SessionVisible("etl") || p.SessionVisible("other") {
		t.Fatalf("principal %v", p)
	}
	at := time.Date(2027, 6, 1, 0, 0, 0, 0, time.FixedZone("x", 3600))
	k2, _ := mustAPIKey(t, access.APIKeySpec{Name: "forever", Role: "VIEWER", ExpiresAt: at.Format(time.RFC3339)})
	if !k2.ExpiresAt().Equal(at) || k2.ExpiresAt().Location() != time.UTC || k2.Sessions() != nil {
		t.Fatalf("expiresAt %s, sessions %v", k2.ExpiresAt(), k2.Sessions())
	}
	k3, _ := mustAPIKey(t, access.APIKeySpec{Name: "never", Role: "ADMIN"})
	if !k3.ExpiresAt().IsZero() || k3.Expired(keyAt.Add(100*365*24*time.Hour)) {
		t.Fatal("a key without an expiry expires")
	}
}

// Every bad field is reported at once, at its own path, with the next step;
// none repeats a long value.
func TestNewAPIKeyRefusesEachField(t *testing.T) {
	t.Parallel()
	_, _, err := access.NewAPIKey(access.APIKeySpec{Name: "bad name", Role: "ROOT", Sessions: []string{}, ExpiresAt: "tomorrow"}, rand.Reader, keyAt, "", "")
	vs := violations(t, err)
	for _, p := range []string{"name", "role", "sessions", "expiresAt"} {
		if vs[p] == "" {
			t.Errorf("no violation at %s: %v", p, vs)
		}
	}
	for _, c := range []struct {
		spec       access.APIKeySpec
		path, want string
	}{
		{access.APIKeySpec{Name: "x", Role: "VIEWER", ExpiresAt: keyAt.Add(-time.Second).Format(time.RFC3339)}, "expiresAt", "not in the future"},
		{access.APIKeySpec{Name: "x", Role: "VIEWER", ExpiresAt: keyAt.Add(3 * 365 * 24 * time.Hour).Format(time.RFC3339)}, "expiresAt", "more than 2 years"},
		{access.APIKeySpec{Name: "x", Role: "VIEWER", TTL: "17521h"}, "ttl", "more than 2 years"},
		{access.APIKeySpec{Name: "x", Role: "VIEWER", TTL: "-1h"}, "ttl", "not a positive duration"},
		{access.APIKeySpec{Name: "x", Role: "VIEWER", TTL: "0s"}, "ttl", "not a positive duration"},
		{access.APIKeySpec{Name: "x", Role: "VIEWER", TTL: "a week"}, "ttl", "not a duration"},
		{access.APIKeySpec{Name: "x", Role: "VIEWER", TTL: "1h", ExpiresAt: "2030-01-01T00:00:00Z"}, "ttl", "cannot be sent with expiresAt"},
		{access.APIKeySpec{Name: "x", Role: "VIEWER", Sessions: []string{"a", "a"}}, "sessions", "listed twice"},
		{access.APIKeySpec{Name: "x", Role: "VIEWER", Sessions: []string{"Not An Id"}}, "sessions", "not a session id"},
		{access.APIKeySpec{Name: strings.Repeat("n", 65), Role: "VIEWER"}, "name", "1 to 64"},
		{access.APIKeySpec{Name: "x", Role: ""}, "role", "VIEWER"},
	} {
		_, _, err := access.NewAPIKey(c.spec, rand.Reader, keyAt, "", "")
		if got := violations(t, err)[c.path]; !strings.Contains(got, c.want) {
			t.Errorf("%+v: %s says %q, want %q", c.spec, c.path, got, c.want)
		}
	}
	// The bound is exact: 2 years is allowed.
	if _, _, err := access.NewAPIKey(access.APIKeySpec{Name: "x", Role: "VIEWER", TTL: access.MaxAPIKeyLifetime.String()}, rand.Reader, keyAt, "", ""); err != nil {
		t.Fatalf("ttl of exactly the bound: %v", err)
	}
	long := strings.Repeat("s", 200)
	_, _, err = access.NewAPIKey(access.APIKeySpec{Name: "x", Role: "VIEWER", TTL: long}, rand.Reader, keyAt, "", "")
	if strings.Contains(err.Error(), long[:60]) {
		t.Fatalf("the error repeats a long value: %v", err)
	}
}

func TestAPIKeyRotate(t *testing.T) {
	t.Parallel()
	k, tok := mustAPIKey(t, access.APIKeySpec{Name: "ci", Role: "ADMIN", TTL: "1h"})
	at := keyAt.Add(10 * time.Minute)
	r, tok2, err := k.Rotate(rand.Reader, at, "key:root", "mcp")
	if err != nil {
		t.Fatal(err)
	}
	if r.Hash() == k.Hash() || r.Hash() != tok2.Hash() || tok2.Reveal() == tok.Reveal() || r.Name() != "ci" || !r.ExpiresAt().Equal(k.ExpiresAt()) ||
		!r.RotatedAt().Equal(at.Truncate(time.Microsecond)) || r.RotatedBy() != "key:root" || r.RotatedVia() != "mcp" || !r.CreatedAt().Equal(k.CreatedAt()) {
		t.Fatalf("rotated %+v", r)
	}
	if _, _, err := k.Rotate(rand.Reader, keyAt.Add(time.Hour), "", ""); !errors.Is(err, fault.ErrConflict) || !strings.Contains(err.Error(), "create it again") {
		t.Fatalf("rotating an expired key: %v", err)
	}
}

// A new expiry replaces the old one, keeps the secret, and is checked as at
// creation; an expired key gets none.
func TestAPIKeyWithExpiry(t *testing.T) {
	t.Parallel()
	k, tok := mustAPIKey(t, access.APIKeySpec{Name: "ci", Role: "ADMIN", TTL: "1h"})
	at := keyAt.Add(10 * time.Minute)
	e, err := k.WithExpiry("", "5m", at)
	if err != nil || !e.ExpiresAt().Equal(at.Add(5*time.Minute).Truncate(time.Microsecond)) || e.Hash() != tok.Hash() || e.Name() != "ci" || !k.ExpiresAt().Equal(keyAt.Add(time.Hour).Truncate(time.Microsecond)) {
		t.Fatalf("ttl 5m: %v %v (was %v)", e.ExpiresAt(), err, k.ExpiresAt())
	}
	when := at.Add(72 * time.Hour).UTC()
	if e, err = k.WithExpiry(when.Format(time.RFC3339), "", at); err != nil || !e.ExpiresAt().Equal(when.Truncate(time.Second)) {
		t.Fatalf("expiresAt: %v %v", e.ExpiresAt(), err)
	}
	never, _ := mustAPIKey(t, access.APIKeySpec{Name: "n", Role: "VIEWER"})
	if e, err = never.WithExpiry("", "1h", at); err != nil || e.ExpiresAt().IsZero() {
		t.Fatalf("a key without an expiry gets one: %v %v", e.ExpiresAt(), err)
	}
	for _, c := range []struct{ expiresAt, ttl, path string }{
		{"", "", "expiresAt"}, {"", "-1m", "ttl"}, {"", "20000h", "ttl"}, {"yesterday", "", "expiresAt"},
		{at.Add(-time.Minute).Format(time.RFC3339), "", "expiresAt"}, {when.Format(time.RFC3339), "1h", "ttl"},
	} {
		_, err := k.WithExpiry(c.expiresAt, c.ttl, at)
		if v := violations(t, err); v[c.path] == "" {
			t.Errorf("expiresAt %q ttl %q: %v, want a violation at %s", c.expiresAt, c.ttl, err, c.path)
		}
	}
	if _, err := k.WithExpiry("", "1h", keyAt.Add(time.Hour)); !errors.Is(err, fault.ErrConflict) || !strings.Contains(err.Error(), "create it again") {
		t.Fatalf("an expired key: %v", err)
	}
}

// The ring matches only the current secret of an unexpired key, refuses
// anything that is not an API key token before comparing, and never takes
// a supervisor credential's yks_ token.
func TestAPIKeyRing(t *testing.T) {
	t.Parallel()
	a, ta := mustAPIKey(t, access.APIKeySpec{Name: "a", Role: "ADMIN"})
	b, tb := mustAPIKey(t, access.APIKeySpec{Name: "b", Role: "VIEWER", TTL: "1h"})
	ring := access.NewAPIKeyRing([]access.APIKey{a, b})
	if ring.Len() != 2 || (*access.APIKeyRing)(nil).Len() != 0 {
		t.Fatal("Len")
	}
	if k, ok := ring.Authenticate(ta.Reveal(), keyAt); !ok || k.Name() != "a" {
		t.Fatal("a's secret")
	}
	if k, ok := ring.Authenticate(tb.Reveal(), keyAt.Add(59*time.Minute)); !ok || k.Name() != "b" {
		t.Fatal("b's secret before expiry")
	}
	if _, ok := ring.Authenticate(tb.Reveal(), keyAt.Add(time.Hour)); ok {
		t.Fatal("b's secret at its expiry")
	}
	other, _ := access.APIKeyTokens.New(rand.Reader)
	yks, _ := access.NewTokenKind("yks_").New(bytes.NewReader(bytes.Repeat([]byte{1}, 32)))
	for _, s := range []string{"", other.Reveal(), ta.Reveal() + "a", strings.ToUpper(ta.Reveal()), yks.Reveal(), "yk_" + yks.Reveal()[4:]} {
		if _, ok := ring.Authenticate(s, keyAt); ok {
			t.Errorf("%q authenticated", s)
		}
	}
	if _, ok := (*access.APIKeyRing)(nil).Authenticate(ta.Reveal(), keyAt); ok {
		t.Fatal("nil ring")
	}
}

func TestRestoreAPIKey(t *testing.T) {
	t.Parallel()
	k, _ := mustAPIKey(t, access.APIKeySpec{Name: "ci", Role: "OPERATOR", Sessions: []string{"a"}})
	used := keyAt.Add(time.Hour)
	r := access.RestoreAPIKey(access.APIKeyRecord{Name: k.Name(), Role: k.Role(), Sessions: k.Sessions(), Hash: k.Hash(), Hint: k.Hint(),
		CreatedAt: k.CreatedAt(), CreatedBy: k.CreatedBy(), CreatedVia: k.CreatedVia(), LastUsedAt: used, LastUsedFrom: "10.0.0.1"})
	if r.Name() != k.Name() || r.Hash() != k.Hash() || !r.LastUsedAt().Equal(used) || r.LastUsedFrom() != "10.0.0.1" || !r.ExpiresAt().IsZero() || !r.SameName("CI") {
		t.Fatalf("restored %+v", r)
	}
}

// TestTokenKinds: the one token format, with each kind's prefix: 200
// random bits and a checksum, refused when a character changes, never
// printed whole.
func TestTokenKinds(t *testing.T) {
	t.Parallel()
	for _, kind := range []access.TokenKind{access.APIKeyTokens, access.NewTokenKind("yks_")} {
		tok, err := kind.New(rand.Reader)
		if err != nil {
			t.Fatal(err)
		}
		s := tok.Reveal()
		if len(s) != kind.Len() || !strings.HasPrefix(s, kind.Prefix()) || kind.Hint(s) != tok.Hint() || len(tok.Hint()) != kind.HintLen() {
			t.Fatalf("%s token %q", kind.Prefix(), tok.Hint())
		}
		if h, err := kind.Parse(s); err != nil || h != sha256.Sum256([]byte(s)) {
			t.Fatalf("Parse: %v", err)
		}
		for i := len(kind.Prefix()); i < len(s); i++ {
			c := byte('a')
			if s[i] == 'a' {
				c = 'b'
			}
			typo := s[:i] + string(c) + s[i+1:]
			if _, err := kind.Parse(typo); !errors.Is(err, access.ErrTokenMalformed) {
				t.Fatalf("a typo at %d parsed", i)
			}
		}
		j, _ := json.Marshal(struct{ T access.Token }{tok})
		for _, out := range []string{fmt.Sprint(tok), fmt.Sprintf("%v %+v %#v %s", tok, tok, tok, tok), string(j)} {
			if strings.Contains(out, s[kind.HintLen():]) {
				t.Fatalf("the secret shows in %q", out)
			}
		}
	}
	if _, err := access.APIKeyTokens.New(bytes.NewReader(nil)); err == nil {
		t.Fatal("an empty random source drew a token")
	}
}
