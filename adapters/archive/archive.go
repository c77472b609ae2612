// Package archive writes the journals the retention sweeper exports before
// it deletes a run: one NDJSON file per run, <dir>/<session>/<execution>.ndjson,
// in the format of the journal export, so `yukta journal verify` checks it
// offline.
package archive

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/yukta/yukta/domain/execution"
	"github.com/yukta/yukta/domain/session"
)

// Dir is an export folder.
type Dir struct{ root string }

// New makes sure root exists and can be written (a folder the server cannot
// write to must fail the start, not every deletion later).
func New(root string) (*Dir, error) {
	if err := os.MkdirAll(root, 0o700); err != nil {
		return nil, fmt.Errorf("retention export folder %s: %w", root, err)
	}
	f, err := os.CreateTemp(root, ".probe-*")
	if err != nil {
		return nil, fmt.Errorf("retention export folder %s cannot be written: %w", root, err)
	}
	name := f.Name()
	f.Close()
	os.Remove(name)
	return &Dir{root: root}, nil
}

// Write stores the lines durably: a temporary file, synced, renamed into
// place, and the folder synced, so a crash leaves the old file or the whole
// new one. Ids are checked first: they become path elements, and an
// execution id only in the lower case the database writes, so that one run
// never has two files.
func (d *Dir) Write(sessionID, executionID string, lines [][]byte) (string, error) {
	if !session.ValidID(sessionID) || !execution.ValidID(executionID) || strings.ToLower(executionID) != executionID {
		return "", fmt.Errorf("archive: refusing ids %q/%q as file names", sessionID, executionID)
	}
	dir := filepath.Join(d.root, sessionID)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", err
	}
	final := filepath.Join(dir, executionID+".ndjson")
	f, err := os.CreateTemp(dir, "."+executionID+"-*")
	if err != nil {
		return "", err
	}
	tmp := f.Name()
	defer os.Remove(tmp) // a no-op once renamed
	for _, l := range lines {
		if _, err := f.Write(append(l, '\n')); err != nil {
			f.Close()
			return "", err
		}
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return "", err
	}
	if err := f.Close(); err != nil {
		return "", err
	}
	if err := os.Chmod(tmp, 0o600); err != nil {
		return "", err
	}
	if err := os.Rename(tmp, final); err != nil {
		return "", err
	}
	if df, err := os.Open(dir); err == nil {
		err = df.Sync()
		df.Close()
		if err != nil {
			return "", err
		}
	}
	return final, nil
}
