package jsonvalue

import (
	"errors"
	"strings"

	"github.com/yukta/yukta/domain/fault"
)

// DocumentViolation words a strict-JSON refusal of a whole document (a
// session, a supervisor): a problem at a place in it keeps that place's path
// (workflows[0].nodes[1].config.message); a problem with the document as a
// whole reads as one.
func DocumentViolation(err error) fault.Violation {
	je, ok := errors.AsType[*Error](err)
	if !ok {
		return fault.Violation{Message: "the document could not be read; send one JSON object"}
	}
	switch {
	case IsSyntax(err) && je.Path != "":
		return fault.Violation{Message: "body " + je.Reason + " (in " + je.Path + "); send one JSON object"}
	case IsSyntax(err):
		return fault.Violation{Message: "body " + je.Reason + "; send one JSON object"}
	case je.Path != "":
		return je.Violation()
	case strings.HasPrefix(je.Reason, "has data after the JSON value"):
		return fault.Violation{Message: "body has data after the JSON object; send exactly one object"}
	case strings.HasPrefix(je.Reason, "is empty"):
		return fault.Violation{Message: "body is not valid JSON: it is empty; send one JSON object"}
	}
	return fault.Violation{Message: "body " + je.Reason}
}
