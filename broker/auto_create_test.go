package broker

import (
	"errors"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/kbroker/kbroker/partition"
	"github.com/kbroker/kbroker/topic"
)

func TestAutoCreateTopic(t *testing.T) {
	srv := newTestServer(t, func(c *Config) { c.DefaultPartitions = 4 })
	got, err := srv.autoCreateTopic("new")
	if err != nil || got.Partitions != 4 || got.ID.IsZero() {
		t.Fatalf("create: %+v, %v", got, err)
	}
	again, err := srv.autoCreateTopic("new")
	if err != nil || again.ID != got.ID {
		t.Fatalf("existing: %+v, %v", again, err)
	}
	if ps := srv.Store().Partitions(partition.TopicID(got.ID)); len(ps) != 4 {
		t.Fatalf("store serves %d partitions", len(ps))
	}
	for _, tc := range []struct {
		name string
		want *kerr.Error
	}{
		{"bad/name", kerr.InvalidTopicException},
		{"ne.w", nil},
		{"ne_w", kerr.InvalidTopicException}, // collides with ne.w
		{topic.GroupMetadataTopic, kerr.UnknownTopicOrPartition},
		{topic.ClusterMetadataTopic, kerr.UnknownTopicOrPartition},
	} {
		_, err := srv.autoCreateTopic(tc.name)
		if tc.want == nil && err != nil || tc.want != nil && !errors.Is(err, tc.want) {
			t.Fatalf("%s: %v, want %v", tc.name, err, tc.want)
		}
	}
}

func TestAutoCreateTopicDisabled(t *testing.T) {
	srv := newTestServer(t, func(c *Config) { c.AutoCreateTopics = false })
	if _, err := srv.autoCreateTopic("x"); !errors.Is(err, kerr.UnknownTopicOrPartition) {
		t.Fatalf("got %v", err)
	}
	mustCreate(t, srv, "y", 1)
	if _, err := srv.autoCreateTopic("y"); err != nil {
		t.Fatalf("existing topic: %v", err)
	}
}
