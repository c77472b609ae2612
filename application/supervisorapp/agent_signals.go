package supervisorapp

import (
	"context"
	"time"
)

// AgentRecheckInterval is the longest an agent's open read (the SSE
// stream, a long poll, MCP read_signals waiting) goes without asking again
// who is asking: a rotated or revoked credential, a disabled or deleted
// supervisor ends it, and a narrowed owns applies to it, within this
// interval plus one database read, on every instance.
const AgentRecheckInterval = 500 * time.Millisecond

// SignalReader reads one page of a supervisor's signals (ReadSignals).
type SignalReader interface {
	Handle(context.Context, SignalsInput) (SignalPage, error)
}

// AgentRechecker says who an open agent request is now
// (AuthenticateAgent.Recheck).
type AgentRechecker interface {
	Recheck(ctx context.Context, token string) (Summary, error)
}

// ReadAgentSignals is the signal read of an agent API request that may
// wait (GET /signals, the SSE stream's batches, MCP read_signals): the
// reads of ReadSignals, in slices of at most AgentRecheckInterval, with
// the credential and the supervisor read again from the database before
// the first slice and after each one. A refusal ends the read with the
// *AgentRefusal; a page read while the supervisor changed (its owns
// narrowed, say) is read again from the same cursor as the supervisor is
// now, so no signal of an event after the change reaches the agent for a
// unit it no longer owns.
type ReadAgentSignals struct {
	auth    AgentRechecker
	signals SignalReader
}

// NewReadAgentSignals returns the use case.
func NewReadAgentSignals(auth AgentRechecker, signals SignalReader) *ReadAgentSignals {
	return &ReadAgentSignals{auth: auth, signals: signals}
}

// AgentSignalsInput is one read: the token the request presented, and
// the read's cursor, wait and limit (as SignalsInput).
type AgentSignalsInput struct {
	Token string
	After string
	Wait  time.Duration
	Limit int
}

// Handle reads the signals after in.After, waiting up to in.Wait for the
// first, as the caller's supervisor is at each moment.
func (uc *ReadAgentSignals) Handle(ctx context.Context, in AgentSignalsInput) (SignalPage, error) {
	sm, err := uc.auth.Recheck(ctx, in.Token)
	if err != nil {
		return SignalPage{}, err
	}
	deadline := time.Now().Add(in.Wait)
	after := in.After
	for {
		wait := min(max(time.Until(deadline), 0), AgentRecheckInterval)
		if in.Wait < 0 || in.Wait > MaxSignalWait {
			wait = in.Wait // ReadSignals refuses it, naming the bound
		}
		page, err := uc.signals.Handle(ctx, SignalsInput{Supervisor: sm.Supervisor, After: after, Wait: wait, Limit: in.Limit})
		if err != nil {
			return SignalPage{}, err
		}
		now, err := uc.auth.Recheck(ctx, in.Token)
		if err != nil {
			return SignalPage{}, err
		}
		if !now.UpdatedAt.Equal(sm.UpdatedAt) {
			sm = now // read the slice again as the supervisor is now
			if time.Until(deadline) <= 0 {
				// The wait is over: one last read, however often the
				// supervisor goes on changing.
				return uc.signals.Handle(ctx, SignalsInput{Supervisor: sm.Supervisor, After: after, Limit: in.Limit})
			}
			continue
		}
		if len(page.Signals) > 0 || time.Until(deadline) <= 0 {
			return page, nil
		}
		after = page.Cursor
	}
}
