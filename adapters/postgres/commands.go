package postgres

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/yukta/yukta/application/executionapp"
	"github.com/yukta/yukta/domain/execution"
	"github.com/yukta/yukta/domain/fault"
)

// CommandStore records control commands.
type CommandStore struct{ db dbtx }

var _ executionapp.CommandStore = (*CommandStore)(nil)

type commandArgs struct {
	Mode       string                `json:"mode,omitempty"`
	FromNodeID string                `json:"fromNodeId,omitempty"`
	Immediate  bool                  `json:"immediate,omitempty"`
	IfStatus   string                `json:"ifStatus,omitempty"`
	WaitMillis int64                 `json:"waitMillis,omitempty"`
	Breakpoint *execution.Breakpoint `json:"breakpoint,omitempty"`
}

// Insert stores a new command.
func (s *CommandStore) Insert(ctx context.Context, c executionapp.CommandRecord) error {
	cmd := c.Command
	args, err := json.Marshal(commandArgs{Mode: string(cmd.Mode), FromNodeID: cmd.FromNodeID, Immediate: cmd.Immediate,
		IfStatus: cmd.IfStatus, WaitMillis: cmd.Wait.Milliseconds(), Breakpoint: cmd.Breakpoint})
	if err != nil {
		return err
	}
	var key, exec *string
	if cmd.Key != "" {
		key = &cmd.Key
	}
	if c.ExecutionID != "" {
		exec = &c.ExecutionID
	}
	_, err = s.db.Exec(ctx, `
		INSERT INTO commands (command_id, session_id, execution_id, workflow_id, node_id, scope, action, args, reason, key,
		                      actor, channel, status, message, result_execution_ids, created_at, applied_at)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8::jsonb, $9, $10, $11, $12, $13, $14, $15, $16, $17)`,
		c.ID, c.SessionID, exec, c.WorkflowID, c.NodeID, string(cmd.Scope), string(cmd.Action), string(args), cmd.Reason, key,
		cmd.Actor, cmd.Channel, c.Status, c.Message, nonNil(c.ResultExecutionIDs), c.CreatedAt, appliedAt(c))
	return translate(err)
}

// Update stores a command's new status.
func (s *CommandStore) Update(ctx context.Context, c executionapp.CommandRecord) error {
	_, err := s.db.Exec(ctx, `UPDATE commands SET status = $2, message = $3, result_execution_ids = $4, applied_at = $5 WHERE command_id = $1`,
		c.ID, c.Status, c.Message, nonNil(c.ResultExecutionIDs), appliedAt(c))
	return translate(err)
}

const commandColumns = `command_id::text, session_id, coalesce(execution_id::text, ''), workflow_id, node_id, scope, action,
	args, reason, coalesce(key, ''), actor, channel, status, message, result_execution_ids, created_at`

// LockKey takes a transaction-scoped advisory lock on a command key.
func (s *CommandStore) LockKey(ctx context.Context, sessionID, key string) error {
	// Two 32-bit halves keep the key space of commands apart from any other
	// advisory lock: the first is a constant, the second the key's hash.
	_, err := s.db.Exec(ctx, `SELECT pg_advisory_xact_lock($1, hashtext($2 || '/' || $3))`, commandKeyLockClass, sessionID, key)
	return translate(err)
}

// commandKeyLockClass is the first half of the advisory locks on command keys.
const commandKeyLockClass = 0x59_6B_43_4B // "YkCK"

// ByKey finds the command stored under an idempotency key for the same
// target and action as like. An execution's commands are matched by the
// execution alone: the stored row also names its workflow, which the
// request may not.
func (s *CommandStore) ByKey(ctx context.Context, like executionapp.CommandRecord) (executionapp.CommandRecord, bool, error) {
	c, err := scanCommand(s.db.QueryRow(ctx, `SELECT `+commandColumns+` FROM commands
		WHERE session_id = $1 AND key = $2 AND node_id = $5 AND scope = $6 AND action = $7
		  AND CASE WHEN $3 = '' THEN execution_id IS NULL AND workflow_id = $4 ELSE execution_id::text = $3 END`,
		like.SessionID, like.Command.Key, like.ExecutionID, like.WorkflowID, like.NodeID, string(like.Command.Scope), string(like.Command.Action)))
	if errors.Is(err, pgx.ErrNoRows) {
		return c, false, nil
	}
	return c, err == nil, translate(err)
}

// ApplyPending marks an execution's accepted commands applied.
func (s *CommandStore) ApplyPending(ctx context.Context, executionID string, at time.Time) ([]string, error) {
	rows, err := s.db.Query(ctx, `UPDATE commands SET status = 'applied', applied_at = $2
		WHERE execution_id = $1 AND status = 'accepted' RETURNING command_id::text`, executionID, at)
	if err != nil {
		return nil, translate(err)
	}
	ids, err := pgx.CollectRows(rows, pgx.RowTo[string])
	return ids, translate(err)
}

func scanCommand(row pgx.Row) (executionapp.CommandRecord, error) {
	var c executionapp.CommandRecord
	var scope, action string
	var args []byte
	err := row.Scan(&c.ID, &c.SessionID, &c.ExecutionID, &c.WorkflowID, &c.NodeID, &scope, &action, &args, &c.Command.Reason,
		&c.Command.Key, &c.Command.Actor, &c.Command.Channel, &c.Status, &c.Message, &c.ResultExecutionIDs, &c.CreatedAt)
	if err != nil {
		return c, err
	}
	// Numbers (a breakpoint's value) keep their exact text.
	var a commandArgs
	dec := json.NewDecoder(bytes.NewReader(args))
	dec.UseNumber()
	if err := dec.Decode(&a); err != nil {
		return c, err
	}
	c.Command.Scope, c.Command.Action = execution.Scope(scope), execution.Action(action)
	c.Command.Mode, c.Command.FromNodeID, c.Command.Immediate = execution.StopMode(a.Mode), a.FromNodeID, a.Immediate
	c.Command.IfStatus, c.Command.Wait, c.Command.Breakpoint = a.IfStatus, time.Duration(a.WaitMillis)*time.Millisecond, a.Breakpoint
	c.Command.NodeID = c.NodeID
	return c, nil
}

func appliedAt(c executionapp.CommandRecord) *time.Time {
	if c.Status == "applied" || c.Status == "rejected" {
		t := time.Now()
		return &t
	}
	return nil
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

// InputStore keeps requested inputs.
type InputStore struct{ db dbtx }

var _ executionapp.InputStore = (*InputStore)(nil)

// Create stores an open input.
func (s *InputStore) Create(ctx context.Context, in executionapp.Input) error {
	var schema *string
	if in.Schema != nil {
		v, err := toJSON(in.Schema)
		if err != nil {
			return err
		}
		schema = &v
	}
	_, err := s.db.Exec(ctx, `INSERT INTO inputs (input_id, session_id, execution_id, node_id, item_id, prompt, schema, status, created_at)
		VALUES ($1, $2, $3, $4, $5, $6, $7::jsonb, $8, $9)`,
		in.ID, in.SessionID, in.ExecutionID, in.NodeID, in.ItemID, in.Prompt, schema, in.Status, in.CreatedAt)
	return translate(err)
}

const inputColumns = `input_id::text, session_id, execution_id::text, node_id, item_id, prompt, schema, status, answer,
	coalesce(answered_by, ''), created_at, answered_at`

func scanInput(row pgx.Row) (executionapp.Input, error) {
	var in executionapp.Input
	var schema, answer []byte
	var answered *time.Time
	if err := row.Scan(&in.ID, &in.SessionID, &in.ExecutionID, &in.NodeID, &in.ItemID, &in.Prompt, &schema, &in.Status,
		&answer, &in.AnsweredBy, &in.CreatedAt, &answered); err != nil {
		return in, err
	}
	if schema != nil {
		v, err := fromJSON(schema)
		if err != nil {
			return in, err
		}
		in.Schema, _ = v.(map[string]any)
	}
	var err error
	in.Answer, err = fromJSON(answer)
	if answered != nil {
		in.AnsweredAt = *answered
	}
	return in, err
}

// Lock loads and locks an input.
func (s *InputStore) Lock(ctx context.Context, id string) (executionapp.Input, error) {
	missing := fault.Newf(executionapp.ErrInputNotFound, "input %s does not exist; call GET /api/inputs to list open inputs", id)
	if !execution.ValidID(id) {
		return executionapp.Input{}, missing
	}
	in, err := scanInput(s.db.QueryRow(ctx, `SELECT `+inputColumns+` FROM inputs WHERE input_id = $1 FOR UPDATE`, id))
	return in, notFound(err, missing)
}

// Save stores an input's answer or status.
func (s *InputStore) Save(ctx context.Context, in executionapp.Input) error {
	a, err := toJSON(in.Answer)
	if err != nil {
		return err
	}
	_, err = s.db.Exec(ctx, `UPDATE inputs SET status = $2, answer = $3::jsonb, answered_by = $4, answered_at = $5 WHERE input_id = $1`,
		in.ID, in.Status, a, in.AnsweredBy, nullTime(in.AnsweredAt))
	return translate(err)
}

// CancelOpen cancels the open inputs of an execution (or of one node).
func (s *InputStore) CancelOpen(ctx context.Context, executionID, nodeID string) error {
	_, err := s.db.Exec(ctx, `UPDATE inputs SET status = 'cancelled'
		WHERE execution_id = $1 AND ($2 = '' OR node_id = $2) AND status = 'open'`, executionID, nodeID)
	return translate(err)
}
