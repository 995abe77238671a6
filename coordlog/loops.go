package coordlog

import "sync"

// Loops runs a coordinator store's background goroutines (snapshots,
// expiry) and stops them exactly once, the part of a store's lifecycle
// that the offsets store and the share-group state store have in common.
// The zero value is ready to use.
type Loops struct {
	mu      sync.Mutex
	stopped bool
	stop    chan struct{}
	wg      sync.WaitGroup
}

// stopChan returns the channel closed at Stop, made on first use.
func (l *Loops) stopChan() chan struct{} {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.stop == nil {
		l.stop = make(chan struct{})
	}
	return l.stop
}

// Go runs f on a new goroutine that Stop waits for; f returns once stop
// is closed.
func (l *Loops) Go(f func(stop <-chan struct{})) {
	stop := l.stopChan()
	l.wg.Add(1)
	go func() {
		defer l.wg.Done()
		f(stop)
	}()
}

// Stop runs first (the store closes its log there, so that writes after
// it fail instead of waiting), then stops the goroutines and waits for
// them. It reports false, doing nothing, when the loops were stopped
// already, so that Close and Abandon may both be called.
func (l *Loops) Stop(first func()) bool {
	stop := l.stopChan()
	l.mu.Lock()
	if l.stopped {
		l.mu.Unlock()
		return false
	}
	l.stopped = true
	l.mu.Unlock()
	if first != nil {
		first()
	}
	close(stop)
	l.wg.Wait()
	return true
}
