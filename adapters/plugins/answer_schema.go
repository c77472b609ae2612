package plugins

import (
	"bytes"
	"encoding/json"
	"fmt"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/yukta/yukta/application/executionapp"
)

// AnswerValidator checks answers to INPUT_REQUEST nodes against the JSON
// schema the node declared, before the parked message is resumed, so a bad
// answer is refused to whoever sent it instead of failing the node later.
type AnswerValidator struct{}

var _ executionapp.AnswerValidator = AnswerValidator{}

// Validate reports why answer does not satisfy schema.
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
		return fmt.Errorf("%v", err)
	}
	return nil
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
