package share

import (
	"encoding/binary"
	"hash/fnv"
	"slices"
	"strings"
)

// GroupRecord is a share group as its records in __consumer_offsets hold
// it (Kafka's ShareGroup* records; offsets/share_records.go encodes
// them): what a restart needs to bring the group back with its members'
// epochs and assignments, so that nobody rejoins.
type GroupRecord struct {
	Group                  string
	Epoch, AssignmentEpoch int32
	// MetadataHash is metadataHash(Topics).
	MetadataHash int64
	// Topics are the subscribed topics the assignment was computed
	// from, sorted by name: the initialized topics of Kafka's
	// ShareGroupStatePartitionMetadata.
	Topics  []Topic
	Members []MemberRecord
}

// MemberRecord is one member of a GroupRecord.
type MemberRecord struct {
	MemberID, Rack, ClientID, ClientHost string
	// Subscribed is sorted.
	Subscribed           []string
	Epoch, PreviousEpoch int32
	Assignment           []TopicPartitions
}

// Record returns the group as it is to be stored; false when there is no
// share group of that id (it was deleted). The caller stores records of
// one group in the order it takes them.
func (c *Coordinator) Record(groupID string) (GroupRecord, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	g := c.mu.groups[groupID]
	if g == nil {
		return GroupRecord{}, false
	}
	r := GroupRecord{Group: g.id, Epoch: g.epoch, AssignmentEpoch: g.assignmentEpoch,
		MetadataHash: metadataHash(g.topics), Topics: slices.Clone(g.topics)}
	ids := make([]string, 0, len(g.members))
	for id := range g.members {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	for _, id := range ids {
		m := g.members[id]
		r.Members = append(r.Members, MemberRecord{MemberID: m.id, Rack: m.rack, ClientID: m.clientID, ClientHost: m.clientHost,
			Subscribed: slices.Clone(m.subscribed), Epoch: m.epoch, PreviousEpoch: m.previousEpoch, Assignment: m.assignment})
	}
	return r, true
}

// Restore brings back a stored share group (at start-up, before any
// request): its epochs, subscribed topics and members with their epochs
// and assignments, as Kafka's coordinator replays its records. Each
// member gets a new session timeout from now, as Kafka schedules on
// loading; a member that does not heartbeat within it is removed. A
// record whose topics do not match its metadata hash (damaged, or
// written by another coordinator) has its topics dropped, so the next
// heartbeat recomputes the assignment.
func (c *Coordinator) Restore(r GroupRecord) {
	_, timeout := c.intervals(r.Group)
	expires := c.now().Add(timeout)
	g := &group{id: r.Group, epoch: r.Epoch, assignmentEpoch: r.AssignmentEpoch, members: map[string]*member{}}
	if metadataHash(r.Topics) == r.MetadataHash {
		g.topics = slices.Clone(r.Topics)
	}
	for _, mr := range r.Members {
		subs := slices.Clone(mr.Subscribed)
		slices.Sort(subs)
		a := slices.Clone(mr.Assignment)
		sortTopicPartitions(a)
		g.members[mr.MemberID] = &member{id: mr.MemberID, rack: mr.Rack, clientID: mr.ClientID, clientHost: mr.ClientHost,
			epoch: mr.Epoch, previousEpoch: mr.PreviousEpoch, subscribed: slices.Compact(subs), assignment: a,
			sent: true, expires: expires}
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.mu.groups[r.Group] = g
}

// metadataHash hashes the topics an assignment was computed from (FNV-1a
// over each topic's id, name and partition count, in name order). It
// plays the part of Kafka's metadata hash in ShareGroupMetadata: only
// this coordinator reads it back, so it need not be Kafka's murmur3.
func metadataHash(topics []Topic) int64 {
	if len(topics) == 0 {
		return 0
	}
	sorted := slices.Clone(topics)
	slices.SortFunc(sorted, func(a, b Topic) int { return strings.Compare(a.Name, b.Name) })
	h := fnv.New64a()
	var b [4]byte
	for _, t := range sorted {
		h.Write(t.ID[:])
		binary.BigEndian.PutUint32(b[:], uint32(len(t.Name)))
		h.Write(b[:])
		h.Write([]byte(t.Name))
		binary.BigEndian.PutUint32(b[:], uint32(t.Partitions))
		h.Write(b[:])
	}
	return int64(h.Sum64())
}
