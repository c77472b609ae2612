package supervisor

import "github.com/yukta/yukta/domain/execution"

// ValidReviewID reports whether s has the form of a review id (a UUID, as
// the review gate mints them), so a malformed one is refused, as one that
// does not exist, before it reaches a store.
func ValidReviewID(s string) bool { return execution.ValidID(s) }

// ValidDelegationID reports whether s has the form of a delegation id (a
// UUID, as Delegate mints them).
func ValidDelegationID(s string) bool { return execution.ValidID(s) }
