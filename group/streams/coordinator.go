package streams

import (
	"fmt"
	"maps"
	"slices"
	"sync"
	"time"

	"github.com/kbroker/kbroker/group/grouperr"

	"github.com/twmb/franz-go/pkg/kerr"
)

// Coordinator holds the streams groups of one broker.
type Coordinator struct {
	cfg Config
	// createTopics creates missing internal topics; nil leaves them
	// missing (MISSING_INTERNAL_TOPICS).
	createTopics func([]TopicInfo) error
	groupConfigs func(group string) GroupConfig
	now          func() time.Time
	// onChange is the change hook (WithChangeHook).
	onChange func(groupID string)

	mu     sync.Mutex
	groups map[string]*group
	closed bool
	// wg counts timer callbacks in flight, which Close waits for.
	wg sync.WaitGroup
}

// Option configures a Coordinator.
type Option func(*Coordinator)

// WithTopicCreator sets how missing internal topics are created: the
// broker creates them, as Kafka 4's does from the heartbeat.
func WithTopicCreator(f func([]TopicInfo) error) Option {
	return func(c *Coordinator) { c.createTopics = f }
}

// WithGroupConfigs sets where per-group overrides come from (the GROUP
// config resource).
func WithGroupConfigs(f func(group string) GroupConfig) Option {
	return func(c *Coordinator) { c.groupConfigs = f }
}

// New returns a coordinator with the settings cfg.
func New(cfg Config, opts ...Option) (*Coordinator, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	c := &Coordinator{cfg: cfg, groups: make(map[string]*group), now: time.Now}
	for _, o := range opts {
		o(c)
	}
	return c, nil
}

// Close stops every timer and waits for callbacks under way; later
// calls answer COORDINATOR_NOT_AVAILABLE.
func (c *Coordinator) Close() {
	if c == nil {
		return
	}
	c.mu.Lock()
	c.closed = true
	for _, g := range c.groups {
		c.stopDelayLocked(g)
		for _, m := range g.members {
			c.stopTimersLocked(m)
		}
	}
	c.mu.Unlock()
	c.wg.Wait()
}

func (c *Coordinator) groupConfig(id string) GroupConfig {
	gc := GroupConfig{NumStandbyReplicas: -1}
	if c.groupConfigs != nil {
		gc = c.groupConfigs(id)
	}
	if gc.SessionTimeout <= 0 {
		gc.SessionTimeout = c.cfg.SessionTimeout
	}
	if gc.HeartbeatInterval <= 0 {
		gc.HeartbeatInterval = c.cfg.HeartbeatInterval
	}
	if gc.NumStandbyReplicas < 0 {
		gc.NumStandbyReplicas = c.cfg.NumStandbyReplicas
	}
	return gc
}

// HeartbeatRequest is a StreamsGroupHeartbeat, independent of wire
// versions. Pointer and nil-slice fields are nil when unchanged since the
// member's previous heartbeat, as on the wire.
type HeartbeatRequest struct {
	Group                    string
	MemberID                 string
	MemberEpoch              int32
	EndpointInformationEpoch int32
	InstanceID, RackID       *string
	RebalanceTimeoutMillis   int32
	Topology                 *Topology
	// ActiveTasks, StandbyTasks and WarmupTasks are the owned tasks; nil
	// (with OwnedTasks false) when unchanged.
	ActiveTasks, StandbyTasks, WarmupTasks []SubtopologyTasks
	OwnedTasks                             bool
	ProcessID                              *string
	UserEndpoint                           *Endpoint
	ClientTags                             []KV
	ClientTagsSet                          bool
	ShutdownApplication                    bool
	ClientID, ClientHost                   string
}

// EndpointPartitions are the topic partitions a user endpoint serves,
// for Interactive Queries.
type EndpointPartitions struct {
	Endpoint        Endpoint
	Active, Standby map[string][]int32
}

// HeartbeatResponse is the answer to a heartbeat.
type HeartbeatResponse struct {
	Err                   error
	MemberID              string
	MemberEpoch           int32
	HeartbeatInterval     time.Duration
	AcceptableRecoveryLag int64
	TaskOffsetInterval    time.Duration
	Status                []Status
	// HasTasks is set when Tasks is the member's whole assignment (on a
	// join or a change); otherwise the tasks are left out (unchanged).
	HasTasks                 bool
	Tasks                    Tasks
	EndpointInformationEpoch int32
	// Endpoints is set (maybe empty) when the member's endpoint epoch is
	// behind the group's.
	Endpoints    []EndpointPartitions
	HasEndpoints bool
}

// Validate checks a heartbeat as GroupMetadataManager
// .throwIfStreamsGroupHeartbeatRequestIsInvalid and
// throwIfStreamsGroupHeartbeatRequestIsUsingUnsupportedFeatures do;
// Heartbeat checks again. The broker calls it first to answer a bad
// request before it looks at the group id's type, as Kafka does.
func (r *HeartbeatRequest) Validate(regexes bool) error {
	empty := func(s *string) bool { return s != nil && *s == "" }
	switch {
	case regexes:
		return grouperr.Errorf(kerr.InvalidRequest, "Regular expressions for source topics are not supported yet.")
	case r.MemberID == "":
		return grouperr.Errorf(kerr.InvalidRequest, "MemberId can't be empty.")
	case r.Group == "":
		return grouperr.Errorf(kerr.InvalidRequest, "GroupId can't be empty.")
	case empty(r.InstanceID):
		return grouperr.Errorf(kerr.InvalidRequest, "InstanceId can't be empty.")
	case empty(r.RackID):
		return grouperr.Errorf(kerr.InvalidRequest, "RackId can't be empty.")
	}
	switch {
	case r.MemberEpoch == 0:
		switch {
		case r.RebalanceTimeoutMillis == -1:
			return grouperr.Errorf(kerr.InvalidRequest, "RebalanceTimeoutMs must be provided in first request.")
		case len(r.ActiveTasks) > 0:
			return grouperr.Errorf(kerr.InvalidRequest, "ActiveTasks must be empty when (re-)joining.")
		case len(r.StandbyTasks) > 0:
			return grouperr.Errorf(kerr.InvalidRequest, "StandbyTasks must be empty when (re-)joining.")
		case len(r.WarmupTasks) > 0:
			return grouperr.Errorf(kerr.InvalidRequest, "WarmupTasks must be empty when (re-)joining.")
		case r.Topology == nil:
			return grouperr.Errorf(kerr.InvalidRequest, "Topology must be non-null when (re-)joining.")
		case r.ProcessID == nil || *r.ProcessID == "":
			return grouperr.Errorf(kerr.InvalidRequest, "ProcessId can't be null or empty when (re-)joining.")
		}
		if err := r.Topology.validate(); err != nil {
			return err
		}
	case r.MemberEpoch == -2:
		if r.InstanceID == nil {
			return grouperr.Errorf(kerr.InvalidRequest, "InstanceId can't be null.")
		}
	case r.MemberEpoch < -2:
		return grouperr.Errorf(kerr.InvalidRequest, "MemberEpoch is %d, but must be greater than or equal to -2.", r.MemberEpoch)
	}
	if r.MemberEpoch != 0 && r.Topology != nil {
		return grouperr.Errorf(kerr.InvalidRequest, "Topology can only be provided when (re-)joining.")
	}
	return nil
}

// Heartbeat serves one StreamsGroupHeartbeat (GroupMetadataManager
// .streamsGroupHeartbeat). sourceRegex reports whether the topology used
// source topic regular expressions, which Kafka refuses.
//
// What the heartbeat changed is recorded (the change hook) before it
// returns, so that the answer goes out after the write.
func (c *Coordinator) Heartbeat(req HeartbeatRequest, sourceRegex bool, md Metadata) HeartbeatResponse {
	if err := req.Validate(sourceRegex); err != nil {
		return HeartbeatResponse{Err: err}
	}
	resp, known := c.heartbeat(req, md)
	if known {
		c.changed(req.Group)
	}
	return resp
}

// heartbeat serves a valid heartbeat; known is false when it found no
// group to work on (nothing to record).
func (c *Coordinator) heartbeat(req HeartbeatRequest, md Metadata) (_ HeartbeatResponse, known bool) {
	// Internal topics are created before the heartbeat's own work, outside
	// the lock: topic creation writes to disk.
	if c.createTopics != nil && req.MemberEpoch >= 0 {
		if missing := c.missingInternalTopics(req, md); len(missing) > 0 {
			_ = c.createTopics(missing) // a failure shows as MISSING_INTERNAL_TOPICS below
		}
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return HeartbeatResponse{Err: kerr.CoordinatorNotAvailable}, false
	}
	gc := c.groupConfig(req.Group)
	g := c.groups[req.Group]
	if g == nil {
		if req.MemberEpoch != 0 {
			// Groups survive restarts (persist.go): a group that is
			// not here was deleted, or never was.
			return HeartbeatResponse{Err: grouperr.Errorf(kerr.GroupIDNotFound, "Streams group %s not found.", req.Group)}, false
		}
		g = newGroup(req.Group, c.now())
		c.groups[req.Group] = g
		if c.cfg.InitialRebalanceDelay > 0 {
			g.delayed = true
			c.scheduleDelayEndLocked(g, c.cfg.InitialRebalanceDelay)
		}
	}
	switch {
	case req.MemberEpoch == -1:
		return c.leaveLocked(g, req), true
	case req.MemberEpoch == -2:
		return c.staticLeaveLocked(g, req, gc), true
	}

	m := g.members[req.MemberID]
	var owned *Tasks
	if req.OwnedTasks {
		t := Tasks{Active: NewTaskSet(req.ActiveTasks), Standby: NewTaskSet(req.StandbyTasks), Warmup: NewTaskSet(req.WarmupTasks)}
		owned = &t
	}
	joining := req.MemberEpoch == 0
	// bump is whether this heartbeat moves the group epoch: once,
	// whatever changed (GroupMetadataManager.streamsGroupHeartbeat).
	bump := false
	if joining {
		e := emptyTasks()
		owned = &e
		if m != nil {
			// A known member rejoining (after being fenced on its side)
			// starts afresh.
			c.removeLocked(g, m)
			m = nil
		}
		if req.InstanceID != nil {
			if old := g.staticMember(*req.InstanceID); old != nil {
				if old.epoch != -2 {
					return HeartbeatResponse{Err: grouperr.Errorf(kerr.UnreleasedInstanceID, "Static member %s with instance id %s is not released.", old.id, *req.InstanceID)}, true
				}
				// The static member comes back under a new member id
				// and takes over its tasks without a rebalance
				// (replaceStreamsGroupMember).
				m = old
				c.stopTimersLocked(old)
				delete(g.members, old.id)
				if t, ok := g.target[old.id]; ok {
					delete(g.target, old.id)
					g.target[req.MemberID] = t
				}
				m.id = req.MemberID
				m.epoch = m.prevEpoch
				g.members[m.id] = m
			}
		}
		if m == nil {
			if len(g.members) >= c.cfg.MaxSize {
				return HeartbeatResponse{Err: grouperr.Errorf(kerr.GroupMaxSizeReached, "The streams group has reached its maximum capacity of %d members.", c.cfg.MaxSize)}, true
			}
			m = &member{id: req.MemberID, assigned: emptyTasks(), pendingRevocation: emptyTasks()}
			g.members[m.id] = m
			bump = true
		}
	} else {
		if m == nil {
			return HeartbeatResponse{Err: grouperr.Errorf(kerr.UnknownMemberID, "Member %s is not a member of group %s.", req.MemberID, req.Group)}, true
		}
		if err := checkEpoch(m, req.MemberEpoch, owned); err != nil {
			return HeartbeatResponse{Err: err}, true
		}
		if req.InstanceID != nil && m.instanceID != *req.InstanceID {
			return HeartbeatResponse{Err: grouperr.Errorf(kerr.FencedInstanceID, "Member %s has instance id %s, not %s.", m.id, m.instanceID, *req.InstanceID)}, true
		}
	}

	// Member metadata; what the assignor uses bumps the group epoch.
	changed := false
	set := func(dst *string, v *string) {
		if v != nil && *dst != *v {
			*dst = *v
			changed = true
		}
	}
	set(&m.processID, req.ProcessID)
	set(&m.rackID, req.RackID)
	if req.UserEndpoint != nil && (m.userEndpoint == nil || *m.userEndpoint != *req.UserEndpoint) {
		e := *req.UserEndpoint
		m.userEndpoint = &e
		changed = true
	}
	if req.ClientTagsSet && !slices.Equal(m.clientTags, req.ClientTags) {
		m.clientTags = slices.Clone(req.ClientTags)
		changed = true
	}
	if req.InstanceID != nil {
		m.instanceID = *req.InstanceID
	}
	if req.RebalanceTimeoutMillis > 0 {
		m.rebalanceTimeout = time.Duration(req.RebalanceTimeoutMillis) * time.Millisecond
	}
	m.clientID, m.clientHost = req.ClientID, req.ClientHost
	if changed {
		bump = true
	}

	// The topology: the first one, or a newer epoch, becomes the group's.
	if req.Topology != nil {
		m.topologyEpoch = req.Topology.Epoch
		switch {
		case g.topology == nil || req.Topology.Epoch > g.topology.Epoch:
			t := *req.Topology
			g.topology = &t
			bump = true
		case req.Topology.Epoch == g.topology.Epoch && !req.Topology.equal(g.topology):
			return HeartbeatResponse{Err: grouperr.Errorf(kerr.StreamsInvalidTopologyEpoch,
				"Topology epoch %d of member %s names a different topology than the group's with the same epoch.", req.Topology.Epoch, m.id)}, true
		}
	}
	if g.topology != nil {
		conf := configure(g.topology, md)
		if conf.fingerprint != g.conf.fingerprint || conf.ready() != g.conf.ready() {
			bump = true
		}
		g.conf = conf
	}
	if req.ShutdownApplication {
		g.shutdown = true
	}

	if bump {
		g.epoch++
	}
	// During a new group's initial rebalance delay the members stay at
	// the empty target of the epoch before it (Kafka's assignment epoch
	// 1); scheduleDelayEndLocked computes the first target.
	if g.epoch > g.targetEpoch && !g.delayed {
		g.computeTarget(gc.NumStandbyReplicas)
	}
	before := m.assigned.clone()
	beforeEpoch, beforeState := m.epoch, m.state
	g.reconcile(m, owned)

	c.scheduleSessionLocked(g, m, gc.SessionTimeout)
	if m.state == MemberUnrevokedTasks {
		if beforeState != MemberUnrevokedTasks || beforeEpoch != m.epoch {
			c.scheduleRebalanceLocked(g, m)
		}
	} else {
		c.stopRebalanceLocked(m)
	}

	resp := HeartbeatResponse{
		MemberID:                 m.id,
		MemberEpoch:              m.epoch,
		HeartbeatInterval:        gc.HeartbeatInterval,
		AcceptableRecoveryLag:    c.cfg.AcceptableRecoveryLag,
		TaskOffsetInterval:       c.cfg.TaskOffsetInterval,
		EndpointInformationEpoch: g.endpointEpoch,
	}
	if g.delayed {
		resp.Status = append(resp.Status, Status{Code: StatusAssignmentDelayed, Detail: "Assignment delayed due to the configured initial rebalance delay."})
	}
	if g.conf.status != nil {
		resp.Status = append(resp.Status, *g.conf.status)
	}
	if g.topology != nil && m.topologyEpoch < g.topology.Epoch {
		resp.Status = append(resp.Status, Status{Code: StatusStaleTopology,
			Detail: "The member's topology epoch " + itoa(m.topologyEpoch) + " is behind the group's topology epoch " + itoa(g.topology.Epoch) + "."})
	}
	if g.shutdown {
		resp.Status = append(resp.Status, Status{Code: StatusShutdownApplication,
			Detail: "A KafkaStreams instance encountered a fatal error and requested a shutdown for the entire application."})
	}
	if joining || !before.equal(m.assigned) || beforeEpoch != m.epoch || (owned != nil && !owned.equal(m.assigned)) {
		resp.HasTasks = true
		resp.Tasks = m.assigned.clone()
	}
	if eps := g.endpointPartitions(); fmt.Sprint(eps) != g.endpoints {
		g.endpoints = fmt.Sprint(eps)
		g.endpointEpoch++
	}
	resp.EndpointInformationEpoch = g.endpointEpoch
	if req.EndpointInformationEpoch != g.endpointEpoch {
		resp.HasEndpoints = true
		resp.Endpoints = g.endpointPartitions()
	}
	return resp, true
}

func itoa(i int32) string { return formatInt(int64(i)) }

// checkEpoch is throwIfStreamsGroupMemberEpochIsInvalid: a heartbeat at
// an epoch ahead of the member's, or behind it other than at the previous
// epoch with only assigned tasks owned (its answer was lost), is fenced.
func checkEpoch(m *member, epoch int32, owned *Tasks) error {
	switch {
	case epoch > m.epoch:
		return grouperr.Errorf(kerr.FencedMemberEpoch, "The streams group member has a greater member epoch (%d) than the one known by the group coordinator (%d). The member must abandon all its tasks and rejoin.", epoch, m.epoch)
	case epoch < m.epoch:
		if epoch != m.prevEpoch || owned == nil || !owned.subsetOf(m.assigned) {
			return grouperr.Errorf(kerr.FencedMemberEpoch, "The streams group member has a smaller member epoch (%d) than the one known by the group coordinator (%d). The member must abandon all its tasks and rejoin.", epoch, m.epoch)
		}
	}
	return nil
}

func (t Tasks) subsetOf(o Tasks) bool {
	sub := func(a, b TaskSet) bool {
		for x := range a {
			if !b.has(x) {
				return false
			}
		}
		return true
	}
	return sub(t.Active, o.Active) && sub(t.Standby, o.Standby) && sub(t.Warmup, o.Warmup)
}

// missingInternalTopics returns the internal topics the topology this
// heartbeat works with still lacks.
func (c *Coordinator) missingInternalTopics(req HeartbeatRequest, md Metadata) []TopicInfo {
	c.mu.Lock()
	var t *Topology
	if g := c.groups[req.Group]; g != nil && g.topology != nil {
		t = g.topology
	}
	c.mu.Unlock()
	if req.Topology != nil && (t == nil || req.Topology.Epoch > t.Epoch) {
		t = req.Topology
	}
	if t == nil {
		return nil
	}
	conf := configure(t, md)
	return conf.missing
}

// leaveLocked removes a member leaving with epoch -1.
func (c *Coordinator) leaveLocked(g *group, req HeartbeatRequest) HeartbeatResponse {
	m := g.members[req.MemberID]
	if m == nil {
		if req.InstanceID != nil {
			m = g.staticMember(*req.InstanceID)
		}
		if m == nil {
			return HeartbeatResponse{Err: grouperr.Errorf(kerr.UnknownMemberID, "Member %s is not a member of group %s.", req.MemberID, req.Group)}
		}
	}
	c.removeLocked(g, m)
	return HeartbeatResponse{MemberID: req.MemberID, MemberEpoch: -1}
}

// staticLeaveLocked keeps a static member leaving with epoch -2, with
// its tasks, until its session times out or its instance id rejoins.
func (c *Coordinator) staticLeaveLocked(g *group, req HeartbeatRequest, gc GroupConfig) HeartbeatResponse {
	m := g.staticMember(*req.InstanceID)
	if m == nil || m.id != req.MemberID {
		return HeartbeatResponse{Err: grouperr.Errorf(kerr.UnknownMemberID, "Member %s is not a member of group %s.", req.MemberID, req.Group)}
	}
	if m.epoch != -2 {
		m.prevEpoch = m.epoch
	}
	m.epoch = -2
	c.stopRebalanceLocked(m)
	c.scheduleSessionLocked(g, m, gc.SessionTimeout)
	return HeartbeatResponse{MemberID: req.MemberID, MemberEpoch: -2}
}

func (g *group) staticMember(instance string) *member {
	for _, m := range g.members {
		if m.instanceID == instance {
			return m
		}
	}
	return nil
}

// removeLocked takes a member out of its group (left, fenced or timed
// out): its tasks become free and the group epoch moves.
func (c *Coordinator) removeLocked(g *group, m *member) {
	c.stopTimersLocked(m)
	delete(g.members, m.id)
	delete(g.target, m.id)
	g.epoch++
	if len(g.members) == 0 {
		g.shutdown = false
	}
}

// endpointPartitions maps every member's user endpoint to the partitions its
// active and standby tasks read (EndpointToPartitionsManager).
func (g *group) endpointPartitions() []EndpointPartitions {
	out := []EndpointPartitions{}
	if g.topology == nil {
		return out
	}
	subs := make(map[string]*Subtopology)
	for i := range g.topology.Subtopologies {
		subs[g.topology.Subtopologies[i].ID] = &g.topology.Subtopologies[i]
	}
	parts := func(ts TaskSet) map[string][]int32 {
		r := make(map[string][]int32)
		for _, t := range ts.sorted() {
			s := subs[t.Subtopology]
			if s == nil {
				continue
			}
			for _, name := range s.SourceTopics {
				r[name] = append(r[name], t.Partition)
			}
			for _, ri := range s.RepartitionSourceTopics {
				r[ri.Name] = append(r[ri.Name], t.Partition)
			}
		}
		return r
	}
	ids := slices.Sorted(maps.Keys(g.members))
	for _, id := range ids {
		m := g.members[id]
		if m.userEndpoint == nil {
			continue
		}
		out = append(out, EndpointPartitions{Endpoint: *m.userEndpoint, Active: parts(m.assigned.Active), Standby: parts(m.assigned.Standby)})
	}
	return out
}
