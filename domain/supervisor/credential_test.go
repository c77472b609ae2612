package supervisor

import (
	"bytes"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base32"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/big"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/yukta/yukta/domain/access"
	"github.com/yukta/yukta/domain/fault"
)

// The token format these tests pin (access.TokenKind draws it).
const (
	tokenAlphabet    = "abcdefghijklmnopqrstuvwxyz234567"
	tokenRandomBytes = 25
	tokenCheckBytes  = 5
	hintBodyLen      = 6
)

var tokenEncoding = base32.NewEncoding(tokenAlphabet).WithPadding(base32.NoPadding)

func mustToken(t *testing.T) Token {
	t.Helper()
	tok, err := NewToken(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	return tok
}

func TestTokenFormat(t *testing.T) {
	t.Parallel()
	seen := map[string]bool{}
	for range 1000 {
		tok := mustToken(t)
		s := tok.Reveal()
		body, ok := strings.CutPrefix(s, TokenPrefix)
		if !ok || len(s) != TokenLen || TokenLen != 52 {
			t.Fatalf("token %q: want %q and %d characters", s, TokenPrefix, TokenLen)
		}
		if strings.Trim(body, tokenAlphabet) != "" {
			t.Fatalf("token %q has characters outside %s", s, tokenAlphabet)
		}
		if seen[s] {
			t.Fatalf("token %q drawn twice", s)
		}
		seen[s] = true
		h, err := ParseToken(s)
		if err != nil || h != tok.Hash() || h != sha256.Sum256([]byte(s)) {
			t.Fatalf("ParseToken(issued) = %x, %v; want the token's SHA-256", h, err)
		}
		if tok.Hint() != s[:10] {
			t.Fatalf("hint %q, want %q", tok.Hint(), s[:10])
		}
	}
}

// The random part is exactly the bytes drawn: 200 bits, then the checksum.
func TestTokenCarriesTheRandomBits(t *testing.T) {
	t.Parallel()
	drawn := bytes.Repeat([]byte{0xA5}, tokenRandomBytes)
	tok, err := NewToken(bytes.NewReader(drawn))
	if err != nil {
		t.Fatal(err)
	}
	raw, err := tokenEncoding.DecodeString(strings.TrimPrefix(tok.Reveal(), TokenPrefix))
	if err != nil || !bytes.Equal(raw[:tokenRandomBytes], drawn) || len(raw)-tokenRandomBytes != tokenCheckBytes || tokenRandomBytes*8 < 128 {
		t.Fatalf("decoded %x, %v; want the 25 drawn bytes and a 5-byte checksum", raw, err)
	}
	if _, err := NewToken(bytes.NewReader(drawn[:10])); err == nil || !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Fatalf("short random source: got %v, want io.ErrUnexpectedEOF", err)
	}
}

func TestTokenNeverPrintsItself(t *testing.T) {
	t.Parallel()
	tok := mustToken(t)
	secret := tok.Reveal()
	holder := struct {
		Token Token
		Ptr   *Token
	}{tok, &tok}
	j, err := json.Marshal(holder)
	if err != nil {
		t.Fatal(err)
	}
	for _, out := range []string{fmt.Sprint(tok), fmt.Sprintf("%v %+v %#v %s %q", holder, holder, holder, tok, tok), string(j),
		fmt.Errorf("wrapped %v", tok).Error()} {
		if strings.Contains(out, secret[len(TokenPrefix)+hintBodyLen:]) {
			t.Fatalf("the secret shows in %q", out)
		}
		if !strings.Contains(out, tok.Hint()+"…") {
			t.Fatalf("%q does not show the hint", out)
		}
	}
}

func TestParseTokenRefusesTyposAndStrangers(t *testing.T) {
	t.Parallel()
	tok := mustToken(t).Reveal()
	refused := func(s, what string) {
		t.Helper()
		if _, err := ParseToken(s); !errors.Is(err, ErrTokenMalformed) || !errors.Is(err, fault.ErrInvalid) {
			t.Fatalf("%s: ParseToken = %v, want ErrTokenMalformed", what, err)
		}
		if _, err := ParseToken(s); err != nil && strings.Contains(err.Error(), strings.TrimPrefix(s, TokenPrefix)) && len(s) > len(TokenPrefix) {
			t.Fatalf("%s: the error repeats the token: %v", what, err)
		}
	}
	for _, tc := range []struct{ s, what string }{
		{"", "empty"},
		{"yks_", "prefix alone"},
		{strings.ToUpper(tok), "upper case"},
		{"ykx_" + tok[4:], "another prefix"},
		{tok[4:], "no prefix"},
		{tok[:len(tok)-1], "one short"},
		{tok + "a", "one long"},
		{tok[:20] + "\n" + tok[21:], "a line break inside"},
		{tok[:20] + "=" + tok[21:], "padding inside"},
		{tok[:20] + "1" + tok[21:], "a digit outside the alphabet"},
		{" " + tok, "a leading space"},
	} {
		refused(tc.s, tc.what)
	}
	// Every single-character substitution, and every swap of two
	// neighbours that changes the text.
	n := 0
	for i := len(TokenPrefix); i < len(tok); i++ {
		for _, c := range []byte(tokenAlphabet) {
			if c == tok[i] {
				continue
			}
			refused(tok[:i]+string(c)+tok[i+1:], fmt.Sprintf("substitution at %d", i))
			n++
		}
		if i+1 < len(tok) && tok[i] != tok[i+1] {
			refused(tok[:i]+string(tok[i+1])+string(tok[i])+tok[i+2:], fmt.Sprintf("swap at %d", i))
			n++
		}
	}
	if n < 48*31 {
		t.Fatalf("checked %d typos, want at least %d", n, 48*31)
	}
}

// T5's offline validator: 10^5 random strings of the token's shape are all
// refused by the checksum, before any lookup could happen.
func TestParseTokenRefusesRandomStrings(t *testing.T) {
	t.Parallel()
	alphabet := big.NewInt(int64(len(tokenAlphabet)))
	body := make([]byte, access.TokenBodyLen)
	accepted := 0
	for range 100_000 {
		for i := range body {
			k, err := rand.Int(rand.Reader, alphabet)
			if err != nil {
				t.Fatal(err)
			}
			body[i] = tokenAlphabet[k.Int64()]
		}
		if _, err := ParseToken(TokenPrefix + string(body)); err == nil {
			accepted++
		}
	}
	if accepted != 0 {
		t.Fatalf("%d of 100000 random strings passed the checksum, want 0", accepted)
	}
}

var issuedAt = time.Date(2026, 3, 1, 12, 0, 0, 123456789, time.UTC)

func TestIssueCredential(t *testing.T) {
	t.Parallel()
	c, tok, err := IssueCredential("agent", CredentialSpec{}, rand.Reader, issuedAt, "key:admin", "rest")
	if err != nil {
		t.Fatal(err)
	}
	at := issuedAt.Truncate(time.Microsecond)
	if c.SupervisorID() != "agent" || c.Hash() != tok.Hash() || c.Hint() != tok.Hint() || !c.CreatedAt().Equal(at) ||
		!c.ExpiresAt().Equal(at.Add(720*time.Hour)) || c.CreatedBy() != "key:admin" || c.CreatedVia() != "rest" ||
		len(c.AllowedAddresses()) != 0 || !c.LastUsedAt().IsZero() {
		t.Fatalf("default credential: %+v", c)
	}
	for _, h := range []int{1, 24, MaxCredentialTTLHours} {
		c, _, err := IssueCredential("agent", CredentialSpec{TTLHours: h}, rand.Reader, issuedAt, "", "")
		if err != nil || c.ExpiresAt().Sub(c.CreatedAt()) != time.Duration(h)*time.Hour {
			t.Fatalf("ttlHours %d: expires %v after, %v", h, c.ExpiresAt().Sub(c.CreatedAt()), err)
		}
	}
	// Restore keeps every field.
	r := RestoreCredential(CredentialRecord{SupervisorID: c.SupervisorID(), Hash: c.Hash(), Hint: c.Hint(), AllowedAddresses: c.AllowedAddresses(),
		CreatedAt: c.CreatedAt(), ExpiresAt: c.ExpiresAt(), CreatedBy: c.CreatedBy(), CreatedVia: c.CreatedVia()})
	if r.Hash() != c.Hash() || !r.ExpiresAt().Equal(c.ExpiresAt()) || r.IsZero() || !(Credential{}).IsZero() {
		t.Fatalf("restored %+v, want %+v", r, c)
	}
}

func TestIssueCredentialListsEveryProblem(t *testing.T) {
	t.Parallel()
	many := make([]string, MaxAllowedAddresses+1)
	for i := range many {
		many[i] = fmt.Sprintf("10.0.%d.0/24", i)
	}
	for _, tc := range []struct {
		name string
		id   string
		spec CredentialSpec
		want []violation
	}{
		{"negative ttl", "agent", CredentialSpec{TTLHours: -1}, []violation{{"ttlHours", "send 1 to 8760, or leave ttlHours out for 720"}}},
		{"ttl over a year", "agent", CredentialSpec{TTLHours: 8761}, []violation{{"ttlHours", "8761 is more than 8760"}}},
		{"bad id", "Agent!", CredentialSpec{}, []violation{{"supervisorId", `"Agent!" is not a supervisor id`}}},
		{"everything at once", "agent", CredentialSpec{TTLHours: 9000, AllowedAddresses: []string{"10.0.0.0/8", "10.0.0.300/8", "fe80::1%eth0",
			"10.9.9.9/8", "", "not an address", "192.168.0.0/33"}}, []violation{
			{"ttlHours", "more than 8760"},
			{"allowedAddresses[1]", `"10.0.0.300/8" is not a CIDR (such as 203.0.113.0/24 or 2001:db8::/32) or an IP address; send the networks`},
			{"allowedAddresses[2]", `"fe80::1%eth0" is not a CIDR`},
			{"allowedAddresses[3]", "10.0.0.0/8 repeats allowedAddresses[0]; send each network once"},
			{"allowedAddresses[4]", `"" is not a CIDR`},
			{"allowedAddresses[5]", `"not an address" is not a CIDR`},
			{"allowedAddresses[6]", `"192.168.0.0/33" is not a CIDR`},
		}},
		{"too many", "agent", CredentialSpec{AllowedAddresses: many}, []violation{{"allowedAddresses", "33 networks is more than 32"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			_, tok, err := IssueCredential(tc.id, tc.spec, rand.Reader, issuedAt, "", "")
			checkViolations(t, err, tc.want...)
			if !tok.IsZero() {
				t.Fatalf("a refused spec drew a token")
			}
		})
	}
}

func TestAllowedAddressesAreNormalised(t *testing.T) {
	t.Parallel()
	in := []string{"203.0.113.7", "10.1.2.3/8", "2001:DB8::1/32", "::ffff:192.0.2.0/120", "::ffff:198.51.100.9", "2001:db8:ffff::1"}
	want := "203.0.113.7/32 10.0.0.0/8 2001:db8::/32 192.0.2.0/24 198.51.100.9/32 2001:db8:ffff::1/128"
	c, _, err := IssueCredential("agent", CredentialSpec{AllowedAddresses: in}, rand.Reader, issuedAt, "", "")
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(c.AllowedAddressStrings(), " "); got != want {
		t.Fatalf("normalised: got %s, want %s", got, want)
	}
}

func TestCredentialCheck(t *testing.T) {
	t.Parallel()
	c, _, err := IssueCredential("agent", CredentialSpec{TTLHours: 1, AllowedAddresses: []string{"10.0.0.0/8", "2001:db8::/32"}}, rand.Reader, issuedAt, "", "")
	if err != nil {
		t.Fatal(err)
	}
	in, out := netip.MustParseAddr("10.20.30.40"), netip.MustParseAddr("192.0.2.1")
	ttl := c.ExpiresAt()
	for _, tc := range []struct {
		name string
		now  time.Time
		addr netip.Addr
		want error
	}{
		{"just issued, inside", c.CreatedAt(), in, nil},
		{"a second before expiry", ttl.Add(-time.Second), in, nil},
		{"IPv6 inside", c.CreatedAt(), netip.MustParseAddr("2001:db8::5"), nil},
		{"IPv4-mapped inside", c.CreatedAt(), netip.MustParseAddr("::ffff:10.0.0.1"), nil},
		{"zoned inside", c.CreatedAt(), netip.MustParseAddr("2001:db8::5%eth0"), nil},
		{"at expiry", ttl, in, ErrCredentialExpired},
		{"TTL + 1 s", ttl.Add(time.Second), in, ErrCredentialExpired},
		{"outside", c.CreatedAt(), out, ErrAddressNotAllowed},
		{"IPv4-mapped outside", c.CreatedAt(), netip.MustParseAddr("::ffff:192.0.2.1"), ErrAddressNotAllowed},
		{"no address", c.CreatedAt(), netip.Addr{}, ErrAddressNotAllowed},
	} {
		if err := c.Check(tc.now, tc.addr); err != tc.want {
			t.Errorf("%s: Check = %v, want %v", tc.name, err, tc.want)
		}
	}
	anywhere, _, _ := IssueCredential("agent", CredentialSpec{}, rand.Reader, issuedAt, "", "")
	for _, a := range []netip.Addr{out, in, {}} {
		if err := anywhere.Check(issuedAt, a); err != nil {
			t.Errorf("no allowedAddresses, from %v: %v, want allowed", a, err)
		}
	}
}
