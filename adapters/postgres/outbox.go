package postgres

import (
	"context"
	"slices"
	"time"

	"github.com/yukta/yukta/application/executionapp"
)

// EventStore appends to the event outbox in the caller's transaction.
type EventStore struct {
	db       dbtx
	appended bool // an Append succeeded in this transaction
	// statusChanged: an appended event is an ExecutionStatusChanged (a run
	// ended, paused, resumed or was admitted: slots may have freed).
	statusChanged bool
}

var _ executionapp.EventStore = (*EventStore)(nil)

// Append writes events in one statement.
func (s *EventStore) Append(ctx context.Context, events []executionapp.Event) error {
	n := len(events)
	types, sids, wids, eids, nids, actors, channels, data := make([]string, n), make([]string, n), make([]string, n),
		make([]string, n), make([]string, n), make([]string, n), make([]string, n), make([]string, n)
	at := make([]time.Time, n)
	for i, e := range events {
		d, err := toJSON(e.Data)
		if err != nil {
			return err
		}
		if e.Data == nil {
			d = "{}"
		}
		types[i], at[i], sids[i], wids[i], eids[i], nids[i], actors[i], channels[i], data[i] =
			e.Type, e.At, e.SessionID, e.WorkflowID, e.ExecutionID, e.NodeID, e.Actor, e.Channel, d
	}
	_, err := s.db.Exec(ctx, `
		INSERT INTO events (type, at, session_id, workflow_id, execution_id, node_id, actor, channel, data)
		SELECT t.type, t.at, t.sid, t.wid, nullif(t.eid, '')::uuid, t.nid, t.actor, t.channel, t.data::jsonb
		  FROM unnest($1::text[], $2::timestamptz[], $3::text[], $4::text[], $5::text[], $6::text[], $7::text[], $8::text[], $9::text[])
		       WITH ORDINALITY AS t(type, at, sid, wid, eid, nid, actor, channel, data, ord)
		 ORDER BY t.ord`, types, at, sids, wids, eids, nids, actors, channels, data)
	if err == nil && n > 0 {
		s.appended = true
		s.statusChanged = s.statusChanged || slices.Contains(types, executionapp.EventExecutionStatusChanged)
	}
	return translate(err)
}

// LogStore appends log lines in the caller's transaction.
type LogStore struct{ db dbtx }

var _ executionapp.LogStore = (*LogStore)(nil)

// Append writes log lines in one statement.
func (s *LogStore) Append(ctx context.Context, lines []executionapp.LogEntry) error {
	n := len(lines)
	eids, levels, nids, msgs := make([]string, n), make([]string, n), make([]string, n), make([]string, n)
	seqs, at := make([]int64, n), make([]time.Time, n)
	for i, l := range lines {
		eids[i], seqs[i], at[i], levels[i], nids[i], msgs[i] = l.ExecutionID, l.Seq, l.At, l.Level, l.NodeID, l.Message
	}
	_, err := s.db.Exec(ctx, `
		INSERT INTO execution_logs (execution_id, seq, at, level, node_id, message)
		SELECT * FROM unnest($1::uuid[], $2::bigint[], $3::timestamptz[], $4::text[], $5::text[], $6::text[])`,
		eids, seqs, at, levels, nids, msgs)
	return translate(err)
}

// SignalSender sends cancel hints with pg_notify; PostgreSQL delivers them
// when the transaction commits, never for a rolled-back one.
type SignalSender struct{ db dbtx }

var _ executionapp.SignalSender = (*SignalSender)(nil)

// cancelChannel carries "<execution id> <node id>" payloads.
const cancelChannel = "yukta_cancel"

// Cancel tells every instance to cancel running work of an execution.
func (s *SignalSender) Cancel(ctx context.Context, executionID, nodeID string) error {
	_, err := s.db.Exec(ctx, `SELECT pg_notify($1, $2)`, cancelChannel, executionID+" "+nodeID)
	return translate(err)
}
