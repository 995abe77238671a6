package broker

// Fetch sessions (KIP-227). A consumer that fetches the same partitions
// again and again opens a session with a full fetch (epoch 0); afterwards it
// sends only what changed (new offsets, added and forgotten partitions) with
// the next epoch, and the broker answers only the partitions that have
// data, an error, or new watermarks. Sessions live in a bounded cache
// (max.incremental.fetch.session.cache.slots, Kafka's default 1000); when it
// is full the least recently used session is evicted, and a client whose
// session is gone gets FETCH_SESSION_ID_NOT_FOUND and starts over with a
// full fetch, as with Kafka.
//
// An incremental fetch costs the broker in proportion to the session's
// partitions that changed, not to all of them. A session partition whose
// last read left it caught up (no error, no records, nothing more below
// the high watermark or, read_committed, the last stable offset) is idle:
// it is neither resolved nor read again until the partition tells the
// session it changed (partition.Watcher: its watermarks or log start
// moved, its leader moved in a simulated cluster, or it was deleted), which puts it on the session's dirty list,
// or the client names it in a request. It would have been left out of the
// answer anyway, since nothing of what decides that (records, error,
// watermarks) changes without the partition telling. A fetch reads the
// partitions that are not idle and those on the dirty list, in session
// order. A parked session fetch waits on its session's own channel, which
// the dirty list signals, instead of on one channel per partition. Fetches on which a fault rule fired,
// and all fetches of a broker with an authorizer (whose answer may change
// with the ACLs alone), read every partition as before.

import (
	"cmp"
	"container/list"
	"math/rand/v2"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kbroker/kbroker/partition"
)

// sessionKey names a partition in a session: by topic id from Fetch v13,
// by name before.
type sessionKey struct {
	topicID   [16]byte
	topic     string
	partition int32
}

// sessionPart is a partition's state in a session.
type sessionPart struct {
	session           *fetchSession
	seq               uint64 // order of addition to the session
	key               sessionKey
	offset            int64
	maxBytes          int32
	leaderEpoch       int32
	sent              bool // answered at least once
	hw, lso, logStart int64
	// p is the partition the last read resolved (nil before the first,
	// or when it failed to resolve); sp watches it.
	p *partition.Partition
	// idle says the last read left the partition caught up: an
	// incremental fetch skips it until it is dirty (see the file comment).
	idle bool
	// dirty is set when p changed, and the part is then on the session's
	// dirty list; a fetch that takes it off clears it.
	dirty atomic.Bool
}

// PartitionChanged puts sp on its session's dirty list (once) and wakes a
// parked fetch. It is partition.Watcher's method: called under the
// partition's locks, it takes only the session's dirty lock, a leaf.
func (sp *sessionPart) PartitionChanged() {
	if sp.dirty.Swap(true) {
		return
	}
	s := sp.session
	s.dirtyMu.Lock()
	s.dirty = append(s.dirty, sp)
	s.dirtyMu.Unlock()
	select {
	case s.signal <- struct{}{}:
	default: // already signalled
	}
	if c := s.holder.Load(); c != nil {
		c.pokeHeld()
	}
}

// fetchSession is one client's session.
type fetchSession struct {
	id    int32
	epoch int32 // the epoch the next incremental request must carry
	parts map[sessionKey]*sessionPart
	order []sessionKey // Kafka answers partitions in the order they were added
	elem  *list.Element
	mu    sync.Mutex // a parked fetch updates the session after the handler returned
	// signal is signalled when a part goes on the dirty list; a parked
	// session fetch waits on it.
	signal chan struct{}
	// holder is the connection holding a parked fetch of the session
	// (fetch_held.go), which a change wakes too.
	holder atomic.Pointer[conn]
	// active are the parts that are not idle; guarded by mu.
	active map[*sessionPart]struct{}
	// seq numbers the parts in order of addition; guarded by mu.
	seq uint64
	// dirty are the parts whose partition changed since they were last
	// taken off; dirtyMu is a leaf lock (taken under partition locks).
	dirtyMu sync.Mutex
	dirty   []*sessionPart
	// dirtySpare is the array the dirty list had before takeDirty last
	// took it; guarded by mu.
	dirtySpare []*sessionPart
	// readAll makes every fetch read every partition, as before skipping
	// existed: the differential test compares the two.
	readAll bool
}

// fetchSessions is the broker's session cache.
type fetchSessions struct {
	mu    sync.Mutex
	slots int
	byID  map[int32]*fetchSession
	lru   *list.List // front: most recently used
}

// defaultFetchSessionSlots is Kafka's max.incremental.fetch.session.cache.slots.
const defaultFetchSessionSlots = 1000

func newFetchSessions(slots int) *fetchSessions {
	return &fetchSessions{slots: slots, byID: map[int32]*fetchSession{}, lru: list.New()}
}

// create opens a session, evicting the least recently used one when the
// cache is full; it returns nil when sessions are disabled (0 slots).
func (fs *fetchSessions) create() *fetchSession {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	if fs.slots <= 0 {
		return nil
	}
	var evicted *fetchSession
	if len(fs.byID) >= fs.slots {
		evicted = fs.lru.Back().Value.(*fetchSession)
		fs.lru.Remove(evicted.elem)
		delete(fs.byID, evicted.id)
	}
	id := rand.Int32()
	for id == 0 || fs.byID[id] != nil {
		id = rand.Int32()
	}
	s := &fetchSession{id: id, epoch: 1, parts: map[sessionKey]*sessionPart{}, signal: make(chan struct{}, 1),
		active: map[*sessionPart]struct{}{}}
	s.elem = fs.lru.PushFront(s)
	fs.byID[id] = s
	if evicted != nil {
		evicted.close()
	}
	return s
}

// close stops the session's watches. Lock order: fetchSessions.mu →
// fetchSession.mu → partition watchers.
func (s *fetchSession) close() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, sp := range s.parts {
		s.watch(sp, nil)
	}
}

// get returns a session and marks it used.
func (fs *fetchSessions) get(id int32) *fetchSession {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	s := fs.byID[id]
	if s != nil {
		fs.lru.MoveToFront(s.elem)
	}
	return s
}

// remove closes a session.
func (fs *fetchSessions) remove(id int32) {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	if s := fs.byID[id]; s != nil {
		fs.lru.Remove(s.elem)
		delete(fs.byID, id)
		s.close()
	}
}

// upsert records a requested partition in the session.
func (s *fetchSession) upsert(k sessionKey, rp *kmsg.FetchRequestTopicPartition) {
	p := s.parts[k]
	if p == nil {
		s.seq++
		p = &sessionPart{session: s, seq: s.seq, key: k}
		s.parts[k] = p
		s.order = append(s.order, k)
	}
	p.offset, p.maxBytes, p.leaderEpoch = rp.FetchOffset, rp.PartitionMaxBytes, rp.CurrentLeaderEpoch
	p.idle = false // named in a request: read it
	s.active[p] = struct{}{}
}

// forget removes a partition from the session.
func (s *fetchSession) forget(k sessionKey) {
	p, ok := s.parts[k]
	if !ok {
		return
	}
	s.watch(p, nil)
	delete(s.active, p)
	delete(s.parts, k)
	for i, o := range s.order {
		if o == k {
			s.order = append(s.order[:i], s.order[i+1:]...)
			break
		}
	}
}

// sessionRequest is what the fetch handler gets from the session layer:
// the partitions to read, and how to answer.
type sessionRequest struct {
	session     *fetchSession // nil for a sessionless fetch
	incremental bool
	errCode     int16 // a session error: answer it with no topics
}

// openSession applies the request's session fields (KIP-227 rules).
func (b *Broker) openSession(req *kmsg.FetchRequest) sessionRequest {
	if req.Version < 7 {
		return sessionRequest{}
	}
	const finalEpoch, initialEpoch = -1, 0
	switch {
	case req.SessionEpoch == finalEpoch:
		if req.SessionID != 0 {
			b.sessions.remove(req.SessionID)
		}
		return sessionRequest{}
	case req.SessionEpoch == initialEpoch:
		if req.SessionID != 0 {
			b.sessions.remove(req.SessionID)
		}
		s := b.sessions.create()
		if s == nil {
			return sessionRequest{}
		}
		s.mu.Lock()
		for i := range req.Topics {
			rt := &req.Topics[i]
			for j := range rt.Partitions {
				s.upsert(keyFor(req.Version, rt, rt.Partitions[j].Partition), &rt.Partitions[j])
			}
		}
		s.mu.Unlock()
		return sessionRequest{session: s}
	}
	s := b.sessions.get(req.SessionID)
	if s == nil {
		return sessionRequest{errCode: kerr.FetchSessionIDNotFound.Code}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.epoch != req.SessionEpoch {
		return sessionRequest{errCode: kerr.InvalidFetchSessionEpoch.Code}
	}
	s.epoch++
	if s.epoch < 0 {
		s.epoch = 1 // Kafka's FetchMetadata.nextEpoch wraps to 1
	}
	for i := range req.Topics {
		rt := &req.Topics[i]
		for j := range rt.Partitions {
			s.upsert(keyFor(req.Version, rt, rt.Partitions[j].Partition), &rt.Partitions[j])
		}
	}
	for _, ft := range req.ForgottenTopics {
		for _, p := range ft.Partitions {
			s.forget(sessionKey{topicID: ft.TopicID, topic: topicNameBefore13(req.Version, ft.Topic), partition: p})
		}
	}
	return sessionRequest{session: s, incremental: true}
}

// keyFor is a partition's session key for a request version.
func keyFor(version int16, rt *kmsg.FetchRequestTopic, partition int32) sessionKey {
	if version >= 13 {
		return sessionKey{topicID: rt.TopicID, partition: partition}
	}
	return sessionKey{topic: rt.Topic, partition: partition}
}

func topicNameBefore13(version int16, name string) string {
	if version >= 13 {
		return ""
	}
	return name
}

// topics rebuilds the request's topic list from a session, in the
// session's order, so the planner reads every session partition.
func (s *fetchSession) topics() []kmsg.FetchRequestTopic {
	parts := make([]*sessionPart, 0, len(s.order))
	for _, k := range s.order {
		parts = append(parts, s.parts[k])
	}
	return topicList(parts, nil)
}

// topicsFor is topics, built in st's arrays; unless all is set, only the
// partitions that are not idle and those on the dirty list, which it
// empties. Its cost follows those partitions, not the session's size. The
// caller holds s.mu.
func (s *fetchSession) topicsFor(all bool, st *fetchState) []kmsg.FetchRequestTopic {
	parts := st.sessionParts[:0]
	if all {
		s.takeDirty()
		for _, k := range s.order {
			parts = append(parts, s.parts[k])
		}
		st.sessionParts = parts
		st.sessionTopics = topicList(parts, st.sessionTopics)
		return st.sessionTopics
	}
	for sp := range s.active {
		parts = append(parts, sp)
	}
	for _, sp := range s.takeDirty() {
		if sp.idle && s.parts[sp.key] == sp {
			parts = append(parts, sp) // not in active: no duplicate
		}
	}
	slices.SortFunc(parts, func(a, b *sessionPart) int { return cmp.Compare(a.seq, b.seq) })
	st.sessionParts = parts
	st.sessionTopics = topicList(parts, st.sessionTopics)
	return st.sessionTopics
}

// takeDirty empties the dirty list and returns what it held, valid until
// the next takeDirty: the two arrays take turns, so that a session woken
// on every record does not allocate a list each time. A part taken off is
// dirty again at its partition's next change. The caller holds s.mu.
func (s *fetchSession) takeDirty() []*sessionPart {
	clear(s.dirtySpare)
	s.dirtyMu.Lock()
	d := s.dirty
	s.dirty = s.dirtySpare[:0]
	s.dirtyMu.Unlock()
	s.dirtySpare = d
	for _, sp := range d {
		sp.dirty.Store(false)
	}
	return d
}

// hasDirty reports whether a partition changed since the dirty list was
// last emptied.
func (s *fetchSession) hasDirty() bool {
	s.dirtyMu.Lock()
	defer s.dirtyMu.Unlock()
	return len(s.dirty) > 0
}

// topicList is the request topic list of parts, grouped by topic in the
// order of their first part. It runs for every incremental fetch (twice
// for one that parks), so it finds a part's topic without a map while
// there are few: the last topic (parts of one topic are usually
// neighbours), else a scan, and builds an index only past
// topicListScanMax topics. It builds the list in out's arrays (the topic
// array and each topic's partition array), which it overwrites.
func topicList(parts []*sessionPart, out []kmsg.FetchRequestTopic) []kmsg.FetchRequestTopic {
	out = out[:0]
	var idx map[sessionKey]int
	for _, p := range parts {
		k := p.key
		tk := sessionKey{topicID: k.topicID, topic: k.topic}
		i := -1
		switch n := len(out); {
		case n > 0 && out[n-1].Topic == k.topic && out[n-1].TopicID == k.topicID:
			i = n - 1
		case idx != nil:
			if j, ok := idx[tk]; ok {
				i = j
			}
		default:
			for j := range out {
				if out[j].Topic == k.topic && out[j].TopicID == k.topicID {
					i = j
					break
				}
			}
		}
		if i < 0 {
			i = len(out)
			if i < cap(out) {
				out = out[:i+1]
				out[i] = kmsg.FetchRequestTopic{Topic: k.topic, TopicID: k.topicID, Partitions: out[i].Partitions[:0]}
			} else {
				out = append(out, kmsg.FetchRequestTopic{Topic: k.topic, TopicID: k.topicID})
			}
			switch {
			case idx != nil:
				idx[tk] = i
			case len(out) > topicListScanMax:
				idx = make(map[sessionKey]int, 2*len(out))
				for j := range out {
					idx[sessionKey{topicID: out[j].TopicID, topic: out[j].Topic}] = j
				}
			}
		}
		rp := kmsg.NewFetchRequestTopicPartition()
		rp.Partition, rp.FetchOffset, rp.PartitionMaxBytes, rp.CurrentLeaderEpoch = k.partition, p.offset, p.maxBytes, p.leaderEpoch
		out[i].Partitions = append(out[i].Partitions, rp)
	}
	return out
}

// topicListScanMax is the most topics topicList scans for a part's
// topic before it builds a map.
const topicListScanMax = 8

// record remembers a read of a session partition: the watermarks
// answered and whether it left the partition caught up (idle); sp watches
// the partition read. version is the partition's change count from before
// the read: a change since, which the watch started too late to see,
// makes sp dirty. The caller holds s.mu.
func (s *fetchSession) record(sp *sessionPart, fp *fetchPart) {
	o := &fp.out
	sp.sent, sp.hw, sp.lso, sp.logStart = true, o.HighWatermark, o.LastStableOffset, o.LogStartOffset
	s.watch(sp, fp.p)
	sp.idle = fp.p != nil && o.ErrorCode == 0 && len(o.Ranges) == 0 && fp.offset >= fp.lastEnd
	if sp.idle {
		delete(s.active, sp)
		if fp.p.Changes() != fp.version {
			sp.PartitionChanged()
		}
	} else {
		s.active[sp] = struct{}{}
	}
}

// watch makes sp watch p instead of what it watched (nothing for nil).
// The caller holds s.mu.
func (s *fetchSession) watch(sp *sessionPart, p *partition.Partition) {
	if sp.p == p {
		return
	}
	if sp.p != nil {
		sp.p.Unwatch(sp)
	}
	if p != nil {
		p.Watch(sp)
	}
	sp.p = p
}

// watchPlan watches the partitions a fetch read before it parks; their
// states are recorded once its answer goes out.
func (s *fetchSession) watchPlan(plan *fetchPlan) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for i := range plan.parts {
		fp := &plan.parts[i]
		if sp := s.parts[fp.key]; sp != nil && fp.p != nil {
			s.watch(sp, fp.p)
		}
	}
}
