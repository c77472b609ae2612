package postgres

import (
	"errors"
	"fmt"
	"io"
	"net"
	"syscall"
	"testing"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/yukta/yukta/domain/fault"
)

// TestTranslateKinds: a connection cut mid-statement is "unavailable" (the
// engine waits for the database instead of failing a node), a data
// exception is the caller's input, and other errors keep no kind.
func TestTranslateKinds(t *testing.T) {
	reset := &net.OpError{Op: "read", Net: "unix", Err: syscall.ECONNRESET}
	for _, c := range []struct {
		name string
		err  error
		kind error
	}{
		{"connection reset while reading", fmt.Errorf("load execution: %w", reset), fault.ErrUnavailable},
		{"broken pipe", syscall.EPIPE, fault.ErrUnavailable},
		{"unexpected EOF", io.ErrUnexpectedEOF, fault.ErrUnavailable},
		{"admin shutdown", &pgconn.PgError{Code: "57P01", Message: "terminating connection due to administrator command"}, fault.ErrUnavailable},
		{"NUL in jsonb", &pgconn.PgError{Code: "22P05", Message: "unsupported Unicode escape sequence"}, fault.ErrInvalid},
		{"unique violation", &pgconn.PgError{Code: "23505", Message: "duplicate key"}, fault.ErrConflict},
	} {
		got := translate(c.err)
		if !errors.Is(got, c.kind) {
			t.Errorf("%s: %v does not match %v", c.name, got, c.kind)
		}
	}
	if got := translate(errors.New("something else")); errors.Is(got, fault.ErrUnavailable) || errors.Is(got, fault.ErrInvalid) {
		t.Errorf("a plain error got a kind: %v", got)
	}
}
