package bootstrap

import (
	"errors"
	"flag"
	"fmt"
	"path/filepath"
	"strconv"
	"time"

	"github.com/yukta/yukta/application/retentionapp"
	"github.com/yukta/yukta/domain/retention"
)

// RetentionConfig is the retention sweeper's settings (docs/configuration.md,
// "Retention").
type RetentionConfig struct {
	retentionapp.Config
	// ExportDir, when set, receives each deleted run's journal as NDJSON
	// before the run is deleted.
	ExportDir string
	// Every is the time between two passes.
	Every time.Duration
}

var retentionSettings = struct {
	days, journals, exportDir, every, batch, pause, pruneAfter, tombstoneDays setting
}{
	days:          setting{"retention-days", "YUKTA_RETENTION_DAYS", "delete finished executions (SUCCESS, FAILURE, STOPPED) this many days after they ended; 0 keeps them forever (a session's retention.days overrides it)"},
	journals:      setting{"retention-journals", "YUKTA_RETENTION_JOURNALS", "what deleting a run does to its journal: keep (it still exports and verifies) or delete"},
	exportDir:     setting{"retention-export-dir", "YUKTA_RETENTION_EXPORT_DIR", "folder that receives each deleted run's journal as NDJSON (<session>/<execution>.ndjson) before the run is deleted; empty exports nothing"},
	every:         setting{"retention-interval", "YUKTA_RETENTION_INTERVAL", "time between two retention passes"},
	batch:         setting{"retention-batch", "YUKTA_RETENTION_BATCH", "most runs one retention transaction deletes or prunes"},
	pause:         setting{"retention-pause", "YUKTA_RETENTION_PAUSE", "wait between two retention batches, which leaves the database to the engine"},
	pruneAfter:    setting{"retention-prune-after", "YUKTA_RETENTION_PRUNE_AFTER", "fold a finished run's work items into what restarts read this long after it ended; 0 never folds them"},
	tombstoneDays: setting{"retention-tombstone-days", "YUKTA_RETENTION_TOMBSTONE_DAYS", "days a deleted run's tombstone (its \"deleted by the retention policy\" answer) is kept; 0 keeps tombstones forever"},
}

// retentionFlags registers the retention flags; the returned func parses
// them once fs has.
func retentionFlags(fs *flag.FlagSet, env func(setting, string) string) func() (RetentionConfig, error) {
	var days, journals, exportDir, every, batch, pause, pruneAfter, tombstoneDays string
	for _, f := range []struct {
		p   *string
		s   setting
		def string
	}{
		{&days, retentionSettings.days, "0"},
		{&journals, retentionSettings.journals, "keep"},
		{&exportDir, retentionSettings.exportDir, ""},
		{&every, retentionSettings.every, "10m"},
		{&batch, retentionSettings.batch, "500"},
		{&pause, retentionSettings.pause, "200ms"},
		{&pruneAfter, retentionSettings.pruneAfter, "1h"},
		{&tombstoneDays, retentionSettings.tombstoneDays, "365"},
	} {
		fs.StringVar(f.p, f.s.flag, env(f.s, f.def), f.s.usage+" ("+f.s.env+")")
	}
	return func() (RetentionConfig, error) {
		var c RetentionConfig
		var errs []error
		s := retentionSettings
		d, err := strconv.Atoi(days)
		if err != nil {
			d = -1
		}
		if c.Policy, err = retention.NewPolicy(d, journals); err != nil {
			if d < 0 || d > retention.MaxDays {
				errs = append(errs, fmt.Errorf("--%s (%s) %q must be a whole number of days from 0 (keep forever) to %d", s.days.flag, s.days.env, days, retention.MaxDays))
			}
			if _, jerr := retention.ParseJournals(journals); jerr != nil {
				errs = append(errs, fmt.Errorf("--%s (%s) %q must be keep or delete", s.journals.flag, s.journals.env, journals))
			}
		}
		if exportDir != "" {
			if c.ExportDir, err = filepath.Abs(exportDir); err != nil {
				errs = append(errs, fmt.Errorf("--%s (%s) %q: %w", s.exportDir.flag, s.exportDir.env, exportDir, err))
			}
		}
		if c.Every, err = time.ParseDuration(every); err != nil || c.Every < time.Second || c.Every > 24*time.Hour {
			errs = append(errs, fmt.Errorf("--%s (%s) %q must be a duration from 1s to 24h, such as 10m", s.every.flag, s.every.env, every))
		}
		if c.Batch, err = strconv.Atoi(batch); err != nil || c.Batch < 1 || c.Batch > 10000 {
			errs = append(errs, fmt.Errorf("--%s (%s) %q must be an integer from 1 to 10000", s.batch.flag, s.batch.env, batch))
		}
		if c.Pause, err = time.ParseDuration(pause); err != nil || c.Pause < 0 || c.Pause > time.Minute {
			errs = append(errs, fmt.Errorf("--%s (%s) %q must be a duration from 0 to 1m, such as 200ms", s.pause.flag, s.pause.env, pause))
		}
		if c.PruneAfter, err = time.ParseDuration(pruneAfter); err != nil || c.PruneAfter < 0 {
			errs = append(errs, fmt.Errorf("--%s (%s) %q must be a duration such as 1h, or 0 to never fold work items", s.pruneAfter.flag, s.pruneAfter.env, pruneAfter))
		}
		if c.TombstoneDays, err = strconv.Atoi(tombstoneDays); err != nil || c.TombstoneDays < 0 || c.TombstoneDays > retention.MaxDays {
			errs = append(errs, fmt.Errorf("--%s (%s) %q must be a whole number of days from 0 (keep forever) to %d", s.tombstoneDays.flag, s.tombstoneDays.env, tombstoneDays, retention.MaxDays))
		}
		return c, errors.Join(errs...)
	}
}
