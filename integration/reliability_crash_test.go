package integration

// The broker loses nothing it acknowledged across SIGKILLs under the full
// load of reliability_helpers_test.go, in sync and async flush mode; pool
// mode loses at most what its commit service had not yet written.

import (
	"testing"
	"time"

	"github.com/kbroker/kbroker/internal/testenv"
)

// TestReliabilityCrash: the binary under the full load (an idempotent
// producer, a committing group member and a transactional producer, at
// once) is killed with SIGKILL a random 0–300 ms after each part of the
// load had its first acknowledgement, and started again on its data
// directory; KBROKER_RELIABILITY_KILLS times in sync mode (20 by
// default), a quarter of that (at least 5) in async and pool mode. After
// every restart, which must succeed and log no error:
//
//   - a read_uncommitted pass over the plain topic finds offsets dense
//     from 0 and each value once, and every acknowledged record at its
//     acknowledged partition and offset;
//   - the group's committed offsets are at least the last acknowledged
//     commit of each partition, at most the end offsets;
//   - read_committed shows every record of each acknowledged committed
//     transaction, none of an aborted one or of one open at a kill, and a
//     transaction whose commit was in flight wholly or not at all; after
//     the last kill every open transaction is aborted by the broker (the
//     last stable offsets reach the end offsets) and everything is checked.
//
// In sync and async mode nothing acknowledged may be missing (async: the
// page cache survives a SIGKILL). Pool mode acknowledges writes in its
// pool buffers, before the commit service writes them to the files: what
// a kill loses (records, group commits, committed transactions) is
// measured and logged; the test fails only if a lost one was acknowledged
// more than poolLossBound before its kill (the documented bound is one
// commit interval, 200 ms), or if what survived is inconsistent.
func TestReliabilityCrash(t *testing.T) {
	t.Parallel()
	kills := testenv.Count(t, "KBROKER_RELIABILITY_KILLS", 20)
	for _, c := range []struct {
		flush string
		kills int
		lossy bool
		pad   int
	}{
		{"sync", kills, false, 256},
		{"async", max(5, kills/4), false, 256},
		// A loaded commit-log file has no pool buffer: only a file
		// allocated by the running broker has one. So that every round
		// gets to one, the pool rounds write several 1 MiB files each.
		{"pool", max(5, kills/4), true, 8192},
	} {
		t.Run(c.flush, func(t *testing.T) {
			t.Parallel()
			start := time.Now()
			r := startRel(t, relOpts(c.flush), c.lossy, c.pad)
			for round := 1; round <= c.kills; round++ {
				r.round(round, r.kill)
				if clean := r.restart(round); clean {
					t.Errorf("round %d: the store was clean after a SIGKILL", round)
				}
				r.verify(round, round == c.kills)
				if t.Failed() {
					return
				}
			}
			r.report(c.flush+" mode", time.Since(start))
			for _, l := range []struct {
				what string
				age  time.Duration
			}{{"record", r.fig.maxLossAge}, {"group commit", r.fig.maxCommitLossAge}, {"committed transaction", r.fig.maxTxnLossAge}} {
				if c.lossy && l.age > poolLossBound {
					t.Errorf("pool mode lost a %s acknowledged %v before its kill, more than %v", l.what, l.age, poolLossBound)
				}
			}
		})
	}
}

// poolLossBound is how long before a kill a record that pool mode loses
// may have been acknowledged: the commit service writes the pool buffers
// every 200 ms (and at once when woken by an append), plus generous
// slack for scheduling under -race on a loaded machine.
const poolLossBound = time.Second
