// Package fault holds the few kinds of failure every layer agrees on. Domain
// errors wrap one of these kinds, and each edge (HTTP, MCP, CLI) maps a kind to
// its own answer in one table, so a new error never needs a new mapping.
package fault

import (
	"errors"
	"fmt"
	"strings"
)

// The kinds. Callers branch on them with errors.Is.
var (
	// ErrInvalid: the input breaks a rule; retrying the same input fails again.
	ErrInvalid = errors.New("invalid input")
	// ErrNotFound: the thing named does not exist (or is not visible to the caller).
	ErrNotFound = errors.New("not found")
	// ErrConflict: the request is valid but clashes with the current state.
	ErrConflict = errors.New("conflict")
	// ErrUnavailable: a dependency (the database) cannot be reached right now.
	ErrUnavailable = errors.New("unavailable")
	// ErrForbidden: the caller is known but may not do this (its role is too
	// low). Hidden resources answer ErrNotFound instead, never this.
	ErrForbidden = errors.New("forbidden")
)

// Violation is one broken rule, located by a path into the input document
// (for example "workflows[0].nodes[2].config.url").
type Violation struct {
	Path    string
	Message string
}

// ValidationError reports every violation found in one input at once, so a
// caller can fix them all in one round trip. It matches ErrInvalid.
type ValidationError struct {
	// Subject names what was validated ("session", "plugin config").
	Subject    string
	Violations []Violation
}

func (e *ValidationError) Error() string {
	var b strings.Builder
	b.WriteString(e.Subject)
	b.WriteString(" is invalid: ")
	for i, v := range e.Violations {
		if i > 0 {
			b.WriteString("; ")
		}
		if v.Path != "" {
			b.WriteString(v.Path)
			b.WriteString(": ")
		}
		b.WriteString(v.Message)
	}
	return b.String()
}

// Unwrap makes errors.Is(err, ErrInvalid) true.
func (e *ValidationError) Unwrap() error { return ErrInvalid }

// Newf returns an error whose text is the formatted sentence alone (what a
// person or agent reads) and which matches cause, and cause's kind, with
// errors.Is. Use it for messages that name the next step, so edges can show
// them verbatim without a trailing chain of sentinel texts.
func Newf(cause error, format string, args ...any) error {
	return &described{msg: fmt.Sprintf(format, args...), cause: cause}
}

type described struct {
	msg   string
	cause error
}

func (e *described) Error() string { return e.msg }
func (e *described) Unwrap() error { return e.cause }
