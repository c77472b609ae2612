package bootstrap

import (
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/yukta/yukta/domain/retention"
)

func TestRetentionConfig(t *testing.T) {
	c, err := parse(t, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	r := c.Retention
	if r.Policy.Deletes() || r.Policy.Journals() != retention.Keep || r.ExportDir != "" || r.Every != 10*time.Minute ||
		r.Batch != 500 || r.Pause != 200*time.Millisecond || r.PruneAfter != time.Hour || r.TombstoneDays != 365 {
		t.Fatalf("defaults = %+v; retention must be off by default", r)
	}
	c, err = parse(t, []string{"--retention-days", "30", "--retention-export-dir", "exports"},
		map[string]string{"YUKTA_RETENTION_JOURNALS": "delete", "YUKTA_RETENTION_DAYS": "7", "YUKTA_RETENTION_PRUNE_AFTER": "0"})
	if err != nil {
		t.Fatal(err)
	}
	r = c.Retention
	if r.Policy.Days() != 30 || r.Policy.Journals() != retention.Delete || !filepath.IsAbs(r.ExportDir) || r.PruneAfter != 0 {
		t.Fatalf("flags and env = %+v", r)
	}
	_, err = parse(t, []string{"--retention-days", "-1", "--retention-journals", "archive", "--retention-interval", "0s",
		"--retention-batch", "0", "--retention-pause", "2m", "--retention-prune-after", "soon", "--retention-tombstone-days", "x"}, nil)
	for _, want := range []string{"YUKTA_RETENTION_DAYS", "YUKTA_RETENTION_JOURNALS", "YUKTA_RETENTION_INTERVAL", "YUKTA_RETENTION_BATCH",
		"YUKTA_RETENTION_PAUSE", "YUKTA_RETENTION_PRUNE_AFTER", "YUKTA_RETENTION_TOMBSTONE_DAYS"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("bad retention settings: error does not name %s: %v", want, err)
		}
	}
}
