package cli

import (
	"regexp"
	"strings"
)

// The server words its hints for every door: a REST route, often with the
// MCP tool beside it ("call GET /api/plugins (MCP: list_plugins) for the
// available types"). A person at the CLI needs the yukta command instead,
// so the client rewrites the routes it has a command for; any other route
// stays as the server wrote it.

// routeHint matches one route in a server's text, with the door notes
// that may follow it: "GET /api/sessions/ci (MCP: get_session_details)".
var routeHint = regexp.MustCompile(`\b(GET|POST|PUT|DELETE) (/api/[^\s),;]*[^\s),;.])( \((?:MCP|CLI): [^)]*\))?`)

// cliRoutes maps a method and route (its segments; "*" matches any one,
// {name} included) to the yukta command that does the same; $1, $2 … are
// the segments "*" matched, in order, with {placeholders} in capitals.
var cliRoutes = []struct {
	method, route, command string
}{
	{"GET", "/api/sessions", "yukta sessions list"},
	{"GET", "/api/sessions/*", "yukta sessions show $1"},
	{"GET", "/api/sessions/*/executions", "yukta runs list $1"},
	{"GET", "/api/sessions/*/executions/*", "yukta status $1 $2"},
	{"GET", "/api/sessions/*/workflows/*", "yukta workflows show $1/$2"},
	{"POST", "/api/sessions/*/workflows/*/executions", "yukta run $1/$2"},
	{"POST", "/api/sessions/*/workflows/*/stop", "yukta stop-all $1 $2"},
	{"PUT", "/api/sessions/*", "yukta apply FILE --id $1"},
	{"DELETE", "/api/sessions/*", "yukta sessions delete $1"},
	{"GET", "/api/plugins", "yukta plugins list"},
	{"GET", "/api/plugins/*", "yukta plugins show $1"},
	{"GET", "/api/inputs", "yukta inputs"},
	{"POST", "/api/inputs/*", "yukta answer $1 JSON"},
	{"GET", "/api/supervisors", "yukta supervisors list"},
	{"GET", "/api/supervisors/*", "yukta supervisors show $1"},
	{"PUT", "/api/supervisors/*", "yukta supervisors apply FILE --id $1"},
	{"DELETE", "/api/supervisors/*", "yukta supervisors delete $1"},
	{"POST", "/api/supervisors/*/credential", "yukta supervisors credential create $1"},
	{"GET", "/api/supervisors/*/credential", "yukta supervisors credential show $1"},
	{"DELETE", "/api/supervisors/*/credential", "yukta supervisors credential revoke $1"},
	{"GET", "/api/sessions/*/executions/*/holds", "yukta holds list $1 $2"},
	{"GET", "/api/approvals", "yukta approvals list"},
	{"GET", "/api/approvals/*", "yukta approvals show $1"},
}

// cliWords rewrites the routes in a server's message into yukta commands.
func cliWords(s string) string {
	if !strings.Contains(s, "/api/") {
		return s
	}
	return routeHint.ReplaceAllStringFunc(s, func(m string) string {
		sub := routeHint.FindStringSubmatch(m)
		if cmd, ok := cliCommand(sub[1], sub[2]); ok {
			return cmd
		}
		return m
	})
}

// cliCommand returns the yukta command for one route, if there is one.
func cliCommand(method, route string) (string, bool) {
	route, _, _ = strings.Cut(route, "?")
	got := strings.Split(strings.TrimSuffix(route, "/"), "/")
	for _, r := range cliRoutes {
		want := strings.Split(r.route, "/")
		if r.method != method || len(want) != len(got) {
			continue
		}
		var args []string
		match := true
		for i, w := range want {
			switch {
			case w == "*":
				a := got[i]
				if strings.HasPrefix(a, "{") && strings.HasSuffix(a, "}") {
					a = routeArg(a[1 : len(a)-1])
				}
				args = append(args, a)
			case w != got[i]:
				match = false
			}
		}
		if !match {
			continue
		}
		cmd := r.command
		for i := len(args); i >= 1; i-- {
			cmd = strings.ReplaceAll(cmd, "$"+string(rune('0'+i)), args[i-1])
		}
		return cmd, true
	}
	return "", false
}

// routeArg turns a route's {sessionId} into the command line's SESSION.
func routeArg(name string) string {
	n := strings.TrimSuffix(strings.TrimSuffix(name, "Id"), "ID")
	if n == "" {
		n = name
	}
	return strings.ToUpper(n)
}
