package partition

import (
	"os"
	"path/filepath"
	"strconv"
	"time"

	"go.uber.org/zap"
)

// recoveryProgressEvery is the least time between two progress lines of
// a replay: a large recovery says where it is without flooding the log.
const recoveryProgressEvery = 5 * time.Second

// replayProgress logs how far the replay of the commit log has come, at
// most once per recoveryProgressEvery. Replays that finish sooner log
// nothing here; Open's summary says what they did.
type replayProgress struct {
	lg      *zap.Logger
	from    int64 // where the replay started
	end     int64 // an upper bound of where it will end (the files' end)
	started time.Time
	next    time.Time // when the next line is due
	entries int       // entries visited; the clock is read every 1024
}

func newReplayProgress(lg *zap.Logger, dir string, fileSize, from int64) *replayProgress {
	now := time.Now()
	return &replayProgress{lg: lg, from: from, end: commitLogEnd(dir, fileSize), started: now, next: now.Add(recoveryProgressEvery)}
}

// visited records one entry at commit-log position pos.
func (r *replayProgress) visited(pos int64, indexed int) {
	r.entries++
	if r.entries%1024 != 0 {
		return
	}
	now := time.Now()
	if now.Before(r.next) {
		return
	}
	r.next = now.Add(recoveryProgressEvery)
	fields := []zap.Field{
		zap.Int64("position", pos),
		zap.Int64("files_end", r.end),
		zap.Int("entries", r.entries),
		zap.Int("indexed", indexed),
		zap.Duration("elapsed", now.Sub(r.started).Round(time.Millisecond)),
	}
	if span := r.end - r.from; span > 0 {
		done := float64(pos-r.from) / float64(span)
		fields = append(fields, zap.String("done", strconv.FormatFloat(100*done, 'f', 1, 64)+"%"))
	}
	r.lg.Info("recovering commit log", fields...)
}

// commitLogEnd is the position just past the last commit-log file in dir
// (files are named by their 20-digit start position), or 0 if none.
func commitLogEnd(dir string, fileSize int64) int64 {
	names, _ := filepath.Glob(filepath.Join(dir, "commitlog", "[0-9]*"))
	var end int64
	for _, n := range names {
		base := filepath.Base(n)
		if len(base) != 20 {
			continue
		}
		if from, err := strconv.ParseInt(base, 10, 64); err == nil {
			if st, err := os.Stat(n); err == nil && st.Mode().IsRegular() {
				end = max(end, from+fileSize)
			}
		}
	}
	return end
}
