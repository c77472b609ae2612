// Package supervisor holds the rules of supervisors: programs, rule sets,
// agents and internal workflows that watch signals about the units they
// own and answer with directives and verdicts (DESIGN §9). It is pure: no
// I/O, no clock but its arguments. docs/supervisors.md is its reference.
//
// # What is here
//
//   - The engine catalogue (rules, http, workflow, process) with each
//     engine's settings, signals and default allowed commands, and the
//     rule presets as parameterised templates (catalog.go, preset.go).
//   - The shell every engine shares, Supervisor: id, name, engine, owned
//     units, parent, allowed commands, reviews, tick period, enabled. New
//     and Parse validate and list every problem at once; Restore rebuilds
//     a stored one; CheckParent refuses parent cycles and missing parents.
//   - Signals: the closed set of kinds and the {cursor, kind, signal}
//     envelope.
//   - Directives: the {key, cause?, reason?, ifStatus?, command} envelope
//     with the closed command vocabulary and its targets (ParseDirective),
//     and CheckDirective, which decides whether a supervisor may send one.
//   - Verdicts that answer reviews, and how no opinion escalates.
//   - The hold ledger of a run (RunHolds), one transition table.
//   - The rules engine's rule document (ParseRuleDocument): structure,
//     the variables its CEL conditions may read, matching, the sliding
//     window and how a document answers a review. CEL itself is compiled
//     and evaluated by an adapter through ExprChecker and callbacks.
//   - Reviews (review.go): a command held until its reviewers' verdicts,
//     one transition table, with parents, timeouts and approvals.
//   - Credentials of the agent API (credential.go): the token format
//     (prefix, 200 random bits, checksum; ParseToken refuses a typo
//     before any lookup), its SHA-256, ttlHours and allowedAddresses.
package supervisor
