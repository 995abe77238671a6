package log

import (
	"fmt"
	"runtime/debug"
)

// guardFault runs fn with faults on memory accesses turned into panics, and
// turns such a panic into ErrFault. A store into a mapped page that the
// filesystem cannot back (a media error, a copy-on-write filesystem out of
// space) raises SIGBUS; without this guard that kills the whole broker.
// Panics that are not memory faults are re-raised: they are bugs.
func guardFault(fn func()) (err error) {
	old := debug.SetPanicOnFault(true)
	defer func() {
		debug.SetPanicOnFault(old)
		if r := recover(); r != nil {
			if addr, ok := r.(interface{ Addr() uintptr }); ok {
				err = fmt.Errorf("%w at address %#x", ErrFault, addr.Addr())
				return
			}
			panic(r)
		}
	}()
	fn()
	return nil
}
