//go:build !linux

package flush

import "time"

// blockFor waits for d. Off Linux a busy wait stands in for the blocking
// syscall; it costs a core, which only matters to benchmarks.
func blockFor(d time.Duration) {
	for start := time.Now(); time.Since(start) < d; {
	}
}
