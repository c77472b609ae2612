package journal_test

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/yukta/yukta/domain/journal"
)

func decode(t *testing.T, s string) any {
	t.Helper()
	dec := json.NewDecoder(strings.NewReader(s))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		t.Fatal(err)
	}
	return v
}

func digestOf(b []byte) string {
	sum := sha256.Sum256(b)
	return journal.DigestPrefix + hex.EncodeToString(sum[:])
}

// TestRecordedAnswerMasksAndBounds: an answer is recorded with its secrets
// masked, its length and SHA-256; one whose canonical JSON is longer than
// MaxRecordedAnswer is recorded by a head that is valid UTF-8 and a prefix
// of it, never whole; and the record of either is canonical, so it can be
// journaled.
func TestRecordedAnswerMasksAndBounds(t *testing.T) {
	t.Parallel()
	got := journal.RecordedAnswer(decode(t, `{"ok":true,"password":"hunter2","why":"token=abcdef123","n":9007199254740993,"db":"uses s3cr3tv4lue"}`),
		strings.NewReplacer("s3cr3tv4lue", "***"))
	want, _ := journal.Canonical(decode(t, `{"db":"uses ***","n":9007199254740993,"ok":true,"password":"***","why":"token=***"}`))
	if c, _ := journal.Canonical(got["answer"]); string(c) != string(want) {
		t.Errorf("answer %s, want %s", c, want)
	}
	if got["answerBytes"] != len(want) || got["answerSha256"] != digestOf(want) || got["answerTruncated"] != nil || got["answerHead"] != nil {
		t.Errorf("small answer recorded as %v", got)
	}
	if _, err := journal.Canonical(got); err != nil {
		t.Errorf("the record of an answer is not canonical: %v", err)
	}

	for _, n := range []int{journal.MaxRecordedAnswer - 8, journal.MaxRecordedAnswer - 7, journal.MaxRecordedAnswer, 3 * journal.MaxRecordedAnswer} {
		for _, ch := range []string{"a", "é", "€", "😀"} {
			text := strings.Repeat(ch, n/len(ch))
			answer := map[string]any{"text": text}
			canon, _ := journal.Canonical(answer)
			got := journal.RecordedAnswer(answer, nil)
			if got["answerBytes"] != len(canon) || got["answerSha256"] != digestOf(canon) {
				t.Errorf("%d×%q: length %v digest %v, want %d %s", n, ch, got["answerBytes"], got["answerSha256"], len(canon), digestOf(canon))
			}
			if len(canon) <= journal.MaxRecordedAnswer {
				if got["answer"] == nil || got["answerTruncated"] != nil {
					t.Errorf("%d bytes: not recorded whole: %v", len(canon), got["answerTruncated"])
				}
				continue
			}
			head, _ := got["answerHead"].(string)
			if got["answer"] != nil || got["answerTruncated"] != true || len(head) > journal.MaxRecordedAnswer ||
				len(head) <= journal.MaxRecordedAnswer-utf8.UTFMax || !utf8.ValidString(head) || !strings.HasPrefix(string(canon), head) {
				t.Errorf("%d bytes of %q: head of %d bytes (valid %v), truncated %v", len(canon), ch, len(head), utf8.ValidString(head), got["answerTruncated"])
			}
		}
	}

	// No canonical form (a fraction beyond a double): recorded by its text.
	odd := journal.RecordedAnswer(map[string]any{"x": json.Number("1e400")}, nil)
	if odd["answer"] != nil || odd["answerTruncated"] != true || odd["answerHead"] != `{"x":1e400}` || odd["answerBytes"] != 11 {
		t.Errorf("an answer with no canonical form is recorded as %v", odd)
	}
}
