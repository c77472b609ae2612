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
			// fails the same way again, so it is the caller's input.
			return fmt.Errorf("database refused a value: %s (SQLSTATE %s): %w", pgErr.Message, pgErr.Code, fault.ErrInvalid)
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
