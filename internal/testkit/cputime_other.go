//go:build !unix

package testkit

import "time"

// CPUTime is 0: this OS gives no process CPU time.
func CPUTime() time.Duration { return 0 }
