package access

import (
	"crypto/subtle"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/yukta/yukta/domain/fault"
)

// A stored API key is a key an ADMIN creates over REST, MCP or the CLI and
// the server keeps in its database, beside the configured keys
// (YUKTA_API_KEY, YUKTA_API_KEYS, YUKTA_MCP_API_KEY). Like a key-file key
// it has a name (recorded as the actor key:<name>), a role and perhaps a
// session list (and, for a WORKER key, a queue list); unlike one, its secret is drawn by the server
// (APIKeyTokens: "yk_", 200 random bits and a checksum), shown once, and
// only its SHA-256 kept. It may expire, be rotated (a new secret, the old
// one refused at once) and be revoked, all without a restart.

// MaxAPIKeyLifetime is the longest an expiry may reach: two years from
// its creation. A key without an expiry lives until it is revoked.
const MaxAPIKeyLifetime = 2 * 365 * 24 * time.Hour

// MaxStoredAPIKeys is how many keys may be stored at once: every instance
// holds them all in memory and re-reads them whole on each change.
const MaxStoredAPIKeys = 1000

// ErrAPIKeyNotFound: no stored key has the name.
var ErrAPIKeyNotFound = fmt.Errorf("access: API key not found: %w", fault.ErrNotFound)

// APIKeySpec is what an ADMIN asks of a new key, before validation. Role
// and the expiry are text as sent, so every door gets the same
// field-named errors.
type APIKeySpec struct {
	Name string
	Role string
	// Sessions limits the key to these sessions; nil: every session.
	Sessions []string
	// Queues limits a WORKER key to the tasks of these queues; nil: every
	// queue. Only a WORKER key may have a queue list.
	Queues []string
	// ExpiresAt is an RFC 3339 time, at most MaxAPIKeyLifetime away; TTL
	// a Go duration ("720h", "90m"). At most one of them; neither: the key
	// does not expire.
	ExpiresAt string
	TTL       string
}

// APIKey is the stored side of a key: who it authenticates, the hash of
// its secret and its history. It never holds the secret.
type APIKey struct {
	name         string
	role         Role
	sessions     []string
	queues       []string // WORKER only; nil: every queue
	hash         TokenHash
	hint         string
	createdAt    time.Time
	createdBy    string
	createdVia   string
	expiresAt    time.Time // zero: never
	rotatedAt    time.Time // zero: never rotated
	rotatedBy    string
	rotatedVia   string
	lastUsedAt   time.Time // zero: never used
	lastUsedFrom string
}

// NewAPIKey validates spec (every problem at once, each at its field:
// name, role, sessions, queues, expiresAt, ttl) and draws the key's secret. at is
// when it is created; by and via who creates it and through which door.
// The token is returned once; the APIKey keeps its hash.
func NewAPIKey(spec APIKeySpec, random io.Reader, at time.Time, by, via string) (APIKey, Token, error) {
	// PostgreSQL keeps microseconds; the key read back equals this one.
	at = at.UTC().Truncate(time.Microsecond)
	var vs []fault.Violation
	if !ValidName(spec.Name) {
		vs = append(vs, fault.Violation{Path: "name", Message: msgName + "; it is recorded as the actor key:<name>"})
	}
	role, err := ParseRole(spec.Role)
	if err != nil {
		vs = append(vs, fault.Violation{Path: "role", Message: msgRole})
	}
	sessions, msgs := checkSessions(spec.Sessions)
	for _, m := range msgs {
		vs = append(vs, fault.Violation{Path: "sessions", Message: m})
	}
	queues, v := queueViolations(role, spec.Queues)
	vs = append(vs, v...)
	expires, v := parseExpiry(spec.ExpiresAt, spec.TTL, at)
	vs = append(vs, v...)
	if len(vs) > 0 {
		return APIKey{}, Token{}, &fault.ValidationError{Subject: "API key", Violations: vs}
	}
	tok, err := APIKeyTokens.New(random)
	if err != nil {
		return APIKey{}, Token{}, err
	}
	return APIKey{name: spec.Name, role: role, sessions: sessions, queues: queues, hash: tok.Hash(), hint: tok.Hint(),
		createdAt: at, createdBy: by, createdVia: via, expiresAt: expires}, tok, nil
}

// parseExpiry reads expiresAt or ttl into the expiry (zero: none).
func parseExpiry(expiresAt, ttl string, at time.Time) (time.Time, []fault.Violation) {
	const bound = "at most 2 years (17520h) away"
	switch {
	case expiresAt != "" && ttl != "":
		return time.Time{}, []fault.Violation{{Path: "ttl", Message: "cannot be sent with expiresAt; send one of them (expiresAt is a time, ttl a duration from now)"}}
	case expiresAt != "":
		t, err := time.Parse(time.RFC3339Nano, expiresAt)
		switch {
		case err != nil:
			return time.Time{}, []fault.Violation{{Path: "expiresAt", Message: fmt.Sprintf("%q is not an RFC 3339 time; send one such as 2030-01-31T12:00:00Z, or a duration in ttl (720h)", clipText(expiresAt))}}
		case !t.After(at):
			return time.Time{}, []fault.Violation{{Path: "expiresAt", Message: fmt.Sprintf("%s is not in the future; send a later time, %s, or leave it out for a key that does not expire", t.UTC().Format(time.RFC3339), bound)}}
		case t.Sub(at) > MaxAPIKeyLifetime:
			return time.Time{}, []fault.Violation{{Path: "expiresAt", Message: fmt.Sprintf("%s is more than 2 years away; send a time %s, and rotate or create the key again before then", t.UTC().Format(time.RFC3339), bound)}}
		}
		return t.UTC().Truncate(time.Microsecond), nil
	case ttl != "":
		d, err := time.ParseDuration(ttl)
		switch {
		case err != nil:
			return time.Time{}, []fault.Violation{{Path: "ttl", Message: fmt.Sprintf("%q is not a duration; send one such as 720h or 90m, or an RFC 3339 time in expiresAt", clipText(ttl))}}
		case d <= 0:
			return time.Time{}, []fault.Violation{{Path: "ttl", Message: fmt.Sprintf("%s is not a positive duration; send one such as 720h, %s, or leave it out for a key that does not expire", d, bound)}}
		case d > MaxAPIKeyLifetime:
			return time.Time{}, []fault.Violation{{Path: "ttl", Message: fmt.Sprintf("%s is more than 2 years; send a duration %s", d, bound)}}
		}
		return at.Add(d).Truncate(time.Microsecond), nil
	}
	return time.Time{}, nil
}

// clipText shortens a value quoted in an error.
func clipText(s string) string {
	const most = 40
	if len(s) <= most {
		return s
	}
	return s[:most] + "…"
}

// Rotate returns the key with a new secret, drawn from random, and the
// token, shown once. Name, role, sessions, queues and expiry stay; the old
// secret's hash is gone, so it works on no request once the rotation is
// stored. An expired key is not rotated (its new secret would not work):
// the error says to create it again.
func (k APIKey) Rotate(random io.Reader, at time.Time, by, via string) (APIKey, Token, error) {
	at = at.UTC().Truncate(time.Microsecond)
	if k.Expired(at) {
		return APIKey{}, Token{}, fault.Newf(fault.ErrConflict, "the API key %q expired at %s, and a rotation keeps the expiry; revoke it and create it again (DELETE, then POST /api/keys, or yukta keys revoke and yukta keys create)",
			k.name, k.expiresAt.Format(time.RFC3339))
	}
	tok, err := APIKeyTokens.New(random)
	if err != nil {
		return APIKey{}, Token{}, err
	}
	r := k
	r.sessions = slices.Clone(k.sessions)
	r.queues = slices.Clone(k.queues)
	r.hash, r.hint = tok.Hash(), tok.Hint()
	r.rotatedAt, r.rotatedBy, r.rotatedVia = at, by, via
	r.lastUsedAt, r.lastUsedFrom = time.Time{}, ""
	return r, tok, nil
}

// WithExpiry returns the key with a new expiry, set or changed at at:
// expiresAt (an RFC 3339 time) or ttl (a duration from at), exactly one of
// them, checked as NewAPIKey checks them (in the future, at most
// MaxAPIKeyLifetime away). The secret, its last use and the rest of the
// key stay; a key given a near expiry stops working then, which is how an
// ADMIN ends a key at a chosen moment without revoking it first. An
// expired key is not given a new expiry (that would bring a dead secret
// back): the error says to create it again.
func (k APIKey) WithExpiry(expiresAt, ttl string, at time.Time) (APIKey, error) {
	at = at.UTC().Truncate(time.Microsecond)
	if expiresAt == "" && ttl == "" {
		return APIKey{}, &fault.ValidationError{Subject: "API key expiry", Violations: []fault.Violation{{Path: "expiresAt",
			Message: "is required, or ttl: send an RFC 3339 time in expiresAt (2030-01-31T12:00:00Z) or a duration from now in ttl (720h); to end the key now, revoke it"}}}
	}
	if k.Expired(at) {
		return APIKey{}, fault.Newf(fault.ErrConflict, "the API key %q expired at %s, and an expired key is not given a new expiry; revoke it and create it again (DELETE, then POST /api/keys, or yukta keys revoke and yukta keys create)",
			k.name, k.expiresAt.Format(time.RFC3339))
	}
	expires, vs := parseExpiry(expiresAt, ttl, at)
	if len(vs) > 0 {
		return APIKey{}, &fault.ValidationError{Subject: "API key expiry", Violations: vs}
	}
	r := k
	r.sessions = slices.Clone(k.sessions)
	r.queues = slices.Clone(k.queues)
	r.expiresAt = expires
	return r, nil
}

// APIKeyRecord is a key as stored, for RestoreAPIKey.
type APIKeyRecord struct {
	Name                                string
	Role                                Role
	Sessions                            []string
	Queues                              []string
	Hash                                TokenHash
	Hint                                string
	CreatedAt                           time.Time
	CreatedBy, CreatedVia               string
	ExpiresAt, RotatedAt, LastUsedAt    time.Time
	RotatedBy, RotatedVia, LastUsedFrom string
}

// RestoreAPIKey rebuilds a stored key. Only the store calls it; the record
// passed NewAPIKey (or Rotate) when it was written.
func RestoreAPIKey(r APIKeyRecord) APIKey {
	utc := func(t time.Time) time.Time {
		if t.IsZero() {
			return time.Time{}
		}
		return t.UTC()
	}
	return APIKey{name: r.Name, role: r.Role, sessions: slices.Clone(r.Sessions), queues: slices.Clone(r.Queues), hash: r.Hash, hint: r.Hint,
		createdAt: utc(r.CreatedAt), createdBy: r.CreatedBy, createdVia: r.CreatedVia, expiresAt: utc(r.ExpiresAt),
		rotatedAt: utc(r.RotatedAt), rotatedBy: r.RotatedBy, rotatedVia: r.RotatedVia,
		lastUsedAt: utc(r.LastUsedAt), lastUsedFrom: r.LastUsedFrom}
}

// Name is the key's name.
func (k APIKey) Name() string { return k.name }

// Role is the key's role.
func (k APIKey) Role() Role { return k.role }

// Sessions is the key's session list, sorted; nil: every session.
func (k APIKey) Sessions() []string { return slices.Clone(k.sessions) }

// Queues is a WORKER key's queue list, sorted; nil: every queue (and
// nothing for a key of another role).
func (k APIKey) Queues() []string { return slices.Clone(k.queues) }

// Hash is the SHA-256 of the key's secret.
func (k APIKey) Hash() TokenHash { return k.hash }

// Hint is the secret's prefix and first characters.
func (k APIKey) Hint() string { return k.hint }

// CreatedAt is when the key was created.
func (k APIKey) CreatedAt() time.Time { return k.createdAt }

// CreatedBy is who created it (key:<name>, anonymous).
func (k APIKey) CreatedBy() string { return k.createdBy }

// CreatedVia is the door it was created through.
func (k APIKey) CreatedVia() string { return k.createdVia }

// ExpiresAt is when it stops working; zero: it does not expire.
func (k APIKey) ExpiresAt() time.Time { return k.expiresAt }

// RotatedAt is when its secret was last replaced; zero: never.
func (k APIKey) RotatedAt() time.Time { return k.rotatedAt }

// RotatedBy is who last rotated it.
func (k APIKey) RotatedBy() string { return k.rotatedBy }

// RotatedVia is the door it was last rotated through.
func (k APIKey) RotatedVia() string { return k.rotatedVia }

// LastUsedAt is when a request last presented it, to the minute; zero:
// never (since its last rotation).
func (k APIKey) LastUsedAt() time.Time { return k.lastUsedAt }

// LastUsedFrom is the address that request came from.
func (k APIKey) LastUsedFrom() string { return k.lastUsedFrom }

// IsZero reports whether k is the zero APIKey.
func (k APIKey) IsZero() bool { return k.name == "" }

// Expired reports whether the key no longer works at now: from expiresAt
// on. A key without an expiry never expires.
func (k APIKey) Expired(now time.Time) bool {
	return !k.expiresAt.IsZero() && !now.Before(k.expiresAt)
}

// Principal is who a request presenting the key acts as.
func (k APIKey) Principal() Principal {
	return Principal{name: k.name, role: k.role, sessions: slices.Clone(k.sessions), queues: slices.Clone(k.queues)}
}

// SameName reports whether name is the key's name in any letter case
// (names are unique that way, like the key file's).
func (k APIKey) SameName(name string) bool { return strings.EqualFold(k.name, name) }

// APIKeyRing holds the stored keys in memory and authenticates presented
// secrets against them, like Keyring: the presented secret's hash is
// compared with every stored hash in constant time, without stopping at a
// match. A matched key that has expired authenticates nothing.
type APIKeyRing struct {
	keys []APIKey
}

// NewAPIKeyRing returns a ring of keys.
func NewAPIKeyRing(keys []APIKey) *APIKeyRing {
	return &APIKeyRing{keys: slices.Clone(keys)}
}

// Len returns the number of keys, expired ones included.
func (r *APIKeyRing) Len() int {
	if r == nil {
		return 0
	}
	return len(r.keys)
}

// Authenticate returns the key whose secret was presented, if it has not
// expired at now. A string that is not an API key token (prefix, length,
// alphabet, checksum) is refused before any comparison.
func (r *APIKeyRing) Authenticate(presented string, now time.Time) (APIKey, bool) {
	if r == nil {
		return APIKey{}, false
	}
	h, err := APIKeyTokens.Parse(presented)
	if err != nil {
		return APIKey{}, false
	}
	match := -1
	for i := range r.keys {
		eq := subtle.ConstantTimeCompare(h[:], r.keys[i].hash[:])
		match = subtle.ConstantTimeSelect(eq, i, match)
	}
	if match < 0 || r.keys[match].Expired(now) {
		return APIKey{}, false
	}
	return r.keys[match], true
}
