package plugins

import (
	"fmt"
	"maps"
	"net/url"
	"slices"
	"strings"

	"github.com/yukta/yukta/domain/fault"
)

// checkOutbound checks what HTTP_REQUEST and WEBHOOK_OUT send beyond the
// field types: a URL the request can be built from, headers the client will
// accept, and no credential outside the masked authorization field, where
// it would be shown on every read path.
func checkOutbound(config map[string]any) []fault.Violation {
	var vs []fault.Violation
	add := func(path, format string, args ...any) {
		vs = append(vs, fault.Violation{Path: path, Message: fmt.Sprintf(format, args...)})
	}
	if s, ok := config["url"].(string); ok {
		switch u, err := url.Parse(s); {
		case err != nil:
			add("url", "is not a valid URL: %v", err)
		case u.Host == "" || u.Hostname() == "":
			add("url", "has no host, got %q", s)
		case u.User != nil:
			// Not echoed: the URL carries a credential.
			add("url", "must not carry a user or password; put the credential in authorization, which is masked")
		}
	}
	if a, ok := config["authorization"].(string); ok && !validHeaderValue(a) {
		add("authorization", "must not contain line breaks or control characters")
	}
	headers, _ := config["headers"].(map[string]any)
	for _, name := range slices.Sorted(maps.Keys(headers)) {
		path := "headers." + name
		v, ok := headers[name].(string)
		switch {
		case !validHeaderName(name):
			add(path, "%q is not a valid header name (letters, digits and !#$%%&'*+-.^_`|~)", name)
		case strings.EqualFold(name, "Authorization"):
			add(path, "is not allowed here; put the value in authorization, which is masked on every read path")
		case slices.ContainsFunc(reservedHeaders, func(r string) bool { return strings.EqualFold(name, r) }):
			add(path, "is set by Yukta and cannot be configured; reserved headers: %s", strings.Join(reservedHeaders, ", "))
		case !ok:
			add(path, "must be a string, got %s", kind(headers[name]))
		case !validHeaderValue(v):
			add(path, "must not contain line breaks or control characters")
		}
	}
	return vs
}

// reservedHeaders are set by the client itself: the framing ones must match
// the body actually sent, and Idempotency-Key must stay the one stable per
// message or receivers cannot recognise a retry.
var reservedHeaders = []string{"Connection", "Content-Length", "Host", "Idempotency-Key", "Transfer-Encoding"}

// validHeaderName reports whether s is an RFC 9110 token.
func validHeaderName(s string) bool {
	if s == "" {
		return false
	}
	for _, c := range []byte(s) {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.IndexByte("!#$%&'*+-.^_`|~", c) >= 0) {
			return false
		}
	}
	return true
}

// validHeaderValue refuses control characters, which would let a config
// split a request or be rejected by the client at run time.
func validHeaderValue(s string) bool {
	for _, c := range []byte(s) {
		if c < ' ' && c != '\t' || c == 0x7f {
			return false
		}
	}
	return true
}

// kind names a JSON value's type the way the field checks do.
func kind(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case bool:
		return "a boolean"
	case map[string]any:
		return "an object"
	case []any:
		return "an array"
	}
	if _, ok := number(v); ok {
		return "a number"
	}
	return fmt.Sprintf("%T", v)
}
