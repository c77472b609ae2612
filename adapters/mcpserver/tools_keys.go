package mcpserver

import (
	"context"
	"errors"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/yukta/yukta/application/accessapp"
	"github.com/yukta/yukta/domain/access"
	"github.com/yukta/yukta/domain/fault"
)

// KeyDeps are the stored API key use cases (accessapp); when any is nil
// the key tools answer that stored keys are not enabled.
type KeyDeps struct {
	Create interface {
		Handle(context.Context, accessapp.CreateAPIKeyInput) (accessapp.IssuedAPIKey, error)
	}
	List interface {
		Handle(context.Context) ([]accessapp.ListedKey, error)
	}
	Rotate interface {
		Handle(context.Context, accessapp.RotateAPIKeyInput) (accessapp.IssuedAPIKey, error)
	}
	Revoke interface {
		Handle(context.Context, accessapp.RevokeAPIKeyInput) (access.APIKey, error)
	}
	Expire interface {
		Handle(context.Context, accessapp.SetAPIKeyExpiryInput) (access.APIKey, error)
	}
}

func (k KeyDeps) enabled() bool {
	return k.Create != nil && k.List != nil && k.Rotate != nil && k.Revoke != nil && k.Expire != nil
}

// errKeysDisabled answers the key tools of a server without the use cases.
var errKeysDisabled = errors.New("mcpserver: stored API keys are not enabled")

// errKeyConflict marks a key tool's conflict (a name taken, an expired key
// rotated), whose next step is list_api_keys, not get_workflow_status.
var errKeyConflict = errors.New("mcpserver: API key conflict")

type keyConflict struct{ err error }

func (e keyConflict) Error() string        { return e.err.Error() }
func (e keyConflict) Unwrap() error        { return e.err }
func (e keyConflict) Is(target error) bool { return target == errKeyConflict }

// keyError marks a conflict of a key tool as such.
func keyError(err error) error {
	if errors.Is(err, fault.ErrConflict) {
		return keyConflict{err}
	}
	return err
}

// CreateKeyIn asks for a new stored key.
type CreateKeyIn struct {
	Name      string   `json:"name" jsonschema:"1 to 64 letters, digits, '.', '_' or '-', starting with a letter or digit; recorded as the actor key:<name>"`
	Role      string   `json:"role" jsonschema:"VIEWER (read only), OPERATOR (also start and control executions), ADMIN (everything but the worker API) or WORKER (only take and answer tasks of worker queues, through the worker API)"`
	Sessions  []string `json:"sessions,omitempty" jsonschema:"the sessions the key may see (a WORKER key: whose tasks it may take); absent: every session"`
	Queues    []string `json:"queues,omitempty" jsonschema:"WORKER keys only: the worker queues whose tasks the key may take (1 to 64 lowercase letters, digits, '.', '_' or '-' each); absent: every queue"`
	ExpiresAt string   `json:"expiresAt,omitempty" jsonschema:"when it stops working: an RFC 3339 time, at most 2 years away; not with ttl"`
	TTL       string   `json:"ttl,omitempty" jsonschema:"how long it works from now: a duration such as 720h, at most 17520h; not with expiresAt"`
}

// KeyNameIn names a stored key.
type KeyNameIn struct {
	Name string `json:"name" jsonschema:"the key's name, from list_api_keys"`
}

// KeyExpiryIn sets a stored key's expiry.
type KeyExpiryIn struct {
	Name      string `json:"name" jsonschema:"the key's name, from list_api_keys"`
	ExpiresAt string `json:"expiresAt,omitempty" jsonschema:"when it stops working: an RFC 3339 time in the future, at most 2 years away; not with ttl"`
	TTL       string `json:"ttl,omitempty" jsonschema:"how long it works from now: a duration such as 720h or 10m, at most 17520h; not with expiresAt"`
}

// KeysIn lists the keys (no arguments).
type KeysIn struct{}

// KeyOut is one key; Secret only in the answer that creates or rotates it.
type KeyOut struct {
	Name         string   `json:"name"`
	Role         string   `json:"role"`
	Sessions     []string `json:"sessions,omitempty" jsonschema:"absent: every session"`
	Queues       []string `json:"queues,omitempty" jsonschema:"a WORKER key's queues; absent: every queue (and on every key of another role)"`
	Source       string   `json:"source" jsonschema:"api for a stored key; YUKTA_API_KEY, YUKTA_API_KEYS or YUKTA_MCP_API_KEY for a configured one (changed where it is configured)"`
	Secret       string   `json:"secret,omitempty" jsonschema:"the secret, shown this once: give it to whoever uses the key and do not repeat it"`
	Note         string   `json:"note,omitempty"`
	Hint         string   `json:"hint,omitempty" jsonschema:"the secret's prefix and first characters (yk_abcdef), to tell keys apart"`
	CreatedAt    string   `json:"createdAt,omitempty"`
	CreatedBy    string   `json:"createdBy,omitempty"`
	CreatedVia   string   `json:"createdVia,omitempty"`
	ExpiresAt    string   `json:"expiresAt,omitempty" jsonschema:"absent: the key does not expire"`
	Expired      bool     `json:"expired,omitempty"`
	RotatedAt    string   `json:"rotatedAt,omitempty"`
	RotatedBy    string   `json:"rotatedBy,omitempty"`
	RotatedVia   string   `json:"rotatedVia,omitempty"`
	LastUsedAt   string   `json:"lastUsedAt,omitempty" jsonschema:"when a request last presented it (to the minute); absent: never since its last rotation"`
	LastUsedFrom string   `json:"lastUsedFrom,omitempty"`
}

// KeyList is every key of the server.
type KeyList struct {
	Keys []KeyOut `json:"keys"`
}

// KeyRevoked confirms a revocation.
type KeyRevoked struct {
	Name    string `json:"name"`
	Revoked bool   `json:"revoked"`
}

func (s *server) addKeyTools(m *mcp.Server) {
	addTool(m, &mcp.Tool{Name: "create_api_key", Annotations: annotated(additive, "Create an API key"),
		Description: "Store a new API key (ADMIN only) for REST and MCP: the secret is in this answer only (give it to whoever uses the key, do not repeat it). " +
			"On a server that was open, the first key closes it at once. Next: list_api_keys shows it without the secret."},
		s.createKey)
	addTool(m, &mcp.Tool{Name: "list_api_keys", Annotations: annotated(readOnly, "List API keys"),
		Description: "Every API key of the server (ADMIN only): the configured ones with their setting, and the stored ones with who created and rotated them, their expiry and last use. Never a secret."},
		s.listKeys)
	addTool(m, &mcp.Tool{Name: "rotate_api_key", Annotations: annotated(destructive, "Rotate an API key"),
		Description: "Give a stored API key a new secret (ADMIN only): the old one is refused on every instance within a second. The new secret is in this answer only."},
		s.rotateKey)
	addTool(m, &mcp.Tool{Name: "revoke_api_key", Annotations: annotated(destructive, "Revoke an API key"),
		Description: "Delete a stored API key (ADMIN only): its secret is refused on every instance within a second. Next: create_api_key makes a new one."},
		s.revokeKey)
	addTool(m, &mcp.Tool{Name: "set_api_key_expiry", Annotations: annotated(destructive, "Set an API key's expiry"),
		Description: "Set or change a stored API key's expiry (ADMIN only): expiresAt or ttl, at most 2 years away; the secret stays, and from the new moment on the key is refused on every instance. " +
			"An expired key gets no new expiry: revoke it and create it again. Next: list_api_keys shows the expiry."},
		s.expireKey)
}

func (s *server) createKey(ctx context.Context, _ *mcp.CallToolRequest, in CreateKeyIn) (*mcp.CallToolResult, KeyOut, error) {
	const tool = "create_api_key"
	p := caller(ctx)
	if err := p.Can(access.ManageAPIKeys, ""); err != nil {
		return nil, KeyOut{}, s.toolError(tool, err, subject{})
	}
	if !s.d.Keys.enabled() {
		return nil, KeyOut{}, s.toolError(tool, errKeysDisabled, subject{})
	}
	res, err := s.d.Keys.Create.Handle(ctx, accessapp.CreateAPIKeyInput{Spec: access.APIKeySpec{Name: in.Name, Role: in.Role, Sessions: in.Sessions,
		Queues: in.Queues, ExpiresAt: in.ExpiresAt, TTL: in.TTL}, Actor: p.Actor(), Channel: Channel})
	if err != nil {
		return nil, KeyOut{}, s.toolError(tool, keyError(err), subject{})
	}
	return nil, issuedKeyOut(res), nil
}

func (s *server) listKeys(ctx context.Context, _ *mcp.CallToolRequest, _ KeysIn) (*mcp.CallToolResult, KeyList, error) {
	const tool = "list_api_keys"
	if err := caller(ctx).Can(access.ManageAPIKeys, ""); err != nil {
		return nil, KeyList{}, s.toolError(tool, err, subject{})
	}
	if !s.d.Keys.enabled() {
		return nil, KeyList{}, s.toolError(tool, errKeysDisabled, subject{})
	}
	keys, err := s.d.Keys.List.Handle(ctx)
	if err != nil {
		return nil, KeyList{}, s.toolError(tool, err, subject{})
	}
	out := KeyList{Keys: make([]KeyOut, 0, len(keys))}
	for _, k := range keys {
		if k.Source == accessapp.SourceStored {
			out.Keys = append(out.Keys, keyOut(k.Stored))
			continue
		}
		out.Keys = append(out.Keys, KeyOut{Name: k.Principal.Name(), Role: k.Principal.Role().String(), Sessions: k.Principal.Sessions(), Queues: k.Principal.Queues(), Source: k.Source})
	}
	return nil, out, nil
}

func (s *server) rotateKey(ctx context.Context, _ *mcp.CallToolRequest, in KeyNameIn) (*mcp.CallToolResult, KeyOut, error) {
	const tool = "rotate_api_key"
	p := caller(ctx)
	if err := p.Can(access.ManageAPIKeys, ""); err != nil {
		return nil, KeyOut{}, s.toolError(tool, err, subject{})
	}
	if !s.d.Keys.enabled() {
		return nil, KeyOut{}, s.toolError(tool, errKeysDisabled, subject{})
	}
	res, err := s.d.Keys.Rotate.Handle(ctx, accessapp.RotateAPIKeyInput{Name: in.Name, Actor: p.Actor(), Channel: Channel})
	if err != nil {
		return nil, KeyOut{}, s.toolError(tool, keyError(err), subject{})
	}
	return nil, issuedKeyOut(res), nil
}

func (s *server) revokeKey(ctx context.Context, _ *mcp.CallToolRequest, in KeyNameIn) (*mcp.CallToolResult, KeyRevoked, error) {
	const tool = "revoke_api_key"
	p := caller(ctx)
	if err := p.Can(access.ManageAPIKeys, ""); err != nil {
		return nil, KeyRevoked{}, s.toolError(tool, err, subject{})
	}
	if !s.d.Keys.enabled() {
		return nil, KeyRevoked{}, s.toolError(tool, errKeysDisabled, subject{})
	}
	k, err := s.d.Keys.Revoke.Handle(ctx, accessapp.RevokeAPIKeyInput{Name: in.Name, Actor: p.Actor(), Channel: Channel})
	if err != nil {
		return nil, KeyRevoked{}, s.toolError(tool, keyError(err), subject{})
	}
	return nil, KeyRevoked{Name: k.Name(), Revoked: true}, nil
}

func (s *server) expireKey(ctx context.Context, _ *mcp.CallToolRequest, in KeyExpiryIn) (*mcp.CallToolResult, KeyOut, error) {
	const tool = "set_api_key_expiry"
	p := caller(ctx)
	if err := p.Can(access.ManageAPIKeys, ""); err != nil {
		return nil, KeyOut{}, s.toolError(tool, err, subject{})
	}
	if !s.d.Keys.enabled() {
		return nil, KeyOut{}, s.toolError(tool, errKeysDisabled, subject{})
	}
	k, err := s.d.Keys.Expire.Handle(ctx, accessapp.SetAPIKeyExpiryInput{Name: in.Name, ExpiresAt: in.ExpiresAt, TTL: in.TTL, Actor: p.Actor(), Channel: Channel})
	if err != nil {
		return nil, KeyOut{}, s.toolError(tool, keyError(err), subject{})
	}
	return nil, keyOut(k), nil
}

func keyOut(k access.APIKey) KeyOut {
	return KeyOut{Name: k.Name(), Role: k.Role().String(), Sessions: k.Sessions(), Queues: k.Queues(), Source: accessapp.SourceStored, Hint: k.Hint(),
		CreatedAt: ts(k.CreatedAt()), CreatedBy: k.CreatedBy(), CreatedVia: k.CreatedVia(), ExpiresAt: ts(k.ExpiresAt()), Expired: k.Expired(time.Now()),
		RotatedAt: ts(k.RotatedAt()), RotatedBy: k.RotatedBy(), RotatedVia: k.RotatedVia(), LastUsedAt: ts(k.LastUsedAt()), LastUsedFrom: k.LastUsedFrom()}
}

func issuedKeyOut(res accessapp.IssuedAPIKey) KeyOut {
	out := keyOut(res.Key)
	out.Secret = res.Token.Reveal()
	if res.ClosedOpenMode {
		out.Note = accessapp.ClosedOpenModeNote
	}
	return out
}

// keyMessages are the key tools' entries of the error table (messages).
var keyMessages = []struct {
	is   error
	text func(err error, s subject) string
}{
	{access.ErrAPIKeyNotFound, func(err error, _ subject) string {
		return sentence(err.Error()) + " Nothing was changed; list_api_keys shows the keys."
	}},
	{errKeyConflict, func(err error, _ subject) string {
		return sentence(err.Error()) + " Nothing was changed; list_api_keys shows the keys."
	}},
	{errKeysDisabled, func(error, subject) string {
		return "Stored API keys are not enabled on this server. Nothing was changed."
	}},
}
