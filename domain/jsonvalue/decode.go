package jsonvalue

import (
	"encoding/json"
	"fmt"
	"strings"
	"unicode/utf16"
	"unicode/utf8"
)

// decoder is a small recursive-descent JSON reader. encoding/json cannot be
// told to refuse duplicate keys, invalid UTF-8 or lone surrogates (it keeps
// the last key and substitutes U+FFFD), and its errors carry no path, so
// requests are read here and only then handed to typed decoders.
type decoder struct {
	data []byte
	pos  int
	// collect makes a broken rule that leaves the text readable (a
	// repeated key, U+0000, invalid UTF-8, a lone surrogate, a number out
	// of range) a note in rules instead of the end of the read; syntax,
	// depth and trailing data still end it.
	collect bool
	rules   []*Error
}

// rule reports a broken rule: the error that ends the read, or nil once it
// is noted (collect).
func (d *decoder) rule(e *Error) error {
	if !d.collect {
		return e
	}
	d.rules = append(d.rules, e)
	return nil
}

func (d *decoder) syntax(path, format string, args ...any) error {
	return &Error{Path: path, Reason: fmt.Sprintf("is not valid JSON at byte %d: ", d.pos) + fmt.Sprintf(format, args...)}
}

func (d *decoder) space() {
	for d.pos < len(d.data) {
		switch d.data[d.pos] {
		case ' ', '\t', '\n', '\r':
			d.pos++
		default:
			return
		}
	}
}

func (d *decoder) value(path string, depth int) (any, error) {
	if depth > MaxDepth {
		return nil, &Error{Path: path, Reason: reasonDepth}
	}
	d.space()
	if d.pos >= len(d.data) {
		if d.pos == 0 {
			return nil, &Error{Path: path, Reason: "is empty; send a JSON value"}
		}
		return nil, d.syntax(path, "the input ends before the value does")
	}
	switch c := d.data[d.pos]; {
	case c == '{':
		return d.object(path, depth)
	case c == '[':
		return d.array(path, depth)
	case c == '"':
		s, reason, err := d.text(path)
		if err == nil && reason != "" {
			err = d.rule(&Error{Path: path, Reason: reason})
		}
		return s, err
	case c == '-' || c >= '0' && c <= '9':
		return d.number(path)
	case c == 't':
		return true, d.literal(path, "true")
	case c == 'f':
		return false, d.literal(path, "false")
	case c == 'n':
		return nil, d.literal(path, "null")
	default:
		return nil, d.syntax(path, "unexpected %s where a value should start", d.describe())
	}
}

func (d *decoder) describe() string {
	r, _ := utf8.DecodeRune(d.data[d.pos:])
	if r == utf8.RuneError {
		return fmt.Sprintf("byte 0x%02x", d.data[d.pos])
	}
	return fmt.Sprintf("%q", r)
}

func (d *decoder) literal(path, word string) error {
	if !strings.HasPrefix(string(d.data[d.pos:min(d.pos+len(word), len(d.data))]), word) {
		return d.syntax(path, "unexpected %s (expected %s)", d.describe(), word)
	}
	d.pos += len(word)
	return nil
}

func (d *decoder) object(path string, depth int) (any, error) {
	d.pos++ // {
	m := map[string]any{}
	d.space()
	if d.pos < len(d.data) && d.data[d.pos] == '}' {
		d.pos++
		return m, nil
	}
	for {
		d.space()
		if d.pos >= len(d.data) || d.data[d.pos] != '"' {
			if d.pos >= len(d.data) {
				return nil, d.syntax(path, "the input ends inside an object")
			}
			return nil, d.syntax(path, "unexpected %s where a quoted key should be", d.describe())
		}
		key, reason, err := d.text(path)
		if err != nil {
			return nil, err
		}
		p := Key(path, key)
		if reason != "" {
			if err := d.rule(&Error{Path: p, Reason: reason}); err != nil {
				return nil, err
			}
		}
		_, dup := m[key]
		if dup {
			// Collected, the first value stays: what follows is read
			// for its own problems and dropped.
			if err := d.rule(&Error{Path: p, Reason: "appears twice in one object; an object must not repeat a key"}); err != nil {
				return nil, err
			}
		}
		d.space()
		if d.pos >= len(d.data) || d.data[d.pos] != ':' {
			if d.pos >= len(d.data) {
				return nil, d.syntax(p, "the input ends after a key")
			}
			return nil, d.syntax(p, "unexpected %s after a key (expected ':')", d.describe())
		}
		d.pos++
		v, err := d.value(p, depth+1)
		if err != nil {
			return nil, err
		}
		if !dup {
			m[key] = v
		}
		d.space()
		if d.pos >= len(d.data) {
			return nil, d.syntax(path, "the input ends inside an object")
		}
		switch d.data[d.pos] {
		case ',':
			d.pos++
		case '}':
			d.pos++
			return m, nil
		default:
			return nil, d.syntax(path, "unexpected %s after an object member (expected ',' or '}')", d.describe())
		}
	}
}

func (d *decoder) array(path string, depth int) (any, error) {
	d.pos++ // [
	a := []any{}
	d.space()
	if d.pos < len(d.data) && d.data[d.pos] == ']' {
		d.pos++
		return a, nil
	}
	for {
		v, err := d.value(Index(path, len(a)), depth+1)
		if err != nil {
			return nil, err
		}
		a = append(a, v)
		d.space()
		if d.pos >= len(d.data) {
			return nil, d.syntax(path, "the input ends inside an array")
		}
		switch d.data[d.pos] {
		case ',':
			d.pos++
		case ']':
			d.pos++
			return a, nil
		default:
			return nil, d.syntax(path, "unexpected %s after an array element (expected ',' or ']')", d.describe())
		}
	}
}

func (d *decoder) number(path string) (any, error) {
	start := d.pos
	for d.pos < len(d.data) {
		c := d.data[d.pos]
		if c == '-' || c == '+' || c == '.' || c == 'e' || c == 'E' || c >= '0' && c <= '9' {
			d.pos++
			continue
		}
		break
	}
	s := string(d.data[start:d.pos])
	if !IsNumber(s) {
		d.pos = start
		return nil, d.syntax(path, "%q is not a number", truncate(s, 40))
	}
	n := json.Number(s)
	if _, err := Number(n); err != nil {
		return n, d.rule(&Error{Path: path, Reason: err.Error()})
	}
	return n, nil
}

// text reads a string at d.pos (on its opening quote). A string that is
// well-formed JSON but breaks a rule (U+0000, invalid UTF-8, a lone
// surrogate) is read to its end and comes back with the reason, so a key can
// be named in the error.
func (d *decoder) text(path string) (string, string, error) {
	d.pos++ // "
	start := d.pos
	// Fast path: no escapes.
	for d.pos < len(d.data) {
		c := d.data[d.pos]
		if c == '"' {
			s := string(d.data[start:d.pos])
			d.pos++
			return s, textReason(s, ""), nil
		}
		if c == '\\' {
			break
		}
		if c < 0x20 && c != 0 {
			return "", "", d.control(path, c)
		}
		d.pos++
	}
	var b strings.Builder
	b.Write(d.data[start:d.pos])
	reason := ""
	for d.pos < len(d.data) {
		c := d.data[d.pos]
		switch {
		case c == '"':
			d.pos++
			s := b.String()
			return s, textReason(s, reason), nil
		case c < 0x20 && c != 0:
			return "", "", d.control(path, c)
		case c != '\\':
			b.WriteByte(c)
			d.pos++
			continue
		}
		if d.pos+1 >= len(d.data) {
			break
		}
		e := d.data[d.pos+1]
		d.pos += 2
		switch e {
		case '"', '\\', '/':
			b.WriteByte(e)
		case 'b':
			b.WriteByte('\b')
		case 'f':
			b.WriteByte('\f')
		case 'n':
			b.WriteByte('\n')
		case 'r':
			b.WriteByte('\r')
		case 't':
			b.WriteByte('\t')
		case 'u':
			r, ok := d.hex4()
			if !ok {
				return "", "", d.syntax(path, `"\u" must be followed by four hex digits`)
			}
			if utf16.IsSurrogate(r) {
				r2 := rune(-1)
				if r < 0xDC00 && d.pos+1 < len(d.data) && d.data[d.pos] == '\\' && d.data[d.pos+1] == 'u' {
					d.pos += 2
					if r2, ok = d.hex4(); !ok {
						return "", "", d.syntax(path, `"\u" must be followed by four hex digits`)
					}
				}
				if r2 < 0xDC00 || r2 > 0xDFFF {
					if reason == "" {
						reason = reasonSurrogate
					}
					if r2 >= 0 {
						b.WriteRune(r2)
					}
					continue
				}
				r = utf16.DecodeRune(r, r2)
			}
			b.WriteRune(r)
		default:
			d.pos--
			return "", "", d.syntax(path, "unknown escape %s in a string", d.describe())
		}
	}
	return "", "", d.syntax(path, "the input ends inside a string")
}

// textReason is the rule a decoded string breaks, if any; an earlier
// reason (a lone surrogate) comes first.
func textReason(s, earlier string) string {
	switch {
	case strings.IndexByte(s, 0) >= 0:
		return reasonNUL
	case earlier != "":
		return earlier
	case !utf8.ValidString(s):
		return reasonUTF8
	}
	return ""
}

func (d *decoder) control(path string, c byte) error {
	return d.syntax(path, "control character 0x%02x inside a string; escape it (\\n, \\t, \\u00XX)", c)
}

func (d *decoder) hex4() (rune, bool) {
	if d.pos+4 > len(d.data) {
		return 0, false
	}
	var r rune
	for _, c := range d.data[d.pos : d.pos+4] {
		r <<= 4
		switch {
		case c >= '0' && c <= '9':
			r |= rune(c - '0')
		case c >= 'a' && c <= 'f':
			r |= rune(c - 'a' + 10)
		case c >= 'A' && c <= 'F':
			r |= rune(c - 'A' + 10)
		default:
			return 0, false
		}
	}
	d.pos += 4
	return r, true
}
