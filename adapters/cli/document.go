package cli

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/yukta/yukta/domain/jsonvalue"
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
	// The server reads the document and answers with every problem, each
	// at its place (JSON path, byte offset): send it whenever its id can
	// be found, even if the document is broken further on.
	if id = documentID(body, idField); id != "" {
		return body, id, 0, true
	}
	if err := jsonvalue.Validate(body, ""); err != nil {
		// Nowhere to send it: say where it breaks, in the server's words.
		msg := strings.TrimPrefix(jsonvalue.DocumentViolation(err).Message, "body ")
		fmt.Fprintf(e.stderr, "%s: %s %s\n", e.name, file, escape(msg))
		fmt.Fprintf(e.stderr, "%s: fix it and apply again, or pass --id %s to have the server list every problem\n", e.name, idFlagName)
		return nil, "", exitFailed, false
	}
	fmt.Fprintf(e.stderr, "%s: %s has no %q; add one or pass --id %s\n", e.name, file, idField, idFlagName)
	return nil, "", exitUsage, false
}

// documentID returns the string member idField of the document's top-level
// object, read token by token up to the first thing that is not JSON, so a
// document broken after its id still finds it. "" when there is none.
func documentID(body []byte, idField string) string {
	dec := json.NewDecoder(bytes.NewReader(body))
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return ""
	}
	for {
		k, err := dec.Token()
		key, isKey := k.(string)
		if err != nil || !isKey {
			return ""
		}
		if key == idField {
			v, err := dec.Token()
			id, _ := v.(string)
			if err != nil {
				return ""
			}
			return id
		}
		var skip json.RawMessage
		if err := dec.Decode(&skip); err != nil {
			return ""
		}
	}
}
