package cli

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
)

// readDocument reads a JSON or YAML document from file ("-": standard
// input) and finds its id: the --id flag's value when given, else the
// document's member idField. kind names the document in messages
// ("session"). JSON is sent as it is on disk; YAML (by its extension, or
// when the text does not start with { or [) is converted to the same JSON.
func readDocument(e *env, file, flagID, idField, kind, idFlagName string) (body []byte, id string, code int, ok bool) {
	var err error
	if file == "-" {
		body, err = io.ReadAll(os.Stdin)
	} else {
		body, err = os.ReadFile(file)
	}
	if err != nil {
		fmt.Fprintf(e.stderr, "%s: %v\n", e.name, err)
		return nil, "", exitFailed, false
	}
	if isYAML(file, body) {
		if body, err = yamlToJSON(body); err != nil {
			fmt.Fprintf(e.stderr, "%s: %s is not a YAML %s document: %v; fix it and apply again\n", e.name, file, kind, err)
			return nil, "", exitFailed, false
		}
	}
	if flagID != "" {
		return body, flagID, 0, true
	}
	var doc map[string]any
	if err := json.Unmarshal(body, &doc); err != nil {
		fmt.Fprintf(e.stderr, "%s: %s is not a JSON %s document: %v\n", e.name, file, kind, err)
		return nil, "", exitFailed, false
	}
	id, _ = doc[idField].(string)
	if id == "" {
		fmt.Fprintf(e.stderr, "%s: %s has no %q; add one or pass --id %s\n", e.name, file, idField, idFlagName)
		return nil, "", exitUsage, false
	}
	return body, id, 0, true
}
