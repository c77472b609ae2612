package sessionapp

import (
	"context"
	"errors"
	"testing"

	"github.com/yukta/yukta/domain/session"
)

// TestGetWorkflowRefusesIDsOutsideTheFormat: an id no session or workflow
// can have (U+0000, invalid UTF-8, a lone surrogate, too long) is not
// found, without asking the store (which would refuse the bytes in its own
// words).
func TestGetWorkflowRefusesIDsOutsideTheFormat(t *testing.T) {
	uc := NewGetWorkflow(nil, nil, nil) // a store call would panic
	for _, c := range []struct {
		sessionID, workflowID string
		want                  error
	}{
		{"ci\x00", "nap", session.ErrSessionNotFound},
		{"\xff", "nap", session.ErrSessionNotFound},
		{"ci", "\x00", session.ErrWorkflowNotFound},
		{"ci", "a\x00b", session.ErrWorkflowNotFound},
		{"ci", "\xed\xa0\x80", session.ErrWorkflowNotFound},
		{"ci", "\xc3\x28", session.ErrWorkflowNotFound},
		{"ci", string(make([]byte, 65)), session.ErrWorkflowNotFound},
		{"ci", "../etc", session.ErrWorkflowNotFound},
	} {
		_, err := uc.Handle(context.Background(), c.sessionID, c.workflowID)
		if !errors.Is(err, c.want) {
			t.Errorf("%q/%q: %v, want %v", c.sessionID, c.workflowID, err, c.want)
		}
	}
}
