package consumer

import (
	"regexp"
	"slices"
	"time"
)

// Topic is what a group needs to know of a topic.
type Topic struct {
	Name       string
	ID         TopicID
	Partitions int32
}

// Metadata is the broker's topic registry as the coordinator reads it
// during one call (Kafka's metadata image). Topic ids come from it: a
// topic deleted and created again under the same name has a new id, and
// the group sees that as a metadata change.
type Metadata interface {
	TopicByName(name string) (Topic, bool)
	TopicByID(id TopicID) (Topic, bool)
	// TopicNames lists every topic, internal ones included, for resolving
	// regular expressions.
	TopicNames() []string
}

// subscribedTopicIDs returns the ids of the existing topics m subscribes to
// by name or through its resolved regular expression, sorted, and records
// their partition counts in parts when it is not nil
// (CurrentAssignmentBuilder.subscribedTopicIds, TopicIds).
func subscribedTopicIDs(m *member, resolved map[string][]string, md Metadata, parts map[TopicID]int32) []TopicID {
	ids := make([]TopicID, 0, len(m.topicNames))
	add := func(name string) {
		if t, ok := md.TopicByName(name); ok {
			ids = append(ids, t.ID)
			if parts != nil {
				parts[t.ID] = t.Partitions
			}
		}
	}
	for _, n := range m.topicNames {
		add(n)
	}
	if m.regex != "" {
		// An unresolved regular expression matches nothing, to be
		// conservative, as in Kafka.
		for _, n := range resolved[m.regex] {
			add(n)
		}
	}
	slices.SortFunc(ids, compareTopicIDs)
	return slices.Compact(ids)
}

// regexRefreshMinInterval is how often, at most, a group's regular
// expressions are resolved again (GroupMetadataManager
// .REGEX_BATCH_REFRESH_MIN_INTERVAL_MS).
const regexRefreshMinInterval = 10 * time.Second

// compileRegex compiles a subscription's regular expression. Kafka
// compiles it with RE2/J and matches whole topic names
// (Pattern.matcher(name).matches()); Go's regexp implements the same RE2
// syntax, and the anchors make it match whole names too.
func compileRegex(re string) (*regexp.Regexp, error) {
	if _, err := regexp.Compile(re); err != nil {
		return nil, err
	}
	return regexp.Compile(`^(?:` + re + `)$`)
}

// resolveRegexes matches every topic against each regular expression
// (refreshRegularExpressions) and returns the sorted matches of each.
// Expressions that do not compile (they were checked when a member
// subscribed, so this does not happen) match nothing.
func resolveRegexes(res []string, md Metadata) map[string][]string {
	out := make(map[string][]string, len(res))
	compiled := make([]*regexp.Regexp, len(res))
	for i, re := range res {
		compiled[i], _ = compileRegex(re)
		out[re] = []string{}
	}
	for _, name := range md.TopicNames() {
		for i, re := range compiled {
			if re != nil && re.MatchString(name) {
				out[res[i]] = append(out[res[i]], name)
			}
		}
	}
	for re, names := range out {
		slices.Sort(names)
		out[re] = slices.Compact(names)
	}
	return out
}
