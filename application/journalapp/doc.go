// Package journalapp keeps the observer journal (DESIGN §10). The Observer
// consumes the event outbox in commit order and appends hash-chained records
// per execution, in batches, signing a checkpoint when an execution settles;
// it is a third party that never changes execution, and when it stops or
// lags it catches up from its stored position. The read use cases export a
// journal as NDJSON, verify it (VALID only with a signed checkpoint at its
// tip) and fold it into the projection. The record format, the chain and the
// verification rules live in domain/journal; this package sequences them
// against the ports it declares.
package journalapp
