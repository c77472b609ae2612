package localpg

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
)

// envBinDir lets operators pick a PostgreSQL build explicitly, e.g. when several
// majors are installed or the binaries live outside the usual Debian layout.
const envBinDir = "YUKTA_PG_BIN"

// debianBinGlob is where Debian/Ubuntu packages put the server binaries; they are
// deliberately not on PATH there, so we have to look for them.
const debianBinGlob = "/usr/lib/postgresql/*/bin"

// ErrBinariesNotFound is returned (wrapped) when no PostgreSQL server binaries can be
// found. Callers test for it with errors.Is to tell "PostgreSQL is not installed"
// apart from a server that failed to start; the message spells out every way out,
// because it is usually the first thing a new user sees.
var ErrBinariesNotFound = errors.New("PostgreSQL server binaries (initdb, postgres) not found: " +
	"install them (Debian/Ubuntu: `apt-get install postgresql`), " +
	"or set YUKTA_PG_BIN to the directory that holds initdb and postgres, " +
	"or set YUKTA_DATABASE_URL to use an existing PostgreSQL server instead")

// FindBinDir locates a directory holding `initdb` and `postgres`. The search order
// goes from the most explicit choice to the most implicit one: $YUKTA_PG_BIN (an
// error if it lacks the binaries, so a typo is not silently ignored), then
// `pg_config --bindir`, then the directory of `initdb` on PATH, then the newest
// /usr/lib/postgresql/*/bin.
func FindBinDir() (string, error) {
	if dir := os.Getenv(envBinDir); dir != "" {
		if !hasServerBinaries(dir) {
			return "", fmt.Errorf("localpg: %s=%q does not contain executable initdb and postgres: %w",
				envBinDir, dir, ErrBinariesNotFound)
		}
		return filepath.Abs(dir)
	}
	if pgConfig, err := exec.LookPath("pg_config"); err == nil {
		// pg_config may belong to a client-only install; only trust it if the
		// server binaries are really there.
		if out, err := exec.Command(pgConfig, "--bindir").Output(); err == nil {
			if dir := strings.TrimSpace(string(out)); dir != "" && hasServerBinaries(dir) {
				return filepath.Abs(dir)
			}
		}
	}
	if initdb, err := exec.LookPath("initdb"); err == nil {
		// Prefer the real location behind a symlink (e.g. /usr/local/bin/initdb ->
		// /usr/lib/postgresql/15/bin/initdb) so the reported directory is the
		// installation itself rather than a farm of links.
		if real, err := filepath.EvalSymlinks(initdb); err == nil && hasServerBinaries(filepath.Dir(real)) {
			return filepath.Dir(real), nil
		}
		if dir := filepath.Dir(initdb); hasServerBinaries(dir) {
			return filepath.Abs(dir)
		}
	}
	if dir := newestDebianBinDir(); dir != "" {
		return dir, nil
	}
	return "", fmt.Errorf("localpg: looked at $%s, `pg_config --bindir`, initdb on PATH and %s: %w",
		envBinDir, debianBinGlob, ErrBinariesNotFound)
}

func hasServerBinaries(dir string) bool {
	return isExecutable(filepath.Join(dir, "initdb")) && isExecutable(filepath.Join(dir, "postgres"))
}

func isExecutable(path string) bool {
	fi, err := os.Stat(path)
	return err == nil && fi.Mode().IsRegular() && fi.Mode().Perm()&0o111 != 0
}

// newestDebianBinDir sorts by numeric version so that 10 beats 9.6 and 16 beats 15,
// which a plain string sort gets wrong.
func newestDebianBinDir() string {
	dirs, _ := filepath.Glob(debianBinGlob)
	sort.Slice(dirs, func(i, j int) bool {
		return versionLess(filepath.Base(filepath.Dir(dirs[j])), filepath.Base(filepath.Dir(dirs[i])))
	})
	for _, d := range dirs {
		if hasServerBinaries(d) {
			return d
		}
	}
	return ""
}

// versionLess compares dotted numeric versions; non-numeric parts sort as 0 so a
// stray directory cannot win over a real version.
func versionLess(a, b string) bool {
	pa, pb := strings.Split(a, "."), strings.Split(b, ".")
	for i := 0; i < len(pa) || i < len(pb); i++ {
		var x, y int
		if i < len(pa) {
			x, _ = strconv.Atoi(pa[i])
		}
		if i < len(pb) {
			y, _ = strconv.Atoi(pb[i])
		}
		if x != y {
			return x < y
		}
	}
	return false
}

var versionRE = regexp.MustCompile(`\(PostgreSQL\) (\d+)(?:\.(\d+))?`)

// serverMajor returns the major version in the same spelling PostgreSQL writes into
// PG_VERSION ("15", or "9.6" before version 10), so the two compare as strings.
func serverMajor(ctx context.Context, binDir string) (string, error) {
	cmd := exec.CommandContext(ctx, filepath.Join(binDir, "postgres"), "--version")
	cmd.Env = []string{"PATH=/usr/bin:/bin", "LC_ALL=C"}
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("localpg: running %s --version: %w", cmd.Path, err)
	}
	m := versionRE.FindStringSubmatch(string(out))
	if m == nil {
		return "", fmt.Errorf("localpg: cannot parse version from %s --version: %q", cmd.Path, strings.TrimSpace(string(out)))
	}
	if major, _ := strconv.Atoi(m[1]); major < 10 && m[2] != "" {
		return m[1] + "." + m[2], nil
	}
	return m[1], nil
}
