package bootstrap

import (
	"crypto/sha256"
	"errors"
	"fmt"
	"net"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/yukta/yukta/adapters/authn"
	"github.com/yukta/yukta/adapters/httpapi"
	"github.com/yukta/yukta/domain/access"
	"github.com/yukta/yukta/domain/fault"
)

// Names of the keys configured outside a key file, recorded as key:<name>.
const (
	envKeyName = "admin"
	mcpKeyName = "mcp"
)

// loadKeys builds the keyrings from YUKTA_API_KEY (one ADMIN key),
// YUKTA_API_KEYS (a key file) and YUKTA_MCP_API_KEY (ADMIN on /mcp only).
// Only hashes survive; errors name the setting and the line, never a secret.
// With a key file it also returns what watching it needs (keyfile.go): the
// API keyring is then one a reload replaces.
func loadKeys(apiKey, path, mcpKey string) (authn.Keys, *keyFile, error) {
	var keys authn.Keys
	var errs []error
	kf := &keyFile{path: path}
	if apiKey != "" {
		spec, err := access.NewKeySpec(envKeyName, access.Admin, nil, strings.TrimSpace(apiKey))
		if err != nil {
			errs = append(errs, fmt.Errorf("YUKTA_API_KEY: %w", err))
		} else {
			kf.env = &spec
		}
	}
	if mcpKey != "" {
		spec, err := access.NewKeySpec(mcpKeyName, access.Admin, nil, strings.TrimSpace(mcpKey))
		if err == nil {
			keys.MCP, err = access.NewKeyring([]access.KeySpec{spec})
			kf.mcp = &spec
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("YUKTA_MCP_API_KEY: %w", err))
		}
	}
	var data []byte
	inFile := path != ""
	if inFile {
		var err error
		if data, err = os.ReadFile(path); err != nil {
			errs = append(errs, fmt.Errorf("--api-keys (YUKTA_API_KEYS): cannot read the key file: %w", err))
			inFile = false
		}
	}
	ring, fileSpecs, err := kf.build(data, inFile)
	if err != nil {
		errs = append(errs, err)
	}
	if ring.Len() > 0 {
		keys.API = authn.NewRing(ring)
	}
	if err := errors.Join(errs...); err != nil || kf.path == "" {
		return keys, nil, err
	}
	kf.ring, kf.specs, kf.hash = keys.API, fileSpecs, sha256.Sum256(data)
	return keys, kf, nil
}

// build makes the API keyring of YUKTA_API_KEY's key and, when inFile, the
// keys of the key file's content data; it returns the file's keys too. The
// errors name the setting, the file and its lines, never a secret. A file
// without keys is refused (access.ParseKeyFile), so a reload can never leave
// the server open.
func (f *keyFile) build(data []byte, inFile bool) (*access.Keyring, []access.KeySpec, error) {
	var errs []error
	var specs, fileSpecs []access.KeySpec
	if f.env != nil {
		specs = append(specs, *f.env)
	}
	if inFile {
		parsed, err := access.ParseKeyFile(data)
		if err != nil {
			errs = append(errs, fmt.Errorf("--api-keys (YUKTA_API_KEYS) %s: %w", f.path, err))
		}
		for _, s := range parsed {
			if f.env != nil && strings.EqualFold(s.Name, envKeyName) {
				errs = append(errs, fmt.Errorf("--api-keys (YUKTA_API_KEYS) %s: the name %q is taken by YUKTA_API_KEY; rename the key in the file", f.path, envKeyName))
				continue
			}
			fileSpecs = append(fileSpecs, s)
		}
		specs = append(specs, fileSpecs...)
	}
	if len(specs) == 0 {
		return nil, nil, errors.Join(errs...)
	}
	ring, err := access.NewKeyring(specs)
	if err != nil {
		errs = append(errs, fmt.Errorf("API keys: %w", err))
	}
	if f.mcp != nil && slices.ContainsFunc(specs, func(s access.KeySpec) bool { return s.Hash == f.mcp.Hash }) {
		errs = append(errs, errors.New("YUKTA_MCP_API_KEY is the same as an API key; give the MCP key its own secret"))
	}
	if err := errors.Join(errs...); err != nil {
		return ring, nil, err
	}
	return ring, fileSpecs, nil
}

// bindGuard refuses a non-loopback address unless keys protect every
// surface. REST and the agent API are protected only by API keys
// (YUKTA_API_KEY or YUKTA_API_KEYS): an MCP key alone leaves them open.
func bindGuard(host string, keys authn.Keys) error {
	if loopbackHost(host) || keys.API.Len() > 0 {
		return nil
	}
	if keys.MCP.Len() > 0 {
		return fmt.Errorf("--addr (%s) %q is not a loopback address, and only YUKTA_MCP_API_KEY is set: it protects /mcp alone, "+
			"so REST and the agent API would be open to the network. Set YUKTA_API_KEY or YUKTA_API_KEYS as well, or bind to 127.0.0.1",
			settings.addr.env, host)
	}
	return fmt.Errorf("--addr (%s) %q is not a loopback address, and no access key is set, so every route would be open to the network. "+
		"Set YUKTA_API_KEY (one ADMIN key) or YUKTA_API_KEYS (a key file), or bind to 127.0.0.1 (loopback: 127.0.0.1, ::1, localhost)",
		settings.addr.env, host)
}

// parseRate reads "N/s", "N/m" or "N/h" (N requests per second, minute or
// hour, with bursts of N), or "off".
func parseRate(s string) (httpapi.Rate, error) {
	if strings.EqualFold(s, "off") {
		return httpapi.Rate{}, nil
	}
	num, unit, ok := strings.Cut(s, "/")
	n, err := strconv.Atoi(num)
	per := map[string]time.Duration{"s": time.Second, "m": time.Minute, "h": time.Hour}[unit]
	if !ok || err != nil || n < 1 || per == 0 {
		return httpapi.Rate{}, fault.Newf(fault.ErrInvalid, "%q is not a rate; write N/s, N/m or N/h (for example 600/m), or off", s)
	}
	return httpapi.Rate{N: n, Per: per}, nil
}

// parseCIDRs reads a list of networks or single addresses.
func parseCIDRs(list []string) ([]*net.IPNet, error) {
	var out []*net.IPNet
	var bad []string
	for _, s := range list {
		if ip := net.ParseIP(s); ip != nil {
			bits := 8 * len(ip.To4())
			if bits == 0 {
				bits = 128
			}
			out = append(out, &net.IPNet{IP: ip, Mask: net.CIDRMask(bits, bits)})
			continue
		}
		_, n, err := net.ParseCIDR(s)
		if err != nil {
			bad = append(bad, strconv.Quote(s))
			continue
		}
		out = append(out, n)
	}
	if bad != nil {
		return nil, fmt.Errorf("%s: not an address or CIDR network (for example 10.0.0.0/8 or 192.168.1.10)", strings.Join(bad, ", "))
	}
	return out, nil
}
