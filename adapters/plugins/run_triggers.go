package plugins

import (
	"context"
	"time"

	"github.com/yukta/yukta/application/executionapp"
	"github.com/yukta/yukta/domain/plugin"
)

// passThrough emits the payload unchanged: the behaviour of the triggers
// whose payload is whatever started the run (MANUAL, WEBHOOK,
// SUPERVISOR_SIGNAL), of DELAY once its timer fired, and the like.
func passThrough(_ context.Context, in executionapp.Invocation) (executionapp.Outcome, error) {
	return emit(plugin.DefaultPort, in.Payload), nil
}

// runSchedule emits the payload the scheduler started the run with, else
// the configured one, else when it fired, so a downstream node always has an
// object to read.
func runSchedule(_ context.Context, in executionapp.Invocation) (executionapp.Outcome, error) {
	switch {
	case in.Payload != nil:
		return emit(plugin.DefaultPort, in.Payload), nil
	case in.Config["payload"] != nil:
		return emit(plugin.DefaultPort, in.Config["payload"]), nil
	}
	return emit(plugin.DefaultPort, map[string]any{"firedAt": now(in).UTC().Format(time.RFC3339)}), nil
}
