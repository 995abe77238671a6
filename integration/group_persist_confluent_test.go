//go:build cgo

package integration

import (
	"testing"
	"time"
)

// session is the client's view of its group session as far as
// confluent-kafka-go shows it: librdkafka keeps the member id and epoch
// to itself, so only its rebalance callbacks count; the scenario checks
// the member ids and the group epoch on the broker's side.
func (m *confluentMember) session() (string, int32, int) {
	_, n := m.assign.get()
	return "", 0, n
}

// lastHeartbeat: librdkafka retries its heartbeats through a restart.
func (m *confluentMember) lastHeartbeat() (time.Time, bool) { return time.Time{}, false }

// TestGroupPersistKIP848Confluent: librdkafka members of a consumer group
// (group.protocol=consumer) go on through restarts without a rebalance
// callback, the group keeps its epoch and members.
func TestGroupPersistKIP848Confluent(t *testing.T) {
	t.Parallel()
	needsClient(t, consClientNamed("confluent"))
	eachRestartable(t, groupOpts(kip848Props), true, func(t *testing.T, b restartable) {
		runGroupPersistScenario(t, b, true, func(t *testing.T, addr, group, topic, name string, tally *groupTally) persistMember {
			return startConfluent848Member(t, addr, group, topic, name, tally).(*confluentMember)
		})
	})
}
