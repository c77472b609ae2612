package access_test

import (
	"errors"
	"regexp"
	"strings"
	"testing"

	"github.com/yukta/yukta/domain/access"
	"github.com/yukta/yukta/domain/fault"
)

var linePath = regexp.MustCompile(`^line [1-9][0-9]*$`)

// FuzzParseKeyFile feeds arbitrary bytes to ParseKeyFile: it never panics; a
// refusal is a *fault.ValidationError whose violations each have a message
// and a "line N" path (or none, for a file without keys), and which repeats
// no field as long as a secret (unless the file has a session list, whose
// ids are quoted); an accepted file builds a keyring that authenticates nothing
// empty.
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
			if !strings.Contains(string(data), "sessions=") {
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
			p, err := access.NewPrincipal(s.Name, s.Role, s.Sessions)
			if err != nil {
				t.Fatalf("NewPrincipal of accepted spec %q: got %v, want no error", s.Name, err)
			}
			if p.Actor() != "key:"+s.Name {
				t.Fatalf("Actor(): got %q, want %q", p.Actor(), "key:"+s.Name)
			}
		}
	})
}
