package broker

import (
	"fmt"
	"testing"
)

// TestTopicList: parts are grouped by topic in the order of each topic's
// first part, partitions in part order, with few topics (scanned) and
// many (indexed), interleaved.
func TestTopicList(t *testing.T) {
	for _, topics := range []int{1, 3, topicListScanMax, topicListScanMax + 1, 40} {
		var parts []*sessionPart
		want := map[string][]int32{}
		var order []string
		for i := range 5 * topics {
			name := fmt.Sprintf("t%d", (i*7)%topics)
			var id [16]byte
			id[0] = byte((i * 7) % topics)
			if _, ok := want[name]; !ok {
				order = append(order, name)
			}
			want[name] = append(want[name], int32(i))
			parts = append(parts, &sessionPart{key: sessionKey{topic: name, topicID: id, partition: int32(i)}, offset: int64(i)})
		}
		out := topicList(parts, nil)
		if len(out) != len(order) {
			t.Fatalf("%d topics: got %d in the list", topics, len(out))
		}
		for i, rt := range out {
			var n int
			fmt.Sscanf(rt.Topic, "t%d", &n)
			if rt.Topic != order[i] || rt.TopicID[0] != byte(n) {
				t.Fatalf("%d topics: topic %d is %s (id %d), want %s", topics, i, rt.Topic, rt.TopicID[0], order[i])
			}
			if len(rt.Partitions) != len(want[rt.Topic]) {
				t.Fatalf("%d topics: %s has %d partitions, want %d", topics, rt.Topic, len(rt.Partitions), len(want[rt.Topic]))
			}
			for j, rp := range rt.Partitions {
				if rp.Partition != want[rt.Topic][j] || rp.FetchOffset != int64(rp.Partition) {
					t.Fatalf("%d topics: %s partition %d is %d at %d, want %d", topics, rt.Topic, j, rp.Partition, rp.FetchOffset, want[rt.Topic][j])
				}
			}
		}
	}
}
