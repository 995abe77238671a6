package log

import (
	"context"
	"sync"
	"testing"
)

// TestFlushWhileDeleting flushes while retention deletes the oldest files
// that have not been flushed yet. The flusher works from a snapshot of the
// file list; a file deleted after the snapshot was unmapped under it, and
// its msync failed with ENOMEM, which made the log refuse every later
// write (a sticky flush failure) over data that retention had removed.
func TestFlushWhileDeleting(t *testing.T) {
	t.Parallel()
	const fileSize = 4096
	l, _ := openLog(t, testConfig(t, fileSize))
	var wg sync.WaitGroup
	done := make(chan struct{})
	var flushErr error
	wg.Go(func() {
		for {
			select {
			case <-done:
				return
			default:
			}
			if _, err := l.Flush(0); err != nil {
				flushErr = err
				return
			}
		}
	})
	for i := range 1000 {
		res, err := l.Append(key(i), payload(i, 700))
		if err != nil {
			t.Errorf("append %d: %v (flusher: %v)", i, err, flushErr)
			break
		}
		// Keep one whole file behind the one written to.
		if _, err := l.DeleteBefore(context.Background(), res.Pos-fileSize); err != nil {
			t.Errorf("delete before %d: %v", res.Pos-fileSize, err)
			break
		}
	}
	close(done)
	wg.Wait()
	if flushErr != nil {
		t.Fatalf("flush while deleting: %v", flushErr)
	}
}
