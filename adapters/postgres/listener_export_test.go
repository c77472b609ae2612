package postgres

import "time"

// SetIdleCheck shortens how long l waits quietly before it checks its
// connection; call it before Run.
func (l *Listener) SetIdleCheck(d time.Duration) { l.idle = d }

// CancelChannel is the channel the listener listens on.
const CancelChannel = cancelChannel

// InTx is inTx, for the external tests of its retries.
var InTx = inTx
