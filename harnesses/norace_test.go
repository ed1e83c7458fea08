//go:build !race

package harnesses

import "time"

// hangGuard catches a harness that never stops; it is not a speed check.
const hangGuard = 10 * time.Second
