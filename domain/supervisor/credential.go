package supervisor

import (
	"fmt"
	"io"
	"net/netip"
	"slices"
	"strings"
	"time"

	"github.com/yukta/yukta/domain/access"
	"github.com/yukta/yukta/domain/fault"
)

// A supervisor credential opens the agent API for one supervisor (DESIGN
// §9). Its token is shown once, when it is issued; the server keeps only
// the token's SHA-256, so a database dump cannot be replayed.
//
// The token is TokenPrefix followed by 48 characters of base32 that encode
// 200 random bits and a checksum: the format of every token the server
// draws, in domain/access (access.TokenKind), which stored API keys use
// with their own prefix.
const (
	TokenPrefix = "yks_"
	// TokenLen is the length of every token.
	TokenLen = len(TokenPrefix) + access.TokenBodyLen
)

// credentialTokens is the kind of supervisor credential tokens.
var credentialTokens = access.NewTokenKind(TokenPrefix)

// Limits of a credential.
const (
	// DefaultCredentialTTLHours is the life of a credential issued without
	// ttlHours: 30 days.
	DefaultCredentialTTLHours = 720
	// MaxCredentialTTLHours is the longest life: a year. There is no
	// credential that never expires; rotate it by issuing it again.
	MaxCredentialTTLHours = 8760
	// MaxAllowedAddresses caps allowedAddresses.
	MaxAllowedAddresses = 32
)

// Errors of credentials. The agent API answers every refusal with one
// generic error (supervisorapp.AuthenticateAgent); these say why, for the
// server log.
var (
	// ErrTokenMalformed: the string is not a credential token (prefix,
	// length, alphabet or checksum).
	ErrTokenMalformed = fmt.Errorf("supervisor: credential token is malformed: %w", fault.ErrInvalid)
	// ErrCredentialNotFound: no credential has this token, or the
	// supervisor has none.
	ErrCredentialNotFound = fmt.Errorf("supervisor: credential not found: %w", fault.ErrNotFound)
	// ErrCredentialExpired: the credential's expiresAt has passed.
	ErrCredentialExpired = fmt.Errorf("supervisor: credential expired: %w", fault.ErrForbidden)
	// ErrAddressNotAllowed: the request came from outside the credential's
	// allowedAddresses.
	ErrAddressNotAllowed = fmt.Errorf("supervisor: address not allowed for the credential: %w", fault.ErrForbidden)
)

// TokenHash is the SHA-256 of a whole token: all the server stores of it.
type TokenHash = access.TokenHash

// Token is a credential's secret; it never prints itself (access.Token).
type Token = access.Token

// NewToken draws a token's 200 random bits from random (crypto/rand.Reader
// in the server) and adds the checksum.
func NewToken(random io.Reader) (Token, error) {
	t, err := credentialTokens.New(random)
	if err != nil {
		return Token{}, fmt.Errorf("supervisor: draw credential token: %w", err)
	}
	return t, nil
}

// ParseToken checks that s is a well-formed token (prefix, length,
// alphabet, checksum) and returns its hash. It reads nothing but s, so a
// malformed token costs no lookup. The error never repeats s.
func ParseToken(s string) (TokenHash, error) {
	h, err := credentialTokens.Parse(s)
	if err != nil {
		return TokenHash{}, ErrTokenMalformed
	}
	return h, nil
}

// CredentialSpec is what an ADMIN asks of a credential, before validation.
type CredentialSpec struct {
	// TTLHours is its life in hours, 1 to MaxCredentialTTLHours; 0 means
	// DefaultCredentialTTLHours.
	TTLHours int
	// AllowedAddresses are CIDRs (or single addresses) the agent API takes
	// the credential from; empty means any address.
	AllowedAddresses []string
}

// Credential is the stored side of a supervisor's credential: who it
// belongs to, the token's hash, and the rules of its use. It never holds
// the token. A supervisor has at most one.
type Credential struct {
	supervisorID string
	hash         TokenHash
	hint         string
	allowed      []netip.Prefix
	createdAt    time.Time
	expiresAt    time.Time
	createdBy    string
	createdVia   string
	lastUsedAt   time.Time
}

// IssueCredential validates spec (every problem at once, each with its
// path: ttlHours, allowedAddresses[i]) and draws a new token for the
// supervisor. at is when it is issued; by and via are who issues it and
// through which door. The token is returned once; the Credential keeps its
// hash.
func IssueCredential(supervisorID string, spec CredentialSpec, random io.Reader, at time.Time, by, via string) (Credential, Token, error) {
	var vs []fault.Violation
	if !ValidID(supervisorID) {
		vs = append(vs, fault.Violation{Path: "supervisorId", Message: fmt.Sprintf("%q is not a supervisor id; GET /api/supervisors lists them", supervisorID)})
	}
	ttl, v := checkTTL(spec.TTLHours)
	vs = append(vs, v...)
	allowed, v := ParseAllowedAddresses(spec.AllowedAddresses)
	vs = append(vs, v...)
	if len(vs) > 0 {
		return Credential{}, Token{}, &fault.ValidationError{Subject: "credential", Violations: vs}
	}
	tok, err := NewToken(random)
	if err != nil {
		return Credential{}, Token{}, err
	}
	// PostgreSQL keeps microseconds; the credential read back equals this one.
	at = at.UTC().Truncate(time.Microsecond)
	return Credential{supervisorID: supervisorID, hash: tok.Hash(), hint: tok.Hint(), allowed: allowed,
		createdAt: at, expiresAt: at.Add(time.Duration(ttl) * time.Hour), createdBy: by, createdVia: via}, tok, nil
}

func checkTTL(h int) (int, []fault.Violation) {
	switch {
	case h == 0:
		return DefaultCredentialTTLHours, nil
	case h < 0:
		return 0, []fault.Violation{{Path: "ttlHours", Message: fmt.Sprintf("%d is not a number of hours; send 1 to %d, or leave ttlHours out for %d (30 days)",
			h, MaxCredentialTTLHours, DefaultCredentialTTLHours)}}
	case h > MaxCredentialTTLHours:
		return 0, []fault.Violation{{Path: "ttlHours", Message: fmt.Sprintf("%d is more than %d (a year); send 1 to %d and issue the credential again before it expires",
			h, MaxCredentialTTLHours, MaxCredentialTTLHours)}}
	}
	return h, nil
}

// ParseAllowedAddresses reads allowedAddresses: each a CIDR
// (203.0.113.0/24, 2001:db8::/32) or one address (a /32 or /128). Each is
// normalised: host bits cleared, an IPv4-mapped IPv6 network
// (::ffff:10.0.0.0/104) written as IPv4. Zones, repeats (after
// normalising) and more than MaxAllowedAddresses are refused, each
// violation at allowedAddresses[i].
func ParseAllowedAddresses(in []string) ([]netip.Prefix, []fault.Violation) {
	var vs []fault.Violation
	if len(in) > MaxAllowedAddresses {
		vs = append(vs, fault.Violation{Path: "allowedAddresses", Message: fmt.Sprintf("%d networks is more than %d; use wider networks (a /24 instead of its addresses)",
			len(in), MaxAllowedAddresses)})
	}
	out := make([]netip.Prefix, 0, len(in))
	first := make(map[netip.Prefix]int, len(in))
	for i, s := range in {
		path := fmt.Sprintf("allowedAddresses[%d]", i)
		p, ok := parsePrefix(s)
		if !ok {
			vs = append(vs, fault.Violation{Path: path, Message: fmt.Sprintf("%q is not a CIDR (such as 203.0.113.0/24 or 2001:db8::/32) or an IP address; "+
				"send the networks the agent connects from, or leave allowedAddresses out to allow any address", clip(s))})
			continue
		}
		if j, seen := first[p]; seen {
			vs = append(vs, fault.Violation{Path: path, Message: fmt.Sprintf("%s repeats allowedAddresses[%d]; send each network once", p, j)})
			continue
		}
		first[p] = i
		out = append(out, p)
	}
	if len(vs) > 0 {
		return nil, vs
	}
	return out, nil
}

func parsePrefix(s string) (netip.Prefix, bool) {
	var p netip.Prefix
	if strings.Contains(s, "/") {
		var err error
		if p, err = netip.ParsePrefix(s); err != nil {
			return netip.Prefix{}, false
		}
	} else {
		a, err := netip.ParseAddr(s)
		if err != nil || a.Zone() != "" {
			return netip.Prefix{}, false
		}
		p = netip.PrefixFrom(a, a.BitLen())
	}
	if a := p.Addr(); a.Is4In6() && p.Bits() >= 96 {
		p = netip.PrefixFrom(a.Unmap(), p.Bits()-96)
	}
	return p.Masked(), true
}

// CredentialRecord is a credential as stored, for RestoreCredential.
type CredentialRecord struct {
	SupervisorID          string
	Hash                  TokenHash
	Hint                  string
	AllowedAddresses      []netip.Prefix
	CreatedAt, ExpiresAt  time.Time
	CreatedBy, CreatedVia string
	// LastUsedAt is when the agent API last took it; zero: never.
	LastUsedAt time.Time
}

// RestoreCredential rebuilds a stored credential. Only the store calls it;
// the record passed IssueCredential when it was written.
func RestoreCredential(r CredentialRecord) Credential {
	return Credential{supervisorID: r.SupervisorID, hash: r.Hash, hint: r.Hint, allowed: slices.Clone(r.AllowedAddresses),
		createdAt: r.CreatedAt.UTC(), expiresAt: r.ExpiresAt.UTC(), createdBy: r.CreatedBy, createdVia: r.CreatedVia, lastUsedAt: r.LastUsedAt.UTC()}
}

// SupervisorID is the supervisor the credential belongs to.
func (c Credential) SupervisorID() string { return c.supervisorID }

// Hash is the token's SHA-256.
func (c Credential) Hash() TokenHash { return c.hash }

// Hint is the token's prefix and first characters, to tell credentials apart.
func (c Credential) Hint() string { return c.hint }

// AllowedAddresses are the networks it is taken from; empty: any.
func (c Credential) AllowedAddresses() []netip.Prefix { return slices.Clone(c.allowed) }

// AllowedAddressStrings are AllowedAddresses as text.
func (c Credential) AllowedAddressStrings() []string {
	out := make([]string, len(c.allowed))
	for i, p := range c.allowed {
		out[i] = p.String()
	}
	return out
}

// CreatedAt is when it was issued.
func (c Credential) CreatedAt() time.Time { return c.createdAt }

// ExpiresAt is when it stops working.
func (c Credential) ExpiresAt() time.Time { return c.expiresAt }

// CreatedBy is who issued it (key:<name>, anonymous).
func (c Credential) CreatedBy() string { return c.createdBy }

// CreatedVia is the door it was issued through.
func (c Credential) CreatedVia() string { return c.createdVia }

// LastUsedAt is when the agent API last took it, to the minute; zero: never.
func (c Credential) LastUsedAt() time.Time { return c.lastUsedAt }

// IsZero reports whether c is the zero Credential.
func (c Credential) IsZero() bool { return c.supervisorID == "" }

// Expired reports whether the credential no longer works at now: from
// expiresAt on.
func (c Credential) Expired(now time.Time) bool { return !now.Before(c.expiresAt) }

// Allows reports whether a request from addr may use the credential: any
// address when allowedAddresses is empty, else one inside a network of
// it. An IPv4-mapped IPv6 address counts as its IPv4 address; an invalid
// address is allowed only when the list is empty.
func (c Credential) Allows(addr netip.Addr) bool {
	if len(c.allowed) == 0 {
		return true
	}
	if !addr.IsValid() {
		return false
	}
	addr = addr.Unmap().WithZone("")
	for _, p := range c.allowed {
		if p.Contains(addr) {
			return true
		}
	}
	return false
}

// Check decides whether a request from addr at now may use the
// credential: ErrCredentialExpired, ErrAddressNotAllowed or nil. The
// token itself was matched by its hash before.
func (c Credential) Check(now time.Time, addr netip.Addr) error {
	if c.Expired(now) {
		return ErrCredentialExpired
	}
	if !c.Allows(addr) {
		return ErrAddressNotAllowed
	}
	return nil
}
