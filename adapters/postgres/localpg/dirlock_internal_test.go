package localpg

import (
	"os"
	"path/filepath"
	"testing"
	"time"
)

// A loser that finds the lock taken but the holder's PID not yet written
// (it lost by a hair) waits for the PID instead of naming no holder
// (TestFirstStartRace once saw "another yukta" without its pid).
func TestHolderPIDWaitsForTheHolderToWriteIt(t *testing.T) {
	path := filepath.Join(t.TempDir(), lockFileName)
	if err := os.WriteFile(path, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		time.Sleep(50 * time.Millisecond)
		_ = os.WriteFile(path, []byte("4242\n"), 0o600)
	}()
	if pid := holderPID(path, holderPIDWait); pid != 4242 {
		t.Fatalf("holderPID = %d, want 4242", pid)
	}
	<-done
	// A holder that never writes one: 0 after the wait, not a hang.
	empty := filepath.Join(t.TempDir(), lockFileName)
	if err := os.WriteFile(empty, []byte("not a pid"), 0o600); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	if pid := holderPID(empty, 100*time.Millisecond); pid != 0 {
		t.Fatalf("holderPID of a file without a pid = %d, want 0", pid)
	}
	if waited := time.Since(start); waited > 5*time.Second {
		t.Fatalf("holderPID waited %v past its bound", waited)
	}
}
