package integration

import (
	"fmt"
	"regexp"
	"sort"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// apiVersionsSteps compare ApiVersions at the oldest and newest version
// (its key list apart: checkAPIVersions compares that), and its check of
// the client's software name and version (v3+).
func apiVersionsSteps() []diffStep {
	versions := func(name, version string) func(*diffSide, int16) kmsg.Request {
		return func(_ *diffSide, _ int16) kmsg.Request {
			r := kmsg.NewPtrApiVersionsRequest()
			r.ClientSoftwareName, r.ClientSoftwareVersion = name, version
			return r
		}
	}
	return []diffStep{
		{name: "api versions", req: versions("kbroker-diff", "1.0"),
			ignore: regexp.MustCompile(`^(ApiKeys|SupportedFeatures|FinalizedFeatures)\.|^FinalizedFeaturesEpoch$`)},
		// The metadata log's offset, which kbroker does not have.
		{name: "api versions, the features", req: versions("kbroker-diff", "1.0"), versions: newest,
			ignore: regexp.MustCompile(`^ApiKeys\.|^FinalizedFeaturesEpoch$`), known: featureDifferences},
		{name: "api versions, a software name with a space", req: versions("bad name", "1.0"), versions: newest},
		{name: "api versions, an empty software version", req: versions("kbroker-diff", ""), versions: newest},
	}
}

// notServed is a key's range when the broker does not list it.
var notServed = [2]int16{-1, -1}

// apiVersionDifferences are the keys whose listed versions differ between
// kbroker and Kafka 4.4, with the reason (README, "Differences from Kafka").
var apiVersionDifferences = map[int16]struct {
	kbroker, kafka [2]int16
	why            string
}{
	8:  {[2]int16{0, 10}, [2]int16{2, 10}, olderVersions},
	9:  {[2]int16{0, 10}, [2]int16{1, 10}, olderVersions},
	19: {[2]int16{0, 7}, [2]int16{2, 7}, olderVersions},
	20: {[2]int16{0, 6}, [2]int16{1, 6}, olderVersions},
	23: {[2]int16{0, 4}, [2]int16{2, 4}, olderVersions},
	29: {[2]int16{0, 3}, [2]int16{1, 3}, olderVersions},
	30: {[2]int16{0, 3}, [2]int16{1, 3}, olderVersions},
	31: {[2]int16{0, 3}, [2]int16{1, 3}, olderVersions},
	32: {[2]int16{0, 4}, [2]int16{1, 4}, olderVersions},
	35: {[2]int16{0, 5}, [2]int16{1, 5}, olderVersions},
	34: {notServed, [2]int16{1, 2}, "AlterReplicaLogDirs: one log directory, nothing to move"},
	38: {notServed, [2]int16{1, 3}, delegationTokens},
	39: {notServed, [2]int16{1, 2}, delegationTokens},
	40: {notServed, [2]int16{1, 2}, delegationTokens},
	41: {notServed, [2]int16{1, 3}, delegationTokens},
	64: {notServed, [2]int16{0, 0}, "UnregisterBroker: one node, never unregistered"},
	80: {notServed, [2]int16{0, 1}, raftVoters},
	81: {notServed, [2]int16{0, 0}, raftVoters},
	83: {notServed, [2]int16{0, 0}, shareState},
	84: {notServed, [2]int16{0, 0}, shareState},
	85: {notServed, [2]int16{0, 1}, shareState},
	86: {notServed, [2]int16{0, 0}, shareState},
	87: {notServed, [2]int16{0, 1}, shareState},
	89: {[2]int16{0, 0}, [2]int16{0, 1}, topologyDescriptions},
	93: {notServed, [2]int16{0, 0}, topologyDescriptions},
	94: {notServed, [2]int16{0, 0}, "UnregisterController: no controllers"},
}

// featureDifferences is why kbroker's features differ from Kafka 4.4's.
const featureDifferences = "kbroker reports the features of the behaviour it has: metadata.version 25 (4.0-IV3) " +
	"with no metadata log, no kraft.version (no quorum), share.version 1, eligible.leader.replicas.version 0 (one replica)"

const (
	olderVersions        = "versions Kafka 4 removed (KIP-896) still served, for older clients"
	delegationTokens     = "delegation tokens are not supported (docs/SECURITY.md)"
	raftVoters           = "no KRaft quorum to change"
	shareState           = "share-group state RPCs are between Kafka's brokers; kbroker keeps that state in process"
	topologyDescriptions = "no streams topology descriptions (KIP-1331)"
)

// checkAPIVersions compares the keys and versions the two brokers list
// with apiVersionDifferences, both ways, so that a fix shows up too.
func checkAPIVersions(t *testing.T, kb, kafka map[int16][2]int16) {
	t.Helper()
	keys := map[int16]bool{}
	for k := range kb {
		keys[k] = true
	}
	for k := range kafka {
		keys[k] = true
	}
	rangeOf := func(m map[int16][2]int16, k int16) [2]int16 {
		if r, ok := m[k]; ok {
			return r
		}
		return notServed
	}
	var bad []string
	for k := range keys {
		a, b := rangeOf(kb, k), rangeOf(kafka, k)
		want, known := apiVersionDifferences[k]
		switch {
		case !known && a != b:
			bad = append(bad, fmt.Sprintf("%s: kbroker lists %v, kafka %v", kmsg.NameForKey(k), a, b))
		case known && (a != want.kbroker || b != want.kafka):
			bad = append(bad, fmt.Sprintf("%s: kbroker lists %v, kafka %v; the known difference (%s) was %v and %v: update it and README",
				kmsg.NameForKey(k), a, b, want.why, want.kbroker, want.kafka))
		}
	}
	sort.Strings(bad)
	for _, s := range bad {
		t.Error(s)
	}
}
