package access_test

import (
	"errors"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/yukta/yukta/domain/access"
	"github.com/yukta/yukta/domain/fault"
)

var linePath = regexp.MustCompile(`^line [1-9][0-9]*$`)

// FuzzParseKeyFile feeds arbitrary bytes to ParseKeyFile: it never panics; a
// refusal is a *fault.ValidationError whose violations each have a message
// and a "line N" path (or none, for a file without keys), and which repeats
// no field as long as a secret (unless the file has a session or queue
// list, whose names are quoted); an accepted file builds a keyring that
// authenticates nothing empty, and only WORKER keys carry queue lists.
func FuzzParseKeyFile(f *testing.F) {
	for _, seed := range []string{
		goodFile,
		"",
		"# comment only\n",
		"alice ADMIN " + sha(secretAlice),
		"alice admin SHA256:" + strings.Repeat("ab", 32),
		"ci OPERATOR sessions=etl,web " + secretCI + "\r\n",
		"ci OPERATOR sessions= " + secretCI,
		"ci OPERATOR sessions=etl " + secretCI + " # trailing",
		"ci OPERATOR etl " + secretCI,
		"ci OPERATOR sessions=etl",
		"ci ROOT short",
		"ci VIEWER sha256:" + strings.Repeat("0", 64),
		"a VIEWER " + secretCI + "\nA VIEWER " + secretDash,
		"a VIEWER " + secretCI + "\nb VIEWER " + sha(secretCI),
		"\ufeffa\tVIEWER\t" + secretDash,
		secretDash + " ADMIN " + secretCI,
		"a VIEWER " + secretCI + "\x00\xff",
		strings.Repeat("x VIEWER "+secretCI+"\n", 3),
		"w WORKER queues=gpu,build " + secretCI,
		"w worker sessions=etl queues=a.b_c-d " + secretCI,
		"w WORKER queues=a sessions=etl " + sha(secretAlice),
		"w WORKER queues=a queues=b " + secretCI,
		"w WORKER queues= " + secretCI,
		"w WORKER queues=Bad,,x,x " + secretCI,
		"v VIEWER queues=build " + secretCI,
		"w WORKER queues=a",
		"w WORKER queues=" + secretCI,
		"w WORKER sessions=etl queues=a " + secretCI + " extra",
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		specs, err := access.ParseKeyFile(data)
		if err != nil {
			ve, ok := errors.AsType[*fault.ValidationError](err)
			if !ok {
				t.Fatalf("error: got %T (%v), want *fault.ValidationError", err, err)
			}
			if !errors.Is(err, fault.ErrInvalid) {
				t.Fatalf("errors.Is(err, fault.ErrInvalid): got false, want true")
			}
			if specs != nil {
				t.Fatalf("specs with an error: got %d, want none", len(specs))
			}
			if len(ve.Violations) == 0 {
				t.Fatalf("violations: got none, want at least one")
			}
			for i, v := range ve.Violations {
				if v.Message == "" || (v.Path != "" && !linePath.MatchString(v.Path)) {
					t.Fatalf("violation %d: got path %q, message %q, want a message and a path \"line N\"", i, v.Path, v.Message)
				}
			}
			// A field as long as a secret must be cannot be part of the fixed
			// texts, whose words are all shorter; only quoted session ids are
			// taken from the file.
			if !strings.Contains(string(data), "sessions=") && !strings.Contains(string(data), "queues=") {
				text := err.Error()
				for _, field := range strings.Fields(string(data)) {
					if len(field) >= access.MinSecretLen && strings.Contains(text, field) {
						t.Fatalf("error repeats the field %q of the file: %s", field, text)
					}
				}
			}
			return
		}
		if len(specs) == 0 {
			t.Fatalf("accepted file: got no keys and no error, want one or the other")
		}
		k, err := access.NewKeyring(specs)
		if err != nil {
			t.Fatalf("NewKeyring of accepted specs: got %v, want no error", err)
		}
		if k.Len() != len(specs) {
			t.Fatalf("Len(): got %d, want %d", k.Len(), len(specs))
		}
		if p, ok := k.Authenticate(""); ok {
			t.Fatalf("Authenticate(\"\"): got %q, want a refusal", p.Actor())
		}
		for _, s := range specs {
			p, err := access.NewKeyPrincipal(s.Name, s.Role, s.Sessions, s.Queues)
			if err != nil {
				t.Fatalf("NewKeyPrincipal of accepted spec %q: got %v, want no error", s.Name, err)
			}
			if s.Queues != nil && s.Role != access.Worker {
				t.Fatalf("accepted spec %q: a queue list on the role %s, want WORKER only", s.Name, s.Role)
			}
			for _, q := range s.Queues {
				if access.ValidateQueueName(q) != nil || !p.MayUseQueue(q) {
					t.Fatalf("accepted spec %q: queue %q not valid or not usable", s.Name, q)
				}
			}
			if p.Actor() != "key:"+s.Name {
				t.Fatalf("Actor(): got %q, want %q", p.Actor(), "key:"+s.Name)
			}
		}
	})
}

// FuzzAPIKeyToken: Parse never panics, accepts only strings of the kind's
// exact length and prefix whose re-encoding is themselves, and its error
// never repeats the string.
func FuzzAPIKeyToken(f *testing.F) {
	tok, _ := access.APIKeyTokens.New(strings.NewReader(strings.Repeat("x", 32)))
	for _, seed := range []string{tok.Reveal(), "", "yk_", "yks_" + tok.Reveal()[3:], tok.Reveal()[:20] + "\n" + tok.Reveal()[21:], strings.ToUpper(tok.Reveal())} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, s string) {
		h, err := access.APIKeyTokens.Parse(s)
		if err != nil {
			if !errors.Is(err, access.ErrTokenMalformed) || (len(s) > 8 && strings.Contains(err.Error(), s)) {
				t.Fatalf("Parse(%q) = %v", s, err)
			}
			return
		}
		if len(s) != access.APIKeyTokens.Len() || !strings.HasPrefix(s, "yk_") || h == (access.TokenHash{}) {
			t.Fatalf("Parse accepted %q", s)
		}
		if ring := access.NewAPIKeyRing(nil); ring.Len() != 0 {
			t.Fatal("empty ring")
		}
	})
}

// FuzzNewAPIKey feeds arbitrary fields to NewAPIKey (the body of POST
// /api/keys and create_api_key, after decoding): it never panics; a
// refusal is a validation error whose violations each sit at one of the
// request's members; an accepted key has a valid name, role and a yk_
// token, and an expiry within the bound.
func FuzzNewAPIKey(f *testing.F) {
	f.Add("ci-bot", "ADMIN", "alpha,beta", "", "", "720h")
	f.Add("bad name", "ROOT", "", "", "tomorrow", "")
	f.Add("x", "viewer", ",", "", "2030-01-01T00:00:00Z", "1h")
	f.Add("", "", "a,a", "", "2001-01-01T00:00:00Z", "-5m")
	f.Add("runner", "WORKER", "alpha", "gpu,build", "", "")
	f.Add("v", "VIEWER", "", "build", "", "")
	f.Add("w", "worker", "", "Bad,,x,x", "", "")
	paths := map[string]bool{"name": true, "role": true, "sessions": true, "queues": true, "expiresAt": true, "ttl": true}
	f.Fuzz(func(t *testing.T, name, role, sessions, queues, expiresAt, ttl string) {
		var list, qs []string
		if sessions != "" {
			list = strings.Split(sessions, ",")
		}
		if queues != "" {
			qs = strings.Split(queues, ",")
		}
		at := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
		k, tok, err := access.NewAPIKey(access.APIKeySpec{Name: name, Role: role, Sessions: list, Queues: qs, ExpiresAt: expiresAt, TTL: ttl}, strings.NewReader(strings.Repeat("r", 32)), at, "key:admin", "rest")
		if err != nil {
			ve, ok := errors.AsType[*fault.ValidationError](err)
			if !ok || len(ve.Violations) == 0 {
				t.Fatalf("refusal %v is not a validation error", err)
			}
			for _, v := range ve.Violations {
				if !paths[v.Path] || v.Message == "" {
					t.Fatalf("violation %+v is not at a member of the request", v)
				}
			}
			return
		}
		if !access.ValidName(k.Name()) || !k.Role().Valid() || !strings.HasPrefix(tok.Reveal(), "yk_") || k.Hash() != tok.Hash() ||
			k.Queues() != nil && k.Role() != access.Worker {
			t.Fatalf("accepted %+v", k)
		}
		if e := k.ExpiresAt(); !e.IsZero() && (!e.After(at) || e.Sub(at) > access.MaxAPIKeyLifetime) {
			t.Fatalf("expiry %s out of bounds", e)
		}
	})
}
