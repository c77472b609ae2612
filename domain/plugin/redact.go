package plugin

import "strings"

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
