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

import (
	"container/list"
	"math/rand/v2"
	"sync"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
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
	key               sessionKey
	offset            int64
	maxBytes          int32
	leaderEpoch       int32
	sent              bool // answered at least once
	hw, lso, logStart int64
}

// fetchSession is one client's session.
type fetchSession struct {
	id    int32
	epoch int32 // the epoch the next incremental request must carry
	parts map[sessionKey]*sessionPart
	order []sessionKey // Kafka answers partitions in the order they were added
	elem  *list.Element
	mu    sync.Mutex // a parked fetch updates the session after the handler returned
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
	if len(fs.byID) >= fs.slots {
		old := fs.lru.Back().Value.(*fetchSession)
		fs.lru.Remove(old.elem)
		delete(fs.byID, old.id)
	}
	id := rand.Int32()
	for id == 0 || fs.byID[id] != nil {
		id = rand.Int32()
	}
	s := &fetchSession{id: id, epoch: 1, parts: map[sessionKey]*sessionPart{}}
	s.elem = fs.lru.PushFront(s)
	fs.byID[id] = s
	return s
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
	}
}

// upsert records a requested partition in the session.
func (s *fetchSession) upsert(k sessionKey, rp *kmsg.FetchRequestTopicPartition) {
	p := s.parts[k]
	if p == nil {
		p = &sessionPart{key: k}
		s.parts[k] = p
		s.order = append(s.order, k)
	}
	p.offset, p.maxBytes, p.leaderEpoch = rp.FetchOffset, rp.PartitionMaxBytes, rp.CurrentLeaderEpoch
}

// forget removes a partition from the session.
func (s *fetchSession) forget(k sessionKey) {
	if _, ok := s.parts[k]; !ok {
		return
	}
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

// sessionTopics rebuilds the request's topic list from a session, in the
// session's order, so the planner reads every session partition.
func (s *fetchSession) topics() []kmsg.FetchRequestTopic {
	var out []kmsg.FetchRequestTopic
	idx := map[sessionKey]int{}
	for _, k := range s.order {
		p := s.parts[k]
		tk := sessionKey{topicID: k.topicID, topic: k.topic}
		i, ok := idx[tk]
		if !ok {
			rt := kmsg.NewFetchRequestTopic()
			rt.Topic, rt.TopicID = k.topic, k.topicID
			out = append(out, rt)
			i = len(out) - 1
			idx[tk] = i
		}
		rp := kmsg.NewFetchRequestTopicPartition()
		rp.Partition, rp.FetchOffset, rp.PartitionMaxBytes, rp.CurrentLeaderEpoch = k.partition, p.offset, p.maxBytes, p.leaderEpoch
		out[i].Partitions = append(out[i].Partitions, rp)
	}
	return out
}
