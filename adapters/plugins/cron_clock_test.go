package plugins_test

import (
	"testing"
	"time"

	"github.com/yukta/yukta/adapters/plugins"
)

func TestCronClockNext(t *testing.T) {
	t.Parallel()
	c := plugins.NewCronClock()
	at := time.Date(2026, 11, 29, 10, 7, 13, 0, time.UTC)
	cases := []struct {
		spec, tz string
		want     time.Time
	}{
		{"*/5 * * * *", "UTC", time.Date(2026, 11, 29, 10, 10, 0, 0, time.UTC)},
		{"0 9 * * *", "Europe/Paris", time.Date(2026, 11, 30, 8, 0, 0, 0, time.UTC)},
		// @every is aligned to fixed slots, so asking again half a second later
		// gives the same slot (robfig alone would answer "after+delay").
		{"@every 2m", "UTC", time.Date(2026, 11, 29, 10, 8, 0, 0, time.UTC)},
	}
	for _, tc := range cases {
		got, err := c.Next(tc.spec, tc.tz, at)
		if err != nil || !got.Equal(tc.want) {
			t.Errorf("Next(%q, %q) = %v, %v; want %v", tc.spec, tc.tz, got, err, tc.want)
		}
	}
	a, _ := c.Next("@every 2s", "UTC", at)
	b, _ := c.Next("@every 2s", "UTC", at.Add(500*time.Millisecond))
	if !a.Equal(b) {
		t.Fatalf("@every 2s slots moved with the question: %v then %v", a, b)
	}
	if _, err := c.Next("61 * * * *", "UTC", at); err == nil {
		t.Fatal("bad spec accepted")
	}
}
