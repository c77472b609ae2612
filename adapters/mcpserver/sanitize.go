package mcpserver

import (
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/yukta/yukta/domain/plugin"
)

// Text from workflows (log lines, node errors) is data written by plugins and
// by whatever those plugins talked to. Before it reaches a model it is made
// inert: control and formatting characters (ANSI escapes, zero-width and
// bidi marks, line breaks) are escaped as \uXXXX (\UXXXXXXXX beyond the
// BMP) so the text cannot fake
// structure or hide instructions, credential-shaped substrings are masked,
// and each string is capped.

// MaxLogLineBytes caps one log message handed to an agent.
const MaxLogLineBytes = 4 << 10

// redact masks credential-shaped substrings.
func redact(s string) string { return plugin.MaskCredentials(s) }

// sanitizeText escapes control and invisible formatting characters, replaces
// invalid UTF-8, and caps the result at max bytes (before escaping grows it,
// the cut is reported).
func sanitizeText(s string, max int) string {
	cut := 0
	if len(s) > max {
		cut = len(s) - max
		s = s[:max]
		// Do not leave half a character at the cut.
		for i := len(s) - 1; i >= 0 && i >= len(s)-utf8.UTFMax; i-- {
			if utf8.RuneStart(s[i]) {
				if !utf8.FullRuneInString(s[i:]) {
					cut += len(s) - i
					s = s[:i]
				}
				break
			}
		}
	}
	var b strings.Builder
	b.Grow(len(s))
	for i := 0; i < len(s); {
		r, w := utf8.DecodeRuneInString(s[i:])
		i += w
		switch {
		case r == utf8.RuneError && w == 1:
			b.WriteString(`\uFFFD`)
		case r > 0xFFFF && invisible(r):
			fmt.Fprintf(&b, `\U%08X`, r)
		case r < 0x20, r == 0x7f, r >= 0x80 && r < 0xa0, invisible(r):
			fmt.Fprintf(&b, `\u%04X`, r)
		default:
			b.WriteRune(r)
		}
	}
	if cut > 0 {
		fmt.Fprintf(&b, " …[%d bytes cut]", cut)
	}
	return b.String()
}

// invisible reports formatting characters that render as nothing or reorder
// text: zero-width spaces and joiners, bidi controls, line and paragraph
// separators, the BOM, tag characters.
func invisible(r rune) bool {
	switch {
	case r >= 0x200B && r <= 0x200F, r >= 0x2028 && r <= 0x202E, r >= 0x2060 && r <= 0x206F,
		r == 0xFEFF, r == 0x00AD, r >= 0xE0000 && r <= 0xE007F, r >= 0xFFF9 && r <= 0xFFFB:
		return true
	}
	return unicode.Is(unicode.Cf, r)
}

// cleanLog is what every log line goes through: redact, then escape and cap.
func cleanLog(s string) string { return sanitizeText(redact(s), MaxLogLineBytes) }
