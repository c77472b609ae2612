package bootstrap

import (
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// referenceProperty finds a yukta.* property in the engines reference's
// text; a match after "//" is the documentation's host, not a property.
var referenceProperty = regexp.MustCompile(`(^|[^/])(yukta\.[a-z0-9.*-]*[a-z0-9*])`)

// seedsDir returns the folder of the engines reference's seeds when this
// machine has it ($YUKTA_SEEDS_DIR, or shared/seeds beside the
// repository or its worktree folder), else "".
func seedsDir() string {
	if d := os.Getenv("YUKTA_SEEDS_DIR"); d != "" {
		return d
	}
	for _, d := range []string{"../../shared/seeds", "../../../shared/seeds"} {
		if m, _ := filepath.Glob(filepath.Join(d, "000_*")); len(m) > 0 {
			return d
		}
	}
	return ""
}

// knownFlags is every flag yukta serve takes.
func knownFlags() map[string]bool {
	known := map[string]bool{}
	v := reflect.ValueOf(settings)
	for i := range v.NumField() {
		known["--"+v.Field(i).FieldByName("flag").String()] = true
	}
	return known
}

// TestConfigurationDocMapsTheReferenceProperties: docs/configuration.md
// maps every yukta.* property the engines reference names (the list in
// testdata, which must be what the seeds name when they are here) to a
// flag and a variable yukta serve really reads, or says plainly that it
// does not exist.
func TestConfigurationDocMapsTheReferenceProperties(t *testing.T) {
	b, err := os.ReadFile("testdata/reference-properties.txt")
	if err != nil {
		t.Fatal(err)
	}
	var want []string
	for _, line := range strings.Split(string(b), "\n") {
		if line = strings.TrimSpace(line); line != "" && !strings.HasPrefix(line, "#") {
			want = append(want, line)
		}
	}
	if dir := seedsDir(); dir != "" {
		files, _ := filepath.Glob(filepath.Join(dir, "00[0-3]_*.txt"))
		var named []string
		for _, f := range files {
			text, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			for _, m := range referenceProperty.FindAllStringSubmatch(string(text), -1) {
				p := m[2]
				if strings.HasSuffix(p, ".") {
					p += "*"
				}
				if !slices.Contains(named, p) {
					named = append(named, p)
				}
			}
		}
		slices.Sort(named)
		if len(files) == 0 || !slices.Equal(named, want) {
			t.Errorf("the seeds in %s (%d files) name %q; testdata/reference-properties.txt lists %q: update the list and docs/configuration.md",
				dir, len(files), named, want)
		}
	} else {
		t.Logf("the engines reference's seeds are not on this machine (set YUKTA_SEEDS_DIR); checking testdata/reference-properties.txt only")
	}

	doc, err := os.ReadFile("../docs/configuration.md")
	if err != nil {
		t.Fatal(err)
	}
	_, section, ok := strings.Cut(string(doc), "### Properties of the engines reference (`yukta.*`)")
	if !ok {
		t.Fatal("docs/configuration.md has no section \"Properties of the engines reference (`yukta.*`)\"")
	}
	section, _, _ = strings.Cut(section, "\n#")
	flags, env := knownFlags(), knownEnv()
	mapped := map[string]bool{}
	for _, line := range strings.Split(section, "\n") {
		if !strings.HasPrefix(line, "| `yukta.") {
			continue
		}
		cells := strings.Split(strings.Trim(line, "|"), "|")
		if len(cells) != 4 {
			t.Errorf("row %q: want 4 cells (property, flag, variable, what it is)", line)
			continue
		}
		for i := range cells {
			cells[i] = strings.Trim(strings.TrimSpace(cells[i]), "`")
		}
		prop, flag, variable, what := cells[0], cells[1], cells[2], cells[3]
		mapped[prop] = true
		switch {
		case flag == "—" && variable == "—":
			if !strings.HasPrefix(what, "does not exist") {
				t.Errorf("%s has no flag and no variable; the row must say plainly that it does not exist, and why", prop)
			}
		case variable == "—":
			t.Errorf("%s: a flag without a variable (%s); every flag has one", prop, flag)
		default:
			if !env[variable] {
				t.Errorf("%s maps to %s, which yukta serve does not read", prop, variable)
			}
			if flag != "—" && !flags[flag] {
				t.Errorf("%s maps to %s, which is not a flag of yukta serve", prop, flag)
			}
		}
	}
	for _, p := range want {
		if !mapped[p] {
			t.Errorf("docs/configuration.md does not map %s, which the engines reference names", p)
		}
	}
}
