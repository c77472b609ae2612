package retentionapp

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/yukta/yukta/domain/retention"
)

// SessionRetention is one session's own retention (the zero Override
// inherits the server's policy).
type SessionRetention struct {
	SessionID string
	Override  retention.Override
}

// Run is a finished execution the sweeper may delete.
type Run struct {
	ID, SessionID, WorkflowID, Status string
	StartedAt, EndedAt                time.Time
}

// Deletion is what a batch records with each run it deletes.
type Deletion struct {
	At     time.Time
	Policy retention.Policy
	// Exported maps a run id to the file its journal was written to.
	Exported map[string]string
}

// Store is the sweeper's storage.
type Store interface {
	// Lead runs fn while this instance holds the retention lead, so one
	// instance sweeps at a time across replicas; ok is false (and fn does
	// not run) when another holds it.
	Lead(ctx context.Context, fn func(ctx context.Context) error) (ok bool, err error)
	// Sessions lists every session with its own retention.
	Sessions(ctx context.Context) ([]SessionRetention, error)
	// Due lists up to limit finished runs of a session that ended before
	// cutoff and whose events the journal observer has consumed, oldest
	// first. It reads by index and never touches a live run.
	Due(ctx context.Context, sessionID string, cutoff time.Time, limit int) ([]Run, error)
	// Delete deletes the runs still finished and not locked by anyone
	// (the others are left for a later pass) with their nodes, work items,
	// logs, inputs, events and commands, and their journal when the policy
	// says so, and writes a tombstone for each, in one short transaction.
	// It returns the ids it deleted.
	Delete(ctx context.Context, runs []Run, d Deletion) ([]string, error)
	// ExpireTombstones deletes up to limit tombstones written before t.
	ExpireTombstones(ctx context.Context, before time.Time, limit int) (int, error)
}

// JournalExporter returns a run's journal as NDJSON lines, as the journal
// export gives them (journalapp.ExportJournal).
type JournalExporter interface {
	Handle(ctx context.Context, sessionID, executionID string) ([][]byte, error)
}

// Archive keeps exported journals.
type Archive interface {
	// Write stores a run's journal lines durably and returns where.
	Write(sessionID, executionID string, lines [][]byte) (string, error)
}

// Config is the server's retention settings.
type Config struct {
	// Policy is the server-wide default; a session may override it.
	Policy retention.Policy
	// Batch is the most runs one transaction deletes (or prunes); Pause
	// is the wait between two batches, which leaves the database to the
	// engine.
	Batch int
	Pause time.Duration
	// PruneAfter is how long after its end a run's work items are folded;
	// 0 never folds them.
	PruneAfter time.Duration
	// TombstoneDays is how long a tombstone outlives its run; 0 keeps
	// tombstones forever.
	TombstoneDays int
}

// Report is what one pass did.
type Report struct {
	Led      bool // false: another instance holds the lead; nothing was done
	Deleted  int
	Exported int
	// Skipped counts runs left for a later pass (their export failed).
	Skipped    int
	Pruned     int
	Tombstones int
}

// SweepRetention deletes finished runs older than their policy.
type SweepRetention struct {
	store    Store
	exporter JournalExporter
	archive  Archive // nil: journals are not exported
	prune    *PruneItems
	cfg      Config
	now      func() time.Time
	// OnBatch is told about every batch deleted, for the server log.
	onBatch func(sessionID string, p retention.Policy, ids []string)
}

// Deps are what the sweeper needs; Archive may be nil.
type Deps struct {
	Store    Store
	Prune    *PruneItems
	Exporter JournalExporter
	Archive  Archive
	Now      func() time.Time
	OnBatch  func(sessionID string, p retention.Policy, ids []string)
}

// NewSweepRetention returns the use case.
func NewSweepRetention(d Deps, cfg Config) *SweepRetention {
	if cfg.Batch <= 0 {
		cfg.Batch = DefaultBatch
	}
	if d.Now == nil {
		d.Now = time.Now
	}
	if d.OnBatch == nil {
		d.OnBatch = func(string, retention.Policy, []string) {}
	}
	return &SweepRetention{store: d.Store, exporter: d.Exporter, archive: d.Archive, prune: d.Prune, cfg: cfg, now: d.Now, onBatch: d.OnBatch}
}

// DefaultBatch is the batch size when none is set.
const DefaultBatch = 500

// Handle makes one pass, if this instance gets the lead: each session's due
// runs, batch by batch, then the folding of finished runs' work items, then
// expired tombstones. It stops early, with what it did, when ctx ends.
func (uc *SweepRetention) Handle(ctx context.Context) (Report, error) {
	var rep Report
	ok, err := uc.store.Lead(ctx, func(ctx context.Context) error {
		rep.Led = true
		sessions, err := uc.store.Sessions(ctx)
		if err != nil {
			return err
		}
		var errs []error
		for _, s := range sessions {
			if err := uc.sweepSession(ctx, s, &rep); err != nil {
				if ctx.Err() != nil {
					return ctx.Err()
				}
				errs = append(errs, fmt.Errorf("session %s: %w", s.SessionID, err))
			}
		}
		if uc.prune != nil && uc.cfg.PruneAfter > 0 {
			n, err := uc.prune.Handle(ctx, uc.now().Add(-uc.cfg.PruneAfter))
			rep.Pruned += n
			if err != nil {
				errs = append(errs, err)
			}
		}
		if uc.cfg.TombstoneDays > 0 {
			before := uc.now().AddDate(0, 0, -uc.cfg.TombstoneDays)
			for {
				n, err := uc.store.ExpireTombstones(ctx, before, uc.cfg.Batch)
				rep.Tombstones += n
				if err != nil {
					errs = append(errs, err)
				}
				if err != nil || n < uc.cfg.Batch || !uc.pause(ctx) {
					break
				}
			}
		}
		return errors.Join(errs...)
	})
	if !ok && err == nil {
		rep.Led = false
	}
	return rep, err
}

func (uc *SweepRetention) sweepSession(ctx context.Context, s SessionRetention, rep *Report) error {
	p := s.Override.Over(uc.cfg.Policy)
	if !p.Deletes() {
		return nil
	}
	cutoff := p.Cutoff(uc.now())
	var errs []error
	failed := map[string]bool{} // exports that failed in this pass: not tried again until the next
	for {
		runs, err := uc.store.Due(ctx, s.SessionID, cutoff, uc.cfg.Batch)
		if err != nil || len(runs) == 0 {
			return errors.Join(append(errs, err)...)
		}
		due := len(runs)
		d := Deletion{At: uc.now(), Policy: p}
		if uc.archive != nil {
			// A run whose journal could not be written stays; the
			// others of the batch go.
			runs, d.Exported, err = uc.export(ctx, runs, failed, rep)
			if err != nil {
				errs = append(errs, err)
			}
		}
		ids, err := uc.store.Delete(ctx, runs, d)
		if err != nil {
			return errors.Join(append(errs, err)...)
		}
		rep.Deleted += len(ids)
		if len(ids) > 0 {
			uc.onBatch(s.SessionID, p, ids)
		}
		// Fewer than a batch due: this session has nothing more. None
		// deleted: every one left is busy (locked, or its export failed),
		// so a later pass tries again rather than this one spinning.
		if due < uc.cfg.Batch || len(ids) == 0 || !uc.pause(ctx) {
			return errors.Join(errs...)
		}
	}
}

// export writes each run's journal before anything is deleted; a run
// whose journal could not be written stays, for a later pass.
func (uc *SweepRetention) export(ctx context.Context, runs []Run, failed map[string]bool, rep *Report) ([]Run, map[string]string, error) {
	kept := runs[:0:0]
	files := make(map[string]string, len(runs))
	var errs []error
	for _, r := range runs {
		if failed[r.ID] {
			continue
		}
		lines, err := uc.exporter.Handle(ctx, r.SessionID, r.ID)
		if err == nil {
			var path string
			if path, err = uc.archive.Write(r.SessionID, r.ID, lines); err == nil {
				files[r.ID] = path
				kept = append(kept, r)
				rep.Exported++
				continue
			}
		}
		rep.Skipped++
		failed[r.ID] = true
		errs = append(errs, fmt.Errorf("export the journal of execution %s before deleting it: %w", r.ID, err))
	}
	return kept, files, errors.Join(errs...)
}

// pause waits between batches; false when ctx ended.
func (uc *SweepRetention) pause(ctx context.Context) bool {
	if uc.cfg.Pause <= 0 {
		return ctx.Err() == nil
	}
	t := time.NewTimer(uc.cfg.Pause)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}

// Run makes a pass every interval (and one at once) until ctx ends; each
// pass's error goes to onErr and the next pass tries again.
func (uc *SweepRetention) Run(ctx context.Context, every time.Duration, onPass func(Report), onErr func(error)) {
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		rep, err := uc.Handle(ctx)
		if ctx.Err() != nil {
			return
		}
		if err != nil {
			onErr(err)
		}
		onPass(rep)
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}
