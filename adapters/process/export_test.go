package process

import "github.com/yukta/yukta/application/engines/processengine"

// CutLifeline closes the server's end of p's lifeline, which is what the
// guard sees when the server dies, however it dies.
func CutLifeline(p processengine.Process) { _ = p.(*proc).lifeline.Close() }
