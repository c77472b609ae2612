package npmci

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func write(t *testing.T, path, body string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestPinned(t *testing.T) {
	dir := t.TempDir()
	write(t, filepath.Join(dir, "package.json"), `{"dependencies":{"a":"1.2.3"},"devDependencies":{"@s/b":"0.1.0"}}`)
	if err := Pinned(dir); err == nil || !strings.Contains(err.Error(), `has @s/b ""`) {
		t.Fatalf("nothing installed: %v", err)
	}
	write(t, filepath.Join(dir, "node_modules", "a", "package.json"), `{"version":"1.2.3"}`)
	write(t, filepath.Join(dir, "node_modules", "@s", "b", "package.json"), `{"version":"0.1.1"}`)
	if err := Pinned(dir); err == nil || !strings.Contains(err.Error(), `@s/b "0.1.1", want "0.1.0"`) {
		t.Fatalf("another version installed: %v", err)
	}
	write(t, filepath.Join(dir, "node_modules", "@s", "b", "package.json"), `{"version":"0.1.0"}`)
	if err := Pinned(dir); err != nil {
		t.Fatalf("installed as pinned: %v", err)
	}
	write(t, filepath.Join(dir, "package.json"), `{"dependencies":{"a":"^1.2.3"}}`)
	if err := Pinned(dir); err == nil || !strings.Contains(err.Error(), "one exact version") {
		t.Fatalf("a range: %v", err)
	}
}
