package flush

import (
	"context"
	"fmt"
	"runtime/pprof"
	"sync"
	"time"

	"go.uber.org/zap"
)

// finalRetries is how many times Close repeats the final flush or commit
// (RocketMQ RETRY_TIMES_OVER): a store may move one segment per call, and a
// transient error gets another chance before shutdown gives up on it.
const finalRetries = 10

// periodic is the loop shared by FlushRealTimeService and
// CommitRealTimeService. RocketMQ's two services differ only in the store
// operation, their defaults, what they do after progress and how they restart
// the thorough clock, so those are the fields here.
type periodic struct {
	// kind names the operation ("flush" or "commit") in errors and logs.
	kind string
	// op is Store.Flush or Store.Commit.
	op func(leastPages int) (int64, error)
	// interval, leastPages and thoroughInterval come from the config.
	interval         time.Duration
	leastPages       int
	thoroughInterval time.Duration
	// thoroughAfterProgress restarts the thorough clock after every round
	// that moved data, as RocketMQ's commit service does: a full commit is
	// forced only after thoroughInterval without progress.
	thoroughAfterProgress bool
	// onAdvance is the WithOnFlushed or WithOnCommitted hook.
	onAdvance func(pos int64)
	// afterProgress runs after a round that moved data (the commit service
	// wakes the flusher with it).
	afterProgress func()
	lg            *zap.Logger

	// wake carries Wake to the loop (capacity 1: wakeups coalesce).
	wake chan struct{}
	// quit is closed by close to stop the loop.
	quit chan struct{}
	// wg tracks the loop goroutine.
	wg sync.WaitGroup

	mu struct {
		sync.Mutex
		// started and closed record start and close.
		started, closed bool
	}

	// The fields below belong to the loop goroutine, and to close once the
	// loop has exited.

	// last is the position last reported to onAdvance.
	last int64
	// errLogged records that a failure was logged; the store's error is
	// sticky, so without it a broken disk would log twice a second forever.
	errLogged bool
}

// start launches the loop; label names it in profiles.
func (p *periodic) start(label string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.mu.started || p.mu.closed {
		return
	}
	p.mu.started = true
	p.wg.Add(1)
	go func() {
		defer p.wg.Done()
		pprof.Do(context.Background(), pprof.Labels("service", label), func(context.Context) {
			p.run()
		})
	}()
}

// wakeup asks the loop for a round now. It never blocks.
func (p *periodic) wakeup() {
	select {
	case p.wake <- struct{}{}:
	default:
	}
}

// run waits interval (or a wakeup) between rounds. A round uses leastPages,
// or 0 once thoroughInterval has passed since the last thorough round, so
// that a trickle of writes below the page threshold is still made durable
// (or visible) within thoroughInterval.
func (p *periodic) run() {
	timer := time.NewTimer(p.interval)
	defer timer.Stop()
	lastThorough := time.Now()
	for {
		select {
		case <-p.quit:
			return
		case <-timer.C:
		case <-p.wake:
		}
		now := time.Now()
		least := p.leastPages
		if now.Sub(lastThorough) >= p.thoroughInterval {
			least = 0
			lastThorough = now
		}
		pos, err := p.op(least)
		if d := time.Since(now); d > slowThreshold {
			p.lg.Warn("slow "+p.kind, zap.Duration("took", d), zap.Int("least_pages", least))
		}
		if p.advance(pos) && p.thoroughAfterProgress {
			lastThorough = time.Now()
		}
		p.logOnce(err)
		// Restart the interval after every round, woken or not (RocketMQ
		// waitForRunning), so a wakeup never causes a second round at once.
		timer.Reset(p.interval)
	}
}

// advance reports pos to the hook and runs afterProgress if pos moved.
func (p *periodic) advance(pos int64) bool {
	if pos <= p.last {
		return false
	}
	p.last = pos
	if p.onAdvance != nil {
		p.onAdvance(pos)
	}
	if p.afterProgress != nil {
		p.afterProgress()
	}
	return true
}

// logOnce logs the first failure of a run of failures at Error (a disk that
// cannot be flushed needs an operator) and stays silent until a round
// succeeds again.
func (p *periodic) logOnce(err error) {
	switch {
	case err == nil && p.errLogged:
		p.errLogged = false
		p.lg.Info(p.kind + " recovered")
	case err != nil && !p.errLogged:
		p.errLogged = true
		p.lg.Error(p.kind+" failed", zap.Error(err))
	}
}

// close stops the loop, waits for it, and runs the final operation with
// threshold 0 until it succeeds without moving data, at most finalRetries
// times. It returns the last attempt's error, or ErrClosed on a second call.
func (p *periodic) close() error { return p.stop(true) }

// stop stops the loop and waits for it; with final it then runs the final
// operation as close describes, without it (abandon) it leaves what is
// not yet done undone, as a crash would.
func (p *periodic) stop(final bool) error {
	p.mu.Lock()
	if p.mu.closed {
		p.mu.Unlock()
		return ErrClosed
	}
	p.mu.closed = true
	started := p.mu.started
	p.mu.Unlock()
	if started {
		close(p.quit)
		p.wg.Wait()
	}
	if !final {
		return nil
	}

	var err error
	for range finalRetries {
		var pos int64
		pos, err = p.op(0)
		if !p.advance(pos) && err == nil {
			break
		}
	}
	if err != nil {
		return fmt.Errorf("flush: final %s: %w", p.kind, err)
	}
	return nil
}
