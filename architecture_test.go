package main

import (
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

const module = "github.com/yukta/yukta"

// layerRule says what the non-test files of one layer may import.
type layerRule struct {
	prefix     string   // folder, relative to the module root
	ownPrefix  []string // module-internal import prefixes allowed
	thirdParty bool     // may import modules outside the standard library
}

var layers = []layerRule{
	{prefix: "domain/", ownPrefix: []string{"domain/"}},
	{prefix: "application/", ownPrefix: []string{"domain/", "application/"}},
	{prefix: "adapters/", ownPrefix: []string{"domain/", "application/", "adapters/", "migrations", "api"}, thirdParty: true},
	// server/ is the public extension API (docs/extending.md): aliases of
	// the node type contract and options over bootstrap's entry point. It
	// stays standard library only, so a custom server's main pulls in no
	// dependency the yukta binary does not have, and never imports fx.
	{prefix: "server/", ownPrefix: []string{"domain/", "application/", "adapters/plugins", "bootstrap"}},
	// The worker library is public API a user's program imports: it stands
	// on the generated client alone, never on the server's own packages.
	{prefix: "worker/", ownPrefix: []string{"api/apiclient"}, thirdParty: true},
}

// applicationOrder is the declared order of the application packages, top
// first, one level per line: a package may import only the packages of the
// levels below its own, so the order is also the proof that there is no
// cycle. The packages of one level are peers and may not import each other:
// the supervisor engines each stand on supervisorapp (the runtime's
// contract and the use cases they call) and never on one another;
// supervisorapp, the runtime included, never imports an engine (bootstrap
// hands the runtime their factories). A new application package must be
// placed here before it can be imported by another.
var applicationOrder = [][]string{
	{"application/engines/httpengine", "application/engines/processengine", "application/engines/rulesengine", "application/engines/workflowengine"},
	{"application/supervisorapp"},
	{"application/retentionapp"},
	{"application/journalapp"},
	{"application/executionapp"},
	{"application/pluginapp"},
	{"application/sessionapp", "application/accessapp"},
}

// applicationPlace is where dir's package sits in applicationOrder: its
// level and the declared package it is (or lies under); level -1 when it
// is not declared.
func applicationPlace(dir string) (level int, pkg string) {
	dir = strings.TrimSuffix(dir, "/")
	for i, l := range applicationOrder {
		for _, p := range l {
			if dir == p || strings.HasPrefix(dir, p+"/") {
				return i, p
			}
		}
	}
	return -1, ""
}

// below lists the packages of the levels under level, for a message.
func below(level int) string {
	var out []string
	for _, l := range applicationOrder[level+1:] {
		out = append(out, l...)
	}
	return strings.Join(out, ", ")
}

// orderViolation checks an import between two application packages
// against applicationOrder.
func orderViolation(dir, own string) string {
	if !strings.HasPrefix(dir, "application/") || !strings.HasPrefix(own, "application/") {
		return ""
	}
	from, fromPkg := applicationPlace(dir)
	to, toPkg := applicationPlace(own)
	me := strings.TrimSuffix(dir, "/")
	switch {
	case from < 0:
		return me + " is not in applicationOrder (architecture_test.go); declare where it sits"
	case to < 0:
		return own + " is not in applicationOrder (architecture_test.go); declare where it sits"
	case fromPkg == toPkg:
		return "" // a package and its own subpackages
	case from == to:
		return me + " may not import its peer " + own + " (one level of applicationOrder); declare an order between them first"
	case to < from:
		return me + " may import only the application packages below it (" + below(from) + "), not " + own
	}
	return ""
}

var bannedPackageNames = map[string]bool{"util": true, "utils": true, "common": true, "helpers": true, "shared": true, "misc": true}

// violation checks one import of one file and returns why it is not allowed.
func violation(file, imp string, isTest bool) string {
	dir := filepath.ToSlash(filepath.Dir(file)) + "/"
	if (imp == "go.uber.org/fx" || strings.HasPrefix(imp, "go.uber.org/fx/")) && !strings.HasPrefix(dir, "bootstrap/") {
		return "only bootstrap/ may import fx"
	}
	if isTest {
		return ""
	}
	for _, l := range layers {
		if !strings.HasPrefix(dir, l.prefix) {
			continue
		}
		if own, ok := strings.CutPrefix(imp, module+"/"); ok {
			for _, p := range l.ownPrefix {
				if strings.HasPrefix(own, p) || own == strings.TrimSuffix(p, "/") {
					return orderViolation(dir, own)
				}
			}
			return l.prefix + " may not import " + own
		}
		first, _, _ := strings.Cut(imp, "/")
		if strings.Contains(first, ".") && !l.thirdParty {
			return l.prefix + " may import only the standard library and " + strings.Join(l.ownPrefix, ", ") + ", not " + imp
		}
	}
	return ""
}

func TestLayerRules(t *testing.T) {
	fset := token.NewFileSet()
	files := 0
	err := filepath.WalkDir(".", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			// node_modules holds the TypeScript MCP client's npm packages:
			// not Yukta's code, and no Go in it.
			if strings.HasPrefix(d.Name(), ".") && path != "." || d.Name() == "testdata" || d.Name() == "node_modules" {
				return filepath.SkipDir
			}
			if bannedPackageNames[d.Name()] {
				t.Errorf("%s: no grab-bag packages (util/common/helpers); name the package for its one job", path)
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, parser.ImportsOnly)
		if err != nil {
			return err
		}
		files++
		for _, is := range f.Imports {
			imp, _ := strconv.Unquote(is.Path.Value)
			if why := violation(path, imp, strings.HasSuffix(path, "_test.go")); why != "" {
				t.Errorf("%s imports %s: %s", path, imp, why)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if files < 20 {
		t.Fatalf("checked only %d files; the walk is broken", files)
	}
}

// TestLayerRulesCatchViolations proves the checker itself bites.
func TestLayerRulesCatchViolations(t *testing.T) {
	cases := []struct {
		file, imp string
		test      bool
		bad       bool
	}{
		{"domain/session/x.go", "fmt", false, false},
		{"domain/session/x.go", module + "/domain/fault", false, false},
		{"domain/session/x.go", module + "/application/sessionapp", false, true},
		{"domain/session/x.go", "github.com/jackc/pgx/v5", false, true},
		{"application/sessionapp/x.go", module + "/domain/session", false, false},
		{"application/sessionapp/x.go", module + "/adapters/postgres", false, true},
		{"application/sessionapp/x.go", "go.uber.org/zap", false, true},
		{"application/supervisorapp/x.go", module + "/application/executionapp", false, false},
		{"application/executionapp/x.go", module + "/application/sessionapp", false, false},
		{"application/executionapp/x.go", module + "/application/supervisorapp", false, true},
		{"application/sessionapp/x.go", module + "/application/executionapp", false, true},
		{"application/newapp/x.go", module + "/application/sessionapp", false, true},
		{"application/supervisorapp/x.go", module + "/application/newapp", false, true},
		{"application/supervisorapp/x.go", module + "/application/supervisorapp/engines", false, false},
		// The engines stand on supervisorapp; it never imports them, and
		// they never import each other.
		{"application/engines/rulesengine/x.go", module + "/application/supervisorapp", false, false},
		{"application/engines/workflowengine/x.go", module + "/application/executionapp", false, false},
		{"application/supervisorapp/x.go", module + "/application/engines/rulesengine", false, true},
		{"application/executionapp/x.go", module + "/application/engines/processengine", false, true},
		{"application/engines/workflowengine/x.go", module + "/application/engines/rulesengine", false, true},
		{"application/engines/httpengine/x.go", module + "/application/engines/processengine", false, true},
		{"application/engines/newengine/x.go", module + "/application/supervisorapp", false, true},
		{"application/engines/rulesengine/x_test.go", module + "/application/engines/processengine", true, false},
		{"adapters/postgres/x.go", "github.com/jackc/pgx/v5", false, false},
		{"adapters/postgres/x.go", module + "/bootstrap", false, true},
		{"adapters/httpapi/x.go", "go.uber.org/fx", false, true},
		{"adapters/httpapi/x_test.go", "go.uber.org/fx", true, true},
		{"e2e/x_test.go", "go.uber.org/fx", true, true},
		{"bootstrap/x.go", "go.uber.org/fx", false, false},
		{"server/x.go", module + "/bootstrap", false, false},
		{"server/x.go", module + "/application/executionapp", false, false},
		{"server/x.go", module + "/adapters/postgres", false, true},
		{"server/x.go", "go.uber.org/fx", false, true},
		{"server/x.go", "go.uber.org/zap", false, true},
		{"adapters/plugins/x.go", module + "/server", false, true},
		{"worker/x.go", module + "/api/apiclient", false, false},
		{"worker/x.go", module + "/application/executionapp", false, true},
		{"worker/x.go", module + "/domain/fault", false, true},
	}
	for _, c := range cases {
		got := violation(c.file, c.imp, c.test) != ""
		if got != c.bad {
			t.Errorf("violation(%s, %s) = %v, want %v", c.file, c.imp, got, c.bad)
		}
	}
}
