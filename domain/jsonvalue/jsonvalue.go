// Package jsonvalue holds the rules every JSON value in Yukta obeys, whoever
// made it: a client's request body, a start payload, a plugin's output, an
// expression's result. PostgreSQL's jsonb cannot store U+0000, encoding/json
// silently turns invalid UTF-8 and lone surrogates into U+FFFD and keeps the
// last of duplicate keys, and float64 rounds integers beyond 2^53. Each of
// those would either jam a commit or change a value without telling anyone,
// so values are checked here once, at the door or when a node emits them,
// and refused with the path of the first bad place.
//
// Numbers keep their exact text (json.Number) from the door to storage.
// Where a number must become a Go value (expressions), Number gives an
// int64, a uint64 or a float64 by one documented rule.
package jsonvalue

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/yukta/yukta/domain/fault"
)

// MaxDepth is how deeply arrays and objects may nest. It keeps every
// recursive walk over a value (here, in expressions, in the canonical
// encoder) far from any stack limit.
const MaxDepth = 128

// Error locates one bad place in a JSON value. It matches fault.ErrInvalid.
type Error struct {
	// Path names the place: the root's name, then .key and [index] steps
	// ("payload.items[2].name"); empty when the root has no name and the
	// problem is the root itself.
	Path string
	// Reason says what is wrong, in plain words.
	Reason string
	// Limit is set when a size limit was passed (see Check).
	Limit bool
}

func (e *Error) Error() string {
	if e.Path == "" {
		return e.Reason
	}
	return e.Path + ": " + e.Reason
}

// Unwrap makes errors.Is(err, fault.ErrInvalid) true.
func (e *Error) Unwrap() error { return fault.ErrInvalid }

// Violation turns the error into the violation edges list.
func (e *Error) Violation() fault.Violation { return fault.Violation{Path: e.Path, Message: e.Reason} }

// Reasons shared by Decode and Check.
const (
	reasonNUL       = "contains U+0000 (NUL), which PostgreSQL cannot store; remove it or encode the data (for example base64)"
	reasonUTF8      = "is not valid UTF-8; send text as UTF-8"
	reasonSurrogate = "contains a lone UTF-16 surrogate escape (\\uD800-\\uDFFF without its pair), which is not a character"
	reasonDepth     = "nests deeper than 128 arrays or objects"
)

// Decode reads exactly one JSON value from data, strictly: the bytes are
// valid UTF-8, no string or key holds U+0000 (raw or escaped) or a lone
// surrogate, no object repeats a key, every number fits a float64's range
// (1e400 does not) and keeps its exact text as a json.Number, nesting stays
// within MaxDepth, and nothing but whitespace follows the value. root names
// the value in error paths ("payload", "body"; "" for none). Objects are
// map[string]any, arrays []any.
func Decode(data []byte, root string) (any, error) {
	d := &decoder{data: data}
	v, err := d.value(root, 0)
	if err != nil {
		return nil, err
	}
	d.space()
	if d.pos < len(d.data) {
		return nil, &Error{Path: root, Reason: fmt.Sprintf("has data after the JSON value at byte %d; send exactly one value", d.pos)}
	}
	return v, nil
}

// DecodeAll is Decode that reads on past the rules a readable text can
// break (a repeated key, U+0000, invalid UTF-8, a lone surrogate, a number
// out of range), so a document's parser can report them together with its
// own problems: each is in rules, at its path, and the value keeps what was
// read (the first of repeated keys, the string or number as written). err
// is what ends the read: a syntax error, nesting beyond MaxDepth, data
// after the value. A value with rules must never be stored.
func DecodeAll(data []byte, root string) (v any, rules []*Error, err error) {
	d := &decoder{data: data, collect: true}
	if v, err = d.value(root, 0); err != nil {
		return nil, nil, err
	}
	d.space()
	if d.pos < len(d.data) {
		return nil, nil, &Error{Path: root, Reason: fmt.Sprintf("has data after the JSON value at byte %d; send exactly one value", d.pos)}
	}
	return v, d.rules, nil
}

// Validate checks data as Decode does without keeping the value, for a
// body that a typed decoder reads next.
func Validate(data []byte, root string) error {
	_, err := Decode(data, root)
	return err
}

// Number turns a JSON number's text into the Go value expressions compute
// with: an integer that fits int64 is an int64, a larger positive integer
// that fits uint64 is a uint64, anything else (fractions, exponents,
// integers beyond both) is a float64. The float64 of an integer beyond
// uint64 is rounded; such ids belong in strings.
func Number(n json.Number) (any, error) {
	s := string(n)
	if isInteger(s) {
		if i, err := strconv.ParseInt(s, 10, 64); err == nil {
			return i, nil
		}
		if u, err := strconv.ParseUint(s, 10, 64); err == nil {
			return u, nil
		}
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil || math.IsInf(f, 0) || math.IsNaN(f) {
		return nil, fmt.Errorf("number %s is out of range; numbers must fit an IEEE 754 double (about ±1.8e308)", truncate(s, 40))
	}
	return f, nil
}

func isInteger(s string) bool {
	return s != "" && !strings.ContainsAny(s, ".eE")
}

// Limits bound what Check accepts. Zero means no limit.
type Limits struct {
	// MaxBytes caps the value's size as encoded JSON, counted without the
	// escapes strings may need: a lower bound of the stored size, so a
	// value is never refused while it is under the cap.
	MaxBytes int
	// What names the limit in the error ("message", "result").
	What string
	// Setting names the configuration that raises the limit.
	Setting string
}

// Check validates a value built in memory (by a plugin, an expression, a
// decoder) before it is stored: strings and keys are valid UTF-8 without
// U+0000, numbers are finite (json.Numbers are JSON numbers), nesting stays
// within MaxDepth, and the size stays within l.MaxBytes. It stops at the
// first problem, and as soon as the size passes the cap, so a huge value
// costs no more than the cap to refuse. Values are the forms encoding/json
// and this package produce, Go integers and float32; any other type is
// refused, as the store could not encode it faithfully.
func Check(v any, root string, l Limits) error {
	_, err := Measure(v, root, l)
	return err
}

// Measure is Check that also returns the size it counted.
func Measure(v any, root string, l Limits) (int, error) {
	c := &checker{l: l, root: root}
	err := c.walk(v, root, 0)
	return c.size, err
}

// Size is what Check counts for v (see Limits.MaxBytes), or -1 when v is
// not a value Check accepts.
func Size(v any) int {
	c := &checker{}
	if c.walk(v, "", 0) != nil {
		return -1
	}
	return c.size
}

type checker struct {
	l    Limits
	root string
	size int
}

func (c *checker) add(n int) error {
	c.size += n
	if c.l.MaxBytes > 0 && c.size > c.l.MaxBytes {
		what := c.l.What
		if what == "" {
			what = "value"
		}
		msg := fmt.Sprintf("the %s is larger than the limit of %s", what, FormatBytes(c.l.MaxBytes))
		if c.l.Setting != "" {
			msg += "; raise " + c.l.Setting + " or make it smaller"
		}
		// The whole value is over, not the place where the count passed.
		return &Error{Path: c.root, Reason: msg, Limit: true}
	}
	return nil
}

func (c *checker) walk(v any, path string, depth int) error {
	if depth > MaxDepth {
		return &Error{Path: path, Reason: reasonDepth}
	}
	switch x := v.(type) {
	case nil:
		return c.add(4)
	case bool:
		if x {
			return c.add(4)
		}
		return c.add(5)
	case string:
		if err := checkString(x, path); err != nil {
			return err
		}
		return c.add(len(x) + 2)
	case json.Number:
		if !IsNumber(string(x)) {
			return &Error{Path: path, Reason: fmt.Sprintf("%q is not a JSON number", truncate(string(x), 40))}
		}
		if _, err := Number(x); err != nil {
			return &Error{Path: path, Reason: err.Error()}
		}
		return c.add(len(x))
	case float64:
		if math.IsNaN(x) || math.IsInf(x, 0) {
			return &Error{Path: path, Reason: fmt.Sprintf("is %v, which JSON cannot represent", x)}
		}
		return c.add(len(strconv.FormatFloat(x, 'g', -1, 64)))
	case float32:
		return c.walk(float64(x), path, depth)
	case int, int8, int16, int32, int64, uint, uint8, uint16, uint32, uint64:
		return c.add(len(fmt.Sprint(x)))
	case map[string]any:
		if err := c.add(2 + max(len(x)-1, 0)); err != nil {
			return err
		}
		for k, e := range x {
			p := Key(path, k)
			if err := checkString(k, p); err != nil {
				return err
			}
			if err := c.add(len(k) + 3); err != nil {
				return err
			}
			if err := c.walk(e, p, depth+1); err != nil {
				return err
			}
		}
		return nil
	case []any:
		if err := c.add(2 + max(len(x)-1, 0)); err != nil {
			return err
		}
		for i, e := range x {
			if err := c.walk(e, Index(path, i), depth+1); err != nil {
				return err
			}
		}
		return nil
	}
	return &Error{Path: path, Reason: fmt.Sprintf("holds a value of Go type %T, which is not JSON", v)}
}

func checkString(s, path string) error {
	if strings.IndexByte(s, 0) >= 0 {
		return &Error{Path: path, Reason: reasonNUL}
	}
	if !utf8.ValidString(s) {
		return &Error{Path: path, Reason: reasonUTF8}
	}
	return nil
}

// Key appends an object key to a path. Keys that are not plain names are
// quoted, so a path is never ambiguous.
func Key(path, key string) string {
	plain := key != ""
	for i, r := range key {
		if !(r == '_' || r == '-' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || i > 0 && r >= '0' && r <= '9') {
			plain = false
			break
		}
	}
	if !plain {
		return path + "[" + strconv.Quote(truncate(key, 64)) + "]"
	}
	if path == "" {
		return key
	}
	return path + "." + key
}

// Index appends an array index to a path.
func Index(path string, i int) string { return path + "[" + strconv.Itoa(i) + "]" }

// FormatBytes writes a byte count as people read it: 1 MiB, 64 KiB, 300 B.
func FormatBytes(n int) string {
	switch {
	case n >= 1<<20 && n%(1<<20) == 0:
		return strconv.Itoa(n>>20) + " MiB"
	case n >= 1<<10 && n%(1<<10) == 0:
		return strconv.Itoa(n>>10) + " KiB"
	}
	return strconv.Itoa(n) + " bytes"
}

// Clean makes text a person or program wrote fit for storage without
// refusing it: invalid UTF-8 becomes U+FFFD and U+0000 the six characters
// \u0000, so the NUL stays visible. It is for diagnostics (log lines, error
// messages), never for data.
func Clean(s string) string {
	if strings.IndexByte(s, 0) < 0 && utf8.ValidString(s) {
		return s
	}
	return strings.ReplaceAll(strings.ToValidUTF8(s, "\uFFFD"), "\x00", `\u0000`)
}

// Cut shortens text to at most n bytes on a rune boundary, saying so.
func Cut(s string, n int) string {
	if n <= 0 || len(s) <= n {
		return s
	}
	note := fmt.Sprintf(" … [cut: %s of %s shown]", FormatBytes(n), FormatBytes(len(s)))
	keep := max(n-len(note), 0)
	for keep > 0 && !utf8.RuneStart(s[keep]) {
		keep--
	}
	return s[:keep] + note
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + "…"
}

// IsNumber reports whether s is a number in JSON's grammar (RFC 8259 §6).
func IsNumber(s string) bool {
	i := 0
	if i < len(s) && s[i] == '-' {
		i++
	}
	switch {
	case i < len(s) && s[i] == '0':
		i++
	case i < len(s) && s[i] >= '1' && s[i] <= '9':
		for i < len(s) && s[i] >= '0' && s[i] <= '9' {
			i++
		}
	default:
		return false
	}
	if i < len(s) && s[i] == '.' {
		i++
		if i >= len(s) || s[i] < '0' || s[i] > '9' {
			return false
		}
		for i < len(s) && s[i] >= '0' && s[i] <= '9' {
			i++
		}
	}
	if i < len(s) && (s[i] == 'e' || s[i] == 'E') {
		i++
		if i < len(s) && (s[i] == '+' || s[i] == '-') {
			i++
		}
		if i >= len(s) || s[i] < '0' || s[i] > '9' {
			return false
		}
		for i < len(s) && s[i] >= '0' && s[i] <= '9' {
			i++
		}
	}
	return i == len(s)
}

// IsSyntax reports whether err is a JSON syntax problem Decode found (as
// opposed to a rule a well-formed value broke).
func IsSyntax(err error) bool {
	var e *Error
	return errors.As(err, &e) && strings.HasPrefix(e.Reason, "is not valid JSON")
}
