package bootstrap

import (
	"os"
	"os/user"
	"path/filepath"
	"strings"
)

// systemDataDir is the data folder of a server run as root. A folder under
// root's home would not do: the embedded PostgreSQL runs as the postgres OS
// user, who cannot enter /root.
const systemDataDir = "/var/lib/yukta"

// defaultDataDir is --data-dir's default, the same whatever the working
// directory: the folder systemd made for the unit (StateDirectory=), else
// /var/lib/yukta for root, else $XDG_DATA_HOME/yukta, else
// ~/.local/share/yukta (the XDG default). home is consulted when HOME is
// unset (a service manager may leave it out); "" when nothing applies, and
// the caller then asks for --data-dir.
func defaultDataDir(getenv func(string) string, euid int, home func() string) string {
	// systemd sets STATE_DIRECTORY to the absolute paths of StateDirectory=,
	// separated by colons; the unit names one.
	if dirs := getenv("STATE_DIRECTORY"); dirs != "" {
		if first, _, _ := strings.Cut(dirs, ":"); filepath.IsAbs(first) {
			return first
		}
	}
	if euid == 0 {
		return systemDataDir
	}
	// The XDG spec says a relative XDG_DATA_HOME is invalid and to be ignored.
	if xdg := getenv("XDG_DATA_HOME"); filepath.IsAbs(xdg) {
		return filepath.Join(xdg, "yukta")
	}
	h := getenv("HOME")
	if h == "" {
		h = home()
	}
	if h == "" {
		return ""
	}
	return filepath.Join(h, ".local", "share", "yukta")
}

// passwdHome is the current user's home directory from the user database,
// for when HOME is unset.
func passwdHome() string {
	u, err := user.Current()
	if err != nil {
		return ""
	}
	return u.HomeDir
}

// defaultDataDirOf is defaultDataDir for this process.
func defaultDataDirOf(getenv func(string) string) string {
	return defaultDataDir(getenv, os.Geteuid(), passwdHome)
}
