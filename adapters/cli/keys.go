package cli

import (
	"fmt"
	"net/http"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/yukta/yukta/api/apiclient"
)

func (a *App) keysCmd() *cobra.Command {
	create := &cobra.Command{
		Use:   "create NAME --role ROLE [--sessions a,b] [--queues q1,q2] [--expires WHEN]",
		Short: "store a new API key (the secret is printed once)",
		Args:  argsBetween(1, 1),
	}
	role := create.Flags().String("role", "", "VIEWER, OPERATOR, ADMIN or WORKER (required; WORKER keys may only take and answer tasks of worker queues)")
	sessions := create.Flags().StringSlice("sessions", nil, "the sessions the key may see, comma-separated (default every session)")
	queues := create.Flags().StringSlice("queues", nil, "WORKER keys only: the worker queues whose tasks the key may take, comma-separated (default every queue)")
	expires := create.Flags().String("expires", "", "when the key stops working: a duration from now (720h) or an RFC 3339 time; at most 2 years (default never)")
	addOutput(create)
	a.leaf(create, func(e *env, pos []string) int {
		// A --sessions or --queues given is sent as given, so an empty list
		// is refused by the server, never taken silently as every session
		// or queue.
		var s, q *[]string
		if create.Flags().Changed("sessions") {
			s = sessions
		}
		if create.Flags().Changed("queues") {
			q = queues
		}
		return runKeyCreate(e, pos[0], *role, s, q, *expires)
	})
	list := &cobra.Command{Use: "list", Short: "every API key: the stored ones and the configured ones (never a secret)", Args: argsBetween(0, 0)}
	addOutput(list)
	a.leaf(list, runKeyList)
	rotate := &cobra.Command{Use: "rotate NAME", Short: "give a stored key a new secret (printed once); the old one stops working at once", Args: argsBetween(1, 1)}
	addOutput(rotate)
	a.leaf(rotate, runKeyRotate)
	expire := &cobra.Command{Use: "expire NAME WHEN", Short: "set or change a stored key's expiry: a duration from now (720h, 10m) or an RFC 3339 time; the secret stays", Args: argsBetween(2, 2)}
	addOutput(expire)
	a.leaf(expire, runKeyExpire)
	revoke := &cobra.Command{Use: "revoke NAME", Short: "revoke a stored key; its secret stops working at once", Args: argsBetween(1, 1)}
	a.leaf(revoke, runKeyRevoke)
	return a.group("keys", "API keys stored on the server: create, list, rotate, expire or revoke them (ADMIN only)", create, list, rotate, expire, revoke)
}

// runKeyCreate stores a key. --expires is a duration (sent as ttl) when it
// reads as one, else a time (sent as expiresAt); the server checks both.
func runKeyCreate(e *env, name, role string, sessions, queues *[]string, expires string) int {
	body := apiclient.CreateAPIKeyRequest{Name: name, Role: role, Sessions: sessions, Queues: queues}
	if expires != "" {
		if _, err := time.ParseDuration(expires); err == nil {
			body.Ttl = &expires
		} else {
			body.ExpiresAt = &expires
		}
	}
	res, err := e.api.CreateAPIKeyWithResponse(e.ctx, &apiclient.CreateAPIKeyParams{YuktaChannel: ptr(apiclient.CreateAPIKeyParamsYuktaChannel(channel))}, body)
	if err != nil {
		return e.callError(err)
	}
	if res.JSON201 == nil {
		return e.problem(res.HTTPResponse, res.Body)
	}
	return printIssuedKey(e, res.JSON201, res.Body, "created")
}

// runKeyRotate gives a stored key a new secret.
func runKeyRotate(e *env, pos []string) int {
	res, err := e.api.RotateAPIKeyWithResponse(e.ctx, pos[0], &apiclient.RotateAPIKeyParams{YuktaChannel: ptr(apiclient.RotateAPIKeyParamsYuktaChannel(channel))})
	if err != nil {
		return e.callError(err)
	}
	if res.JSON200 == nil {
		return e.problem(res.HTTPResponse, res.Body)
	}
	return printIssuedKey(e, res.JSON200, res.Body, "rotated (the old secret no longer works)")
}

// runKeyExpire sets a stored key's expiry: WHEN is sent as ttl when it
// reads as a duration, else as expiresAt, as keys create's --expires.
func runKeyExpire(e *env, pos []string) int {
	var body apiclient.SetAPIKeyExpiryRequest
	if _, err := time.ParseDuration(pos[1]); err == nil {
		body.Ttl = &pos[1]
	} else {
		body.ExpiresAt = &pos[1]
	}
	res, err := e.api.SetAPIKeyExpiryWithResponse(e.ctx, pos[0], &apiclient.SetAPIKeyExpiryParams{YuktaChannel: ptr(apiclient.SetAPIKeyExpiryParamsYuktaChannel(channel))}, body)
	if err != nil {
		return e.callError(err)
	}
	if res.JSON200 == nil {
		return e.problem(res.HTTPResponse, res.Body)
	}
	if e.machine() {
		return e.emit(res.Body, "")
	}
	fmt.Fprintf(e.stdout, "key: %s\naction: expiry set\nexpires: %s\n", escape(res.JSON200.Name), expiry(res.JSON200.ExpiresAt))
	return exitOK
}

// printIssuedKey prints a key with its secret, shown this once.
func printIssuedKey(e *env, k *apiclient.IssuedAPIKey, body []byte, action string) int {
	if e.machine() {
		if code := e.emit(body, ""); code != exitOK {
			return code
		}
	} else {
		fmt.Fprintf(e.stdout, "key: %s\naction: %s\nrole: %s\nsessions: %s\n", escape(k.Name), action, k.Role, keySessions(k.Sessions))
		if k.Role == apiclient.IssuedAPIKeyRoleWORKER {
			fmt.Fprintf(e.stdout, "queues: %s\n", keySessions(k.Queues))
		}
		fmt.Fprintf(e.stdout, "expires: %s\nsecret: %s\n", expiry(k.ExpiresAt), escape(k.Secret))
	}
	fmt.Fprintf(e.stderr, "%s: the secret is shown this once; send it as Authorization: Bearer <secret> (or YUKTA_API_KEY for this CLI)\n", e.name)
	if n := deref(k.Note); n != "" {
		fmt.Fprintf(e.stderr, "%s: %s\n", e.name, n)
	}
	return exitOK
}

// runKeyList prints every key as a table.
func runKeyList(e *env, _ []string) int {
	res, err := e.api.ListAPIKeysWithResponse(e.ctx)
	if err != nil {
		return e.callError(err)
	}
	if res.JSON200 == nil {
		return e.problem(res.HTTPResponse, res.Body)
	}
	if e.machine() {
		return e.emit(res.Body, "items")
	}
	tw := tabwriter.NewWriter(e.stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "KEY\tROLE\tSESSIONS\tQUEUES\tSOURCE\tHINT\tCREATED\tBY\tEXPIRES\tLAST USED\tFROM")
	for _, k := range res.JSON200.Items {
		queues := "-" // only a WORKER key takes tasks of queues
		if k.Role == apiclient.APIKeyRoleWORKER {
			queues = keySessions(k.Queues)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", escape(k.Name), k.Role, keySessions(k.Sessions), queues, k.Source,
			orDash(escape(deref(k.Hint))), stampPtr(k.CreatedAt), orDash(escape(deref(k.CreatedBy))), expiry(k.ExpiresAt),
			stampPtr(k.LastUsedAt), orDash(escape(deref(k.LastUsedFrom))))
	}
	_ = tw.Flush()
	return exitOK
}

// runKeyRevoke revokes a stored key.
func runKeyRevoke(e *env, pos []string) int {
	res, err := e.api.RevokeAPIKeyWithResponse(e.ctx, pos[0], &apiclient.RevokeAPIKeyParams{YuktaChannel: ptr(apiclient.RevokeAPIKeyParamsYuktaChannel(channel))})
	if err != nil {
		return e.callError(err)
	}
	if res.StatusCode() != http.StatusNoContent {
		return e.problem(res.HTTPResponse, res.Body)
	}
	fmt.Fprintf(e.stdout, "key: %s\naction: revoked\n", escape(pos[0]))
	return exitOK
}

// keySessions prints a session or queue list: "all" when there is none.
func keySessions(s *[]string) string {
	if s == nil {
		return "all"
	}
	return escape(strings.Join(*s, ","))
}

func expiry(t *time.Time) string {
	if t == nil {
		return "never"
	}
	return stamp(*t)
}
