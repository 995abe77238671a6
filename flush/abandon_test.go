package flush

import (
	"errors"
	"testing"
	"testing/synctest"
	"time"

	"go.uber.org/zap/zaptest"
)

// Abandon, for crash-like restarts, ends the services without the final
// round Close runs: nothing is committed or flushed that was not already,
// and a waiter gets ErrClosed rather than an answer.
func TestAbandonSkipsTheFinalRound(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		store := &fakeStore{pool: true}
		committer := NewCommitRealTimeService(store, CommitRealTimeConfig{Interval: time.Hour, ThoroughInterval: time.Hour},
			WithLogger(zaptest.NewLogger(t)))
		committer.Start()
		flusher := NewFlushRealTimeService(store, FlushRealTimeConfig{Interval: time.Hour, ThoroughInterval: time.Hour},
			WithLogger(zaptest.NewLogger(t)))
		flusher.Start()
		gc := NewGroupCommitService(store, GroupCommitConfig{}, WithLogger(zaptest.NewLogger(t)))
		entered, release := store.blockFlushes()
		gc.Start()
		first := awaitAsync(t.Context(), gc, store, store.append(100))
		<-entered // the first round is in the store's Flush
		second := awaitAsync(t.Context(), gc, store, store.append(100))
		synctest.Wait()
		commitsBefore, flushesBefore := len(store.commitArgs()), store.flushes()

		if err := committer.Abandon(); err != nil {
			t.Fatalf("committer Abandon: %v", err)
		}
		if err := flusher.Abandon(); err != nil {
			t.Fatalf("flusher Abandon: %v", err)
		}
		abandoned := make(chan error, 1)
		go func() { abandoned <- gc.Abandon() }()
		synctest.Wait()
		release()
		if err := <-abandoned; err != nil {
			t.Fatalf("group commit Abandon: %v", err)
		}
		<-first // answered by the round in progress or refused; either is a crash's outcome
		if r := <-second; !errors.Is(r.err, ErrClosed) {
			t.Fatalf("waiter left for the final round: %v, want ErrClosed", r.err)
		}
		if got := len(store.commitArgs()); got != commitsBefore {
			t.Fatalf("commits: %d after Abandon, %d before", got, commitsBefore)
		}
		if got := store.flushes(); got != flushesBefore {
			t.Fatalf("flushes: %d after Abandon, %d before (the one in progress)", got, flushesBefore)
		}
		if err := gc.Close(); !errors.Is(err, ErrClosed) {
			t.Fatalf("Close after Abandon: %v, want ErrClosed", err)
		}
	})
}
