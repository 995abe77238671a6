package partition

// Change counting and watchers, for fetch sessions (KIP-227).
//
// An incremental fetch answers only the partitions of its session that
// have records, an error, or new watermarks. Reading every partition of a
// session of 1,000 to find the few that changed costs the broker per fetch
// in proportion to the session, not to the activity; and parking such a
// fetch on 1,000 channels costs as much again. Instead a session watches
// its partitions (Watch): a caught-up partition is left alone until it
// tells the session it changed, and a parked fetch waits on one channel
// of the session's. Changes counts the changes, so that a change between
// a read and the start of a watch is not missed.

// Changes counts the moves of the partition's high watermark, last stable
// offset and log start offset, its leader epoch changes (a simulated
// cluster's leader moves, SetLeaderEpoch), and its deletion. It is incremented after
// the move is visible, so a reader that loads it before reading the
// offsets and finds it unchanged later knows that none of them moved.
func (p *Partition) Changes() uint64 { return p.changes.Load() }

// Watcher is told when a partition it watches changes.
type Watcher interface {
	// PartitionChanged is called after a move of the high watermark, the
	// last stable offset or the log start offset, a new leader epoch, and
	// at the deletion.
	// It runs under the partition's locks (an append's, among others):
	// it must be quick, must not block, and must not call the partition.
	PartitionChanged()
}

// Watch tells w about every change from now on. Watching twice is
// watching once.
func (p *Partition) Watch(w Watcher) {
	p.watchers.Lock()
	defer p.watchers.Unlock()
	for _, o := range p.watchers.list {
		if o == w {
			return
		}
	}
	p.watchers.list = append(p.watchers.list, w)
	p.watching.Store(int32(len(p.watchers.list)))
}

// Unwatch stops telling w.
func (p *Partition) Unwatch(w Watcher) {
	p.watchers.Lock()
	defer p.watchers.Unlock()
	for i, o := range p.watchers.list {
		if o == w {
			last := len(p.watchers.list) - 1
			p.watchers.list[i] = p.watchers.list[last]
			p.watchers.list[last] = nil
			p.watchers.list = p.watchers.list[:last]
			p.watching.Store(int32(last))
			return
		}
	}
}

// signalWatchers tells every watcher. A leaf lock but for what the
// watchers take: taken after p.vis is released.
func (p *Partition) signalWatchers() {
	if p.watching.Load() == 0 {
		return // most partitions, on every append: no lock
	}
	p.watchers.Lock()
	for _, w := range p.watchers.list {
		w.PartitionChanged()
	}
	p.watchers.Unlock()
}
