package flush

import (
	"syscall"
	"time"
)

// blockFor blocks the calling OS thread for d, like a device flush does
// inside fdatasync. time.Sleep would round sub-millisecond waits up to the
// netpoller's 1 ms resolution when the process is otherwise idle.
func blockFor(d time.Duration) {
	ts := syscall.NsecToTimespec(d.Nanoseconds())
	for syscall.Nanosleep(&ts, &ts) == syscall.EINTR {
	}
}
