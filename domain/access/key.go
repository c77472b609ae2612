package access

import (
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"

	"github.com/yukta/yukta/domain/fault"
)

// MinSecretLen is the least number of characters of a plain secret. Keys are
// stored as a fast, unsalted SHA-256 so every request is checked cheaply;
// that protects only a secret with enough entropy that guessing it, online or
// from a leaked hash, is hopeless. 24 random base64 characters carry 144 bits.
const MinSecretLen = 24

// The two prefixes the key file grammar gives meaning to.
const (
	hashPrefix     = "sha256:"
	sessionsPrefix = "sessions="
	queuesPrefix   = "queues="
)

// keyLineForm is the shape of a key line, for errors.
const keyLineForm = "name ROLE [sessions=a,b] [queues=q1,q2] secret"

// KeySpec is one named key as configured: who it authenticates and the
// SHA-256 of its secret. It never holds the secret itself.
type KeySpec struct {
	Name     string
	Role     Role
	Sessions []string // nil for every session
	Queues   []string // WORKER only; nil for every queue
	Hash     [sha256.Size]byte
}

// NewKeySpec builds the spec of one key, for keys configured outside a key
// file (YUKTA_API_KEY). secret is the plain secret or "sha256:" and its 64
// hex digits, under the key file's rules; only its hash is kept. Errors
// never repeat the secret.
func NewKeySpec(name string, role Role, sessions []string, secret string) (KeySpec, error) {
	p, err := NewPrincipal(name, role, sessions)
	var vs []fault.Violation
	if ve, ok := errors.AsType[*fault.ValidationError](err); ok {
		vs = ve.Violations
	}
	hash, msgs := hashSecret(secret)
	for _, m := range msgs {
		vs = append(vs, fault.Violation{Path: "secret", Message: m})
	}
	if len(vs) > 0 {
		return KeySpec{}, &fault.ValidationError{Subject: "key", Violations: vs}
	}
	return KeySpec{Name: p.name, Role: p.role, Sessions: p.Sessions(), Hash: hash}, nil
}

// hashSecret reads a plain or "sha256:" secret and returns its hash, or what
// is wrong with it. The messages never quote the secret.
func hashSecret(s string) ([sha256.Size]byte, []string) {
	var hash [sha256.Size]byte
	if len(s) >= len(hashPrefix) && strings.EqualFold(s[:len(hashPrefix)], hashPrefix) {
		digits := s[len(hashPrefix):]
		if len(digits) != 2*sha256.Size {
			return hash, []string{msgHash}
		}
		if _, err := hex.Decode(hash[:], []byte(digits)); err != nil {
			return hash, []string{msgHash}
		}
		if hash == ([sha256.Size]byte{}) {
			return hash, []string{"the sha256: hash is all zeros, which is no secret's hash; " + howToHash}
		}
		return hash, nil
	}
	if s == "" {
		return hash, []string{"a secret is required; generate one with: openssl rand -base64 32"}
	}
	var msgs []string
	if strings.HasPrefix(s, sessionsPrefix) {
		msgs = append(msgs, "the secret cannot start with sessions= (that marks the session list); generate another with: openssl rand -base64 32")
	}
	if strings.HasPrefix(s, queuesPrefix) {
		msgs = append(msgs, "the secret cannot start with queues= (that marks the queue list); generate another with: openssl rand -base64 32")
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '!' || s[i] > '~' {
			msgs = append(msgs, "the secret must be printable ASCII without spaces, since it travels in an HTTP header; generate one with: openssl rand -base64 32")
			break
		}
	}
	if len(s) < MinSecretLen {
		msgs = append(msgs, fmt.Sprintf("the secret is shorter than %d characters; keys are kept as a fast, unsalted SHA-256, which only protects a long random secret against guessing, so use one such as: openssl rand -base64 32", MinSecretLen))
	}
	if len(msgs) > 0 {
		return hash, msgs
	}
	return sha256.Sum256([]byte(s)), nil
}

const (
	howToHash = `compute the hash with: printf '%s' "$SECRET" | sha256sum`
	msgHash   = "a sha256: secret must be followed by exactly 64 hexadecimal digits; " + howToHash
)

// ParseKeyFile reads a key file (see the package documentation for its
// grammar) and returns its keys in file order. It reports every bad line at
// once in a *fault.ValidationError whose paths are "line N", each saying what
// to write instead. It refuses duplicate names (in any letter case),
// duplicate secrets, plain secrets shorter than MinSecretLen and a file with
// no keys. Plain secrets are hashed as they are read; no error repeats a
// field of the file other than the names of a session or queue list, since
// a misplaced field may be a secret.
func ParseKeyFile(data []byte) ([]KeySpec, error) {
	var (
		vs     []fault.Violation
		specs  []KeySpec
		names  = map[string]int{}
		hashes = map[[sha256.Size]byte]int{}
	)
	text := strings.TrimPrefix(string(data), "\ufeff")
	for i, line := range strings.Split(text, "\n") {
		n := i + 1
		fields := strings.FieldsFunc(strings.TrimSuffix(line, "\r"), func(r rune) bool { return r == ' ' || r == '\t' })
		if len(fields) == 0 || strings.HasPrefix(fields[0], "#") {
			continue
		}
		path := fmt.Sprintf("line %d", n)
		bad := func(msg string) { vs = append(vs, fault.Violation{Path: path, Message: msg}) }
		spec, ok := parseKeyLine(fields, bad)
		if spec.Name != "" {
			folded := strings.ToLower(spec.Name)
			if first, dup := names[folded]; dup {
				bad(fmt.Sprintf("the key name is already used on line %d (names are compared in any letter case); give every key its own name, since it is recorded as the actor key:<name>", first))
				ok = false
			} else {
				names[folded] = n
			}
		}
		if spec.Hash != ([sha256.Size]byte{}) {
			if first, dup := hashes[spec.Hash]; dup {
				bad(fmt.Sprintf("the secret is the same as the one on line %d; give every key its own secret, or a request could not tell which key sent it", first))
				ok = false
			} else {
				hashes[spec.Hash] = n
			}
		}
		if ok {
			specs = append(specs, spec)
		}
	}
	if len(vs) == 0 && len(specs) == 0 {
		vs = append(vs, fault.Violation{Message: "has no keys; add one line per key: " + keyLineForm})
	}
	if len(vs) > 0 {
		return nil, &fault.ValidationError{Subject: "key file", Violations: vs}
	}
	return specs, nil
}

// parseKeyLine reads the fields of one key line. It returns the spec with
// every field that is valid filled in (so duplicates can still be found) and
// whether the whole line is valid; it reports each problem through bad.
func parseKeyLine(fields []string, bad func(string)) (KeySpec, bool) {
	listed := func(f string) bool { return strings.HasPrefix(f, sessionsPrefix) || strings.HasPrefix(f, queuesPrefix) }
	switch {
	case len(fields) < 3:
		bad("a key line needs a name, a role and a secret, in that order: " + keyLineForm)
		return KeySpec{}, false
	case len(fields) > 5:
		bad("a key line has at most five fields: " + keyLineForm + "; a secret cannot contain spaces, and a comment must start its own line")
		return KeySpec{}, false
	case listed(fields[len(fields)-1]):
		bad("the line ends with a list and has no secret; put the secret last: " + keyLineForm)
		return KeySpec{}, false
	}
	// Between the role and the secret: at most a session list and a queue
	// list, each once, in either order.
	var sessions, queues *string
	for _, f := range fields[2 : len(fields)-1] {
		switch {
		case strings.HasPrefix(f, sessionsPrefix) && sessions == nil:
			l := strings.TrimPrefix(f, sessionsPrefix)
			sessions = &l
		case strings.HasPrefix(f, queuesPrefix) && queues == nil:
			l := strings.TrimPrefix(f, queuesPrefix)
			queues = &l
		case listed(f):
			bad("a list is given twice; give sessions= and queues= at most once each: " + keyLineForm)
			return KeySpec{}, false
		default:
			bad("the fields between the role and the secret can only be the session list, sessions=a,b, and the queue list, queues=q1,q2: " + keyLineForm +
				"; a secret cannot contain spaces, and a comment must start its own line")
			return KeySpec{}, false
		}
	}
	var spec KeySpec
	ok := true
	if ValidName(fields[0]) {
		spec.Name = fields[0]
	} else {
		bad("the key name (first field) " + msgName)
		ok = false
	}
	if r, err := ParseRole(fields[1]); err == nil {
		spec.Role = r
	} else {
		bad("the role (second field) " + msgRole)
		ok = false
	}
	if sessions != nil {
		if *sessions == "" {
			bad("sessions= " + msgSessions)
			ok = false
		} else {
			var msgs []string
			spec.Sessions, msgs = checkSessions(strings.Split(*sessions, ","))
			for _, m := range msgs {
				bad("in sessions=, " + m)
				ok = false
			}
		}
	}
	if queues != nil {
		switch {
		case spec.Role.Valid() && spec.Role != Worker:
			bad("queues= " + msgQueuesNotWorker(spec.Role))
			ok = false
		case *queues == "":
			bad("queues= " + msgQueues)
			ok = false
		default:
			var msgs []string
			spec.Queues, msgs = checkQueues(strings.Split(*queues, ","))
			for _, m := range msgs {
				bad("in queues=, " + m)
				ok = false
			}
		}
	}
	hash, msgs := hashSecret(fields[len(fields)-1])
	for _, m := range msgs {
		bad(m)
		ok = false
	}
	if msgs == nil {
		spec.Hash = hash
	}
	return spec, ok
}

// Keyring holds the configured keys and authenticates presented secrets
// against them. It keeps only hashes. A Keyring with no keys authenticates
// nothing.
type Keyring struct {
	keys []storedKey
}

type storedKey struct {
	hash      [sha256.Size]byte
	principal Principal
}

// NewKeyring checks specs (as ParseKeyFile and NewKeySpec build them, perhaps
// from several sources) and returns a keyring of them. It refuses, all at
// once, invalid names, roles, session and queue lists (a queue list on a
// key that is not WORKER included), missing hashes, and names or hashes
// used twice.
func NewKeyring(specs []KeySpec) (*Keyring, error) {
	var vs []fault.Violation
	k := &Keyring{keys: make([]storedKey, 0, len(specs))}
	names := map[string]int{}
	hashes := map[[sha256.Size]byte]int{}
	for i, s := range specs {
		path := fmt.Sprintf("keys[%d]", i)
		p, err := NewKeyPrincipal(s.Name, s.Role, s.Sessions, s.Queues)
		if ve, ok := errors.AsType[*fault.ValidationError](err); ok {
			for _, v := range ve.Violations {
				vs = append(vs, fault.Violation{Path: path + "." + v.Path, Message: v.Message})
			}
		}
		if s.Hash == ([sha256.Size]byte{}) {
			vs = append(vs, fault.Violation{Path: path + ".hash", Message: "is empty; build keys with ParseKeyFile or NewKeySpec"})
		} else if first, dup := hashes[s.Hash]; dup {
			vs = append(vs, fault.Violation{Path: path + ".hash", Message: fmt.Sprintf("is the same as keys[%d]'s; give every key its own secret", first)})
		} else {
			hashes[s.Hash] = i
		}
		if ValidName(s.Name) {
			folded := strings.ToLower(s.Name)
			if first, dup := names[folded]; dup {
				vs = append(vs, fault.Violation{Path: path + ".name", Message: fmt.Sprintf("is already used by keys[%d] (names are compared in any letter case); give every key its own name", first)})
			} else {
				names[folded] = i
			}
		}
		k.keys = append(k.keys, storedKey{hash: s.Hash, principal: p})
	}
	if len(vs) > 0 {
		return nil, &fault.ValidationError{Subject: "keyring", Violations: vs}
	}
	return k, nil
}

// Len returns the number of keys.
func (k *Keyring) Len() int {
	if k == nil {
		return 0
	}
	return len(k.keys)
}

// Authenticate returns the principal of the key whose secret was presented.
// It hashes the presented secret and compares the hash with every stored
// hash in constant time, without stopping at a match, so the time taken
// does not depend on which key matched or how nearly one did. An empty
// secret authenticates nothing.
func (k *Keyring) Authenticate(presented string) (Principal, bool) {
	if k == nil || presented == "" {
		return Principal{}, false
	}
	h := sha256.Sum256([]byte(presented))
	match := -1
	for i := range k.keys {
		eq := subtle.ConstantTimeCompare(h[:], k.keys[i].hash[:])
		match = subtle.ConstantTimeSelect(eq, i, match)
	}
	if match < 0 {
		return Principal{}, false
	}
	return k.keys[match].principal, true
}

// Principals returns the principals of the keys, in the order they were
// given (for lists of the configured keys; no hash leaves the ring).
func (k *Keyring) Principals() []Principal {
	if k == nil {
		return nil
	}
	out := make([]Principal, len(k.keys))
	for i, s := range k.keys {
		out[i] = s.principal
	}
	return out
}
