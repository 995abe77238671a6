package coordlog

import (
	"errors"
	"fmt"
	"sync"
	"time"
	"unicode/utf16"

	"github.com/twmb/franz-go/pkg/kerr"
	"go.uber.org/zap"

	"github.com/kbroker/kbroker/partition"
	"github.com/kbroker/kbroker/partition/batch"
)

// State is what a Log needs from its owner's records of type R.
type State[R any] interface {
	// AppendKey appends r's record key to dst.
	AppendKey(dst []byte, r *R) []byte
	// AppendValue appends r's record value to dst and reports true, or
	// returns dst and false for a tombstone (a null value).
	AppendValue(dst []byte, r *R) ([]byte, bool)
	// Decode decodes a stored record; value is nil for a tombstone. ok
	// is false for a key of a record type the owner does not know (a
	// newer Kafka's), which is skipped; err is for a record of a known
	// type that does not decode.
	Decode(key, value []byte) (r R, ok bool, err error)
	// Apply applies a durable record to the state. It is called in log
	// order per partition: at Open for the snapshot's records and the
	// replayed ones, then for each write once durable, with Log.mu held.
	Apply(r *R)
	// Live calls yield with one record for every live key: the state a
	// snapshot holds. It runs with Log.mu held.
	Live(yield func(r *R))
}

// Config names a Log's files and messages.
type Config struct {
	// Name prefixes errors and log messages ("offsets", "txn").
	Name string
	// SnapshotPath is the snapshot file.
	SnapshotPath string
	// Magic starts the snapshot file: 8 bytes naming its format.
	Magic string
	// Logger is for warnings (skipped records, a failed log start move).
	Logger *zap.Logger
	// Now stamps the batches; default time.Now.
	Now func() time.Time
}

// Log writes records of type R to the partitions of an internal topic,
// applies them once durable, snapshots the state and replays it at Open.
// See the package comment.
type Log[R any] struct {
	cfg   Config
	st    State[R]
	ps    *partition.Store
	parts []*partition.Partition
	lg    *zap.Logger

	// startNext and startEnd are where replay ended at Open: the first
	// snapshot may cut there once the commit log is durable up to
	// startEnd.
	startNext []int64
	startEnd  int64

	mu struct {
		sync.Mutex
		closed bool
		// pending holds, per partition, the writes appended but not yet
		// applied, in log order.
		pending [][]*write[R]
		// applied holds, per partition, the writes applied since the
		// last snapshot's cut, in log order.
		applied [][]appliedWrite
		// cut is, per partition, the offset the last snapshot covers.
		cut []int64
		// openTxn is, per partition, the first offset of every producer's
		// transaction whose marker is not applied yet, and closedTxn the
		// transactions whose marker is applied but not yet below the
		// last cut. A snapshot never cuts past the first offset of
		// either: the snapshot holds the transaction's effect, and a
		// replay that starts inside it would miss its records but meet
		// the records that followed them (a later plain commit of the
		// same key would then win over the transaction's).
		openTxn   []map[int64]int64
		closedTxn [][]closedTxn
		dirty     bool
		buf       []byte
		kvs       []batch.KeyValue
	}
	// snapMu makes snapshots one at a time.
	snapMu sync.Mutex
}

// write is one batch of records on its way to being applied.
type write[R any] struct {
	part     int
	next     int64 // offset after the batch
	end      int64 // commit-log position after the batch
	recs     []R
	done     func(error)
	finished bool
	err      error
	// txn is the producer id of a transactional batch or of a marker,
	// -1 for a plain batch; marker and commit describe a marker.
	txn    int64
	marker bool
	commit bool
}

type appliedWrite struct{ next, end int64 }

// closedTxn is a transaction whose marker is applied: its first offset and
// the offset after its marker.
type closedTxn struct{ first, markerNext int64 }

// Loaded says what Open found.
type Loaded struct {
	// Snapshot is whether a snapshot was read.
	Snapshot bool
	// Replayed counts the records applied from the partitions.
	Replayed int
}

// Open loads the snapshot, if there is one, and replays the records of
// parts (the topic's partitions in index order) that follow it, applying
// everything to st. A damaged snapshot is an error wrapping ErrCorrupt:
// starting without it could lose state that the partitions no longer
// hold.
func Open[R any](cfg Config, ps *partition.Store, parts []*partition.Partition, st State[R]) (*Log[R], Loaded, error) {
	if cfg.Logger == nil {
		cfg.Logger = zap.NewNop()
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if len(parts) == 0 {
		return nil, Loaded{}, fmt.Errorf("%s: no partitions", cfg.Name)
	}
	l := &Log[R]{cfg: cfg, st: st, ps: ps, parts: parts, lg: cfg.Logger}
	l.mu.pending = make([][]*write[R], len(parts))
	l.mu.applied = make([][]appliedWrite, len(parts))
	l.mu.cut = make([]int64, len(parts))
	l.mu.openTxn = make([]map[int64]int64, len(parts))
	l.mu.closedTxn = make([][]closedTxn, len(parts))
	for i := range parts {
		l.mu.openTxn[i] = map[int64]int64{}
	}
	l.startNext = make([]int64, len(parts))
	l.startEnd = ps.CommitLog().WrotePosition()

	var ld Loaded
	var err error
	if ld.Snapshot, err = l.loadSnapshot(); err != nil {
		return nil, ld, err
	}
	for i, p := range parts {
		from := max(l.mu.cut[i], p.LogStartOffset())
		if hw := p.HighWatermark(); hw < l.mu.cut[i] {
			// The snapshot's cut never passes durable data, so this is
			// a damaged data directory; the records past hw are gone.
			l.lg.Warn(cfg.Name+" partition ends before its snapshot", zap.Int("partition", i), zap.Int64("end", hw), zap.Int64("cut", l.mu.cut[i]))
		}
		n, err := l.replay(p, from)
		if err != nil {
			return nil, ld, err
		}
		ld.Replayed += n
		l.startNext[i] = p.HighWatermark()
	}
	return l, ld, nil
}

// Partitions is the number of partitions of the topic.
func (l *Log[R]) Partitions() int { return len(l.parts) }

// replay applies the records of p from offset from on.
func (l *Log[R]) replay(p *partition.Partition, from int64) (int, error) {
	n := 0
	var decodeErr error
	err := p.EachBatch(from, func(b []byte) bool {
		h, err := batch.ParseHeader(b)
		if err != nil {
			decodeErr = err
			return false
		}
		ts, isTxn := l.st.(TxnState[R])
		if h.IsControl() {
			if m, err := batch.ParseEndTxnMarker(b); err == nil && isTxn {
				l.closeTxnLocked(int(p.Index()), h.ProducerID, h.BaseOffset+1)
				ts.ApplyMarker(h.ProducerID, m.Commit)
			}
			return true
		}
		transactional := h.IsTransactional() && isTxn
		if transactional {
			if _, ok := l.mu.openTxn[p.Index()][h.ProducerID]; !ok {
				l.mu.openTxn[p.Index()][h.ProducerID] = h.BaseOffset
			}
		}
		err = batch.Records(b, func(r batch.Record) bool {
			if h.BaseOffset+int64(r.OffsetDelta) < from {
				return true
			}
			rc, ok, err := l.st.Decode(r.Key, r.Value)
			if err != nil {
				// Only the owner writes here (and Kafka's admin client
				// may, as on Kafka): a record it cannot read is skipped,
				// not a reason to refuse to start.
				l.lg.Warn(l.cfg.Name+": skipping an unreadable record", zap.Int64("offset", h.BaseOffset+int64(r.OffsetDelta)), zap.Error(err))
				return true
			}
			if ok {
				if transactional {
					ts.ApplyTxn(h.ProducerID, &rc)
				} else {
					l.st.Apply(&rc)
				}
				n++
			}
			return true
		})
		if err != nil && decodeErr == nil {
			decodeErr = err
		}
		return decodeErr == nil
	})
	if err == nil {
		err = decodeErr
	}
	if err != nil {
		return n, fmt.Errorf("%s: replay %s-%d from %d: %w", l.cfg.Name, p.Topic(), p.Index(), from, err)
	}
	return n, nil
}

// produceVersion is the Produce version the owners' own batches are
// validated as.
const produceVersion = 9

// Write appends recs as one batch to partition part and applies them once
// durable; done (if not nil) hears the outcome: nil, or an error wrapping
// a Kafka error code (COORDINATOR_NOT_AVAILABLE after Close; the append's
// or the flush's KAFKA_STORAGE_ERROR, REQUEST_TIMED_OUT,
// MESSAGE_TOO_LARGE...). done may run before Write returns, or on another
// goroutine, never with Log.mu held.
func (l *Log[R]) Write(part int, recs []R, done func(error)) {
	l.write(part, recs, -1, 0, done)
}

// write appends recs, as a transactional batch of producer txn (with
// epoch) when txn >= 0.
func (l *Log[R]) write(part int, recs []R, txn int64, epoch int16, done func(error)) {
	if done == nil {
		done = func(error) {}
	}
	if len(recs) == 0 {
		done(nil)
		return
	}
	p := l.parts[part]
	now := l.cfg.Now().UnixMilli()
	l.mu.Lock()
	if l.mu.closed {
		l.mu.Unlock()
		done(kerr.CoordinatorNotAvailable)
		return
	}
	kvs := l.mu.kvs[:0]
	buf := l.mu.buf[:0]
	for j := range recs {
		k := len(buf)
		buf = l.st.AppendKey(buf, &recs[j])
		kvs = append(kvs, batch.KeyValue{Key: buf[k:len(buf):len(buf)]})
		v := len(buf)
		var ok bool
		if buf, ok = l.st.AppendValue(buf, &recs[j]); ok {
			kvs[j].Value = buf[v:len(buf):len(buf)]
		}
	}
	// Keys and values alias buf, which AppendBuild extends: build into
	// a second region of the same buffer only after they are laid out.
	opts := batch.BuildOptions{Timestamp: now, ProducerID: batch.NoProducerID, ProducerEpoch: batch.NoProducerEpoch}
	if txn >= 0 {
		opts.Attributes, opts.ProducerID, opts.ProducerEpoch = batch.AttrTransactional, txn, epoch
	}
	b := batch.AppendBuild(buf[len(buf):], opts, kvs)
	l.mu.buf, l.mu.kvs = buf[:0], kvs[:0]
	var res partition.AppendResult
	var err error
	if txn >= 0 {
		res, err = p.AppendCoordinator(b, now)
	} else {
		res, err = p.Append(b, produceVersion, now)
	}
	if err != nil {
		l.mu.Unlock()
		done(fmt.Errorf("%s: write to %s-%d: %w", l.cfg.Name, p.Topic(), p.Index(), err))
		return
	}
	if _, ok := l.mu.openTxn[part][txn]; txn >= 0 && !ok {
		l.mu.openTxn[part][txn] = res.BaseOffset
	}
	w := &write[R]{part: part, next: res.BaseOffset + int64(len(recs)), end: res.End, recs: recs, done: done, txn: txn}
	l.mu.pending[part] = append(l.mu.pending[part], w)
	l.mu.Unlock()
	l.ps.SubmitDurable(res.End, func(err error) { l.finish(w, err) })
}

// finish marks w durable (or failed) and applies every finished write at
// the head of its partition's queue, so that writes apply in log order.
func (l *Log[R]) finish(w *write[R], err error) {
	l.mu.Lock()
	w.finished, w.err = true, err
	q := l.mu.pending[w.part]
	var ready []*write[R]
	for len(q) > 0 && q[0].finished {
		h := q[0]
		q[0] = nil
		q = q[1:]
		if h.err == nil {
			ts, _ := l.st.(TxnState[R])
			switch {
			case h.marker:
				l.closeTxnLocked(h.part, h.txn, h.next)
				ts.ApplyMarker(h.txn, h.commit)
			case h.txn >= 0:
				for j := range h.recs {
					ts.ApplyTxn(h.txn, &h.recs[j])
				}
			default:
				for j := range h.recs {
					l.st.Apply(&h.recs[j])
				}
			}
			l.mu.applied[h.part] = append(l.mu.applied[h.part], appliedWrite{next: h.next, end: h.end})
			l.mu.dirty = true
		}
		ready = append(ready, h)
	}
	l.mu.pending[w.part] = q
	l.mu.Unlock()
	for _, h := range ready {
		h.done(h.err)
	}
}

// closeTxnLocked moves producerID's transaction on part, if one is open,
// to the closed ones, until a cut passes its marker (next is the offset
// after the marker).
func (l *Log[R]) closeTxnLocked(part int, producerID, next int64) {
	first, ok := l.mu.openTxn[part][producerID]
	if !ok {
		return
	}
	delete(l.mu.openTxn[part], producerID)
	l.mu.closedTxn[part] = append(l.mu.closedTxn[part], closedTxn{first: first, markerNext: next})
}

// EachPending calls fn, with Log.mu held, for every record appended but
// not yet applied, partition by partition in log order.
func (l *Log[R]) EachPending(fn func(r *R)) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, q := range l.mu.pending {
		for _, w := range q {
			for j := range w.recs {
				fn(&w.recs[j])
			}
		}
	}
}

// Close refuses later writes with COORDINATOR_NOT_AVAILABLE. Writes in
// flight still apply and complete. It does not snapshot: the owner calls
// Snapshot when it wants one.
func (l *Log[R]) Close() {
	l.mu.Lock()
	l.mu.closed = true
	l.mu.Unlock()
}

// PartitionFor places a key (a group id, a transactional id) on one of n
// partitions as Kafka does: Utils.abs(key.hashCode()) % n, with Java's
// String.hashCode over UTF-16 code units, where abs masks the sign bit
// rather than negating.
func PartitionFor(key string, n int) int {
	var h int32
	for _, u := range utf16.Encode([]rune(key)) {
		h = 31*h + int32(u)
	}
	return int(h&0x7fffffff) % n
}

// ErrCorrupt is wrapped by the errors of a snapshot that fails its checks.
var ErrCorrupt = errors.New("corrupt")
