package postgres

import (
	"bytes"
	"encoding/json"
	"fmt"

	"github.com/yukta/yukta/domain/fault"
)

// JSON values cross into PostgreSQL as text we marshal ourselves: pgx would
// send a Go string as raw JSON text, turning the payload "abc" into invalid
// JSON. Numbers come back as json.Number so they keep their exact text.

func toJSON(v any) (string, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return "", fmt.Errorf("encode JSON value: %w: %w", err, fault.ErrInvalid)
	}
	return string(b), nil
}

func fromJSON(b []byte) (any, error) {
	if b == nil {
		return nil, nil
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, fmt.Errorf("decode stored JSON: %w", err)
	}
	return v, nil
}
