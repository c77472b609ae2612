package bootstrap

import (
	"crypto/ed25519"
	"encoding/base64"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"go.uber.org/zap"
)

// TestJournalKeyKeptInTheDataFolder: the first start makes a key (0600),
// later starts read the same one; the environment wins when set; a bad
// value is refused with how to make a good one.
func TestJournalKeyKeptInTheDataFolder(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "data")
	k1, err := loadJournalKey("", dir, zap.NewNop())
	if err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(filepath.Join(dir, journalKeyFile))
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != 0o600 {
		t.Fatalf("key file mode %v, want 0600", fi.Mode().Perm())
	}
	k2, err := loadJournalKey("", dir, zap.NewNop())
	if err != nil {
		t.Fatal(err)
	}
	if !ed25519.PrivateKey(k1).Equal(ed25519.PrivateKey(k2)) {
		t.Fatal("a second start made another key")
	}
	seed := make([]byte, ed25519.SeedSize)
	seed[0] = 7
	k3, err := loadJournalKey(base64.StdEncoding.EncodeToString(seed), dir, zap.NewNop())
	if err != nil {
		t.Fatal(err)
	}
	if !ed25519.PrivateKey(k3).Equal(ed25519.NewKeyFromSeed(seed)) {
		t.Fatal("the environment's key was not used")
	}
	if _, err := loadJournalKey("not a key", dir, zap.NewNop()); err == nil || !strings.Contains(err.Error(), JournalKeyEnv) {
		t.Fatalf("bad key: %v", err)
	}
}
