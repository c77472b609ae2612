// Package journalapp keeps the observer journal (DESIGN §10). The Observer
// consumes the event outbox in commit order and appends hash-chained records
// per execution, in batches, signing a checkpoint when an execution settles;
// it is a third party that never changes execution, and when it stops or
// lags it catches up from its stored position. The read use cases export a
// journal as NDJSON, verify it (VALID only with a signed checkpoint at its
// tip) and fold it into the projection. RegisterKey keeps the instances on
// one database signing with one key: the registry of signing keys (current
// and retired) that GetPublicKey lists and verification picks from by key
// id. The record format, the chain and the
// verification rules live in domain/journal; this package sequences them
// against the ports it declares.
package journalapp
