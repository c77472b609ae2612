package bootstrap

import (
	"context"
	"crypto/sha256"
	"os"
	"os/signal"
	"slices"
	"strings"
	"syscall"
	"time"

	"go.uber.org/fx"
	"go.uber.org/zap"

	"github.com/yukta/yukta/adapters/authn"
	"github.com/yukta/yukta/adapters/metrics"
	"github.com/yukta/yukta/domain/access"
)

// The key file is looked at every keyFilePoll (docs/adr/0012): a stat, and
// a read only when the file changed (another file renamed over it, another
// size or mtime) or may have changed without its mtime moving, which is
// while its mtime is within keyFileRacy of the last read (coarse file
// system timestamps). A poll leaves a file modified less than keyFileSettle
// ago to the next one, so a write in progress (in place, in several
// pieces) is not taken for the new set. SIGHUP reads it at once.
const (
	keyFilePoll   = time.Second
	keyFileRacy   = 2 * time.Second
	keyFileSettle = 100 * time.Millisecond
)

// The results of looking at the key file, as logged and counted
// (yukta_key_file_reloads_total{result}).
const (
	reloadApplied    = "applied"    // a new set of keys is in force
	reloadUnchanged  = "unchanged"  // re-read on SIGHUP, the same keys
	reloadRefused    = "refused"    // malformed: the last good set stays
	reloadUnreadable = "unreadable" // missing or unreadable: the last good set stays
)

// keyFile is the key file under watch and what a reload needs to rebuild the
// API keyring beside it: YUKTA_API_KEY's key and YUKTA_MCP_API_KEY's (its
// hash, which no file key may share). Only hashes are kept. It is owned by
// the one goroutine of watchKeyFile.
type keyFile struct {
	path string
	env  *access.KeySpec
	mcp  *access.KeySpec
	ring *authn.Ring
	// specs are the file's keys in force.
	specs []access.KeySpec
	// hash is the SHA-256 of the content last read, in force or refused.
	hash [sha256.Size]byte
	// seen is the file as it was when last read; read when it was.
	seen os.FileInfo
	read time.Time
	// problem is why the file could not be read the last time, or "".
	problem string
}

var keyFileModule = fx.Module("keyfile", fx.Invoke(startKeyFileWatch))

type keyFileParams struct {
	fx.In
	LC      fx.Lifecycle
	Cfg     Config
	Log     *zap.Logger
	Metrics *metrics.Metrics
}

// startKeyFileWatch runs watchKeyFile for the lifetime of the server when a
// key file is configured.
func startKeyFileWatch(p keyFileParams) {
	kf := p.Cfg.keyFile
	if kf == nil {
		return
	}
	log := p.Log.Named("keys")
	runInBackground(p.LC, "key file watch", func(ctx context.Context) { kf.watch(ctx, log, p.Metrics.KeyFileReload) },
		func() {
			log.Info("watching the key file", zap.String("path", kf.path), zap.Duration("interval", keyFilePoll), zap.Int("keys", len(kf.specs)))
		}, nil)
}

// watch looks at the key file every keyFilePoll and at once on SIGHUP until
// ctx ends. counted hears each result but an unchanged poll.
func (f *keyFile) watch(ctx context.Context, log *zap.Logger, counted func(result string)) {
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	defer signal.Stop(hup)
	tick := time.NewTicker(keyFilePoll)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
			f.look(log, counted, false)
		case <-hup:
			f.look(log, counted, true)
		}
	}
}

// look reads the key file if it changed (or, on SIGHUP, whatever), puts its
// keys in force when they are valid, and logs what happened: keys added,
// removed and changed by name, or why the file was refused and that the
// last good set stays. A problem that persists is logged once.
func (f *keyFile) look(log *zap.Logger, counted func(string), hup bool) {
	trigger := "change"
	if hup {
		trigger = "SIGHUP"
	}
	now := time.Now()
	info, err := os.Stat(f.path)
	if err == nil && !hup && (f.problem == "" && f.unchanged(info) || settling(info, now)) {
		return
	}
	var data []byte
	if err == nil {
		data, err = os.ReadFile(f.path)
	}
	if err != nil {
		if hup || err.Error() != f.problem {
			log.Warn("key file unreadable; the last good keys stay", zap.String("path", f.path), zap.String("trigger", trigger),
				zap.Int("keys", len(f.specs)), zap.Error(err))
			counted(reloadUnreadable)
		}
		f.problem, f.seen = err.Error(), nil
		return
	}
	wasProblem := f.problem != ""
	f.problem, f.seen, f.read = "", info, now
	h := sha256.Sum256(data)
	if h == f.hash {
		if hup || wasProblem {
			log.Info("key file re-read: no change", zap.String("path", f.path), zap.String("trigger", trigger), zap.Int("keys", len(f.specs)))
			counted(reloadUnchanged)
		}
		return
	}
	f.hash = h
	ring, specs, err := f.build(data, true)
	if err != nil {
		log.Warn("key file refused; the last good keys stay", zap.String("path", f.path), zap.String("trigger", trigger),
			zap.Int("keys", len(f.specs)), zap.Error(err))
		counted(reloadRefused)
		return
	}
	added, removed, changed := diffKeys(f.specs, specs)
	f.ring.Replace(ring)
	f.specs = specs
	log.Info("key file reloaded", zap.String("path", f.path), zap.String("trigger", trigger), zap.Int("keys", len(specs)),
		zap.Strings("added", added), zap.Strings("removed", removed), zap.Strings("changed", changed))
	counted(reloadApplied)
}

// settling reports whether the file was modified less than keyFileSettle
// before now (a file dated in the future is not waited for).
func settling(info os.FileInfo, now time.Time) bool {
	age := now.Sub(info.ModTime())
	return age >= 0 && age < keyFileSettle
}

// unchanged reports whether the file at the path is the one last read, with
// the same size and mtime, read long enough after that mtime that a change
// would have moved it.
func (f *keyFile) unchanged(info os.FileInfo) bool {
	return f.seen != nil && os.SameFile(f.seen, info) && info.Size() == f.seen.Size() &&
		info.ModTime().Equal(f.seen.ModTime()) && f.read.Sub(info.ModTime()) > keyFileRacy
}

// diffKeys names the keys of after that before lacks, those of before that
// after lacks, and those of both whose role, session or queue list or secret differ
// (names compared in any letter case, as the file does).
func diffKeys(before, after []access.KeySpec) (added, removed, changed []string) {
	old := map[string]access.KeySpec{}
	for _, s := range before {
		old[strings.ToLower(s.Name)] = s
	}
	for _, s := range after {
		folded := strings.ToLower(s.Name)
		o, ok := old[folded]
		delete(old, folded)
		switch {
		case !ok:
			added = append(added, s.Name)
		case o.Role != s.Role || o.Hash != s.Hash || !slices.Equal(o.Sessions, s.Sessions) || o.Name != s.Name ||
			!slices.Equal(o.Queues, s.Queues) || (o.Queues == nil) != (s.Queues == nil):
			changed = append(changed, s.Name)
		}
	}
	for _, s := range before {
		if _, ok := old[strings.ToLower(s.Name)]; ok {
			removed = append(removed, s.Name)
		}
	}
	return added, removed, changed
}
