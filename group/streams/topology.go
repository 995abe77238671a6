package streams

import (
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/kbroker/kbroker/group/grouperr"

	"github.com/twmb/franz-go/pkg/kerr"
)

// TopicConfig is a topic config override of an internal topic.
type TopicConfig struct {
	Key, Value string
}

// TopicInfo is a repartition or changelog topic of a topology: its name,
// its partition count (0: the broker decides), its replication factor (0:
// the broker's default) and its config overrides.
type TopicInfo struct {
	Name              string
	Partitions        int32
	ReplicationFactor int16
	Configs           []TopicConfig
}

// CopartitionGroup names topics of one subtopology that must have the same
// partition count, as indexes into its SourceTopics and
// RepartitionSourceTopics (the wire form).
type CopartitionGroup struct {
	SourceTopics            []int16
	RepartitionSourceTopics []int16
}

// Subtopology is one independently scheduled piece of a Streams
// topology: its tasks read partition p of every source and repartition
// source topic.
type Subtopology struct {
	ID                      string
	SourceTopics            []string
	RepartitionSinkTopics   []string
	RepartitionSourceTopics []TopicInfo
	StateChangelogTopics    []TopicInfo
	CopartitionGroups       []CopartitionGroup
}

// Topology is what a member sends when it joins: the application's
// subtopologies and an epoch its owner bumps when the topology changes.
type Topology struct {
	Epoch         int32
	Subtopologies []Subtopology
}

// Metadata is what the coordinator needs to know of the broker's topics.
type Metadata interface {
	// Partitions returns a topic's partition count, or false when the
	// topic does not exist.
	Partitions(topic string) (int32, bool)
}

// Status codes of a heartbeat response (StreamsGroupHeartbeatResponse
// .Status).
const (
	StatusStaleTopology                = 0
	StatusMissingSourceTopics          = 1
	StatusIncorrectlyPartitionedTopics = 2
	StatusMissingInternalTopics        = 3
	StatusShutdownApplication          = 4
	StatusAssignmentDelayed            = 5
)

// Status is one status of a heartbeat response.
type Status struct {
	Code   int8
	Detail string
}

// maxTopicPartitions bounds a repartition topic's fixed partition count:
// Kafka's MAX_PARTITIONS_PER_BATCH, more than a CreateTopics may create.
// maxTasks bounds a topology's tasks, so that a hostile topology cannot
// make the broker hold millions of them.
const (
	maxTopicPartitions = 10_000
	maxTasks           = 100_000
)

// validate checks a topology as Kafka does before accepting it
// (GroupMetadataManager.throwIfInvalidTopology and StreamsTopology's
// checks): unique subtopology ids, at least one source topic each,
// changelog topics without a partition count, copartition indexes in
// range, repartition sinks that some subtopology reads.
func (t *Topology) validate() error {
	seen := make(map[string]bool, len(t.Subtopologies))
	repSources := make(map[string]bool)
	for _, s := range t.Subtopologies {
		for _, r := range s.RepartitionSourceTopics {
			repSources[r.Name] = true
		}
	}
	for _, s := range t.Subtopologies {
		if seen[s.ID] {
			return grouperr.Errorf(kerr.StreamsInvalidTopology, "Duplicate subtopology %s.", s.ID)
		}
		seen[s.ID] = true
		if len(s.SourceTopics)+len(s.RepartitionSourceTopics) == 0 {
			return grouperr.Errorf(kerr.StreamsInvalidTopology, "Subtopology %s has no source topics.", s.ID)
		}
		for _, c := range s.StateChangelogTopics {
			if c.Partitions != 0 {
				return grouperr.Errorf(kerr.StreamsInvalidTopology, "Changelog topic %s must have an undefined partition count, but it is set to %d.", c.Name, c.Partitions)
			}
		}
		for _, r := range s.RepartitionSourceTopics {
			if r.Partitions < 0 || r.Partitions > maxTopicPartitions {
				return grouperr.Errorf(kerr.StreamsInvalidTopology, "Repartition topic %s has partition count %d, not within [0, %d].", r.Name, r.Partitions, maxTopicPartitions)
			}
		}
		for _, sink := range s.RepartitionSinkTopics {
			if !repSources[sink] {
				return grouperr.Errorf(kerr.StreamsInvalidTopology, "Repartition sink topic %s of subtopology %s is not a repartition source topic of any subtopology.", sink, s.ID)
			}
		}
		for _, g := range s.CopartitionGroups {
			for _, i := range g.SourceTopics {
				if i < 0 || int(i) >= len(s.SourceTopics) {
					return grouperr.Errorf(kerr.StreamsInvalidTopology, "Copartition group of subtopology %s names source topic index %d out of range.", s.ID, i)
				}
			}
			for _, i := range g.RepartitionSourceTopics {
				if i < 0 || int(i) >= len(s.RepartitionSourceTopics) {
					return grouperr.Errorf(kerr.StreamsInvalidTopology, "Copartition group of subtopology %s names repartition source topic index %d out of range.", s.ID, i)
				}
			}
		}
	}
	return nil
}

// equal reports whether two topologies are the same.
func (t *Topology) equal(o *Topology) bool {
	if t == nil || o == nil {
		return t == o
	}
	return fmt.Sprint(*t) == fmt.Sprint(*o)
}

// sourceTopics maps every topic the topology reads (source and
// repartition source topics) to the id of the subtopology that reads it
// (StreamsTopology.sourceTopicMap). Kafka Streams gives a topic one
// reader; should a topology name one twice, the first subtopology has it.
func (t *Topology) sourceTopics() map[string]string {
	out := make(map[string]string)
	for _, s := range t.Subtopologies {
		for _, name := range s.SourceTopics {
			if _, ok := out[name]; !ok {
				out[name] = s.ID
			}
		}
		for _, r := range s.RepartitionSourceTopics {
			if _, ok := out[r.Name]; !ok {
				out[r.Name] = s.ID
			}
		}
	}
	return out
}

// configured is a topology checked against the topics that exist
// (Kafka's ConfiguredTopology): the number of tasks of each subtopology,
// the internal topics still to create, or why it cannot run.
type configured struct {
	// tasks is the number of tasks per subtopology id; nil when the
	// topology cannot run (status says why).
	tasks map[string]int32
	// missing are the internal topics to create, with decided partition
	// counts.
	missing []TopicInfo
	status  *Status
	// fingerprint is the partition counts of every topic it depends on,
	// so a change in them is noticed.
	fingerprint string
}

// configure decides the partition counts of the internal topics and the
// number of tasks of each subtopology (InternalTopicManager
// .configureTopics): source topics must exist; a repartition topic
// without a partition count gets the most tasks of the subtopologies that
// write to it; copartitioned topics must agree (a flexible repartition
// topic among them follows the others); a changelog topic has one
// partition per task. Existing internal topics must have the decided
// partition count.
func configure(t *Topology, md Metadata) configured {
	var fp strings.Builder
	count := func(name string) (int32, bool) {
		n, ok := md.Partitions(name)
		if ok {
			fmt.Fprintf(&fp, "%s:%d,", name, n)
		} else {
			fmt.Fprintf(&fp, "%s:-,", name)
		}
		return n, ok
	}
	var missingSources []string
	for _, s := range t.Subtopologies {
		for _, name := range s.SourceTopics {
			if _, ok := count(name); !ok {
				missingSources = append(missingSources, name)
			}
		}
	}
	if len(missingSources) > 0 {
		slices.Sort(missingSources)
		missingSources = slices.Compact(missingSources)
		return configured{fingerprint: fp.String(), status: &Status{Code: StatusMissingSourceTopics,
			Detail: "Source topics " + strings.Join(missingSources, ", ") + " are missing."}}
	}

	decided := make(map[string]int32) // internal topics' partition counts
	partitions := func(name string) (int32, bool) {
		if n, ok := count(name); ok {
			return n, true
		}
		n, ok := decided[name]
		return n, ok
	}
	fixed := make(map[string]bool)
	for _, s := range t.Subtopologies {
		for _, r := range s.RepartitionSourceTopics {
			if r.Partitions > 0 {
				decided[r.Name] = r.Partitions
				fixed[r.Name] = true
			}
		}
	}
	// Repartition topics without a count: the most tasks of the
	// subtopologies writing to them, resolved until nothing changes.
	numTasks := func(s *Subtopology) (int32, bool) {
		var most int32
		for _, name := range s.SourceTopics {
			n, _ := partitions(name)
			most = max(most, n)
		}
		for _, r := range s.RepartitionSourceTopics {
			n, ok := partitions(r.Name)
			if !ok {
				return 0, false
			}
			most = max(most, n)
		}
		return most, true
	}
	for progress := true; progress; {
		progress = false
		for _, s := range t.Subtopologies {
			for _, r := range s.RepartitionSourceTopics {
				if _, ok := partitions(r.Name); ok {
					continue
				}
				var most int32
				resolved := true
				writers := 0
				for i := range t.Subtopologies {
					w := &t.Subtopologies[i]
					if !slices.Contains(w.RepartitionSinkTopics, r.Name) {
						continue
					}
					writers++
					n, ok := numTasks(w)
					if !ok {
						resolved = false
						break
					}
					most = max(most, n)
				}
				if resolved && writers > 0 && most > 0 {
					decided[r.Name] = most
					progress = true
				}
			}
		}
	}
	for _, s := range t.Subtopologies {
		for _, r := range s.RepartitionSourceTopics {
			if _, ok := partitions(r.Name); !ok {
				return configured{fingerprint: fp.String(), status: &Status{Code: StatusIncorrectlyPartitionedTopics,
					Detail: "Failed to compute the number of partitions of repartition topic " + r.Name + "."}}
			}
		}
	}

	// Copartitioning (CopartitionedTopicsEnforcer).
	for i := range t.Subtopologies {
		s := &t.Subtopologies[i]
		for _, g := range s.CopartitionGroups {
			var want int32 = -1
			var names []string
			for _, idx := range g.SourceTopics {
				names = append(names, s.SourceTopics[idx])
			}
			var flexible []string
			for _, idx := range g.RepartitionSourceTopics {
				name := s.RepartitionSourceTopics[idx].Name
				if fixed[name] {
					names = append(names, name)
				} else if _, exists := md.Partitions(name); exists {
					names = append(names, name)
				} else {
					flexible = append(flexible, name)
				}
			}
			for _, name := range names {
				n, _ := partitions(name)
				if want >= 0 && n != want {
					slices.Sort(names)
					return configured{fingerprint: fp.String(), status: &Status{Code: StatusIncorrectlyPartitionedTopics,
						Detail: "Following topics do not have the same number of partitions: [" + strings.Join(names, ", ") + "]"}}
				}
				want = n
			}
			if want < 0 {
				for _, name := range flexible {
					n, _ := partitions(name)
					want = max(want, n)
				}
			}
			for _, name := range flexible {
				decided[name] = want
			}
		}
	}

	c := configured{tasks: make(map[string]int32, len(t.Subtopologies))}
	total := 0
	for i := range t.Subtopologies {
		s := &t.Subtopologies[i]
		n, _ := numTasks(s)
		if total += int(n); total > maxTasks {
			return configured{fingerprint: fp.String(), status: &Status{Code: StatusIncorrectlyPartitionedTopics,
				Detail: fmt.Sprintf("The topology has more than %d tasks.", maxTasks)}}
		}
		c.tasks[s.ID] = n
		for _, ch := range s.StateChangelogTopics {
			decided[ch.Name] = n
		}
	}
	// What exists must match; what does not is to be created.
	add := func(ti TopicInfo) error {
		want, isDecided := decided[ti.Name]
		if have, ok := count(ti.Name); ok {
			// An existing repartition topic without a fixed count set
			// the count itself (partitions prefers what exists).
			if isDecided && have != want {
				return fmt.Errorf("Existing topic %s has different number of partitions: expected %d, found %d", ti.Name, want, have)
			}
			return nil
		}
		if !slices.ContainsFunc(c.missing, func(m TopicInfo) bool { return m.Name == ti.Name }) {
			ti.Partitions = want
			c.missing = append(c.missing, ti)
		}
		return nil
	}
	for _, s := range t.Subtopologies {
		for _, r := range s.RepartitionSourceTopics {
			if err := add(r); err != nil {
				return configured{fingerprint: fp.String(), status: &Status{Code: StatusIncorrectlyPartitionedTopics, Detail: err.Error()}}
			}
		}
		for _, ch := range s.StateChangelogTopics {
			if err := add(ch); err != nil {
				return configured{fingerprint: fp.String(), status: &Status{Code: StatusIncorrectlyPartitionedTopics, Detail: err.Error()}}
			}
		}
	}
	sort.Slice(c.missing, func(i, j int) bool { return c.missing[i].Name < c.missing[j].Name })
	if len(c.missing) > 0 {
		names := make([]string, len(c.missing))
		for i, m := range c.missing {
			names[i] = m.Name
		}
		c.status = &Status{Code: StatusMissingInternalTopics, Detail: "Internal topics are missing: [" + strings.Join(names, ", ") + "]"}
	}
	c.fingerprint = fp.String()
	return c
}

// ready reports whether tasks can be assigned: the topology is
// configured and its internal topics exist.
func (c *configured) ready() bool { return c.tasks != nil && len(c.missing) == 0 }
