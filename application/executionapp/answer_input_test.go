package executionapp_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/yukta/yukta/application/executionapp"
	"github.com/yukta/yukta/domain/fault"
)

// inputTx runs every transaction over one fixed set of inputs; an answer
// that passes the session checks meets an input that is no longer open (409),
// so no other store is needed.
type inputTx map[string]executionapp.Input

func (tx inputTx) WithinTx(ctx context.Context, fn func(context.Context, executionapp.Stores) error) error {
	return fn(ctx, executionapp.Stores{Inputs: inputStore(tx)})
}

type inputStore map[string]executionapp.Input

func (s inputStore) Create(context.Context, executionapp.Input) error {
	return errors.New("not in this test")
}
func (s inputStore) Save(context.Context, executionapp.Input) error {
	return errors.New("not in this test")
}
func (s inputStore) CancelOpen(context.Context, string, string) error {
	return errors.New("not in this test")
}
func (s inputStore) Lock(_ context.Context, id string) (executionapp.Input, error) {
	in, ok := s[id]
	if !ok {
		return executionapp.Input{}, executionapp.InputNotFound(id)
	}
	return in, nil
}

// TestAnswerInputTakesTheSessionFromTheInput: an input of a session the
// caller may not see, or of another session than the one it named, is
// answered byte for byte as an input that does not exist; an input of its
// own session needs no session named, and passes when it names the right one.
func TestAnswerInputTakesTheSessionFromTheInput(t *testing.T) {
	t.Parallel()
	const own, foreign, unknown = "0193d000-0000-7000-8000-000000000001", "0193d000-0000-7000-8000-000000000002", "0193d000-0000-7000-8000-000000000003"
	tx := inputTx{
		own:     {ID: own, SessionID: "alpha", ExecutionID: "e1", NodeID: "ask", Status: "answered"},
		foreign: {ID: foreign, SessionID: "beta", ExecutionID: "e2", NodeID: "ask", Status: "answered"},
	}
	uc := executionapp.NewAnswerInput(tx, nil, nil, time.Now)
	onlyAlpha := func(sid string) bool { return sid == "alpha" }
	answer := func(id, sessionID string, allowed func(string) bool) error {
		_, err := uc.Handle(context.Background(), executionapp.AnswerRequest{InputID: id, SessionID: sessionID, Answer: "x",
			Actor: "key:limited", Channel: "rest", SessionAllowed: allowed})
		return err
	}

	// Passing the session checks reaches the input's status: 409.
	for _, c := range []struct {
		name, session string
		allowed       func(string) bool
	}{
		{"own input, no session named", "", onlyAlpha},
		{"own input, its session named", "alpha", onlyAlpha},
		{"any input, a key of every session", "", nil},
	} {
		if err := answer(own, c.session, c.allowed); !errors.Is(err, fault.ErrConflict) {
			t.Errorf("%s: got %v, want the 409 of an input that is not open", c.name, err)
		}
	}

	for _, c := range []struct {
		name, session string
		allowed       func(string) bool
	}{
		{"foreign input", "", onlyAlpha},
		{"foreign input, its session named", "beta", onlyAlpha},
		{"foreign input, the caller's session named", "alpha", onlyAlpha},
		{"input of another session than the one named", "alpha", nil},
	} {
		err := answer(foreign, c.session, c.allowed)
		if !errors.Is(err, executionapp.ErrInputNotFound) || !errors.Is(err, fault.ErrNotFound) {
			t.Errorf("%s: got %v, want not found", c.name, err)
			continue
		}
		want := executionapp.InputNotFound(unknown).Error()
		if uerr := answer(unknown, c.session, c.allowed); uerr == nil || uerr.Error() != want {
			t.Fatalf("unknown input: got %v, want %q", uerr, want)
		}
		if got := err.Error(); got != executionapp.InputNotFound(foreign).Error() {
			t.Errorf("%s: got %q, want the words of an unknown input, %q", c.name, got, executionapp.InputNotFound(foreign))
		}
	}
}
