package plugin

import (
	"regexp"
	"strings"
)

// RedactURL returns raw fit to quote in a message or a log line: whatever
// stands between the scheme and the last "@" before the query (user and
// password) reads MaskedValue, as does every query value and the fragment.
// It works on text that does not parse as a URL too, because a URL that
// fails to parse may still carry a password.
func RedactURL(raw string) string {
	rest, frag, hasFrag := strings.Cut(raw, "#")
	head, query, hasQuery := strings.Cut(rest, "?")
	if at := strings.LastIndexByte(head, '@'); at >= 0 {
		start := 0
		if i := strings.Index(head, "://"); i >= 0 && i < at {
			start = i + len("://")
		}
		head = head[:start] + MaskedValue + head[at:]
	}
	var b strings.Builder
	b.WriteString(head)
	if hasQuery {
		b.WriteByte('?')
		for i, part := range strings.FieldsFunc(query, func(r rune) bool { return r == '&' || r == ';' }) {
			if i > 0 {
				b.WriteByte('&')
			}
			if name, _, ok := strings.Cut(part, "="); ok {
				b.WriteString(name + "=" + MaskedValue)
			} else {
				b.WriteString(MaskedValue) // a bare value may be a token
			}
		}
	}
	if hasFrag && frag != "" {
		b.WriteString("#" + MaskedValue)
	}
	return b.String()
}

// secretNames are parts of member names whose values are never shown.
var secretNames = []string{"secret", "password", "passwd", "token", "authorization", "apikey", "credential", "cookie", "privatekey"}

// SecretName reports whether a member (a JSON member, a header) with this
// name holds a secret, whatever its case and its - or _ spelling: the
// redaction of events reaching supervisors and the check that keeps such
// headers out of a supervisor's plain settings both ask it.
func SecretName(name string) bool {
	n := strings.ToLower(strings.NewReplacer("-", "", "_", "").Replace(name))
	for _, s := range secretNames {
		if strings.Contains(n, s) {
			return true
		}
	}
	return false
}

// credentialShapes match credentials commonly printed in logs and program
// output; group 1 (and 2, where there is one) is kept, the rest becomes
// MaskedValue.
var credentialShapes = []*regexp.Regexp{
	regexp.MustCompile(`(?i)(\bbearer\s+)[A-Za-z0-9._~+/=-]{8,}`),
	regexp.MustCompile(`(?i)(\bbasic\s+)[A-Za-z0-9+/=]{8,}`),
	regexp.MustCompile(`(?i)(\b(?:authorization|x-api-key|api[_-]?key|apikey|password|passwd|pwd|secret|token|access[_-]?token|client[_-]?secret|credential)["']?\s*[:=]\s*["']?)[^\s"',;&\\]{4,}`),
	regexp.MustCompile(`(?i)(://[^/\s:@]+:)[^/\s@]+(@)`),
	regexp.MustCompile(`(\byk[sk]_)[A-Za-z0-9]{8,}`),
}

// MaskCredentials masks credential-shaped text in free text (a log line, a
// program's output): bearer and basic tokens, key=value pairs whose key
// names a secret, a URL's password, Yukta's own supervisor tokens. Every
// door that hands such text on (the MCP log reads, the process engine's
// log summaries) masks with this one list.
func MaskCredentials(s string) string {
	for _, re := range credentialShapes {
		if re.NumSubexp() == 2 {
			s = re.ReplaceAllString(s, "${1}"+MaskedValue+"${2}")
			continue
		}
		s = re.ReplaceAllString(s, "${1}"+MaskedValue)
	}
	return s
}

// MaskSecrets returns a copy of a JSON value (as encoding/json decodes it)
// fit to record: the value of every member whose name SecretName flags
// becomes MaskedValue, at any depth, and every string is passed through
// values (a run's secret config values, each to MaskedValue; nil for none)
// and MaskCredentials. It masks with the same lists as every other door; it
// keeps no list of its own. Values other than objects, arrays and strings
// are returned as they are.
func MaskSecrets(v any, values *strings.Replacer) any {
	switch x := v.(type) {
	case string:
		if values != nil {
			x = values.Replace(x)
		}
		return MaskCredentials(x)
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			if SecretName(k) {
				out[k] = MaskedValue
				continue
			}
			out[k] = MaskSecrets(e, values)
		}
		return out
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = MaskSecrets(e, values)
		}
		return out
	}
	return v
}
