package testenv

import (
	"os"
	"testing"
	"time"
)

// pollInterval is how often Eventually tries its condition: short next to
// the timeouts, long enough not to spin.
const pollInterval = 10 * time.Millisecond

// Eventually tries cond until it holds, failing the test if it still does
// not after timeout. It is for conditions with no event to wait on (a
// connection count, a state another process changes); where there is a
// channel or callback, wait on that instead.
func Eventually(t testing.TB, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: still not true after %v", what, timeout)
		}
		time.Sleep(pollInterval)
	}
}

// Kill9 sends SIGKILL to the child process what and waits until exited
// is closed (by whoever waits on the process), failing the test if the
// kill fails or the process is still there after timeout. A process that
// already exited on its own fails the test too: a crash loop must kill a
// running process, not find a dead one.
func Kill9(t testing.TB, what string, p *os.Process, exited <-chan struct{}, timeout time.Duration) {
	t.Helper()
	select {
	case <-exited:
		t.Fatalf("%s exited on its own before the kill", what)
	default:
	}
	if err := p.Kill(); err != nil {
		t.Fatalf("%s: SIGKILL: %v", what, err)
	}
	timer := time.NewTimer(timeout)
	defer timer.Stop()
	select {
	case <-exited:
	case <-timer.C:
		t.Fatalf("%s still running %v after SIGKILL", what, timeout)
	}
}
