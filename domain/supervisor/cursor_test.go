package supervisor

import (
	"errors"
	"strings"
	"testing"

	"github.com/yukta/yukta/domain/fault"
)

func TestCursorRoundTrip(t *testing.T) {
	t.Parallel()
	for _, p := range []Position{{XID: 1}, {XID: 3, Seq: 1}, {XID: 812, Seq: 2883}, {XID: 1<<64 - 1, Seq: 1<<63 - 1}} {
		c := FormatCursor(p)
		got, err := ParseCursor(c)
		if err != nil || got != p {
			t.Errorf("round trip %+v via %q: got %+v %v", p, c, got, err)
		}
		if got.Legacy() || got.IsZero() {
			t.Errorf("%q: a cursor this server writes is neither legacy nor the start", c)
		}
	}
	if p, err := ParseCursor(""); err != nil || !p.IsZero() {
		t.Errorf(`ParseCursor(""): got %+v %v, want the start`, p, err)
	}
}

func TestCursorLegacy(t *testing.T) {
	t.Parallel()
	p, err := ParseCursor("2883")
	if err != nil || !p.Legacy() || p.Seq != 2883 {
		t.Fatalf(`ParseCursor("2883"): got %+v %v, want a legacy position at seq 2883`, p, err)
	}
}

func TestCursorRefusals(t *testing.T) {
	t.Parallel()
	good := FormatCursor(Position{XID: 812, Seq: 2883})
	body := good[:strings.LastIndex(good, ".")]
	for _, bad := range []string{
		"0", "-1", "01", "+1", "x", "1.0", "99999999999999999999", // bare seqs that are not ones
		body,                          // the check cut off
		body + ".0000",                // a wrong check
		"813.2883" + good[len(body):], // an edited xid
		"812.2884" + good[len(body):], // an edited seq
		good + ".1", "." + good, good[1:], strings.ToUpper(good) + "x",
		"0.5." + cursorCheck("0.5"), "07.5." + cursorCheck("07.5"), "7.-5." + cursorCheck("7.-5"), "7.05." + cursorCheck("7.05"),
	} {
		_, err := ParseCursor(bad)
		if !errors.Is(err, fault.ErrInvalid) {
			t.Errorf("ParseCursor(%q): got %v, want ErrInvalid", bad, err)
			continue
		}
		if !strings.Contains(err.Error(), "leave after out") {
			t.Errorf("ParseCursor(%q): %v does not say what to do", bad, err)
		}
	}
}

func TestPositionOrder(t *testing.T) {
	t.Parallel()
	ordered := []Position{{}, {XID: 5, Seq: 9}, {XID: 5, Seq: 10}, {XID: 6, Seq: 1}}
	for i := range ordered {
		for j := range ordered {
			if got := ordered[i].Before(ordered[j]); got != (i < j) {
				t.Errorf("%+v before %+v: got %v", ordered[i], ordered[j], got)
			}
		}
	}
}
