package journal

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"strings"
	"unicode/utf8"

	"github.com/yukta/yukta/domain/plugin"
)

// MaxRecordedAnswer bounds the answer an InputAnswered event (and so its
// journal record) holds: the canonical JSON of the masked answer, in bytes.
// A larger answer is recorded by its head (its first MaxRecordedAnswer bytes
// or fewer, cut at a character boundary), its length and its SHA-256; the
// whole answer stays with the input (GET /api/inputs?status=all).
const MaxRecordedAnswer = 4 << 10

// RecordedAnswer is what the journal keeps of an answer to an input, as
// members of the InputAnswered event's data: the answer with its secrets
// masked (plugin.MaskSecrets: members whose name names a secret, the run's
// secret config values given as values, and credential-shaped text in
// strings), "answerBytes" and "answerSha256" (the
// length and "sha256:" + hex SHA-256 of the masked answer's RFC 8785
// canonical JSON) always, and, when that JSON is longer than
// MaxRecordedAnswer, "answerTruncated": true and "answerHead" (its first
// bytes) instead of "answer". An answer with no canonical form (a number
// beyond a double, NaN) is recorded by its head, length and digest of its
// encoding/json text in the same way.
func RecordedAnswer(answer any, values *strings.Replacer) map[string]any {
	masked := plugin.MaskSecrets(answer, values)
	raw, err := Canonical(masked)
	if err != nil {
		raw = []byte(jsonTextOf(masked))
	}
	sum := sha256.Sum256(raw)
	out := map[string]any{"answerBytes": len(raw), "answerSha256": DigestPrefix + hex.EncodeToString(sum[:])}
	if err == nil && len(raw) <= MaxRecordedAnswer {
		out["answer"] = masked
		return out
	}
	head := raw[:min(len(raw), MaxRecordedAnswer)]
	for len(head) > 0 && !utf8.Valid(head) {
		head = head[:len(head)-1] // at most 3 bytes of a cut character
	}
	out["answerTruncated"], out["answerHead"] = true, string(head)
	return out
}

// jsonTextOf is v as encoding/json writes it, for a value with no canonical
// form ("null" if it has none at all).
func jsonTextOf(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		return "null"
	}
	return string(b)
}
