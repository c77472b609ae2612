// Package journal holds the observer journal (DESIGN §10): the hash-chained
// record of everything an execution did, its RFC 8785 canonical encoding,
// chain and checkpoint verification, and the projection fold that rebuilds
// run and node views from the records. It is pure: no storage, no clock, no
// I/O, so the server, the CLI and an offline verifier share one definition.
package journal

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"math/big"
	"slices"
	"strconv"
	"strings"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/yukta/yukta/domain/fault"
	"github.com/yukta/yukta/domain/jsonvalue"
)

// ErrNotCanonicalizable is matched by every value Canonical refuses (NaN,
// infinities, invalid UTF-8, a number that is not JSON). It is an ErrInvalid.
var ErrNotCanonicalizable = fmt.Errorf("journal: value has no canonical JSON form: %w", fault.ErrInvalid)

// canonError says where in the value the refused part sits.
type canonError struct {
	path string
	msg  string
}

func (e *canonError) Error() string {
	if e.path == "" {
		return "canonical JSON: " + e.msg
	}
	return "canonical JSON: " + e.path + ": " + e.msg
}

func (e *canonError) Unwrap() error { return ErrNotCanonicalizable }

// at prefixes the path of a refused part with the step leading to it.
func at(err error, step string) error {
	var ce *canonError
	if errors.As(err, &ce) {
		if ce.path == "" || strings.HasPrefix(ce.path, "[") {
			ce.path = step + ce.path
		} else {
			ce.path = step + "." + ce.path
		}
	}
	return err
}

// Canonical returns the RFC 8785 (JSON Canonicalization Scheme) form of v:
// no whitespace, object members sorted by the UTF-16 code units of their
// names, strings with only the escapes RFC 8785 §3.2.2.2 demands, and numbers
// written as ECMAScript's Number.prototype.toString writes them (§3.2.2.3).
//
// v is a value as encoding/json decodes it (map[string]any, []any, string,
// float64, json.Number, bool, nil) or a Go integer. Any other value (a
// struct, []string, map[string]string, json.RawMessage, float32, ...) is
// canonicalized as its encoding/json encoding (so a nil map or slice is
// null, and invalid UTF-8 inside such a value becomes U+FFFD, as
// encoding/json makes it). NaN, ±Inf, strings that are not valid UTF-8 and
// json.Numbers that are not JSON numbers are refused with an error matching
// ErrNotCanonicalizable. RFC 8785 also refuses lone surrogates ("\ud800");
// encoding/json has already replaced them with U+FFFD when it decodes, so a
// value decoded by it cannot carry one.
//
// Numbers are written as RFC 8785 writes IEEE 754 doubles, with one
// extension: an integer that no double holds exactly (9007199254740993,
// beyond ±2^53) is written as its exact decimal digits instead of being
// rounded (RFC 8785 would write 9007199254740992). Yukta keeps JSON numbers
// exact end to end, and a digest that could not tell 2^53+1 from 2^53 would
// let one be swapped for the other unseen. For every value within I-JSON
// (RFC 7493), which is all RFC 8785 itself accepts, the output is RFC 8785's
// byte for byte. Fractions beyond double precision are still rounded.
func Canonical(v any) ([]byte, error) {
	var b bytes.Buffer
	if err := encode(&b, v); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

func encode(b *bytes.Buffer, v any) error {
	switch x := v.(type) {
	case nil:
		b.WriteString("null")
	case bool:
		if x {
			b.WriteString("true")
		} else {
			b.WriteString("false")
		}
	case string:
		return writeString(b, x)
	case float64:
		return writeNumber(b, x)
	case json.Number:
		// A json.Number keeps the decimal text it was read from; JCS works on
		// doubles, so the text is parsed to the nearest float64 first and any
		// digits beyond double precision are lost (RFC 8785 §3.2.2.3).
		if !jsonvalue.IsNumber(string(x)) {
			return &canonError{msg: fmt.Sprintf("%q is not a JSON number", string(x))}
		}
		if !strings.ContainsAny(string(x), ".eE") {
			if i, ok := new(big.Int).SetString(string(x), 10); ok && writeInexactInteger(b, i) {
				return nil
			}
		}
		f, err := strconv.ParseFloat(string(x), 64)
		if err != nil {
			return &canonError{msg: fmt.Sprintf("number %s is out of the IEEE 754 double range", string(x))}
		}
		return writeNumber(b, f)
	case int:
		return writeInteger(b, big.NewInt(int64(x)))
	case int8:
		return writeNumber(b, float64(x))
	case int16:
		return writeNumber(b, float64(x))
	case int32:
		return writeNumber(b, float64(x))
	case int64:
		return writeInteger(b, big.NewInt(x))
	case uint:
		return writeInteger(b, new(big.Int).SetUint64(uint64(x)))
	case uint8:
		return writeNumber(b, float64(x))
	case uint16:
		return writeNumber(b, float64(x))
	case uint32:
		return writeNumber(b, float64(x))
	case uint64:
		return writeInteger(b, new(big.Int).SetUint64(x))
	case map[string]any:
		return writeObject(b, x)
	case []any:
		if x == nil {
			b.WriteString("null") // as encoding/json writes a nil slice
			return nil
		}
		b.WriteByte('[')
		for i, e := range x {
			if i > 0 {
				b.WriteByte(',')
			}
			if err := encode(b, e); err != nil {
				return at(err, "["+strconv.Itoa(i)+"]")
			}
		}
		b.WriteByte(']')
	default:
		return encodeOther(b, v)
	}
	return nil
}

// encodeOther canonicalizes any other Go value as its encoding/json form.
func encodeOther(b *bytes.Buffer, v any) error {
	raw, err := json.Marshal(v)
	if err != nil {
		return &canonError{msg: fmt.Sprintf("%T cannot be encoded as JSON: %v", v, err)}
	}
	decoded, err := decodeJSON(raw)
	if err != nil {
		return &canonError{msg: fmt.Sprintf("%T has no JSON form: %v", v, err)}
	}
	return encode(b, decoded)
}

func writeObject(b *bytes.Buffer, m map[string]any) error {
	if m == nil {
		b.WriteString("null") // as encoding/json writes a nil map
		return nil
	}
	names := make([]string, 0, len(m))
	for k := range m {
		if !utf8.ValidString(k) {
			return &canonError{msg: fmt.Sprintf("member name %q is not valid UTF-8", k)}
		}
		names = append(names, k)
	}
	slices.SortFunc(names, compareUTF16)
	b.WriteByte('{')
	for i, name := range names {
		if i > 0 {
			b.WriteByte(',')
		}
		_ = writeString(b, name) // validated above
		b.WriteByte(':')
		if err := encode(b, m[name]); err != nil {
			return at(err, pathName(name))
		}
	}
	b.WriteByte('}')
	return nil
}

// compareUTF16 orders valid UTF-8 strings as RFC 8785 §3.2.3 does: as arrays
// of UTF-16 code units. That is code point order except that a character
// above U+FFFF (a surrogate pair, led by 0xD800–0xDBFF) sorts before
// U+E000–U+FFFF, so UTF-8 byte order will not do.
func compareUTF16(a, b string) int {
	for a != "" && b != "" {
		ra, na := utf8.DecodeRuneInString(a)
		rb, nb := utf8.DecodeRuneInString(b)
		if ra != rb {
			ua, ub := firstUnit(ra), firstUnit(rb)
			if ua != ub {
				return int(ua) - int(ub)
			}
			return int(ra) - int(rb) // both above U+FFFF with the same lead: pairs order as code points
		}
		a, b = a[na:], b[nb:]
	}
	return len(a) - len(b)
}

// firstUnit is the first UTF-16 code unit of r.
func firstUnit(r rune) rune {
	if r < 0x10000 {
		return r
	}
	lead, _ := utf16.EncodeRune(r)
	return lead
}

func pathName(name string) string {
	for _, r := range name {
		if !(r == '_' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9') {
			return "[" + strconv.Quote(name) + "]"
		}
	}
	if name == "" {
		return `[""]`
	}
	return name
}

const hexDigits = "0123456789abcdef"

// writeString writes s as RFC 8785 §3.2.2.2 (ECMAScript JSON.stringify)
// does: \b \t \n \f \r \" \\ by name, other controls below U+0020 as \u00xx
// in lowercase hex, everything else (including U+007F, U+2028 and '/') as is.
func writeString(b *bytes.Buffer, s string) error {
	if !utf8.ValidString(s) {
		return &canonError{msg: fmt.Sprintf("string %q is not valid UTF-8", s)}
	}
	b.WriteByte('"')
	start := 0
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c >= 0x20 && c != '"' && c != '\\' {
			continue
		}
		b.WriteString(s[start:i])
		switch c {
		case '"':
			b.WriteString(`\"`)
		case '\\':
			b.WriteString(`\\`)
		case '\b':
			b.WriteString(`\b`)
		case '\t':
			b.WriteString(`\t`)
		case '\n':
			b.WriteString(`\n`)
		case '\f':
			b.WriteString(`\f`)
		case '\r':
			b.WriteString(`\r`)
		default:
			b.WriteString(`\u00`)
			b.WriteByte(hexDigits[c>>4])
			b.WriteByte(hexDigits[c&0xf])
		}
		start = i + 1
	}
	b.WriteString(s[start:])
	b.WriteByte('"')
	return nil
}

// writeInteger writes an integer: as a double when one holds it exactly, as
// its exact digits otherwise (see Canonical).
func writeInteger(b *bytes.Buffer, i *big.Int) error {
	if writeInexactInteger(b, i) {
		return nil
	}
	f, _ := new(big.Float).SetInt(i).Float64()
	return writeNumber(b, f)
}

// writeInexactInteger writes i's exact digits if no double holds i exactly.
func writeInexactInteger(b *bytes.Buffer, i *big.Int) bool {
	if _, acc := new(big.Float).SetInt(i).Float64(); acc == big.Exact {
		return false
	}
	b.WriteString(i.String())
	return true
}

func writeNumber(b *bytes.Buffer, f float64) error {
	s, err := NumberString(f)
	if err != nil {
		return err
	}
	b.WriteString(s)
	return nil
}

// NumberString writes f as ECMAScript's Number.prototype.toString does
// (ECMA-262 Number::toString, the serialization RFC 8785 §3.2.2.3 requires):
// the shortest decimal that reads back as f, closest to f when several are
// as short; plain notation for 1e-6 ≤ |f| < 1e21, otherwise d[.ddd]e±n;
// -0 as "0". NaN and ±Inf have no JSON form and are refused.
func NumberString(f float64) (string, error) {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return "", &canonError{msg: "NaN and Infinity are not JSON numbers"}
	}
	if f == 0 {
		return "0", nil // +0 and -0
	}
	var b strings.Builder
	if f < 0 {
		b.WriteByte('-')
		f = -f
	}
	// strconv's shortest form ('e', -1) gives the digits and the exponent:
	// "d.ddde±xx". Go picks the closest of the shortest round-tripping digit
	// strings, which is ECMA-262's Note 2 refinement that RFC 8785 demands.
	e := strconv.FormatFloat(f, 'e', -1, 64)
	mant, exp, _ := strings.Cut(e, "e")
	digits := strings.Replace(mant, ".", "", 1)
	x, _ := strconv.Atoi(exp) // f = 0.digits × 10^(x+1)
	k := len(digits)
	n := x + 1 // ECMA-262: the decimal point sits after n digits
	switch {
	case k <= n && n <= 21:
		b.WriteString(digits)
		b.WriteString(strings.Repeat("0", n-k))
	case 0 < n && n <= 21:
		b.WriteString(digits[:n])
		b.WriteByte('.')
		b.WriteString(digits[n:])
	case -6 < n && n <= 0:
		b.WriteString("0.")
		b.WriteString(strings.Repeat("0", -n))
		b.WriteString(digits)
	default:
		b.WriteByte(digits[0])
		if k > 1 {
			b.WriteByte('.')
			b.WriteString(digits[1:])
		}
		b.WriteByte('e')
		if n-1 >= 0 {
			b.WriteByte('+')
		}
		b.WriteString(strconv.Itoa(n - 1))
	}
	return b.String(), nil
}

// decodeJSON reads exactly one JSON value with numbers kept as json.Number,
// refusing duplicate member names (RFC 8785 §3.1 and I-JSON forbid them, and
// a duplicate would let two readers see two different documents) and
// trailing data.
func decodeJSON(data []byte) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	v, err := decodeValue(dec, 0)
	if err != nil {
		return nil, err
	}
	if _, err := dec.Token(); err == nil {
		return nil, errors.New("unexpected data after the JSON value")
	} else if !errors.Is(err, io.EOF) {
		return nil, err
	}
	return v, nil
}

// maxDepth bounds nesting, as encoding/json does, so a hostile line cannot
// exhaust the stack.
const maxDepth = 10000

func decodeValue(dec *json.Decoder, depth int) (any, error) {
	if depth > maxDepth {
		return nil, errors.New("JSON nested too deeply")
	}
	tok, err := dec.Token()
	if err != nil {
		return nil, err
	}
	switch t := tok.(type) {
	case json.Delim:
		switch t {
		case '{':
			m := map[string]any{}
			for dec.More() {
				kt, err := dec.Token()
				if err != nil {
					return nil, err
				}
				k, ok := kt.(string)
				if !ok {
					return nil, fmt.Errorf("object member name expected, got %v", kt)
				}
				if _, dup := m[k]; dup {
					return nil, fmt.Errorf("member %q appears twice", k)
				}
				v, err := decodeValue(dec, depth+1)
				if err != nil {
					return nil, err
				}
				m[k] = v
			}
			if _, err := dec.Token(); err != nil { // '}'
				return nil, err
			}
			return m, nil
		case '[':
			a := []any{}
			for dec.More() {
				v, err := decodeValue(dec, depth+1)
				if err != nil {
					return nil, err
				}
				a = append(a, v)
			}
			if _, err := dec.Token(); err != nil { // ']'
				return nil, err
			}
			return a, nil
		}
		return nil, fmt.Errorf("unexpected %v", t)
	default:
		return t, nil // string, json.Number, bool, nil
	}
}
