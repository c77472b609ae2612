package plugins

import (
	"bytes"
	"encoding/json"
	"fmt"
	"regexp"
	"strings"

	"github.com/santhosh-tekuri/jsonschema/v6"
	schemakind "github.com/santhosh-tekuri/jsonschema/v6/kind"

	"github.com/yukta/yukta/application/executionapp"
	"github.com/yukta/yukta/domain/fault"
)

// AnswerValidator checks answers to INPUT_REQUEST nodes against the JSON
// schema the node declared, before the parked message is resumed, so a bad
// answer is refused to whoever sent it instead of failing the node later.
type AnswerValidator struct{}

var _ executionapp.AnswerValidator = AnswerValidator{}

// Validate reports why answer does not satisfy schema: a
// *fault.ValidationError with one violation per value that breaks the
// schema, its path inside the answer ("count", "address.city", "tags[2]";
// "" for the answer as a whole), so whoever answers sees which field is
// wrong.
func (AnswerValidator) Validate(schema map[string]any, answer any) error {
	doc, err := roundTrip(schema)
	if err != nil {
		return err
	}
	c := jsonschema.NewCompiler()
	if err := c.AddResource("answer.json", doc); err != nil {
		return fmt.Errorf("the input's schema is not usable: %v", err)
	}
	sch, err := c.Compile("answer.json")
	if err != nil {
		return fmt.Errorf("the input's schema does not compile: %v", err)
	}
	v, err := roundTrip(answer)
	if err != nil {
		return err
	}
	if err := sch.Validate(v); err != nil {
		ve, ok := err.(*jsonschema.ValidationError)
		if !ok {
			return err
		}
		out := &fault.ValidationError{Subject: "answer"}
		leaves(ve, func(e *jsonschema.ValidationError) {
			at := answerPath(e.InstanceLocation)
			if r, ok := e.ErrorKind.(*schemakind.Required); ok {
				// One violation per missing member, named by its own path.
				for _, m := range r.Missing {
					out.Violations = append(out.Violations, fault.Violation{Path: joinPath(at, m), Message: "is required"})
				}
				return
			}
			out.Violations = append(out.Violations, fault.Violation{Path: at, Message: describe(e.ErrorKind)})
		})
		if len(out.Violations) == 0 {
			out.Violations = []fault.Violation{{Message: describe(ve.ErrorKind)}}
		}
		return out
	}
	return nil
}

// leaves calls fn with every error of the tree that has no causes: what
// exactly failed, under the schema's groupings (allOf, properties, $ref).
func leaves(e *jsonschema.ValidationError, fn func(*jsonschema.ValidationError)) {
	if len(e.Causes) == 0 {
		fn(e)
		return
	}
	for _, c := range e.Causes {
		leaves(c, fn)
	}
}

// describe words an error kind as the validator does ("minimum: got 0,
// want 1"), without the schema's location, which names a file of the server.
func describe(k jsonschema.ErrorKind) string {
	return (&jsonschema.ValidationError{ErrorKind: k}).BasicOutput().Error.String()
}

var index = regexp.MustCompile(`^(0|[1-9][0-9]*)$`)

// answerPath turns an instance location (["tags", "2"]) into "tags[2]".
func answerPath(loc []string) string {
	var b strings.Builder
	for _, seg := range loc {
		switch {
		case index.MatchString(seg):
			b.WriteString("[" + seg + "]")
		case b.Len() > 0:
			b.WriteString("." + seg)
		default:
			b.WriteString(seg)
		}
	}
	return b.String()
}

func joinPath(base, key string) string {
	if base == "" {
		return key
	}
	return base + "." + key
}

// roundTrip turns a value into the representation the validator expects
// (json.Number for numbers).
func roundTrip(v any) (any, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	return jsonschema.UnmarshalJSON(bytes.NewReader(b))
}
