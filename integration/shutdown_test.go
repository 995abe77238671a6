package integration

// Graceful shutdown under load: SIGTERM loses nothing acknowledged, hangs
// no client and leaves a store that needs no recovery.

import (
	"syscall"
	"testing"
	"time"

	"github.com/kbroker/kbroker/internal/testenv"
)

// TestShutdown: the binary under the full load of
// reliability_helpers_test.go (an idempotent producer, a committing group
// member and a transactional producer, one of whose transactions is held
// open in even rounds) gets SIGTERM at a random moment, in each flush
// mode, KBROKER_SHUTDOWN_ROUNDS times (2 by default). It must exit with
// status 0 within 10 s, leaving no abort marker; the clients' requests in
// flight must end (answered or failed: every client stops within 30 s of
// the signal); the next start must find the store clean (no recovery
// scan: "store opened" with clean true) and log no error; and everything
// acknowledged must be there, checked as TestReliabilityCrash does — in
// pool mode too, whose stop commits and flushes what its pool buffers
// hold.
func TestShutdown(t *testing.T) {
	t.Parallel()
	rounds := testenv.Count(t, "KBROKER_SHUTDOWN_ROUNDS", 2)
	for _, flush := range []string{"sync", "async", "pool"} {
		t.Run(flush, func(t *testing.T) {
			t.Parallel()
			start := time.Now()
			r := startRel(t, relOpts(flush), false, 256)
			var slowest time.Duration
			for round := 1; round <= rounds; round++ {
				r.round(round, func() { slowest = max(slowest, r.term(round)) })
				if clean := r.restart(round); !clean {
					t.Errorf("round %d: the store needed recovery after a graceful stop", round)
				}
				r.verify(round, round == rounds)
				if t.Failed() {
					return
				}
			}
			r.report(flush+" mode, SIGTERM", time.Since(start))
			t.Logf("the slowest stop took %v after SIGTERM", slowest.Round(time.Millisecond))
		})
	}
}

// term is an interruption by SIGTERM: the broker must exit with status 0
// within stopTimeout and leave no abort marker. It returns how long the
// stop took.
func (r *relRun) term(round int) time.Duration {
	t := r.t
	t.Helper()
	start := time.Now()
	if err := r.b.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatalf("round %d: SIGTERM: %v", round, err)
	}
	select {
	case <-r.b.exited:
	case <-time.After(stopTimeout):
		r.b.cmd.Process.Kill()
		<-r.b.exited
		r.b.cmd = nil
		t.Fatalf("round %d: kbroker still running %v after SIGTERM under load", round, stopTimeout)
	}
	took := time.Since(start)
	r.b.cmd = nil
	if r.b.err != nil {
		t.Errorf("round %d: kbroker did not exit cleanly after SIGTERM under load: %v", round, r.b.err)
	}
	checkCleanStop(t, r.b.dir)
	t.Logf("round %d: stopped %v after SIGTERM", round, took.Round(time.Millisecond))
	return took
}
