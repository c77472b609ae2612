package bootstrap

import (
	"strings"
	"testing"
)

// TestDefaultDataDir: the default never depends on the working directory.
func TestDefaultDataDir(t *testing.T) {
	noHome := func() string { return "" }
	passwd := func() string { return "/home/from-passwd" }
	for _, c := range []struct {
		name string
		env  map[string]string
		euid int
		home func() string
		want string
	}{
		{"systemd StateDirectory", map[string]string{"STATE_DIRECTORY": "/var/lib/yukta", "HOME": "/home/u"}, 1000, noHome, "/var/lib/yukta"},
		{"systemd, several state dirs: the first", map[string]string{"STATE_DIRECTORY": "/var/lib/yukta:/var/lib/other"}, 0, noHome, "/var/lib/yukta"},
		{"systemd with DynamicUser as root", map[string]string{"STATE_DIRECTORY": "/var/lib/private/yukta"}, 0, noHome, "/var/lib/private/yukta"},
		{"root: the system folder, not /root", map[string]string{"HOME": "/root", "XDG_DATA_HOME": "/root/.local/share"}, 0, noHome, "/var/lib/yukta"},
		{"XDG_DATA_HOME", map[string]string{"XDG_DATA_HOME": "/data/u", "HOME": "/home/u"}, 1000, noHome, "/data/u/yukta"},
		{"relative XDG_DATA_HOME is ignored", map[string]string{"XDG_DATA_HOME": "rel", "HOME": "/home/u"}, 1000, noHome, "/home/u/.local/share/yukta"},
		{"HOME", map[string]string{"HOME": "/home/u"}, 1000, noHome, "/home/u/.local/share/yukta"},
		{"no HOME: the user database", nil, 1000, passwd, "/home/from-passwd/.local/share/yukta"},
		{"nothing known", nil, 1000, noHome, ""},
		{"relative STATE_DIRECTORY is ignored", map[string]string{"STATE_DIRECTORY": "yukta", "HOME": "/home/u"}, 1000, noHome, "/home/u/.local/share/yukta"},
	} {
		if got := defaultDataDir(func(k string) string { return c.env[k] }, c.euid, c.home); got != c.want {
			t.Errorf("%s: %q, want %q", c.name, got, c.want)
		}
	}
}

// TestDataDirDefaultReachesConfig: the environment picks the default, a
// variable and a flag still win, and no default at all asks for --data-dir.
func TestDataDirDefaultReachesConfig(t *testing.T) {
	c, err := parse(t, nil, map[string]string{"STATE_DIRECTORY": "/var/lib/yukta-unit"})
	if err != nil || c.DataDir != "/var/lib/yukta-unit" {
		t.Fatalf("STATE_DIRECTORY: %q %v", c.DataDir, err)
	}
	c, err = parse(t, nil, map[string]string{"STATE_DIRECTORY": "/var/lib/yukta-unit", "YUKTA_DATA_DIR": "/srv/y"})
	if err != nil || c.DataDir != "/srv/y" {
		t.Fatalf("YUKTA_DATA_DIR should beat the default: %q %v", c.DataDir, err)
	}
	c, err = parse(t, []string{"--data-dir", "/srv/z"}, map[string]string{"YUKTA_DATA_DIR": "/srv/y"})
	if err != nil || c.DataDir != "/srv/z" {
		t.Fatalf("--data-dir should beat YUKTA_DATA_DIR: %q %v", c.DataDir, err)
	}
	_, err = parse(t, []string{"--data-dir", ""}, nil)
	if err == nil || !strings.Contains(err.Error(), "YUKTA_DATA_DIR") || !strings.Contains(err.Error(), "/var/lib/yukta") {
		t.Fatalf("empty --data-dir: %v", err)
	}
	if c, err = parse(t, []string{"--data-dir", ""}, map[string]string{"YUKTA_DATABASE_URL": "postgres://db/yukta"}); err != nil {
		t.Fatalf("no data folder is needed with a database URL: %v", err)
	}
}
