package httpapi

// ClaimedCLI is the channel recorded for a REST request that says, with
// "Yukta-Channel: cli", that the yukta command sent it. Any client can send
// that header, so the record says it is the client's claim: only the
// channels the server establishes itself (rest, mcp, webhook, schedule,
// engine) are recorded bare.
const ClaimedCLI = "cli (claimed)"
