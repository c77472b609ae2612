package access_test

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/yukta/yukta/domain/access"
	"github.com/yukta/yukta/domain/fault"
)

// Canary secrets: none may ever be found in a spec, a keyring or an error.
const (
	secretAlice = "Hk2LwQ9r7TzV1mNc5XbP8sDf3GjY6uAe" // given to the file as its hash
	secretCI    = "ci-9vR4tW2qL7xZ1kM6nB3cF8hJ5pS0"  // plain
	secretDash  = "dash/K3m+P9q=R2s!T7u#V1w%X5y&Z8a" // plain, with '#' and other marks
)

func sha(s string) string {
	h := sha256.Sum256([]byte(s))
	return "sha256:" + hex.EncodeToString(h[:])
}

var goodFile = "\ufeff# Yukta keys\n" +
	"\t # an indented comment\n" +
	"\n" +
	"alice   admin     " + strings.ToUpper(sha(secretAlice)) + "\n" +
	"ci-bot  OPERATOR  sessions=web,etl  " + secretCI + "\r\n" +
	"   \t\n" +
	"dash\tViewer\t" + secretDash // no final newline

func TestParseKeyFile(t *testing.T) {
	t.Parallel()
	specs, err := access.ParseKeyFile([]byte(goodFile))
	if err != nil {
		t.Fatalf("ParseKeyFile: got %v, want no error", err)
	}
	want := []access.KeySpec{
		{Name: "alice", Role: access.Admin, Hash: sha256.Sum256([]byte(secretAlice))},
		{Name: "ci-bot", Role: access.Operator, Sessions: []string{"etl", "web"}, Hash: sha256.Sum256([]byte(secretCI))},
		{Name: "dash", Role: access.Viewer, Hash: sha256.Sum256([]byte(secretDash))},
	}
	if len(specs) != len(want) {
		t.Fatalf("ParseKeyFile: got %d keys, want %d", len(specs), len(want))
	}
	for i := range want {
		got := specs[i]
		if got.Name != want[i].Name || got.Role != want[i].Role || got.Hash != want[i].Hash ||
			!slices.Equal(got.Sessions, want[i].Sessions) || (got.Sessions == nil) != (want[i].Sessions == nil) {
			t.Errorf("key %d: got %+v, want %+v", i, got, want[i])
		}
	}
	assertNoSecret(t, "the parsed specs", fmt.Sprintf("%+v %#v", specs, specs), secretAlice, secretCI, secretDash)
}

// assertNoSecret fails if text holds any secret or any 8 characters of one.
func assertNoSecret(t *testing.T, what, text string, secrets ...string) {
	t.Helper()
	for _, s := range secrets {
		for i := 0; i+8 <= len(s); i++ {
			if strings.Contains(text, s[i:i+8]) {
				t.Errorf("%s: got %q, part of a secret, in %q; want no part of any secret", what, s[i:i+8], text)
				return
			}
		}
	}
}

func TestParseKeyFileReportsEveryBadLine(t *testing.T) {
	t.Parallel()
	plain := func(i int) string { return fmt.Sprintf("uniqueSecretNumber%02d-abcdefgh", i) }
	lines := []string{
		/* 1 */ "# every kind of bad line, and good ones between them",
		/* 2 */ "two-fields VIEWER",
		/* 3 */ "five VIEWER sessions=etl " + plain(3) + " trailing-comment",
		/* 4 */ "four VIEWER etl " + plain(4),
		/* 5 */ "no-secret VIEWER sessions=etl",
		/* 6 */ "key:colon VIEWER " + plain(6),
		/* 7 */ "root-role ROOT " + plain(7),
		/* 8 */ "short VIEWER tooShort-23-characters!",
		/* 9 */ "bad-hash VIEWER sha256:abc123",
		/* 10 */ "not-hex VIEWER sha256:" + strings.Repeat("zz", 32),
		/* 11 */ "zero-hash VIEWER sha256:" + strings.Repeat("0", 64),
		/* 12 */ "empty-list VIEWER sessions= " + plain(12),
		/* 13 */ "bad-list VIEWER sessions=Etl,,web,web " + plain(13),
		/* 14 */ "control VIEWER " + plain(14) + "\x01",
		/* 15 */ "lists-twice VIEWER sessions=etl sessions=" + plain(15),
		/* 16 */ "good ADMIN " + plain(16),
		/* 17 */ "GOOD VIEWER " + plain(17),
		/* 18 */ "same-secret VIEWER " + sha(plain(16)),
		/* 19 */ "bad:name ROOT " + secretCI[:10],
		/* 20 */ secretDash + " ADMIN " + secretCI, // fields in the wrong order
	}
	_, err := access.ParseKeyFile([]byte(strings.Join(lines, "\n")))
	ve, ok := errors.AsType[*fault.ValidationError](err)
	if !ok {
		t.Fatalf("ParseKeyFile: got %v, want a *fault.ValidationError", err)
	}
	if ve.Subject != "key file" || !errors.Is(err, fault.ErrInvalid) {
		t.Errorf("error: got subject %q (matches ErrInvalid: %v), want \"key file\" matching ErrInvalid", ve.Subject, errors.Is(err, fault.ErrInvalid))
	}
	want := []struct{ path, says string }{
		{"line 2", "a key line needs a name, a role and a secret, in that order: name ROLE [sessions=a,b] [queues=q1,q2] secret"},
		{"line 3", "the fields between the role and the secret can only be the session list, sessions=a,b, and the queue list, queues=q1,q2: name ROLE [sessions=a,b] [queues=q1,q2] secret; a secret cannot contain spaces, and a comment must start its own line"},
		{"line 4", "the fields between the role and the secret can only be the session list, sessions=a,b, and the queue list, queues=q1,q2: name ROLE [sessions=a,b] [queues=q1,q2] secret; a secret cannot contain spaces, and a comment must start its own line"},
		{"line 5", "the line ends with a list and has no secret; put the secret last: name ROLE [sessions=a,b] [queues=q1,q2] secret"},
		{"line 6", "the key name (first field) must be 1 to 64 letters, digits, '.', '_' or '-', starting with a letter or digit (for example ci-bot)"},
		{"line 7", "the role (second field) must be VIEWER (read only), OPERATOR (also start and control executions), ADMIN (everything but the worker API) or WORKER (only take and answer tasks of worker queues, through the worker API)"},
		{"line 8", "the secret is shorter than 24 characters; keys are kept as a fast, unsalted SHA-256, which only protects a long random secret against guessing, so use one such as: openssl rand -base64 32"},
		{"line 9", `a sha256: secret must be followed by exactly 64 hexadecimal digits; compute the hash with: printf '%s' "$SECRET" | sha256sum`},
		{"line 10", `a sha256: secret must be followed by exactly 64 hexadecimal digits; compute the hash with: printf '%s' "$SECRET" | sha256sum`},
		{"line 11", `the sha256: hash is all zeros, which is no secret's hash; compute the hash with: printf '%s' "$SECRET" | sha256sum`},
		{"line 12", "sessions= needs at least one session id; leave the list out to allow every session"},
		{"line 13", `in sessions=, "Etl" is not a session id; ids are 1 to 64 lowercase letters, digits, '_' or '-', starting with a letter or digit`},
		{"line 13", `in sessions=, "" is not a session id; ids are 1 to 64 lowercase letters, digits, '_' or '-', starting with a letter or digit`},
		{"line 13", `in sessions=, session "web" is listed twice; list it once`},
		{"line 14", "the secret must be printable ASCII without spaces, since it travels in an HTTP header; generate one with: openssl rand -base64 32"},
		{"line 15", "the line ends with a list and has no secret; put the secret last: name ROLE [sessions=a,b] [queues=q1,q2] secret"},
		{"line 17", "the key name is already used on line 16 (names are compared in any letter case); give every key its own name, since it is recorded as the actor key:<name>"},
		{"line 18", "the secret is the same as the one on line 16; give every key its own secret, or a request could not tell which key sent it"},
		{"line 19", "the key name (first field) must be 1 to 64 letters, digits, '.', '_' or '-', starting with a letter or digit (for example ci-bot)"},
		{"line 19", "the role (second field) must be VIEWER (read only), OPERATOR (also start and control executions), ADMIN (everything but the worker API) or WORKER (only take and answer tasks of worker queues, through the worker API)"},
		{"line 19", "the secret is shorter than 24 characters; keys are kept as a fast, unsalted SHA-256, which only protects a long random secret against guessing, so use one such as: openssl rand -base64 32"},
		{"line 20", "the key name (first field) must be 1 to 64 letters, digits, '.', '_' or '-', starting with a letter or digit (for example ci-bot)"},
	}
	n := max(len(want), len(ve.Violations))
	for i := range n {
		var got fault.Violation
		if i < len(ve.Violations) {
			got = ve.Violations[i]
		}
		if i >= len(want) {
			t.Errorf("violation %d: got %s: %s, want none", i, got.Path, got.Message)
			continue
		}
		if got.Path != want[i].path || got.Message != want[i].says {
			t.Errorf("violation %d:\ngot  %s: %s\nwant %s: %s", i, got.Path, got.Message, want[i].path, want[i].says)
		}
	}
	// No field of the file is repeated: a misplaced field may be a secret.
	assertNoSecret(t, "the error", err.Error(), secretCI, secretDash, plain(3), plain(4), plain(6), plain(7), plain(14), plain(15), plain(16))
}

func TestParseKeyFileRefusesAFileWithoutKeys(t *testing.T) {
	t.Parallel()
	for _, data := range []string{"", "\n\n", "# only comments\n  # here\n", "\ufeff"} {
		_, err := access.ParseKeyFile([]byte(data))
		ve, ok := errors.AsType[*fault.ValidationError](err)
		if !ok {
			t.Errorf("ParseKeyFile(%q): got %v, want a *fault.ValidationError", data, err)
			continue
		}
		if got, want := err.Error(), "key file is invalid: has no keys; add one line per key: name ROLE [sessions=a,b] [queues=q1,q2] secret"; got != want || len(ve.Violations) != 1 {
			t.Errorf("ParseKeyFile(%q): got %q, want %q", data, got, want)
		}
	}
}

func TestNewKeySpec(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		secret   string
		sessions []string
		want     [sha256.Size]byte
	}{
		{"plain", secretCI, nil, sha256.Sum256([]byte(secretCI))},
		{"hash", sha(secretAlice), []string{"web", "etl"}, sha256.Sum256([]byte(secretAlice))},
	}
	for _, tt := range tests {
		spec, err := access.NewKeySpec("api", access.Admin, tt.sessions, tt.secret)
		if err != nil {
			t.Errorf("%s: NewKeySpec: got %v, want no error", tt.name, err)
			continue
		}
		if spec.Hash != tt.want || spec.Name != "api" || spec.Role != access.Admin {
			t.Errorf("%s: NewKeySpec: got %+v, want name api, role ADMIN and the secret's hash", tt.name, spec)
		}
		assertNoSecret(t, tt.name, fmt.Sprintf("%+v", spec), secretCI)
	}
	_, err := access.NewKeySpec("", 0, []string{}, "short#"+secretDash[:8])
	ve, ok := errors.AsType[*fault.ValidationError](err)
	if !ok {
		t.Fatalf("NewKeySpec(all wrong): got %v, want a *fault.ValidationError", err)
	}
	var paths []string
	for _, v := range ve.Violations {
		paths = append(paths, v.Path)
	}
	if want := []string{"name", "role", "sessions", "secret"}; !slices.Equal(paths, want) {
		t.Errorf("NewKeySpec(all wrong): got paths %q, want %q", paths, want)
	}
	assertNoSecret(t, "NewKeySpec error", err.Error(), secretDash[:8]+"xxxxxxxx")
}

func mustKeyring(t *testing.T, data string) *access.Keyring {
	t.Helper()
	specs, err := access.ParseKeyFile([]byte(data))
	if err != nil {
		t.Fatalf("ParseKeyFile: %v", err)
	}
	k, err := access.NewKeyring(specs)
	if err != nil {
		t.Fatalf("NewKeyring: %v", err)
	}
	return k
}

func TestAuthenticate(t *testing.T) {
	t.Parallel()
	k := mustKeyring(t, goodFile)
	if got, want := k.Len(), 3; got != want {
		t.Errorf("Len(): got %d, want %d", got, want)
	}
	tests := []struct {
		name      string
		presented string
		wantActor string // "" when refused
		wantRole  access.Role
	}{
		{"admin by hashed entry", secretAlice, "key:alice", access.Admin},
		{"operator by plain entry", secretCI, "key:ci-bot", access.Operator},
		{"viewer with marks in the secret", secretDash, "key:dash", access.Viewer},
		{"empty", "", "", 0},
		{"one character changed", secretCI[:len(secretCI)-1] + "1", "", 0},
		{"a prefix", secretCI[:24], "", 0},
		{"trailing newline", secretCI + "\n", "", 0},
		{"surrounding space", " " + secretCI, "", 0},
		{"other case", strings.ToUpper(secretAlice), "", 0},
		{"the stored hash itself", sha(secretAlice), "", 0},
		{"a random key", "Q1w2E3r4T5y6U7i8O9p0A1s2D3f4G5h6", "", 0},
	}
	for _, tt := range tests {
		p, ok := k.Authenticate(tt.presented)
		if ok != (tt.wantActor != "") || p.Actor() != tt.wantActor || p.Role() != tt.wantRole {
			t.Errorf("%s: Authenticate: got %q, %s, %v, want %q, %s, %v", tt.name, p.Actor(), p.Role(), ok, tt.wantActor, tt.wantRole, tt.wantActor != "")
		}
		if !ok && !p.IsZero() {
			t.Errorf("%s: Authenticate refused but returned %q, want the zero Principal", tt.name, p.Actor())
		}
	}
	p, _ := k.Authenticate(secretCI)
	if got, want := p.Sessions(), []string{"etl", "web"}; !slices.Equal(got, want) {
		t.Errorf("ci-bot sessions: got %q, want %q", got, want)
	}
	assertNoSecret(t, "the keyring", fmt.Sprintf("%+v %#v", *k, *k), secretAlice, secretCI, secretDash)

	var none *access.Keyring
	if p, ok := none.Authenticate(secretCI); ok || none.Len() != 0 {
		t.Errorf("nil keyring: got %q, %v, length %d, want a refusal and length 0", p.Actor(), ok, none.Len())
	}
	empty, err := access.NewKeyring(nil)
	if err != nil {
		t.Fatalf("NewKeyring(nil): %v", err)
	}
	if p, ok := empty.Authenticate(secretCI); ok {
		t.Errorf("empty keyring: got %q, want a refusal", p.Actor())
	}
}

func TestNewKeyringRefuses(t *testing.T) {
	t.Parallel()
	fromFile, err := access.ParseKeyFile([]byte(goodFile))
	if err != nil {
		t.Fatal(err)
	}
	// YUKTA_API_KEY joins the file's keys; it may not reuse a name or secret.
	env, err := access.NewKeySpec("ALICE", access.Admin, nil, secretCI)
	if err != nil {
		t.Fatal(err)
	}
	specs := append(slices.Clone(fromFile), env,
		access.KeySpec{Name: "no-hash", Role: access.Viewer},
		access.KeySpec{Name: "bad role", Role: 9, Hash: sha256.Sum256([]byte("x"))})
	_, err = access.NewKeyring(specs)
	ve, ok := errors.AsType[*fault.ValidationError](err)
	if !ok {
		t.Fatalf("NewKeyring: got %v, want a *fault.ValidationError", err)
	}
	var got []string
	for _, v := range ve.Violations {
		got = append(got, v.Path+": "+v.Message)
	}
	want := []string{
		"keys[3].hash: is the same as keys[1]'s; give every key its own secret",
		"keys[3].name: is already used by keys[0] (names are compared in any letter case); give every key its own name",
		"keys[4].hash: is empty; build keys with ParseKeyFile or NewKeySpec",
		"keys[5].name: must be 1 to 64 letters, digits, '.', '_' or '-', starting with a letter or digit (for example ci-bot)",
		"keys[5].role: must be VIEWER (read only), OPERATOR (also start and control executions), ADMIN (everything but the worker API) or WORKER (only take and answer tasks of worker queues, through the worker API)",
	}
	if !slices.Equal(got, want) {
		t.Errorf("NewKeyring violations:\ngot  %q\nwant %q", got, want)
	}
}

func TestSecretLengthBoundary(t *testing.T) {
	t.Parallel()
	tests := []struct {
		n      int
		wantOK bool
	}{
		{access.MinSecretLen - 1, false},
		{access.MinSecretLen, true},
	}
	for _, tt := range tests {
		secret := strings.Repeat("k", tt.n)
		_, err := access.ParseKeyFile([]byte("ci VIEWER " + secret))
		if (err == nil) != tt.wantOK {
			t.Errorf("ParseKeyFile with a %d-character secret: got %v, want accepted %v", tt.n, err, tt.wantOK)
		}
		_, err = access.NewKeySpec("ci", access.Viewer, nil, secret)
		if (err == nil) != tt.wantOK {
			t.Errorf("NewKeySpec with a %d-character secret: got %v, want accepted %v", tt.n, err, tt.wantOK)
		}
	}
}

// BenchmarkAuthenticate: every request hashes the presented key and
// compares it with every stored hash, so the cost grows with the keyring.
func BenchmarkAuthenticate(b *testing.B) {
	for _, n := range []int{1, 10, 100, 1000} {
		b.Run(fmt.Sprintf("keys=%d", n), func(b *testing.B) {
			specs := make([]access.KeySpec, n)
			for i := range specs {
				s, err := access.NewKeySpec(fmt.Sprintf("k%d", i), access.Viewer, nil, fmt.Sprintf("secret-%d-0123456789abcdefghijkl", i))
				if err != nil {
					b.Fatal(err)
				}
				specs[i] = s
			}
			k, err := access.NewKeyring(specs)
			if err != nil {
				b.Fatal(err)
			}
			presented := fmt.Sprintf("secret-%d-0123456789abcdefghijkl", n-1)
			for b.Loop() {
				if _, ok := k.Authenticate(presented); !ok {
					b.Fatal("not authenticated")
				}
			}
		})
	}
}
