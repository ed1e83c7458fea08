//go:build race

package harnesses

import "time"

// The race detector slows the interpreter about tenfold; the hang guard
// scales with it (it catches hangs, it is not a speed check).
const hangGuard = 100 * time.Second
