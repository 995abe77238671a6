package broker

import (
	"fmt"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// describePartitions sends one DescribeTopicPartitions request and
// renders the answer as "topic:err:p0,p1 ... next=topic/p".
func describePartitions(t *testing.T, w *wireConn, limit int32, cursor *kmsg.DescribeTopicPartitionsRequestCursor, topics ...string) string {
	t.Helper()
	req := kmsg.NewPtrDescribeTopicPartitionsRequest()
	req.ResponsePartitionLimit, req.Cursor = limit, cursor
	for _, name := range topics {
		rt := kmsg.NewDescribeTopicPartitionsRequestTopic()
		rt.Topic = name
		req.Topics = append(req.Topics, rt)
	}
	resp := w.do(req).(*kmsg.DescribeTopicPartitionsResponse)
	var sb strings.Builder
	for _, rt := range resp.Topics {
		fmt.Fprintf(&sb, "%s:%d:", *rt.Topic, rt.ErrorCode)
		var ps []string
		for _, p := range rt.Partitions {
			if p.LeaderID != 0 || p.LeaderEpoch != 0 || len(p.Replicas) != 1 || len(p.ISR) != 1 ||
				len(p.EligibleLeaderReplicas) != 0 || len(p.LastKnownELR) != 0 || len(p.OfflineReplicas) != 0 {
				t.Errorf("%s-%d: %+v, want led by node 0 at epoch 0, one replica in sync, empty ELR", *rt.Topic, p.Partition, p)
			}
			ps = append(ps, fmt.Sprint(p.Partition))
		}
		if rt.ErrorCode == 0 && (rt.TopicID == [16]byte{} || rt.AuthorizedOperations != topicAuthorizedOps) {
			t.Errorf("%s: topic id %x, authorized operations %d", *rt.Topic, rt.TopicID, rt.AuthorizedOperations)
		}
		sb.WriteString(strings.Join(ps, ","))
		sb.WriteString(" ")
	}
	if resp.NextCursor != nil {
		fmt.Fprintf(&sb, "next=%s/%d", resp.NextCursor.Topic, resp.NextCursor.Partition)
	}
	return strings.TrimSpace(sb.String())
}

func TestDescribeTopicPartitions(t *testing.T) {
	srv := newTestServer(t, nil)
	createTopic(t, srv, "b", 2)
	createTopic(t, srv, "a", 3)
	createTopic(t, srv, "c", 1)
	w := dialWire(t, srv)
	cur := func(name string, p int32) *kmsg.DescribeTopicPartitionsRequestCursor {
		return &kmsg.DescribeTopicPartitionsRequestCursor{Topic: name, Partition: p}
	}
	unknown, invalid := kerr.UnknownTopicOrPartition.Code, kerr.InvalidTopicException.Code
	badReq := kerr.InvalidRequest.Code
	for _, c := range []struct {
		name   string
		limit  int32
		cursor *kmsg.DescribeTopicPartitionsRequestCursor
		topics []string
		want   string
	}{
		{"all", 2000, nil, nil, "a:0:0,1,2 b:0:0,1 c:0:0"},
		{"all, a topic split", 4, nil, nil, "a:0:0,1,2 b:0:0 next=b/1"},
		{"all, limit at a topic's end", 3, nil, nil, "a:0:0,1,2 next=b/0"},
		{"all from a cursor", 4, cur("b", 1), nil, "b:0:1 c:0:0"},
		{"limit 0 means 1", 0, nil, nil, "a:0:0 next=a/1"},
		{"cursor past the partitions", 10, cur("c", 5), nil, "c:0:"},
		{"named, sorted, once each", 2000, nil, []string{"c", "nope", "a", "a", "bad name!"},
			fmt.Sprintf("a:0:0,1,2 bad name!:%d: c:0:0 nope:%d:", invalid, unknown)},
		{"named from a cursor", 2, cur("b", 1), []string{"c", "a", "b"}, "b:0:1 c:0:0"},
		{"cursor topic not named", 10, cur("b", 0), []string{"a", "c"}, fmt.Sprintf("a:%d: c:%d:", badReq, badReq)},
		{"negative cursor partition", 10, cur("a", -1), []string{"a"}, fmt.Sprintf("a:%d:", badReq)},
	} {
		if got := describePartitions(t, w, c.limit, c.cursor, c.topics...); got != c.want {
			t.Errorf("%s: got %q, want %q", c.name, got, c.want)
		}
	}
}

// TestDescribeTopicPartitionsBrokerLimit checks that
// max.request.partition.size.limit caps what a client asks for.
func TestDescribeTopicPartitionsBrokerLimit(t *testing.T) {
	srv := newTestServer(t, func(c *Config) { c.MaxRequestPartitionSizeLimit = 2 })
	createTopic(t, srv, "a", 3)
	w := dialWire(t, srv)
	if got, want := describePartitions(t, w, 2000, nil), "a:0:0,1 next=a/2"; got != want {
		t.Fatalf("got %q, want %q", got, want)
	}
}
