package supervisor

import (
	"fmt"
	"hash/crc32"
	"strconv"
	"strings"

	"github.com/yukta/yukta/domain/fault"
)

// Position is a place in the outbox's one order, commit order: the id of
// the transaction that wrote an event (XID) and the event's seq. Events are
// read in (XID, Seq) order and only once every older transaction has ended,
// so what comes after a position never changes but by deletion, and a
// position stays a position when its event is deleted (ADR 0011).
//
// The zero Position is before every event. A Position with XID 0 and a Seq
// is a cursor of an older server, which named only the seq: it is a place
// only while its event exists (see Legacy).
type Position struct {
	XID uint64
	Seq int64
}

// Before reports whether p comes before q in the outbox's order.
func (p Position) Before(q Position) bool {
	return p.XID < q.XID || (p.XID == q.XID && p.Seq < q.Seq)
}

// Beyond reports whether p lies beyond the frontier f of positions given
// so far: a frontier's XID is the first not yet assigned (every given
// position lies before it) and its Seq the newest given out. An older
// server's cursor (XID 0) is compared by its seq only.
func (p Position) Beyond(f Position) bool {
	return p.Seq > f.Seq || (p.XID != 0 && p.XID >= f.XID)
}

// IsZero reports whether p is the start, before every event.
func (p Position) IsZero() bool { return p == Position{} }

// Legacy reports whether p came from an older server's cursor, a bare seq
// with no transaction id: it must be looked up by its event.
func (p Position) Legacy() bool { return p.XID == 0 && p.Seq != 0 }

// cursorCheck is the check of a cursor's text: a typed, cut or edited
// cursor is refused instead of read as another place.
func cursorCheck(body string) string {
	return fmt.Sprintf("%04x", crc32.ChecksumIEEE([]byte(body))&0xffff)
}

// FormatCursor writes a position as a cursor: "<xid>.<seq>.<check>". A
// cursor is opaque to supervisors: they pass it back as ?after=.
func FormatCursor(p Position) string {
	body := strconv.FormatUint(p.XID, 10) + "." + strconv.FormatInt(p.Seq, 10)
	return body + "." + cursorCheck(body)
}

// badCursor is the refusal of a cursor this server did not give.
func badCursor(s string) error {
	return fault.Newf(fault.ErrInvalid, "cursor %q is not one this server gave; pass back the cursor of the last signal you handled (or the cursor of the last page), or leave after out to start where the supervisor was created", clip(s))
}

// ParseCursor reads a cursor a client passed back (?after=): "" is the
// start (the zero Position), a cursor FormatCursor wrote is its position,
// and a bare seq (an older server's cursor) is a legacy position
// (Position.Legacy). Anything else is refused with ErrInvalid.
func ParseCursor(s string) (Position, error) {
	if s == "" {
		return Position{}, nil
	}
	if !strings.Contains(s, ".") {
		n, ok := canonicalInt(s)
		if !ok || n == 0 {
			return Position{}, badCursor(s)
		}
		return Position{Seq: n}, nil
	}
	parts := strings.Split(s, ".")
	if len(parts) != 3 || cursorCheck(parts[0]+"."+parts[1]) != parts[2] {
		return Position{}, badCursor(s)
	}
	xid, err := strconv.ParseUint(parts[0], 10, 64)
	if err != nil || strconv.FormatUint(xid, 10) != parts[0] || xid == 0 {
		return Position{}, badCursor(s)
	}
	seq, ok := canonicalInt(parts[1])
	if !ok {
		return Position{}, badCursor(s)
	}
	return Position{XID: xid, Seq: seq}, nil
}

// canonicalInt reads a non-negative decimal written without sign or
// leading zeros.
func canonicalInt(s string) (int64, bool) {
	n, err := strconv.ParseInt(s, 10, 64)
	return n, err == nil && n >= 0 && strconv.FormatInt(n, 10) == s
}
