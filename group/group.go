package group

import (
	"bytes"
	"crypto/rand"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
)

// State is a classic group's state, with Kafka's names (GroupMetadata.scala
// GroupState, ClassicGroupState.java). doc.go draws the transitions.
type State int8

const (
	// Empty: no members. The group lingers for its offsets, or for a
	// simple consumer that commits with generation -1.
	Empty State = iota
	// PreparingRebalance: members are (re)joining; their JoinGroup
	// requests are parked until all have joined or the rebalance
	// timeout passes.
	PreparingRebalance
	// CompletingRebalance: join responses went out; the group waits for
	// the leader's SyncGroup with the assignment (AwaitingSync in old
	// Kafka versions).
	CompletingRebalance
	// Stable: the assignment was distributed; members heartbeat.
	Stable
	// Dead: the group was deleted. A Dead group is never in the
	// coordinator's map.
	Dead
)

var stateNames = [...]string{"Empty", "PreparingRebalance", "CompletingRebalance", "Stable", "Dead"}

// String returns Kafka's name of the state, as ListGroups and
// DescribeGroups report it ("PreparingRebalance").
func (s State) String() string {
	if s < 0 || int(s) >= len(stateNames) {
		return fmt.Sprintf("State(%d)", int8(s))
	}
	return stateNames[s]
}

// Protocol is one protocol a member supports (an assignor, for consumers)
// with the member's metadata for it.
type Protocol struct {
	Name     string
	Metadata []byte
}

// newMemberJoinTimeout bounds how long a new member's JoinGroup may stay
// parked: a new member cannot heartbeat (it has no member id yet) and a
// disconnected one would otherwise hold up the rebalance forever (Kafka's
// GroupCoordinator.NewMemberJoinTimeoutMs, 5 minutes).
const newMemberJoinTimeout = 5 * time.Minute

// member is one member of a group. Its fields are guarded by the group's mu.
type member struct {
	id         string // changes when a static member is replaced (KIP-345)
	instanceID string // group.instance.id; "" for a dynamic member
	clientID   string
	clientHost string

	sessionTimeout   time.Duration
	rebalanceTimeout time.Duration
	protocolType     string
	protocols        []Protocol // in the member's order of preference

	assignment []byte // from the leader's last SyncGroup

	// joinDone is set while the member's JoinGroup is parked
	// (Kafka's awaitingJoinCallback); syncDone likewise for SyncGroup.
	joinDone func(JoinResponse)
	syncDone func(SyncResponse)

	// isNew marks a member added in the current rebalance: it may expire
	// even while its JoinGroup is parked.
	isNew bool

	// expiry fires when the member missed its session timeout; expirySeq
	// tells a firing that lost the race with a reschedule to do nothing.
	expiry    *time.Timer
	expirySeq uint64
}

// hasSatisfiedHeartbeat reports whether an expiring session timer should
// spare the member: members waiting in a rebalance need not heartbeat,
// except new ones (ClassicGroupMember.hasSatisfiedHeartbeat).
func (m *member) hasSatisfiedHeartbeat() bool {
	if m.isNew {
		return false
	}
	return m.joinDone != nil || m.syncDone != nil
}

// matches reports whether protocols equal the member's, in order and byte
// for byte (MemberMetadata.matches).
func (m *member) matches(protocols []Protocol) bool {
	if len(protocols) != len(m.protocols) {
		return false
	}
	for i, p := range protocols {
		if p.Name != m.protocols[i].Name || !bytes.Equal(p.Metadata, m.protocols[i].Metadata) {
			return false
		}
	}
	return true
}

// metadata returns the member's metadata for the protocol named name.
func (m *member) metadata(name string) []byte {
	for _, p := range m.protocols {
		if p.Name == name {
			return p.Metadata
		}
	}
	return nil
}

// vote returns the member's most preferred protocol among candidates, or
// "" if it supports none (MemberMetadata.vote).
func (m *member) vote(candidates map[string]bool) string {
	for _, p := range m.protocols {
		if candidates[p.Name] {
			return p.Name
		}
	}
	return ""
}

// pendingMember is a member id handed out with MEMBER_ID_REQUIRED (KIP-394)
// whose JoinGroup has not come back yet. Until it does or its session
// timeout passes, a rebalance waits for it.
type pendingMember struct {
	timer *time.Timer
}

// group is one classic group. id and c never change; everything under mu
// is guarded by it, and the methods ending in Locked run with it held.
type group struct {
	id string
	c  *Coordinator

	mu struct {
		sync.Mutex

		state    State
		previous State // the state before the last transition
		// generation counts completed join phases (generationId).
		generation   int32
		protocolType string // set by the first member, kept while Empty
		protocolName string // selected at each new generation; "" when Empty
		leader       string // member id of the leader; "" without members

		members []*member          // in join order
		byID    map[string]*member // member id → member
		static  map[string]string  // group.instance.id → member id
		pending map[string]*pendingMember
		// pendingSync holds the members of a new generation that have not
		// sent SyncGroup yet; they are removed when the sync timer fires.
		pendingSync map[string]bool
		// supported counts, per protocol name, the members supporting it.
		supported map[string]int
		// awaiting counts members whose joinDone is set.
		awaiting int
		// newMemberAdded records a member added during the initial delay,
		// which extends the delay (InitialDelayedJoin).
		newMemberAdded bool

		// joinTimer ends the join phase (rebalance timeout or initial
		// delay); syncTimer ends the wait for SyncGroup. The sequence
		// numbers make a timer that fired after being replaced a no-op.
		joinTimer *time.Timer
		joinSeq   uint64
		syncTimer *time.Timer
		syncSeq   uint64
	}
}

// newGroup returns an Empty group.
func newGroup(c *Coordinator, id string) *group {
	g := &group{id: id, c: c}
	g.mu.byID = make(map[string]*member)
	g.mu.static = make(map[string]string)
	g.mu.pending = make(map[string]*pendingMember)
	g.mu.pendingSync = make(map[string]bool)
	g.mu.supported = make(map[string]int)
	return g
}

// effects collects what must run after the group's lock is released:
// completing parked requests and calling the state hook. Running callbacks
// outside the lock means a callback may call the Coordinator again.
type effects []func()

func (e *effects) add(f func()) { *e = append(*e, f) }

func (e effects) run() {
	for _, f := range e {
		f()
	}
}

// run calls f with the lock held, then runs the effects it collected.
func (g *group) run(f func(e *effects)) {
	var e effects
	g.mu.Lock()
	f(&e)
	g.mu.Unlock()
	e.run()
}

// transitionLocked moves the group to state s and reports Stable, Empty
// and Dead to the state hook.
func (g *group) transitionLocked(s State, e *effects) {
	g.mu.previous = g.mu.state
	g.mu.state = s
	if hook := g.c.onState; hook != nil && (s == Stable || s == Empty || s == Dead) {
		id := g.id
		e.add(func() { hook(id, s) })
	}
}

// notifyLocked reports the group's current state to the state hook again
// without a transition: a static member of a Stable group was replaced, a
// change Kafka persists (the new member id) though the state stays.
func (g *group) notifyLocked(e *effects) {
	if hook := g.c.onState; hook != nil {
		id, s := g.id, g.mu.state
		e.add(func() { hook(id, s) })
	}
}

// canRebalanceLocked: PreparingRebalance may follow Stable,
// CompletingRebalance and Empty (PreparingRebalance.validPreviousStates).
func (g *group) canRebalanceLocked() bool {
	switch g.mu.state {
	case Stable, CompletingRebalance, Empty:
		return true
	}
	return false
}

func (g *group) hasAllMembersJoinedLocked() bool {
	return len(g.mu.members) == g.mu.awaiting && len(g.mu.pending) == 0
}

// rebalanceTimeoutLocked is the largest rebalance timeout of the members.
func (g *group) rebalanceTimeoutLocked() time.Duration {
	var d time.Duration
	for _, m := range g.mu.members {
		d = max(d, m.rebalanceTimeout)
	}
	return d
}

// supportsProtocolsLocked reports whether a member with this protocol type
// and these protocols may join: any non-empty type and list for an Empty
// group; else the group's type and at least one protocol every member
// supports (GroupMetadata.supportsProtocols).
func (g *group) supportsProtocolsLocked(protocolType string, protocols []Protocol) bool {
	if g.mu.state == Empty {
		return protocolType != "" && len(protocols) > 0
	}
	if protocolType != g.mu.protocolType {
		return false
	}
	for _, p := range protocols {
		if g.mu.supported[p.Name] == len(g.mu.members) {
			return true
		}
	}
	return false
}

// countProtocolsLocked adds delta to the support count of each protocol
// the member lists (each name once, so a duplicate cannot fake support).
func (g *group) countProtocolsLocked(m *member, delta int) {
	seen := make(map[string]bool, len(m.protocols))
	for _, p := range m.protocols {
		if !seen[p.Name] {
			seen[p.Name] = true
			g.mu.supported[p.Name] += delta
		}
	}
}

// selectProtocolLocked picks the protocol of the next generation: among the
// protocols all members support, each member votes for its most preferred
// one and the most votes win (GroupMetadata.selectProtocol). Kafka breaks
// ties by hash-map order; here the protocol voted first (by the member that
// joined first) wins, so the choice is deterministic.
func (g *group) selectProtocolLocked() string {
	candidates := make(map[string]bool)
	for name, n := range g.mu.supported {
		if n == len(g.mu.members) {
			candidates[name] = true
		}
	}
	votes := make(map[string]int)
	var order []string
	for _, m := range g.mu.members {
		v := m.vote(candidates)
		if v == "" {
			continue
		}
		if votes[v] == 0 {
			order = append(order, v)
		}
		votes[v]++
	}
	best := ""
	for _, name := range order {
		if best == "" || votes[name] > votes[best] {
			best = name
		}
	}
	return best
}

// addLocked adds a member; done, if not nil, is its parked JoinGroup.
func (g *group) addLocked(m *member, done func(JoinResponse)) {
	if m.instanceID != "" {
		g.mu.static[m.instanceID] = m.id
	}
	if len(g.mu.members) == 0 {
		g.mu.protocolType = m.protocolType
	}
	if g.mu.leader == "" {
		g.mu.leader = m.id
	}
	g.mu.members = append(g.mu.members, m)
	g.mu.byID[m.id] = m
	g.countProtocolsLocked(m, 1)
	m.joinDone = done
	if done != nil {
		g.mu.awaiting++
	}
	g.removePendingLocked(m.id)
}

// removeLocked removes a member. A parked JoinGroup is answered
// UNKNOWN_MEMBER_ID with an empty member id, so a live client rejoins from
// scratch (GroupCoordinator.removeMemberAndUpdateGroup); a parked SyncGroup
// is answered UNKNOWN_MEMBER_ID too, where Kafka would drop it, so that no
// pending response is left without an answer.
func (g *group) removeLocked(m *member, e *effects) {
	if g.mu.byID[m.id] != m {
		return
	}
	g.completeJoinLocked(m, joinError("", kerr.UnknownMemberID), e)
	g.completeSyncLocked(m, SyncResponse{Err: kerr.UnknownMemberID}, e)
	g.countProtocolsLocked(m, -1)
	if m.instanceID != "" && g.mu.static[m.instanceID] == m.id {
		delete(g.mu.static, m.instanceID)
	}
	g.stopExpiryLocked(m)
	g.mu.members = slices.DeleteFunc(g.mu.members, func(x *member) bool { return x == m })
	delete(g.mu.byID, m.id)
	delete(g.mu.pendingSync, m.id)
	if g.mu.leader == m.id {
		g.mu.leader = ""
		if len(g.mu.members) > 0 {
			g.mu.leader = g.mu.members[0].id
		}
	}
}

// removePendingLocked forgets a member id handed out with MEMBER_ID_REQUIRED.
func (g *group) removePendingLocked(id string) {
	if p := g.mu.pending[id]; p != nil {
		p.timer.Stop()
		delete(g.mu.pending, id)
	}
}

// updateMemberLocked records a rejoining member's new protocols and timeouts
// and parks its JoinGroup (GroupMetadata.updateMember). A JoinGroup already
// parked for the member is answered REBALANCE_IN_PROGRESS: Kafka overwrites
// its callback, but here every pending response must complete.
func (g *group) updateMemberLocked(m *member, req *JoinRequest, done func(JoinResponse), e *effects) {
	g.countProtocolsLocked(m, -1)
	m.protocols = req.Protocols
	g.countProtocolsLocked(m, 1)
	m.rebalanceTimeout = req.RebalanceTimeout
	m.sessionTimeout = req.SessionTimeout
	g.completeJoinLocked(m, joinError(m.id, kerr.RebalanceInProgress), e)
	m.joinDone = done
	if done != nil {
		g.mu.awaiting++
	}
}

// replaceStaticLocked gives a static member a new member id (KIP-345). The
// member keeps its assignment and protocols; requests parked under the old
// id are answered FENCED_INSTANCE_ID (GroupMetadata.replaceStaticMember).
func (g *group) replaceStaticLocked(m *member, newID string, e *effects) {
	old := m.id
	g.completeJoinLocked(m, joinError(old, kerr.FencedInstanceID), e)
	g.completeSyncLocked(m, SyncResponse{Err: kerr.FencedInstanceID}, e)
	delete(g.mu.byID, old)
	m.id = newID
	g.mu.byID[newID] = m
	g.mu.static[m.instanceID] = newID
	if g.mu.leader == old {
		g.mu.leader = newID
	}
	if g.mu.pendingSync[old] {
		delete(g.mu.pendingSync, old)
		g.mu.pendingSync[newID] = true
	}
}

// completeJoinLocked answers the member's parked JoinGroup, if any.
func (g *group) completeJoinLocked(m *member, resp JoinResponse, e *effects) {
	if m.joinDone == nil {
		return
	}
	done := m.joinDone
	m.joinDone = nil
	g.mu.awaiting--
	e.add(func() { done(resp) })
}

// completeSyncLocked answers the member's parked SyncGroup, if any, and
// reports whether there was one.
func (g *group) completeSyncLocked(m *member, resp SyncResponse, e *effects) bool {
	if m.syncDone == nil {
		return false
	}
	done := m.syncDone
	m.syncDone = nil
	e.add(func() { done(resp) })
	return true
}

// validateMemberLocked checks that a request's member exists and, for a
// static member, that its instance id maps to that member id
// (ClassicGroup.validateMember): FENCED_INSTANCE_ID when the instance id
// now belongs to another member id, else UNKNOWN_MEMBER_ID.
func (g *group) validateMemberLocked(memberID, instanceID string) error {
	if instanceID != "" {
		current, ok := g.mu.static[instanceID]
		if !ok {
			return kerr.UnknownMemberID
		}
		if current != memberID {
			return kerr.FencedInstanceID
		}
	}
	if g.mu.byID[memberID] == nil {
		return kerr.UnknownMemberID
	}
	return nil
}

// currentMembersLocked is what the leader gets in its JoinGroup response:
// every member with its metadata for the selected protocol.
func (g *group) currentMembersLocked() []JoinMember {
	out := make([]JoinMember, 0, len(g.mu.members))
	for _, m := range g.mu.members {
		out = append(out, JoinMember{MemberID: m.id, InstanceID: m.instanceID, Metadata: m.metadata(g.mu.protocolName)})
	}
	return out
}

// initNextGenerationLocked starts a generation: CompletingRebalance with a
// selected protocol, or Empty when no member is left
// (GroupMetadata.initNextGeneration).
func (g *group) initNextGenerationLocked(e *effects) {
	g.mu.generation++
	if len(g.mu.members) > 0 {
		g.mu.protocolName = g.selectProtocolLocked()
		g.transitionLocked(CompletingRebalance, e)
	} else {
		g.mu.protocolName = ""
		g.transitionLocked(Empty, e)
	}
	clear(g.mu.pendingSync)
}

// stopTimersLocked stops every timer of the group: when it is deleted or
// the coordinator closes.
func (g *group) stopTimersLocked() {
	g.stopJoinTimerLocked()
	g.stopSyncTimerLocked()
	for _, m := range g.mu.members {
		g.stopExpiryLocked(m)
	}
	for id := range g.mu.pending {
		g.removePendingLocked(id)
	}
}

// scheduleExpiryLocked (re)starts the member's session timer with timeout d
// (completeAndScheduleNextExpiration; rescheduleClassicGroupMemberHeartbeat).
func (g *group) scheduleExpiryLocked(m *member, d time.Duration) {
	g.stopExpiryLocked(m)
	seq := m.expirySeq
	m.expiry = g.c.afterFunc(d, func() {
		g.run(func(e *effects) {
			if m.expirySeq == seq && g.mu.byID[m.id] == m && g.mu.state != Dead {
				g.expireMemberLocked(m, e)
			}
		})
	})
}

func (g *group) stopExpiryLocked(m *member) {
	m.expirySeq++
	if m.expiry != nil {
		m.expiry.Stop()
		m.expiry = nil
	}
}

// newMemberID returns prefix-UUID: the client id for a dynamic member, the
// instance id for a static one (GroupMetadata.generateMemberId).
func newMemberID(prefix string) string {
	var b [16]byte
	_, _ = rand.Read(b[:]) // never fails (crypto/rand: Read crashes the program instead)
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	return fmt.Sprintf("%s-%x-%x-%x-%x-%x", prefix, b[0:4], b[4:6], b[6:8], b[8:10], b[10:16])
}

// cloneProtocols copies the protocols so that the group never aliases a
// request buffer the caller may reuse.
func cloneProtocols(ps []Protocol) []Protocol {
	out := make([]Protocol, len(ps))
	for i, p := range ps {
		out[i] = Protocol{Name: p.Name, Metadata: bytes.Clone(p.Metadata)}
	}
	return out
}
