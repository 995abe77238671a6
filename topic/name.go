package topic

import (
	"strings"

	"github.com/twmb/franz-go/pkg/kerr"
)

// MaxNameLength is the longest legal topic name, as in Kafka's Topic.java
// (MAX_NAME_LENGTH). It keeps <data>/consumequeue/<topic> under the 255-byte
// file name limit of common filesystems.
const MaxNameLength = 249

// Names of Kafka's internal topics (Kafka's Topic.java). Kafka creates the
// first three on demand for its coordinators; the metadata log topic exists
// only inside KRaft and can never be created through CreateTopics.
const (
	GroupMetadataTopic   = "__consumer_offsets"
	TransactionTopic     = "__transaction_state"
	ShareGroupStateTopic = "__share_group_state"
	ClusterMetadataTopic = "__cluster_metadata"
)

// IsInternal reports whether name is one of Kafka's internal topics
// (Topic.isInternal): __consumer_offsets, __transaction_state and
// __share_group_state. Metadata responses mark such topics is_internal.
func IsInternal(name string) bool {
	switch name {
	case GroupMetadataTopic, TransactionTopic, ShareGroupStateTopic:
		return true
	}
	return false
}

// isReserved reports whether clients may not create or delete name: the
// internal topics, which only the broker's coordinators create (through
// Registry.CreateInternal), and __cluster_metadata, which Kafka refuses in
// ControllerApis.createTopics.
func isReserved(name string) bool {
	return IsInternal(name) || name == ClusterMetadataTopic
}

// ValidateName checks name against Kafka's rules (Topic.validate): not empty,
// not "." or "..", at most MaxNameLength bytes, and only ASCII letters,
// digits, '.', '_' and '-'. The error wraps kerr.InvalidTopicException, the
// code CreateTopics returns for such a name.
func ValidateName(name string) error {
	switch {
	case name == "":
		return errorf(kerr.InvalidTopicException, "topic name is invalid: the empty string is not allowed")
	case name == ".":
		return errorf(kerr.InvalidTopicException, "topic name is invalid: '.' is not allowed")
	case name == "..":
		return errorf(kerr.InvalidTopicException, "topic name is invalid: '..' is not allowed")
	case len(name) > MaxNameLength:
		return errorf(kerr.InvalidTopicException,
			"topic name is invalid: the length of %q is longer than the max allowed length %d", name, MaxNameLength)
	}
	for i := 0; i < len(name); i++ {
		if !legalNameByte(name[i]) {
			return errorf(kerr.InvalidTopicException,
				"topic name is invalid: %q contains one or more characters other than ASCII alphanumerics, '.', '_' and '-'", name)
		}
	}
	return nil
}

func legalNameByte(c byte) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' ||
		c == '.' || c == '_' || c == '-'
}

// collisionKey maps a name to the key under which it collides with others.
// Kafka turns '.' into '_' in metric names, so "a.b" and "a_b" would share
// metrics; Topic.unifyCollisionChars and ReplicationControlManager refuse the
// second one with INVALID_TOPIC_EXCEPTION "collides with existing topic".
func collisionKey(name string) string {
	if strings.IndexByte(name, '.') < 0 {
		return name // no copy on the common path
	}
	return strings.ReplaceAll(name, ".", "_")
}
