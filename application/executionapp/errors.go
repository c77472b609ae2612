package executionapp

import (
	"fmt"

	"github.com/yukta/yukta/domain/fault"
)

// Errors callers branch on.
var (
	// ErrExecutionNotFound is the same for an unknown id and for an id that
	// belongs to another session, so ids cannot be probed across sessions.
	ErrExecutionNotFound = fmt.Errorf("executionapp: execution not found: %w", fault.ErrNotFound)
	ErrNodeNotFound      = fmt.Errorf("executionapp: node not found: %w", fault.ErrNotFound)
	ErrInputNotFound     = fmt.Errorf("executionapp: input not found: %w", fault.ErrNotFound)
	// ErrKeyReused: an idempotency key comes back with a different request
	// than its first use. Answering the first use's result would hide that
	// the new request did nothing.
	ErrKeyReused = fmt.Errorf("executionapp: idempotency key reused for a different request: %w", fault.ErrConflict)
)
