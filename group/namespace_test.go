package group

import (
	"errors"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/kbroker/kbroker/group/consumer"
	"github.com/kbroker/kbroker/internal/testenv"
)

// oneTopic is a topic registry with topic "t" of one partition.
type oneTopic struct{}

var oneTopicID = consumer.TopicID{1}

func (oneTopic) TopicByName(name string) (consumer.Topic, bool) {
	return consumer.Topic{Name: "t", ID: oneTopicID, Partitions: 1}, name == "t"
}
func (oneTopic) TopicByID(id consumer.TopicID) (consumer.Topic, bool) {
	return consumer.Topic{Name: "t", ID: oneTopicID, Partitions: 1}, id == oneTopicID
}
func (oneTopic) TopicNames() []string { return []string{"t"} }

// consumerJoin joins a consumer-protocol member to group.
func consumerJoin(c *Coordinator, group, member string) consumer.HeartbeatResponse {
	return c.Consumer().Heartbeat(consumer.HeartbeatRequest{
		Version: 1, Group: group, MemberID: member, RebalanceTimeoutMillis: 1000,
		SubscribedTopicNames: []string{"t"}, Topics: []consumer.TopicPartitions{},
	}, oneTopic{})
}

func consumerLeave(c *Coordinator, group, member string) {
	c.Consumer().Heartbeat(consumer.HeartbeatRequest{Version: 1, Group: group, MemberID: member, MemberEpoch: -1}, oneTopic{})
}

// TestNamespace: a group id names a classic or a consumer group, as in
// Kafka: either kind takes the id of an Empty group of the other kind
// (deleting it) and is refused one with members.
func TestNamespace(t *testing.T) {
	hooks := &hookLog{}
	runWith(t, testConfig(), []Option{WithStateHook(hooks.hook)}, func(t *testing.T, c *Coordinator) {
		// A consumer group with members: a classic join is refused.
		if r := consumerJoin(c, "g", "m"); r.Err != nil {
			t.Fatalf("consumer join: %v", r.Err)
		}
		a := newClient(t, c, "g", "a")
		r := a.await(a.joinAsync())
		testenv.WantErr(t, "classic join to a consumer group with members", r.Err, kerr.InconsistentGroupProtocol)
		testenv.WantErr(t, "classic heartbeat", a.heartbeat(), kerr.UnknownMemberID)
		if d, _ := c.Describe("g"); d.State != Dead {
			t.Fatalf("classic Describe of a consumer group: %v, want Dead", d.State)
		}
		testenv.WantErr(t, "a simple commit to a consumer group with members", c.ValidateCommit("g", "", "", -1), kerr.UnknownMemberID)
		testenv.WantErr(t, "a transactional commit of its member at a stale epoch", c.ValidateTxnCommit("g", "m", "", 5, nil), kerr.IllegalGeneration)
		testenv.WantErr(t, "a transactional commit of its member", c.ValidateTxnCommit("g", "m", "", 1, nil), nil)

		// Empty, it yields the id to a classic group.
		consumerLeave(c, "g", "m")
		a.join()
		wantState(t, c, "g", CompletingRebalance)
		if c.Consumer().Exists("g") {
			t.Fatal("the Empty consumer group survived a classic join")
		}

		// A classic group with members keeps the id.
		r2 := consumerJoin(c, "g", "m")
		if !errors.Is(r2.Err, kerr.GroupIDNotFound) {
			t.Fatalf("consumer join to a classic group with members: %v", r2.Err)
		}
		// Empty, it yields the id to a consumer group.
		testenv.WantErr(t, "leave", leaveOne(c, "g", a.id), nil)
		wantState(t, c, "g", Empty)
		if r := consumerJoin(c, "g", "m"); r.Err != nil {
			t.Fatalf("consumer join over an Empty classic group: %v", r.Err)
		}
		if d, _ := c.Describe("g"); d.State != Dead {
			t.Fatalf("the Empty classic group survived: %v", d.State)
		}
		if got := hooks.get(); len(got) == 0 || got[len(got)-1] != "g:Dead" {
			t.Fatalf("state hook: %v, want the classic group's end", got)
		}
	})
}

func leaveOne(c *Coordinator, group, member string) error {
	errs, err := c.Leave(group, []LeaveMember{{MemberID: member}})
	if err != nil {
		return err
	}
	return errs[0]
}
