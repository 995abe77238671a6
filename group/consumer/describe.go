package consumer

import (
	"slices"
	"strings"

	"github.com/kbroker/kbroker/group/grouperr"

	"github.com/twmb/franz-go/pkg/kerr"
)

// Overview is a group as ListGroups shows it.
type Overview struct {
	Group string
	State State
}

// List returns the consumer groups, sorted by id.
func (c *Coordinator) List() ([]Overview, error) {
	if !c.enter() {
		return nil, kerr.CoordinatorNotAvailable
	}
	defer c.wg.Done()
	c.mu.Lock()
	groups := make([]*group, 0, len(c.mu.groups))
	for _, g := range c.mu.groups {
		groups = append(groups, g)
	}
	c.mu.Unlock()
	out := make([]Overview, 0, len(groups))
	for _, g := range groups {
		g.mu.Lock()
		o := Overview{Group: g.id, State: g.mu.state}
		deleted := g.mu.deleted
		g.mu.Unlock()
		if !deleted {
			out = append(out, o)
		}
	}
	slices.SortFunc(out, func(a, b Overview) int { return strings.Compare(a.Group, b.Group) })
	return out, nil
}

// Description is a group as ConsumerGroupDescribe shows it.
type Description struct {
	Group           string
	State           State
	Epoch           int32
	AssignmentEpoch int32
	// Assignor is the server assignor most members prefer, or the
	// default.
	Assignor string
	Members  []MemberDescription // sorted by member id
}

// MemberDescription is one member in a Description. Empty strings stand
// for Kafka's nulls, except SubscribedTopicRegex, which Kafka reports as
// "" when there is none.
type MemberDescription struct {
	MemberID             string
	InstanceID           string
	RackID               string
	MemberEpoch          int32
	State                MemberState
	ClientID             string
	ClientHost           string
	SubscribedTopicNames []string
	SubscribedTopicRegex string
	Assignment           []DescribedTopic
	TargetAssignment     []DescribedTopic
}

// DescribedTopic is one topic's partitions with its name; topics that no
// longer exist are left out, as Kafka does.
type DescribedTopic struct {
	ID         TopicID
	Name       string
	Partitions []int32
}

// Describe describes a consumer group (ConsumerGroup.asDescribedGroup).
// A missing group is GROUP_ID_NOT_FOUND, "not a consumer group" when a
// classic group holds the id.
func (c *Coordinator) Describe(groupID string, md Metadata) (Description, error) {
	if !c.enter() {
		return Description{}, kerr.CoordinatorNotAvailable
	}
	defer c.wg.Done()
	g, _, err := c.lockGroup(groupID, false)
	if err != nil {
		if c.classic == nil || !c.classic.Exists(groupID) {
			return Description{}, grouperr.Errorf(kerr.GroupIDNotFound, "Group %s not found.", groupID)
		}
		return Description{}, err
	}
	defer g.mu.Unlock()
	d := Description{
		Group: groupID, State: g.mu.state, Epoch: g.mu.epoch, AssignmentEpoch: g.mu.assignmentEpoch,
		Assignor: g.preferredAssignorLocked(nil, nil),
	}
	ids := make([]string, 0, len(g.mu.members))
	for id := range g.mu.members {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	for _, id := range ids {
		m := g.mu.members[id]
		d.Members = append(d.Members, MemberDescription{
			MemberID: m.id, InstanceID: m.instanceID, RackID: m.rackID, MemberEpoch: m.epoch, State: m.state,
			ClientID: m.clientID, ClientHost: m.clientHost,
			SubscribedTopicNames: slices.Clone(m.topicNames), SubscribedTopicRegex: m.regex,
			Assignment:       describeAssignment(m.assigned, md),
			TargetAssignment: describeAssignment(g.mu.target[id], md),
		})
	}
	return d, nil
}

func describeAssignment(a Assignment, md Metadata) []DescribedTopic {
	out := []DescribedTopic{}
	for _, id := range a.topics() {
		if t, ok := md.TopicByID(id); ok {
			out = append(out, DescribedTopic{ID: id, Name: t.Name, Partitions: slices.Clone(a[id])})
		}
	}
	return out
}

// Exists reports whether a consumer group holds groupID.
func (c *Coordinator) Exists(groupID string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.mu.groups[groupID] != nil
}

// Active reports whether groupID is a consumer group with members.
func (c *Coordinator) Active(groupID string) bool {
	g := c.findGroup(groupID)
	if g == nil {
		return false
	}
	defer g.mu.Unlock()
	return len(g.mu.members) > 0
}

// SubscribedTopics returns the topic names the group's members subscribe
// to, by name or through a resolved regular expression
// (ConsumerGroup.isSubscribedToTopic, for OffsetDelete); found is false
// when no consumer group holds the id.
func (c *Coordinator) SubscribedTopics(groupID string) (topics map[string]bool, found bool) {
	g := c.findGroup(groupID)
	if g == nil {
		return nil, false
	}
	defer g.mu.Unlock()
	return g.subscribedNamesLocked(g.mu.resolved, nil, nil), true
}

// Delete deletes an Empty consumer group (DeleteGroups; offsets expiry):
// found is false when no consumer group holds the id; a group with
// members is NON_EMPTY_GROUP (validateDeleteGroup).
func (c *Coordinator) Delete(groupID string) (found bool, err error) {
	if !c.enter() {
		return true, kerr.CoordinatorNotAvailable
	}
	defer c.wg.Done()
	found, err = c.deleteEmpty(groupID)
	if found && err == nil {
		c.changed(groupID)
	}
	return found, err
}

// deleteEmpty is Delete under the locks.
func (c *Coordinator) deleteEmpty(groupID string) (found bool, err error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	g := c.mu.groups[groupID]
	if g == nil {
		return false, nil
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.mu.state != Empty {
		return true, kerr.NonEmptyGroup
	}
	g.deleteLocked()
	return true, nil
}
