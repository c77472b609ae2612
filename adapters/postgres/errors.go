package postgres

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"syscall"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/yukta/yukta/domain/fault"
)

// SQLSTATE codes this package reacts to.
const (
	uniqueViolation      = "23505"
	foreignKeyViolation  = "23503"
	checkViolation       = "23514"
	serializationFailure = "40001"
	deadlockDetected     = "40P01"
)

// translate is the one place pgx errors become fault kinds. Callers that know
// what "no rows" means pass their own error first (see notFound).
func translate(err error) error {
	if err == nil {
		return nil
	}
	var pgErr *pgconn.PgError
	switch {
	case errors.As(err, &pgErr):
		switch pgErr.Code {
		case serializationFailure, deadlockDetected:
			// Kept recognisable so inTx retries the transaction.
			return &retryError{msg: pgErr.Message, code: pgErr.Code}
		case uniqueViolation, foreignKeyViolation:
			return fmt.Errorf("%s: %w", pgErr.Message, fault.ErrConflict)
		case checkViolation:
			return fmt.Errorf("%s: %w", pgErr.Message, fault.ErrInvalid)
		}
		if pgErr.Code[:2] == "22" {
			// Data exceptions: a value the database cannot store (U+0000
			// in text or jsonb, a number out of range). The same value
			// fails the same way again, so it is the caller's input. The
			// text reaches clients, so it is ours, not PostgreSQL's.
			return fmt.Errorf("%s (data exception %s): %w", dataException(pgErr.Code), pgErr.Code, fault.ErrInvalid)
		}
		if pgErr.Code[:2] == "08" || pgErr.Code[:2] == "57" || pgErr.Code[:2] == "53" {
			return fmt.Errorf("database: %s: %w", pgErr.Message, fault.ErrUnavailable)
		}
		return fmt.Errorf("database: %s (SQLSTATE %s)", pgErr.Message, pgErr.Code)
	case pgconn.SafeToRetry(err), pgconn.Timeout(err):
		return fmt.Errorf("database: %w: %w", err, fault.ErrUnavailable)
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		return err
	}
	var connErr *pgconn.ConnectError
	if errors.As(err, &connErr) {
		return fmt.Errorf("database: cannot connect: %w", fault.ErrUnavailable)
	}
	// A connection cut mid-statement (the server crashed or restarted) is
	// not "safe to retry" for pgconn, which cannot know whether a write
	// took effect. For Yukta it is: reads are repeatable, and every write
	// is guarded by a lease token or a unique key, so a commit that did
	// land makes its retry a no-op.
	var netErr net.Error
	if errors.As(err, &netErr) || errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) ||
		errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.EPIPE) {
		return fmt.Errorf("database: connection lost: %v: %w", err, fault.ErrUnavailable)
	}
	return err
}

// dataException says in our words what PostgreSQL's data exception code
// means for the value sent (its own message, which can quote the value and
// names its internals, stays out of answers; the code stays, for the log
// and for support).
func dataException(code string) string {
	switch code {
	case "22021": // character_not_in_repertoire: invalid UTF-8, U+0000 in text
		return "a text value is not valid UTF-8 or holds U+0000 (NUL), which cannot be stored; send valid UTF-8 without U+0000"
	case "22P05": // untranslatable_character: U+0000 in jsonb
		return "a JSON value holds U+0000 (NUL), which cannot be stored; leave it out"
	case "22003": // numeric_value_out_of_range
		return "a number is out of the range that can be stored"
	case "22001": // string_data_right_truncation
		return "a text value is longer than can be stored"
	case "22P02", "22007", "22008": // invalid_text_representation, datetime formats
		return "a value is not in the form expected (a number, time or id)"
	}
	return "a value cannot be stored"
}

// notFound maps "no rows" to want and everything else through translate.
func notFound(err, want error) error {
	if errors.Is(err, pgx.ErrNoRows) {
		return want
	}
	return translate(err)
}

// retryError is a serialization failure or deadlock: transient, and retried
// by inTx before it ever reaches a caller.
type retryError struct{ msg, code string }

func (e *retryError) Error() string { return fmt.Sprintf("database: %s (SQLSTATE %s)", e.msg, e.code) }

func retryable(err error) bool {
	var r *retryError
	if errors.As(err, &r) {
		return true
	}
	var pgErr *pgconn.PgError
	return errors.As(err, &pgErr) && (pgErr.Code == serializationFailure || pgErr.Code == deadlockDetected)
}
