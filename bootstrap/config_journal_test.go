package bootstrap

import (
	"strings"
	"testing"
)

// TestRotateJournalKeySetting: off by default; the flag alone, its
// variable, or --rotate-journal-key=false over the variable; a variable
// that is not a boolean is refused by name.
func TestRotateJournalKeySetting(t *testing.T) {
	for _, c := range []struct {
		args []string
		env  map[string]string
		want bool
	}{
		{nil, nil, false},
		{[]string{"--rotate-journal-key"}, nil, true},
		{nil, map[string]string{"YUKTA_ROTATE_JOURNAL_KEY": "true"}, true},
		{[]string{"--rotate-journal-key=false"}, map[string]string{"YUKTA_ROTATE_JOURNAL_KEY": "true"}, false},
	} {
		cfg, err := parse(t, c.args, c.env)
		if err != nil || cfg.RotateJournalKey != c.want {
			t.Errorf("%v %v: rotate %v (%v), want %v", c.args, c.env, cfg.RotateJournalKey, err, c.want)
		}
	}
	_, err := parse(t, nil, map[string]string{"YUKTA_ROTATE_JOURNAL_KEY": "sometimes"})
	if err == nil || !strings.Contains(err.Error(), "YUKTA_ROTATE_JOURNAL_KEY") || !strings.Contains(err.Error(), "true or false") {
		t.Errorf("a bad YUKTA_ROTATE_JOURNAL_KEY: %v", err)
	}
}
