package partition

// Summaries of unopened consume queues.
//
// Retention and the size metric read every partition's batches, which
// would open every consume queue at the first retention pass or metrics
// scrape after a restart and undo lazy opening (lazy.go): 10,000 idle
// partitions would map 10,000 queue files again. The checkpoint therefore
// keeps, per partition, the little they need (queueSummary): the first
// batch's commit-log position, its running maximum timestamp, its size and
// the bytes of all batches. While a partition's queue stays closed nothing
// was appended to it, so the summary is exact as long as the log start
// offset has not moved since it was taken (DeleteRecords moves it without
// opening the queue; then the summary no longer counts).
//
// Retention opens a closed queue only when the summary says that the
// partition has data to drop. A DeleteRecords before a restart can leave
// queue files wholly below the log start offset: they stay until the queue
// opens (a few KiB of index; the commit-log files they point to go).

// queueSummary describes a partition's batches in [From, Next).
type queueSummary struct {
	// From and Next are the log start and next offsets it describes.
	From, Next int64
	// Pos is the commit-log position of the batch holding From (as in
	// consumequeue.Entry), -1 when the partition holds no batch.
	Pos int64
	// MaxTsSoFar and Size are that batch's running maximum timestamp
	// and size.
	MaxTsSoFar int64
	Size       int32
	// Bytes is the size of the batches from the one holding From on.
	Bytes int64
}

// keeps reports whether retention (retentionStart) would leave the log
// start offset where it is: the first batch is young enough for
// retention.ms (its running maximum timestamp is what FindTimestamp
// compares), and dropping it would leave less than retention.bytes.
func (s *queueSummary) keeps(cfg *TopicConfig, nowMs int64) bool {
	if s.Pos < 0 {
		return true
	}
	if cfg.RetentionMs >= 0 && s.MaxTsSoFar < nowMs-cfg.RetentionMs {
		return false
	}
	if cfg.RetentionBytes >= 0 && s.Bytes-int64(s.Size) >= cfg.RetentionBytes {
		return false
	}
	return true
}

// closedSummary returns the summary of p's batches if its queue is not
// open and the summary still describes them, else nil (open the queue).
func (p *Partition) closedSummary() *queueSummary {
	s := p.summary.Load()
	if s == nil || p.cq.Load() != nil || p.clean.Load() != nil {
		return nil
	}
	if s.From != p.logStart.Load() || s.Next != p.logEnd.Load() {
		return nil
	}
	return s
}

// summarize returns the summary of p's batches in [start, next) for the
// checkpoint: the loaded one while the queue is closed, else taken from
// the queue at the cost of a search and of the batches appended since the
// last call. nil when it cannot be given (a compacted partition with a
// clean store, whose size is not only the queue's; a log start that moved
// meanwhile).
func (p *Partition) summarize(start, next int64) *queueSummary {
	if p.clean.Load() != nil {
		return nil
	}
	cq := p.cq.Load()
	if cq == nil {
		if s := p.summary.Load(); s != nil && s.From == start && s.Next == next {
			return s
		}
		return nil
	}
	s := &queueSummary{From: start, Next: next, Pos: -1}
	if start >= next {
		return s
	}
	e, ok := cq.Find(start)
	if !ok || e.BaseOffset >= next {
		return nil
	}
	s.Pos, s.MaxTsSoFar, s.Size = e.Pos, e.MaxTimestampSoFar, e.Size
	bytes, ok := p.sizeUpTo(start, next)
	if !ok {
		return nil
	}
	s.Bytes = bytes
	return s
}
