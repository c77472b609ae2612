// Package access decides who may do what. It holds the roles, the one table
// of operations and the least role each needs, the principal a request acts
// as (with its optional session list), and the API keys that authenticate
// principals. It is the one access model for REST, MCP and the agent API;
// each edge authenticates with a Keyring and asks Principal.Can before it
// calls a use case.
//
// # Roles and operations
//
// Roles are ordered VIEWER < OPERATOR < ADMIN. VIEWER reads; OPERATOR also
// starts and controls executions, sets breakpoints, answers inputs and posts
// webhooks; ADMIN also applies and deletes sessions, manages supervisors and
// credentials and decides approvals. Operation.MinRole is the table; Allowed
// reads it. An operation missing from the table is denied to every role.
//
// WORKER stands outside the order: a WORKER key may take and answer the
// tasks of worker queues (WorkTasks, the worker API) and nothing else, and
// no other role, ADMIN included, may do that. AtLeast never relates WORKER
// to another role. A WORKER key may be limited to named queues
// (Principal.MayUseQueue; ValidateQueueName is the rule for queue names)
// and, like any key, to sessions.
//
// # Session limits
//
// A principal may be limited to a list of sessions. For a session outside
// its list, Principal.Can answers with the same error, text included, that
// the session store gives for a session that does not exist, so a key cannot
// learn which sessions exist by probing. Callers that filter lists or look a
// session up by other means must do the same: test SessionVisible and, for a
// session that is not visible, answer exactly as they do for an unknown one.
// A limited principal may read across sessions (sessionID "", with the result
// filtered by SessionVisible), but every write must name a session of its
// list: writes that touch no one session are refused.
//
// # Key file
//
// A key file lists named keys, one per line. Its grammar, where fields are
// separated by spaces or tabs:
//
//	file     = { line } ;                   lines end in "\n" or "\r\n"
//	line     = blank | comment | key ;
//	blank    = only spaces and tabs ;
//	comment  = [ space ] "#" { any } ;      "#" must be the first non-space character
//	key      = name role [ lists ] secret ;
//	lists    = sessions [ queues ] | queues [ sessions ] ;
//	name     = 1 to 64 of A-Z a-z 0-9 . _ -, starting with a letter or digit ;
//	role     = "VIEWER" | "OPERATOR" | "ADMIN" | "WORKER" ; any letter case
//	sessions = "sessions=" id { "," id } ;  ids as session.ValidID accepts
//	queues   = "queues=" queue { "," queue } ;  WORKER keys only; names as
//	           ValidateQueueName accepts ;
//	secret   = plain | "sha256:" 64 hex digits ;           prefix in any case
//	plain    = at least 24 printable ASCII characters, no spaces, not
//	           starting with "sha256:", "sessions=" or "queues=" ;
//
// For example:
//
//	# name      role      sessions           secret
//	alice       ADMIN                        sha256:11b179eb47a5e10c45b6c7604df8d4f001f994a819b682a80d2b787fd33d11fb
//	ci-bot      OPERATOR  sessions=etl,web   5xwTrbrxILLvMABuqkVq8KfiOQMYjr0C
//	dashboard   VIEWER                       sha256:93e4531a8d56908344603dfe82c09b92881a73078fb970076e82319af15878b8
//	gpu-pool    WORKER    queues=gpu,render  sha256:2bb80d537b1da3e38bd30361aa855686bde0eacd7162fef6a25fe97bf527a25b
//
// A trailing comment after a key is not allowed, because "#" may be part of a
// secret. Key names are unique regardless of letter case (a key is recorded
// as the actor "key:<name>"), and no two keys share a secret (a request could
// not tell which key sent it). A plain secret needs at least 24 characters:
// keys are stored as a fast, unsalted SHA-256 so that every request can be
// checked cheaply, and that only protects a secret with enough entropy to
// make brute force hopeless; "openssl rand -base64 32" prints a good one. To
// keep secrets out of the file, write the hash instead: the output of
// printf '%s' "$SECRET" | sha256sum.
//
// A file must hold at least one key. ParseKeyFile reports every bad line at
// once, by line number, and repeats no field of the file in its errors (only
// the names of a session or queue list are quoted), since a misplaced field
// may be a secret. Only hashes are kept: a KeySpec holds no plain secret.
package access
