package e2e

import (
	"bytes"
	"context"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestEmbeddedClusterLifecycle is the README's `go run . serve` path: no
// database URL, so the server creates a PostgreSQL cluster in its data
// folder, stops it on SIGTERM, and reuses it (with the data) on the next start.
func TestEmbeddedClusterLifecycle(t *testing.T) {
	t.Parallel()
	root, err := os.MkdirTemp("", "yukta-e2e-data-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(root) })
	// As root the cluster runs as the postgres user, who must be able to enter the folder.
	if err := os.Chmod(root, 0o711); err != nil {
		t.Fatal(err)
	}
	dataDir := filepath.Join(root, "data")

	began := time.Now()
	s := startServer(t, serverOptions{DataDir: dataDir})
	if err := s.waitReady(15 * time.Second); err != nil {
		t.Fatalf("first start: %v", err)
	}
	t.Logf("first start (cluster created) to /readyz 200: %s", time.Since(began).Round(time.Millisecond))
	if _, err := os.Stat(filepath.Join(dataDir, "pgdata", "PG_VERSION")); err != nil {
		t.Fatalf("no cluster in the data folder: %v", err)
	}
	// The start says which folder and cluster it uses, and that it made
	// them (before: only "embedded PostgreSQL ready" with the folder).
	folderLine(t, s, "data folder created", `"data_dir":"`+dataDir+`"`, `"cluster":"`+filepath.Join(dataDir, "pgdata")+`"`)
	if strings.Contains(s.logs.String(), `"hint":`) {
		t.Errorf("a folder chosen with YUKTA_DATA_DIR is called the default")
	}
	res, err := s.Client.PutSessionWithBodyWithResponse(context.Background(), "kept", nil, jsonType, bytes.NewReader(session("kept", "w")))
	if err != nil || res.StatusCode() != http.StatusCreated {
		t.Fatalf("apply: %v %s", err, res.Body)
	}
	if err := s.Stop(); err != nil {
		t.Fatalf("SIGTERM: the server did not exit cleanly: %v", err)
	}
	if _, err := os.Stat(filepath.Join(dataDir, "pgdata", "postmaster.pid")); !os.IsNotExist(err) {
		t.Fatalf("postmaster.pid still present after the server stopped (err=%v): PostgreSQL was not shut down", err)
	}

	began = time.Now()
	// systemd's StateDirectory= names the same folder: it is the default
	// now, and the line says so.
	s2 := startServer(t, serverOptions{DataDir: dataDir, Env: []string{"STATE_DIRECTORY=" + dataDir}})
	if err := s2.waitReady(5 * time.Second); err != nil {
		t.Fatalf("second start: %v", err)
	}
	t.Logf("second start (cluster reused) to /readyz 200: %s", time.Since(began).Round(time.Millisecond))
	folderLine(t, s2, "data folder reused", `"data_dir":"`+dataDir+`"`, `"sessions":1`, `"supervisors":0`, `"cluster_created_at":"20`,
		`"hint":"the default folder for this user; --data-dir (YUKTA_DATA_DIR) picks another"`)
	got, err := s2.Client.GetSessionWithResponse(context.Background(), "kept")
	if err != nil || got.JSON200 == nil {
		t.Fatalf("data did not survive the restart: %v %s", err, got.Body)
	}
	if err := s2.Stop(); err != nil {
		t.Fatal(err)
	}
}

// folderLine finds the start's data folder line (msg) in the server's log
// and checks it carries each of fields.
func folderLine(t *testing.T, s *server, msg string, fields ...string) {
	t.Helper()
	for l := range strings.Lines(s.logs.String()) {
		if !strings.Contains(l, `"msg":"`+msg+`"`) {
			continue
		}
		for _, f := range fields {
			if !strings.Contains(l, f) {
				t.Fatalf("the %q line lacks %s:\n%s", msg, f, l)
			}
		}
		return
	}
	t.Fatalf("no %q line in the server's log", msg)
}
