package archive_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/yukta/yukta/adapters/archive"
)

func TestWrite(t *testing.T) {
	root := filepath.Join(t.TempDir(), "exports")
	d, err := archive.New(root)
	if err != nil {
		t.Fatal(err)
	}
	id := "01a231ac-2b5a-7faf-8267-beeab2990b08"
	path, err := d.Write("nightly", id, [][]byte{[]byte(`{"a":1}`), []byte(`{"b":2}`)})
	if err != nil {
		t.Fatal(err)
	}
	if want := filepath.Join(root, "nightly", id+".ndjson"); path != want {
		t.Fatalf("path %s, want %s", path, want)
	}
	b, err := os.ReadFile(path)
	if err != nil || string(b) != "{\"a\":1}\n{\"b\":2}\n" {
		t.Fatalf("file %q, %v", b, err)
	}
	if fi, _ := os.Stat(path); fi.Mode().Perm() != 0o600 {
		t.Fatalf("mode %v, want 0600: journals name payloads", fi.Mode())
	}
	entries, _ := os.ReadDir(filepath.Join(root, "nightly"))
	if len(entries) != 1 {
		t.Fatalf("left behind: %v", entries)
	}
	for _, bad := range [][2]string{{"../x", id}, {"nightly", "../../etc/passwd"}, {"nightly", "01A231AC-2B5A-7FAF-8267-BEEAB2990B08"}} {
		if _, err := d.Write(bad[0], bad[1], nil); err == nil {
			t.Errorf("Write(%q, %q) accepted", bad[0], bad[1])
		}
	}
}

func TestNewRefusesAFolderItCannotWrite(t *testing.T) {
	if os.Geteuid() == 0 {
		// root writes anywhere; a file in the way fails for everyone.
		f := filepath.Join(t.TempDir(), "file")
		if err := os.WriteFile(f, nil, 0o600); err != nil {
			t.Fatal(err)
		}
		if _, err := archive.New(filepath.Join(f, "sub")); err == nil {
			t.Fatal("a folder under a file was accepted")
		}
		return
	}
	ro := t.TempDir()
	if err := os.Chmod(ro, 0o500); err != nil {
		t.Fatal(err)
	}
	if _, err := archive.New(ro); err == nil {
		t.Fatal("a read-only folder was accepted")
	}
}
