package postgres

import (
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
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

// TestTranslateDataExceptionsInOurWords: a value the database cannot store
// is the caller's input, said in our words: PostgreSQL's message (which
// quotes the bytes and names encodings) and its SQLSTATE stay out of the
// text that reaches clients.
func TestTranslateDataExceptionsInOurWords(t *testing.T) {
	for _, c := range []struct{ code, message, want string }{
		{"22021", `invalid byte sequence for encoding "UTF8": 0x00`, "U+0000"},
		{"22021", `invalid byte sequence for encoding "UTF8": 0xed 0xa0 0x80`, "UTF-8"},
		{"22P05", "unsupported Unicode escape sequence", "U+0000"},
		{"22003", `value "99999999999" is out of range for type integer`, "range"},
		{"22001", "value too long for type character varying(64)", "longer"},
		{"22P02", `invalid input syntax for type uuid: "x"`, "form"},
		{"22023", "poison is not storable", "data exception 22023"},
	} {
		got := translate(fmt.Errorf("load: %w", &pgconn.PgError{Code: c.code, Message: c.message}))
		if !errors.Is(got, fault.ErrInvalid) {
			t.Errorf("%s: %v is not ErrInvalid", c.code, got)
		}
		for _, leak := range []string{c.message, "SQLSTATE", "encoding", "UTF8", "type "} {
			if strings.Contains(got.Error(), leak) {
				t.Errorf("%s: %q holds PostgreSQL's text %q", c.code, got, leak)
			}
		}
		if !strings.Contains(got.Error(), c.want) || !strings.Contains(got.Error(), "(data exception "+c.code+")") {
			t.Errorf("%s: %q does not say %q", c.code, got, c.want)
		}
	}
}
