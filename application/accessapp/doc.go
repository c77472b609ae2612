// Package accessapp holds the use cases of stored API keys: an ADMIN
// creates, lists, reads, rotates and revokes them (over REST, MCP and the
// CLI), and every instance keeps them in memory to authenticate requests
// (StoredKeys) without a query per request. domain/access decides what a
// key may do; this package keeps the keys.
package accessapp
