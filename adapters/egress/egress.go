// Package egress is the one way Yukta makes outbound HTTP calls on behalf of
// workflows (HTTP_REQUEST, WEBHOOK_OUT). Workflow authors choose the URLs,
// so without a policy any of them could reach the database, the metadata
// service of the cloud it runs in or anything else on the internal network.
//
// The policy is enforced where it cannot be dodged: at connect time, on the
// IP address actually dialed after DNS resolution. Checking the host name
// before the request would let a name that resolves to a public address
// during the check and to 127.0.0.1 during the connect (DNS rebinding)
// through. Redirects are not followed, since each hop would be a new request
// the author did not write, and no proxy from the environment is used, since
// the proxy, not this client, would then pick the address.
package egress

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"strings"
	"syscall"
	"time"
)

// AllowedHostsEnv is the setting that lists the hosts exempt from the
// address policy; error messages name it so an operator knows what to set.
const AllowedHostsEnv = "YUKTA_EGRESS_ALLOWED_HOSTS"

// The defaults of Options.
const (
	DefaultTimeout          = 30 * time.Second
	DefaultMaxResponseBytes = 16 << 20
)

// Options configures a Client.
type Options struct {
	// AllowedHosts are exempt from the address policy: "host" allows every
	// port of host, "host:port" (IPv6 as "[::1]:8080") only that port.
	// Matching is exact on the host as written in the request URL, case
	// insensitive; no wildcards, so allowing one name never allows another.
	AllowedHosts []string
	// Timeout bounds a whole call, from connecting to reading the body.
	// Zero means DefaultTimeout. A shorter deadline on the context wins.
	Timeout time.Duration
	// MaxResponseBytes caps the response body. Zero means
	// DefaultMaxResponseBytes.
	MaxResponseBytes int64
}

// ParseAllowedHosts splits the value of YUKTA_EGRESS_ALLOWED_HOSTS: entries
// separated by commas or white space; empty entries are ignored.
func ParseAllowedHosts(s string) []string {
	return strings.FieldsFunc(s, func(r rune) bool { return r == ',' || r == ' ' || r == '\t' || r == '\n' })
}

// Response is a whole HTTP answer, its body already read.
type Response struct {
	Status int
	Header http.Header
	Body   []byte
}

// Client sends requests under the egress policy. It is safe for concurrent
// use and pools connections, so create one per process.
type Client struct {
	http    *http.Client
	allowed map[hostPort]bool
	max     int64
}

// hostPort is an allow-list entry; port "" matches every port.
type hostPort struct{ host, port string }

// New returns a Client, or an error naming an allow-list entry it cannot read.
func New(o Options) (*Client, error) {
	c := &Client{allowed: map[hostPort]bool{}, max: o.MaxResponseBytes}
	if c.max <= 0 {
		c.max = DefaultMaxResponseBytes
	}
	for _, e := range o.AllowedHosts {
		hp, err := parseEntry(e)
		if err != nil {
			return nil, fmt.Errorf("egress: %s entry %q: %w", AllowedHostsEnv, e, err)
		}
		c.allowed[hp] = true
	}
	timeout := o.Timeout
	if timeout <= 0 {
		timeout = DefaultTimeout
	}
	guarded := &net.Dialer{Timeout: 10 * time.Second, KeepAlive: 30 * time.Second, Control: control}
	open := &net.Dialer{Timeout: 10 * time.Second, KeepAlive: 30 * time.Second}
	transport := &http.Transport{
		Proxy: nil,
		DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
			// addr is the request's host and port, before resolution: the
			// only place the allow-list, which names hosts, can be applied.
			if c.isAllowed(addr) {
				return open.DialContext(ctx, network, addr)
			}
			conn, err := guarded.DialContext(ctx, network, addr)
			var refused *RefusedError
			if errors.As(err, &refused) {
				refused.Host = addr
			}
			return conn, err
		},
		ForceAttemptHTTP2:      true,
		TLSHandshakeTimeout:    10 * time.Second,
		ResponseHeaderTimeout:  timeout,
		ExpectContinueTimeout:  time.Second,
		MaxIdleConns:           100,
		MaxIdleConnsPerHost:    10,
		IdleConnTimeout:        90 * time.Second,
		MaxResponseHeaderBytes: 1 << 20,
	}
	c.http = &http.Client{
		Transport:     transport,
		Timeout:       timeout,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
	return c, nil
}

func parseEntry(e string) (hostPort, error) {
	e = strings.ToLower(strings.TrimSpace(e))
	if e == "" || strings.Contains(e, "/") {
		return hostPort{}, errors.New(`want "host" or "host:port", without scheme or path`)
	}
	if host, port, err := net.SplitHostPort(e); err == nil {
		if host == "" || port == "" {
			return hostPort{}, errors.New(`want "host" or "host:port"`)
		}
		return hostPort{strings.TrimSuffix(host, "."), port}, nil
	}
	// A bare IPv6 address has colons but no port.
	return hostPort{strings.TrimSuffix(strings.Trim(e, "[]"), "."), ""}, nil
}

func (c *Client) isAllowed(addr string) bool {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return false
	}
	host = strings.TrimSuffix(strings.ToLower(host), ".")
	return c.allowed[hostPort{host, port}] || c.allowed[hostPort{host, ""}]
}

// Do sends req with ctx and reads the whole answer, capped at the client's
// MaxResponseBytes. A 3xx answer is returned as it is, not followed.
func (c *Client) Do(ctx context.Context, req *http.Request) (*Response, error) {
	return c.DoLimited(ctx, req, 0)
}

// DoLimited is Do with a smaller cap on the body for this call (a node's own
// maxResponseBytes); a limit of zero, or one above the client's, uses the
// client's.
func (c *Client) DoLimited(ctx context.Context, req *http.Request, limit int64) (*Response, error) {
	if limit <= 0 || limit > c.max {
		limit = c.max
	}
	if req.URL == nil || (req.URL.Scheme != "http" && req.URL.Scheme != "https") {
		return nil, fmt.Errorf("egress: only http and https URLs can be called, got scheme %q", scheme(req.URL))
	}
	where := req.Method + " " + redact(req.URL)
	resp, err := c.http.Do(req.WithContext(ctx))
	if err != nil {
		var refused *RefusedError
		if errors.As(err, &refused) {
			return nil, fmt.Errorf("egress: %s: %w", where, refused)
		}
		return nil, fmt.Errorf("egress: %s: %w", where, unwrapURLError(err))
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, limit+1))
	if err != nil {
		return nil, fmt.Errorf("egress: %s: reading the answer: %w", where, err)
	}
	if int64(len(body)) > limit {
		return nil, fmt.Errorf("egress: %s: the answer body is larger than the limit of %d bytes", where, limit)
	}
	return &Response{Status: resp.StatusCode, Header: resp.Header, Body: body}, nil
}

// unwrapURLError drops *url.Error's own copy of the URL, which carries the
// query string; the caller names the request without it.
func unwrapURLError(err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		return ue.Err
	}
	return err
}

func scheme(u *url.URL) string {
	if u == nil {
		return ""
	}
	return u.Scheme
}

// redact names a URL in errors without its query and user info, where API
// keys and passwords tend to sit.
func redact(u *url.URL) string {
	return u.Scheme + "://" + u.Host + u.EscapedPath()
}

// RefusedError says that the policy refused an address.
type RefusedError struct {
	// Host is the host and port the request named, such as "localhost:8080".
	Host string
	// Addr is the address it resolved to and that was refused.
	Addr netip.AddrPort
	// Reason names the kind of address, such as "a loopback address".
	Reason string
}

// Error says what was refused and how to allow it.
func (e *RefusedError) Error() string {
	host := e.Host
	if host == "" {
		host = e.Addr.String()
	}
	return fmt.Sprintf("refused to connect to %s (%s is %s); outbound calls may reach only public addresses unless the host is listed in %s, such as %s=%s",
		host, e.Addr.Addr(), e.Reason, AllowedHostsEnv, AllowedHostsEnv, host)
}

// control runs after resolution and before the connect, for every address
// the dialer tries, which is what makes the policy hold against DNS
// rebinding.
func control(network, address string, _ syscall.RawConn) error {
	ap, err := netip.ParseAddrPort(address)
	if err != nil {
		return fmt.Errorf("egress: cannot read the address %q being dialed: %w", address, err)
	}
	if reason := forbidden(ap.Addr()); reason != "" {
		return &RefusedError{Addr: ap, Reason: reason}
	}
	return nil
}

// metadata are the cloud metadata services, named apart from their ranges
// so the error says what was being reached.
var metadata = []netip.Addr{netip.MustParseAddr("169.254.169.254"), netip.MustParseAddr("fd00:ec2::254")}

// blocked are the ranges beyond what netip classifies that are not public
// destinations.
var blocked = []struct {
	prefix netip.Prefix
	reason string
}{
	{netip.MustParsePrefix("0.0.0.0/8"), "in 0.0.0.0/8, \"this network\""},
	{netip.MustParsePrefix("100.64.0.0/10"), "a carrier-grade NAT address (100.64.0.0/10)"},
	{netip.MustParsePrefix("192.0.0.0/24"), "an IETF protocol assignment (192.0.0.0/24)"},
	{netip.MustParsePrefix("192.0.2.0/24"), "a documentation address"},
	{netip.MustParsePrefix("198.18.0.0/15"), "a benchmarking address (198.18.0.0/15)"},
	{netip.MustParsePrefix("198.51.100.0/24"), "a documentation address"},
	{netip.MustParsePrefix("203.0.113.0/24"), "a documentation address"},
	{netip.MustParsePrefix("240.0.0.0/4"), "a reserved address (240.0.0.0/4)"},
	{netip.MustParsePrefix("100::/64"), "a discard-only address (100::/64)"},
	{netip.MustParsePrefix("2001:db8::/32"), "a documentation address"},
	{netip.MustParsePrefix("fec0::/10"), "a site-local address (fec0::/10)"},
}

// embedsIPv4 are IPv6 ranges that carry an IPv4 address a gateway will
// reach, so the IPv4 address inside must pass too.
var embedsIPv4 = []netip.Prefix{
	netip.MustParsePrefix("64:ff9b::/96"), // NAT64: the last 32 bits
}

// forbidden returns why a is not a public destination, or "".
func forbidden(a netip.Addr) string {
	a = a.WithZone("")
	if a.Is4In6() {
		return forbidden(a.Unmap())
	}
	for _, m := range metadata {
		if a == m {
			return "a cloud metadata service address"
		}
	}
	switch {
	case !a.IsValid():
		return "not a valid address"
	case a.IsUnspecified():
		return "an unspecified address"
	case a.IsLoopback():
		return "a loopback address"
	case a.IsLinkLocalUnicast():
		return "a link-local address"
	case a.IsMulticast():
		return "a multicast address"
	case a.IsPrivate():
		return "a private address"
	case a == netip.AddrFrom4([4]byte{255, 255, 255, 255}):
		return "the broadcast address"
	}
	for _, b := range blocked {
		if b.prefix.Contains(a) {
			return b.reason
		}
	}
	for _, p := range embedsIPv4 {
		if p.Contains(a) {
			b := a.As16()
			inner := netip.AddrFrom4([4]byte(b[12:]))
			if r := forbidden(inner); r != "" {
				return r + " (" + inner.String() + ", embedded in a NAT64 address)"
			}
		}
	}
	if a.Is6() {
		// 6to4 (2002::/16) carries an IPv4 address in bits 16-48.
		if b := a.As16(); b[0] == 0x20 && b[1] == 0x02 {
			inner := netip.AddrFrom4([4]byte(b[2:6]))
			if r := forbidden(inner); r != "" {
				return r + " (" + inner.String() + ", embedded in a 6to4 address)"
			}
		}
	}
	return ""
}
