package bootstrap

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"

	"github.com/yukta/yukta/domain/access"
)

const (
	kfAlice = "alice-secret-0123456789abcdef"
	kfBob   = "bob-secret-0123456789abcdefgh"
	kfEnv   = "env-admin-secret-0123456789abc"
	kfMCP   = "mcp-admin-secret-0123456789abc"
)

// watched is a key file, the keyring loaded from it and the log of its
// watcher.
type watched struct {
	t       *testing.T
	path    string
	kf      *keyFile
	logs    *observer.ObservedLogs
	log     *zap.Logger
	mu      sync.Mutex
	results []string
}

func newWatched(t *testing.T, env, mcp string, lines ...string) *watched {
	t.Helper()
	w := &watched{t: t, path: filepath.Join(t.TempDir(), "keys")}
	w.write(lines...)
	_, kf, err := loadKeys(env, w.path, mcp)
	if err != nil {
		t.Fatal(err)
	}
	core, logs := observer.New(zap.InfoLevel)
	w.kf, w.logs, w.log = kf, logs, zap.New(core)
	return w
}

// write replaces the file by a rename, as editors do, with an mtime in the
// past so the watcher trusts it (a test does not wait for keyFileRacy).
func (w *watched) write(lines ...string) {
	w.t.Helper()
	tmp := w.path + ".tmp"
	if err := os.WriteFile(tmp, []byte(strings.Join(lines, "\n")+"\n"), 0o600); err != nil {
		w.t.Fatal(err)
	}
	old := time.Now().Add(-time.Minute)
	if err := os.Chtimes(tmp, old, old); err != nil {
		w.t.Fatal(err)
	}
	if err := os.Rename(tmp, w.path); err != nil {
		w.t.Fatal(err)
	}
}

func (w *watched) counted(result string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.results = append(w.results, result)
}

// look runs one poll and returns what it counted.
func (w *watched) look(hup bool) []string {
	w.t.Helper()
	w.mu.Lock()
	w.results = nil
	w.mu.Unlock()
	w.kf.look(w.log, w.counted, hup)
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.results
}

func (w *watched) actor(secret string) string {
	p, _ := w.kf.ring.Authenticate(secret)
	return p.Actor()
}

func (w *watched) lastLog() observer.LoggedEntry {
	w.t.Helper()
	all := w.logs.All()
	if len(all) == 0 {
		w.t.Fatal("nothing was logged")
	}
	return all[len(all)-1]
}

func field(e observer.LoggedEntry, key string) any { return e.ContextMap()[key] }

func TestKeyFileReloadAddRemoveChange(t *testing.T) {
	w := newWatched(t, kfEnv, kfMCP, "alice VIEWER "+kfAlice)
	if got := w.look(false); got != nil {
		t.Fatalf("an unchanged file counted %v", got)
	}
	w.write("alice OPERATOR "+kfAlice, "bob ADMIN sessions=etl "+kfBob)
	if got := w.look(false); len(got) != 1 || got[0] != reloadApplied {
		t.Fatalf("counted %v, want applied", got)
	}
	e := w.lastLog()
	if e.Message != "key file reloaded" || !sameStrings(field(e, "added"), "bob") || !sameStrings(field(e, "changed"), "alice") || !sameStrings(field(e, "removed")) {
		t.Fatalf("logged %s %v", e.Message, e.ContextMap())
	}
	if w.actor(kfBob) != "key:bob" || w.actor(kfEnv) != "key:admin" {
		t.Fatal("the new key or YUKTA_API_KEY does not authenticate after the reload")
	}
	if p, _ := w.kf.ring.Authenticate(kfAlice); p.Role() != access.Operator {
		t.Fatalf("alice is %s, want OPERATOR", p.Role())
	}
	w.write("bob ADMIN sessions=etl " + kfBob)
	w.look(false)
	if e := w.lastLog(); !sameStrings(field(e, "removed"), "alice") || w.actor(kfAlice) != "" {
		t.Fatalf("alice was not removed: %v", e.ContextMap())
	}
	for _, e := range w.logs.All() {
		for _, s := range []string{kfAlice, kfBob, kfEnv, kfMCP} {
			if strings.Contains(e.Message, s) || strings.Contains(logText(e.ContextMap()), s) {
				t.Fatalf("the log holds a secret: %s %v", e.Message, e.ContextMap())
			}
		}
	}
}

func TestKeyFileMalformedKeepsTheLastGoodSet(t *testing.T) {
	w := newWatched(t, "", kfMCP, "alice VIEWER "+kfAlice)
	for name, lines := range map[string][]string{
		"bad role":         {"alice VIEWER " + kfAlice, "bob BOSS " + kfBob},
		"no keys":          {"# every key commented out", "# alice VIEWER " + kfAlice},
		"empty":            {""},
		"the MCP key":      {"alice VIEWER " + kfAlice, "bob ADMIN " + kfMCP},
		"a duplicate name": {"alice VIEWER " + kfAlice, "Alice ADMIN " + kfBob},
	} {
		w.write(lines...)
		if got := w.look(false); len(got) != 1 || got[0] != reloadRefused {
			t.Fatalf("%s: counted %v, want refused", name, got)
		}
		e := w.lastLog()
		if e.Message != "key file refused; the last good keys stay" || e.Level != zap.WarnLevel {
			t.Fatalf("%s: logged %s", name, e.Message)
		}
		if msg := logText(e.ContextMap()); strings.Contains(msg, kfBob) || strings.Contains(msg, kfMCP) || strings.Contains(msg, kfAlice) {
			t.Fatalf("%s: the refusal quotes a secret: %s", name, msg)
		}
		if w.actor(kfAlice) != "key:alice" || w.actor(kfBob) != "" || w.actor(kfMCP) != "" {
			t.Fatalf("%s: the keys in force changed", name)
		}
		if w.kf.ring.Len() != 1 {
			t.Fatalf("%s: %d keys in force, want the last good one", name, w.kf.ring.Len())
		}
		// Logged once: the same bad file is not refused again and again.
		if got := w.look(false); got != nil {
			t.Fatalf("%s: the same refused file counted %v again", name, got)
		}
	}
	w.write("alice VIEWER " + kfAlice)
	w.look(false)
	if e := w.lastLog(); e.Message != "key file reloaded" {
		t.Fatalf("a file fixed again logged %s", e.Message)
	}
}

func TestKeyFileUnreadableKeepsTheLastGoodSet(t *testing.T) {
	w := newWatched(t, "", "", "alice VIEWER "+kfAlice)
	if err := os.Remove(w.path); err != nil {
		t.Fatal(err)
	}
	if got := w.look(false); len(got) != 1 || got[0] != reloadUnreadable {
		t.Fatalf("counted %v, want unreadable", got)
	}
	if e := w.lastLog(); e.Message != "key file unreadable; the last good keys stay" || !strings.Contains(logText(e.ContextMap()), "no such file") {
		t.Fatalf("logged %s %v", e.Message, e.ContextMap())
	}
	if got := w.look(false); got != nil {
		t.Fatalf("a file still missing counted %v again", got)
	}
	// A folder in its place cannot be read either.
	if err := os.Mkdir(w.path, 0o700); err != nil {
		t.Fatal(err)
	}
	old := time.Now().Add(-time.Minute)
	if err := os.Chtimes(w.path, old, old); err != nil {
		t.Fatal(err)
	}
	if got := w.look(false); len(got) != 1 || got[0] != reloadUnreadable {
		t.Fatalf("a folder counted %v, want unreadable", got)
	}
	if w.actor(kfAlice) != "key:alice" {
		t.Fatal("the last good key stopped working")
	}
	if err := os.Remove(w.path); err != nil {
		t.Fatal(err)
	}
	w.write("alice VIEWER " + kfAlice)
	if got := w.look(false); len(got) != 1 || got[0] != reloadUnchanged {
		t.Fatalf("the file back as it was counted %v, want unchanged", got)
	}
}

// An edit that keeps the size and the mtime (a coarse clock) is still seen
// while the mtime is close to the last read.
func TestKeyFileSameSizeEditWithinTheRacyWindow(t *testing.T) {
	w := newWatched(t, "", "", "alice VIEWER "+kfAlice)
	now := time.Now().Add(-5 * keyFileSettle) // settled, within keyFileRacy
	write := func(role string) {
		if err := os.WriteFile(w.path, []byte("alice "+role+" "+kfAlice+"\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Chtimes(w.path, now, now); err != nil {
			t.Fatal(err)
		}
	}
	write("VIEWER")
	w.look(false)
	write("ADMIN ") // same length as VIEWER, same mtime
	if got := w.look(false); len(got) != 1 || got[0] != reloadApplied {
		t.Fatalf("counted %v, want applied", got)
	}
}

// A poll leaves a file being written to the next one; SIGHUP reads it.
func TestKeyFileSettles(t *testing.T) {
	w := newWatched(t, "", "", "alice VIEWER "+kfAlice)
	if err := os.WriteFile(w.path, []byte("alice VIEWER "+kfAlice+"\nbob VIEWER "+kfBob+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	if err := os.Chtimes(w.path, now, now); err != nil {
		t.Fatal(err)
	}
	if got := w.look(false); got != nil {
		t.Fatalf("a file written just now counted %v", got)
	}
	if got := w.look(true); len(got) != 1 || got[0] != reloadApplied || w.actor(kfBob) != "key:bob" {
		t.Fatalf("SIGHUP counted %v", got)
	}
	// A file dated in the future (another clock) is not waited for.
	later := time.Now().Add(time.Hour)
	if err := os.WriteFile(w.path, []byte("bob VIEWER "+kfBob+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Chtimes(w.path, later, later); err != nil {
		t.Fatal(err)
	}
	if got := w.look(false); len(got) != 1 || got[0] != reloadApplied || w.actor(kfAlice) != "" {
		t.Fatalf("a file dated in the future counted %v", got)
	}
}

// SIGHUP re-reads at once, even when the file looks unchanged, and says so.
func TestKeyFileSIGHUP(t *testing.T) {
	guard := make(chan os.Signal, 1) // this process must outlive a SIGHUP sent before watch listens
	signal.Notify(guard, syscall.SIGHUP)
	defer signal.Stop(guard)
	w := newWatched(t, "", "", "alice VIEWER "+kfAlice)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); w.kf.watch(ctx, w.log, w.counted) }()
	defer func() { cancel(); <-done }()
	deadline := time.Now().Add(10 * time.Second)
	for w.logs.FilterField(zap.String("trigger", "SIGHUP")).Len() == 0 {
		if time.Now().After(deadline) {
			t.Fatal("SIGHUP was not heard")
		}
		if err := syscall.Kill(os.Getpid(), syscall.SIGHUP); err != nil {
			t.Fatal(err)
		}
		time.Sleep(20 * time.Millisecond)
	}
	if e := w.logs.FilterField(zap.String("trigger", "SIGHUP")).All()[0]; e.Message != "key file re-read: no change" {
		t.Fatalf("logged %s", e.Message)
	}
}

func sameStrings(v any, want ...string) bool {
	got, _ := v.([]any)
	if len(got) != len(want) {
		return false
	}
	for i := range got {
		if got[i] != want[i] {
			return false
		}
	}
	return true
}

// logText is a log entry's fields as text, to look for secrets in.
func logText(m map[string]any) string { return fmt.Sprint(m) }
