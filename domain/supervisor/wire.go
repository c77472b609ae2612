package supervisor

import (
	"bytes"
	"encoding/json"
)

// member is one member of an object written in a fixed order.
type member struct {
	key   string
	value any
}

// ordered is a JSON object whose members keep the order they were given,
// so wire forms read the way the reference shows them (type first).
type ordered []member

// MarshalJSON writes the members in order.
func (o ordered) MarshalJSON() ([]byte, error) {
	var b bytes.Buffer
	b.WriteByte('{')
	for i, m := range o {
		if i > 0 {
			b.WriteByte(',')
		}
		k, err := marshal(m.key)
		if err != nil {
			return nil, err
		}
		b.Write(k)
		b.WriteByte(':')
		v, err := marshal(m.value)
		if err != nil {
			return nil, err
		}
		b.Write(v)
	}
	b.WriteByte('}')
	return b.Bytes(), nil
}

// with appends a member when keep is true.
func (o ordered) with(keep bool, key string, value any) ordered {
	if keep {
		return append(o, member{key, value})
	}
	return o
}

// marshal encodes v without escaping <, > and & (expressions such as
// "count > 3" stay readable); the output is still valid JSON.
func marshal(v any) ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(b.Bytes(), []byte("\n")), nil
}
