package plugins

import (
	"errors"
	"fmt"
	"maps"
	"net/url"
	"slices"
	"strings"
	"unicode"

	"github.com/yukta/yukta/domain/fault"
	"github.com/yukta/yukta/domain/plugin"
)

// The fields HTTP_REQUEST and WEBHOOK_OUT share: where to send, and the
// plain and secret parts of the request.

func urlField(what string) plugin.Field {
	return plugin.Field{Name: "url", Type: plugin.URL, Required: true, Description: "absolute http:// or https:// " + what +
		"; shown on every read path, so no user:password@ and no credential query parameter (api_key, token, sig, …): use authorization, secretHeaders or secretQuery"}
}

func headersField() plugin.Field {
	return plugin.Field{Name: "headers", Type: plugin.Object, Values: &plugin.Field{Name: "value", Type: plugin.String, Description: "header value"},
		Description: "extra request headers, name to string value, shown on every read path; a name that looks like a credential (Cookie, X-API-Key, anything with token, secret, password, api-key, …) is refused: put it in secretHeaders (Authorization: in authorization)"}
}

func secretHeadersField() plugin.Field {
	return plugin.Field{Name: "secretHeaders", Type: plugin.Object, Secret: true, Values: &plugin.Field{Name: "value", Type: plugin.String, Description: "header value"},
		Description: `request headers whose values are secret, name to string value, sent like headers; each value reads "***" on every read path (names stay visible), and "***" sent back keeps the stored value of that name`}
}

func secretQueryField() plugin.Field {
	return plugin.Field{Name: "secretQuery", Type: plugin.Object, Secret: true, Values: &plugin.Field{Name: "value", Type: plugin.String, Description: "parameter value"},
		Description: `query parameters whose values are secret (such as api_key), name to string value, added to the url's query when the request is sent; each value reads "***" on every read path, and "***" sent back keeps the stored value of that name`}
}

func authorizationField() plugin.Field {
	return plugin.Field{Name: "authorization", Type: plugin.String, Secret: true, Description: `value of the Authorization header, such as "Bearer <token>"; masked on every read path`}
}

// checkOutbound checks what HTTP_REQUEST and WEBHOOK_OUT send beyond the
// field types: a URL the request can be built from, headers the client will
// accept, and no credential in a plain field, where it would be shown to
// everyone who can read the session. Credentials go in the secret fields
// (authorization, secretHeaders, secretQuery), which are masked on every
// read path. No message repeats a secret value, a password or a query value.
func checkOutbound(config map[string]any) []fault.Violation {
	var vs []fault.Violation
	add := func(path, format string, args ...any) {
		vs = append(vs, fault.Violation{Path: path, Message: fmt.Sprintf(format, args...)})
	}
	var inURL url.Values
	if s, ok := config["url"].(string); ok {
		switch u, err := url.Parse(s); {
		case err != nil:
			// The parser's reason may quote part of the text (an
			// "invalid port" can be a password when no "@" was seen).
			reason := ""
			if ue, ok := errors.AsType[*url.Error](err); ok && !strings.Contains(s, "@") {
				reason = " (" + ue.Err.Error() + ")"
			}
			add("url", "is not a valid URL%s, got %q", reason, plugin.RedactURL(s))
		case u.Host == "" || u.Hostname() == "":
			add("url", "has no host, got %q", plugin.RedactURL(s))
		default:
			if u.User != nil {
				// Not echoed: the URL carries a credential.
				add("url", `must not carry a user or password (user:password@host): the url is shown to everyone who can read the session; `+
					`send the credential in authorization (for Basic: "Basic " and the base64 of user:password) or in secretHeaders, which are masked on every read path`)
			}
			inURL, _ = url.ParseQuery(u.RawQuery)
			names, bare := credentialParams(u.RawQuery)
			for _, name := range names {
				add("url", `query parameter %q looks like a credential, and the url is shown to everyone who can read the session; `+
					`move it to secretQuery ({"secretQuery": {%q: "<value>"}}), which is masked on every read path and added to the query when the request is sent`, name, name)
			}
			if bare {
				// Not quoted: a query part without "=" is a value.
				add("url", `has a query part without "=" that looks like a credential, and the url is shown to everyone who can read the session; `+
					`move it to secretQuery as name and value, which is masked on every read path`)
			}
		}
	}
	if a, ok := config["authorization"].(string); ok && !validHeaderValue(a) {
		add("authorization", "must not contain line breaks or control characters")
	}
	headers, _ := config["headers"].(map[string]any)
	plain := map[string]string{} // lower-case name -> name as written
	for _, name := range slices.Sorted(maps.Keys(headers)) {
		plain[strings.ToLower(name)] = name
		path := "headers." + name
		switch {
		case checkHeader(name, headers[name], path, add):
		case credentialHeader(name):
			add(path, `looks like a credential, and headers are shown to everyone who can read the session; `+
				`move it to secretHeaders ({"secretHeaders": {%q: "<value>"}}), which is masked on every read path`, name)
		}
	}
	secret, _ := config["secretHeaders"].(map[string]any)
	for _, name := range slices.Sorted(maps.Keys(secret)) {
		path := "secretHeaders." + name
		if checkHeader(name, secret[name], path, add) {
			continue
		}
		if other, ok := plain[strings.ToLower(name)]; ok {
			add(path, "is also set in headers.%s; set each header once, in secretHeaders when its value is secret", other)
		}
	}
	query, _ := config["secretQuery"].(map[string]any)
	for _, name := range slices.Sorted(maps.Keys(query)) {
		path := "secretQuery." + name
		switch {
		case name == "":
			add("secretQuery", "has a parameter with an empty name")
		case inURL.Has(name):
			add(path, "is also in the query of url; set each parameter once, in secretQuery when its value is secret")
		}
	}
	return vs
}

// checkHeader reports what is wrong with one configured header, in
// headers or secretHeaders, and whether anything was. Values are never
// quoted.
func checkHeader(name string, value any, path string, add func(path, format string, args ...any)) bool {
	v, ok := value.(string)
	switch {
	case !validHeaderName(name):
		add(path, "%q is not a valid header name (letters, digits and !#$%%&'*+-.^_`|~)", name)
	case strings.EqualFold(name, "Authorization"):
		add(path, "is not allowed here; put the value in authorization, which is masked on every read path")
	case slices.ContainsFunc(reservedHeaders, func(r string) bool { return strings.EqualFold(name, r) }):
		add(path, "is set by Yukta and cannot be configured; reserved headers: %s", strings.Join(reservedHeaders, ", "))
	case !ok:
		add(path, "must be a string, got %s", kind(value))
	case !validHeaderValue(v):
		add(path, "must not contain line breaks or control characters")
	default:
		return false
	}
	return true
}

// credentialParts are the pieces of a name that mark a credential. A name
// is compared in lower case with "-", "_" and "." removed, so X-API-Key,
// x_api_key and apiKey all read "xapikey".
var credentialParts = []string{
	"authorization", "cookie", "token", "secret", "password", "passwd", "credential",
	"apikey", "authkey", "accesskey", "privatekey", "subscriptionkey",
}

// credentialParamNames are query parameter names that are credentials on
// their own (compared like credentialParts), besides those containing a
// credential part or "signature".
var credentialParamNames = []string{"key", "sig", "pwd", "pass", "auth", "jwt"}

// plainName reduces a header or parameter name for comparison.
func plainName(s string) string {
	return strings.Map(func(r rune) rune {
		if r == '-' || r == '_' || r == '.' {
			return -1
		}
		return unicode.ToLower(r)
	}, s)
}

// credentialHeader reports whether a header of this name carries a
// credential (Authorization, Proxy-Authorization, Cookie, Set-Cookie,
// X-API-Key, X-Auth-Token, X-Access-Token, …), so that its value must be
// in secretHeaders (Authorization: in authorization).
func credentialHeader(name string) bool {
	n := plainName(name)
	return slices.ContainsFunc(credentialParts, func(p string) bool { return strings.Contains(n, p) })
}

// credentialParam reports whether a query parameter of this name carries
// a credential (api_key, apikey, key, token, access_token, secret,
// password, sig, signature, X-Amz-Signature, …).
func credentialParam(name string) bool {
	n := plainName(name)
	return slices.Contains(credentialParamNames, n) || strings.Contains(n, "signature") ||
		slices.ContainsFunc(credentialParts, func(p string) bool { return strings.Contains(n, p) })
}

// credentialParams returns the distinct credential-looking parameter names
// of a raw query, in order, unescaped when they can be, and whether a part
// without "=" (a bare value, never quoted) looks like one.
func credentialParams(rawQuery string) (names []string, bare bool) {
	for _, part := range strings.FieldsFunc(rawQuery, func(r rune) bool { return r == '&' || r == ';' }) {
		name, _, named := strings.Cut(part, "=")
		if n, err := url.QueryUnescape(name); err == nil {
			name = n
		}
		switch {
		case !credentialParam(name):
		case !named:
			bare = true
		case !slices.Contains(names, name):
			names = append(names, name)
		}
	}
	return names, bare
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
