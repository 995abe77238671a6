package group

import (
	"bytes"
	"time"
)

// Record is a classic group as Kafka persists it in a GroupMetadata
// record of __consumer_offsets (GroupMetadataValue): what a restart needs
// to bring the group back with its generation, leader and members. It is
// taken when a generation gets its assignment (Stable), when the group
// empties and when a static member of a Stable group is replaced, the
// moments Kafka writes the record (GroupMetadataManager.storeGroup,
// ClassicGroup's groupMetadataRecord).
type Record struct {
	Group        string
	ProtocolType string
	Generation   int32
	// Protocol is the selected protocol; "" for an Empty group.
	Protocol string
	// Leader is the leader's member id; "" for an Empty group.
	Leader  string
	Members []RecordMember
}

// RecordMember is one member of a Record. Subscription is the member's
// metadata for the selected protocol, all Kafka keeps of its protocols.
type RecordMember struct {
	MemberID, InstanceID, ClientID, ClientHost string
	SessionTimeout, RebalanceTimeout           time.Duration
	Subscription, Assignment                   []byte
}

// Record returns the group's record when it is in a state Kafka persists
// (Stable or Empty); ok is false otherwise (a rebalance in progress, whose
// outcome is recorded when it ends) and for a group that does not exist.
// The slices are the group's: do not modify them.
func (c *Coordinator) Record(groupID string) (r Record, ok bool) {
	if !c.enter() {
		return Record{}, false
	}
	defer c.wg.Done()
	g, _ := c.lockGroup(groupID, false)
	if g == nil {
		return Record{}, false
	}
	defer g.mu.Unlock()
	if g.mu.state != Stable && g.mu.state != Empty {
		return Record{}, false
	}
	r = Record{Group: groupID, ProtocolType: g.mu.protocolType, Generation: g.mu.generation}
	if g.mu.state == Empty {
		return r, true
	}
	r.Protocol, r.Leader = g.mu.protocolName, g.mu.leader
	r.Members = make([]RecordMember, 0, len(g.mu.members))
	for _, m := range g.mu.members {
		r.Members = append(r.Members, RecordMember{
			MemberID: m.id, InstanceID: m.instanceID, ClientID: m.clientID, ClientHost: m.clientHost,
			SessionTimeout: m.sessionTimeout, RebalanceTimeout: m.rebalanceTimeout,
			Subscription: m.metadata(g.mu.protocolName), Assignment: m.assignment,
		})
	}
	return r, true
}

// Restore recreates, at start-up, a group from its last persisted record
// (ClassicGroup.fromRecords and GroupMetadataManager.onLoaded): a record
// with members brings the group back Stable, with its generation, leader,
// selected protocol and every member's id, instance id, timeouts,
// subscription and assignment, so that members carry on with their
// heartbeats and commits as if nothing happened. Each member's session
// timer starts afresh now; a member that does not come back expires from
// the restored state, which rebalances the group as any expiry does. Each
// member supports only the selected protocol with its subscription, which
// is all the record keeps (as in Kafka, a rejoin listing other protocols
// counts as changed metadata). A record without members restores an Empty
// group with its protocol type and generation, so that ListGroups shows
// it, a stale commit gets ILLEGAL_GENERATION or UNKNOWN_MEMBER_ID and the
// next rebalance continues the count. A group that already exists is left
// alone, and so is an id a consumer group holds.
func (c *Coordinator) Restore(r Record) {
	if !c.enter() {
		return
	}
	defer c.wg.Done()
	g, err := c.lockGroup(r.Group, true)
	if err != nil {
		return // a consumer group with members holds the id
	}
	var e effects
	defer func() {
		g.mu.Unlock()
		e.run()
	}()
	if g.mu.state != Empty || g.mu.generation != 0 || g.mu.protocolType != "" || len(g.mu.members) > 0 {
		return
	}
	g.mu.protocolType = r.ProtocolType
	g.mu.generation = r.Generation
	if len(r.Members) == 0 || r.Protocol == "" {
		return
	}
	for _, rm := range r.Members {
		if rm.MemberID == "" || g.mu.byID[rm.MemberID] != nil {
			continue // a damaged record: keep what makes sense
		}
		m := &member{
			id: rm.MemberID, instanceID: rm.InstanceID, clientID: rm.ClientID, clientHost: rm.ClientHost,
			sessionTimeout: rm.SessionTimeout, rebalanceTimeout: rm.RebalanceTimeout,
			protocolType: r.ProtocolType,
			protocols:    []Protocol{{Name: r.Protocol, Metadata: bytes.Clone(rm.Subscription)}},
			assignment:   bytes.Clone(rm.Assignment),
		}
		if m.assignment == nil {
			m.assignment = []byte{}
		}
		g.addLocked(m, nil)
	}
	if len(g.mu.members) == 0 {
		return
	}
	g.mu.protocolName = r.Protocol
	if g.mu.byID[r.Leader] != nil {
		g.mu.leader = r.Leader
	}
	// Not transitionLocked: the hook would write the record just read.
	g.mu.state = Stable
	for _, m := range g.mu.members {
		g.scheduleExpiryLocked(m, m.sessionTimeout)
	}
	if len(g.mu.members) > c.cfg.MaxSize {
		// group.max.size went down since: rebalance so that the
		// members over it can commit and leave (onLoaded).
		g.prepareRebalanceLocked(&e)
	}
}
