package localpg

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/user"
	"path/filepath"
	"strconv"
	"syscall"
)

// osUser is the account the server runs as when we are root. initdb and postgres
// refuse to run as root, so we drop to this account for every child process.
type osUser struct {
	name     string
	uid, gid int
}

// serverUser returns nil when we are not root: then the server simply runs as us
// and no ownership juggling is needed.
func serverUser() (*osUser, error) {
	if os.Geteuid() != 0 {
		return nil, nil
	}
	var errs []error
	for _, name := range []string{"postgres", "nobody"} {
		u, err := user.Lookup(name)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		uid, err1 := strconv.Atoi(u.Uid)
		gid, err2 := strconv.Atoi(u.Gid)
		if err1 != nil || err2 != nil {
			errs = append(errs, fmt.Errorf("user %s has non-numeric uid/gid %q/%q", name, u.Uid, u.Gid))
			continue
		}
		return &osUser{name: name, uid: uid, gid: gid}, nil
	}
	return nil, fmt.Errorf("localpg: running as root, but neither a postgres nor a nobody OS user exists to run the server as: %w",
		errors.Join(errs...))
}

func (u *osUser) credential() *syscall.Credential {
	if u == nil {
		return nil
	}
	// An empty (non-nil) Groups drops root's supplementary groups; nil would keep them.
	return &syscall.Credential{Uid: uint32(u.uid), Gid: uint32(u.gid), Groups: []uint32{}}
}

func (u *osUser) chown(path string) error {
	if u == nil {
		return nil
	}
	if err := os.Chown(path, u.uid, u.gid); err != nil {
		return fmt.Errorf("localpg: giving %s to OS user %s: %w", path, u.name, err)
	}
	return nil
}

// checkTraversable catches the most common root-only failure up front: the server
// user cannot reach a data dir under e.g. /root (mode 0700). postgres would report
// that much later and far less clearly ("could not change directory ... Permission
// denied"), so we name the blocking directory ourselves. Symlinks are resolved first
// because the kernel checks the directories along the real path. It checks parent
// and everything above it (dir itself is ours to create and chown), and runs before
// dir is created so a refused Start leaves nothing behind.
func checkTraversable(dir string, u *osUser) error {
	if u == nil {
		return nil
	}
	real, err := filepath.EvalSymlinks(filepath.Dir(dir))
	if err != nil {
		return fmt.Errorf("localpg: resolving %s: %w", filepath.Dir(dir), err)
	}
	for p := real; ; p = filepath.Dir(p) {
		fi, err := os.Stat(p)
		if err != nil {
			return fmt.Errorf("localpg: checking access to %s: %w", p, err)
		}
		if !canTraverse(fi, u) {
			return fmt.Errorf("localpg: the %s OS user (uid %d), which runs PostgreSQL because we are root, "+
				"cannot enter %s (mode %v, owner uid %d) on the way to data dir %s; "+
				"use a data dir under a world-traversable path such as /var/lib/yukta (or run chmod o+x %s)",
				u.name, u.uid, p, fi.Mode().Perm(), ownerUID(fi), dir, p)
		}
		if p == filepath.Dir(p) {
			return nil
		}
	}
}

// canTraverse applies the POSIX rule: only the first matching class (owner, group,
// other) counts, so an owner without x is blocked even if "other" has x. ACLs are
// ignored; they are rare on data dirs and a false alarm here would name the exact
// directory to fix anyway.
func canTraverse(fi fs.FileInfo, u *osUser) bool {
	perm := fi.Mode().Perm()
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return perm&0o001 != 0
	}
	switch {
	case int(st.Uid) == u.uid:
		return perm&0o100 != 0
	case int(st.Gid) == u.gid:
		return perm&0o010 != 0
	default:
		return perm&0o001 != 0
	}
}

func ownerUID(fi fs.FileInfo) int {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		return int(st.Uid)
	}
	return -1
}
