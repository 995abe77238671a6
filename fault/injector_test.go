package fault

import (
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

func produceTo(topic string, partitions ...int32) *Request {
	req := kmsg.NewPtrProduceRequest()
	req.Version = 9
	t := kmsg.NewProduceRequestTopic()
	t.Topic = topic
	for _, p := range partitions {
		rp := kmsg.NewProduceRequestTopicPartition()
		rp.Partition = p
		t.Partitions = append(t.Partitions, rp)
	}
	req.Topics = append(req.Topics, t)
	return &Request{Key: 0, Version: 9, ClientID: "c1", Body: req}
}

func ptr[T any](v T) *T { return &v }

func TestParseErrorCode(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want int16
		bad  bool
	}{
		{in: "NOT_LEADER_OR_FOLLOWER", want: 6},
		{in: "not_leader_for_partition", want: 6},
		{in: "COORDINATOR_NOT_AVAILABLE", want: 15},
		{in: "REQUEST_TIMED_OUT", want: 7},
		{in: "UNKNOWN_SERVER_ERROR", want: -1},
		{in: "6", want: 6},
		{in: "-1", want: -1},
		{in: "0", bad: true},
		{in: "NONE", bad: true},
		{in: "NO_SUCH_ERROR", bad: true},
	} {
		got, err := ParseErrorCode(tc.in)
		if (err != nil) != tc.bad || got != tc.want {
			t.Errorf("ParseErrorCode(%q) = %d, %v; want %d, bad %v", tc.in, got, err, tc.want, tc.bad)
		}
	}
}

func TestAddRefusesBadRules(t *testing.T) {
	in := New(WithErrorAPIs(func(key int16) bool { return key == 0 }))
	for _, tc := range []struct {
		name string
		r    Rule
		want string
	}{
		{"no action", Rule{API: "Produce"}, "no action"},
		{"unknown api", Rule{API: "Teleport", DelayMs: 1}, "unknown api"},
		{"error without api", Rule{Error: "NOT_LEADER_OR_FOLLOWER"}, "error needs api"},
		{"error on api without errors", Rule{API: "Fetch", Error: "6"}, "cannot answer"},
		{"partition without topic", Rule{Partition: ptr[int32](1), DelayMs: 1}, "partition needs topic"},
		{"bad close", Rule{Close: "during"}, "close"},
		{"swallow and error", Rule{API: "Produce", Swallow: true, Error: "6"}, "swallow"},
		{"close before and error", Rule{API: "Produce", Close: CloseBefore, Error: "6"}, "close before"},
		{"probability", Rule{DelayMs: 1, Probability: 1.5}, "probability"},
		{"negative", Rule{DelayMs: 1, Times: -1}, "negative"},
		{"versions", Rule{DelayMs: 1, MinVersion: ptr[int16](5), MaxVersion: ptr[int16](3)}, "min_version"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := in.Add(tc.r)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("got %v, want an error with %q", err, tc.want)
			}
		})
	}
	if in.Active() {
		t.Fatal("refused rules made the injector active")
	}
}

// TestThirdProduceToTopicFails is the package's promise: the 3rd Produce
// to topic X fails, and nothing else does.
func TestThirdProduceToTopicFails(t *testing.T) {
	in := New()
	id, err := in.Add(Rule{API: "Produce", Topic: "X", After: 2, Times: 1, Error: "NOT_LEADER_OR_FOLLOWER"})
	if err != nil {
		t.Fatal(err)
	}
	seq := []*Request{
		produceTo("Y", 0), produceTo("X", 0), produceTo("Y", 0), produceTo("X", 1),
		produceTo("X", 0, 1), produceTo("X", 0), produceTo("X", 0),
	}
	var fired []int
	for i, r := range seq {
		if d := in.Decide(r); d != nil {
			fired = append(fired, i)
			if d.RuleID != id || d.Error != 6 {
				t.Errorf("decision %+v, want rule %d error 6", d, id)
			}
			if !d.Matches("X", 0) || d.Matches("Y", 0) {
				t.Errorf("decision matches the wrong partitions")
			}
		}
	}
	if len(fired) != 1 || fired[0] != 4 {
		t.Fatalf("fired on requests %v, want [4] (the 3rd to X)", fired)
	}
	st := in.List()
	if len(st) != 1 || st[0].Matched != 5 || st[0].Hits != 1 || !st[0].Exhausted {
		t.Fatalf("status %+v, want matched 5, hits 1, exhausted", st)
	}
}

func TestFilters(t *testing.T) {
	fetch := kmsg.NewPtrFetchRequest()
	fetch.Version = 13
	ft := kmsg.NewFetchRequestTopic()
	ft.TopicID = [16]byte{1}
	ft.Partitions = append(ft.Partitions, kmsg.NewFetchRequestTopicPartition())
	fetch.Topics = append(fetch.Topics, ft)
	fetchReq := &Request{Key: 1, Version: 13, Listener: "l1", Connection: "127.0.0.1:5", Body: fetch,
		TopicName: func(id [16]byte) string {
			if id == [16]byte{1} {
				return "ids"
			}
			return ""
		}}
	join := kmsg.NewPtrJoinGroupRequest()
	join.Group = "g"
	joinReq := &Request{Key: 11, Version: 9, ClientID: "app", Body: join}
	end := kmsg.NewPtrEndTxnRequest()
	end.TransactionalID = "tx"
	endReq := &Request{Key: 26, Version: 3, Body: end}
	meta := kmsg.NewPtrMetadataRequest()
	meta.Version = 12
	metaReq := &Request{Key: 3, Version: 12, Body: meta} // null topics: every topic

	for _, tc := range []struct {
		name string
		r    Rule
		hit  []*Request
		miss []*Request
	}{
		{"api", Rule{API: "Fetch", DelayMs: 1}, []*Request{fetchReq}, []*Request{joinReq, produceTo("X", 0)}},
		{"api by number", Rule{API: "11", DelayMs: 1}, []*Request{joinReq}, []*Request{fetchReq}},
		{"versions", Rule{MinVersion: ptr[int16](10), MaxVersion: ptr[int16](13), DelayMs: 1}, []*Request{fetchReq, metaReq}, []*Request{joinReq, produceTo("X")}},
		{"topic by id", Rule{Topic: "ids", DelayMs: 1}, []*Request{fetchReq, metaReq}, []*Request{produceTo("X", 0), joinReq}},
		{"partition", Rule{Topic: "X", Partition: ptr[int32](1), DelayMs: 1}, []*Request{produceTo("X", 0, 1)}, []*Request{produceTo("X", 0), produceTo("Y", 1)}},
		{"group", Rule{Group: "g", DelayMs: 1}, []*Request{joinReq}, []*Request{fetchReq, endReq}},
		{"transactional id", Rule{TransactionalID: "tx", DelayMs: 1}, []*Request{endReq}, []*Request{joinReq}},
		{"client id", Rule{ClientID: "app", DelayMs: 1}, []*Request{joinReq}, []*Request{produceTo("X", 0)}},
		{"listener", Rule{Listener: "l1", DelayMs: 1}, []*Request{fetchReq}, []*Request{joinReq}},
		{"connection", Rule{Connection: "127.0.0.1:5", DelayMs: 1}, []*Request{fetchReq}, []*Request{joinReq}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in := New()
			if _, err := in.Add(tc.r); err != nil {
				t.Fatal(err)
			}
			for _, r := range tc.hit {
				if in.Decide(r) == nil {
					t.Errorf("%s request: no decision, want one", kmsg.NameForKey(r.Key))
				}
			}
			for _, r := range tc.miss {
				if d := in.Decide(r); d != nil {
					t.Errorf("%s request: decision %+v, want none", kmsg.NameForKey(r.Key), d)
				}
			}
		})
	}
}

func TestProbabilityIsSeeded(t *testing.T) {
	pattern := func(seed uint64) []bool {
		in := New()
		if _, err := in.Add(Rule{API: "Produce", Probability: 0.3, Seed: seed, DelayMs: 1}); err != nil {
			t.Fatal(err)
		}
		out := make([]bool, 1000)
		for i := range out {
			out[i] = in.Decide(produceTo("X", 0)) != nil
		}
		return out
	}
	a, b, c := pattern(7), pattern(7), pattern(8)
	fired, same := 0, true
	for i := range a {
		if a[i] != b[i] {
			t.Fatalf("same seed, different outcome at %d", i)
		}
		if a[i] {
			fired++
		}
		same = same && a[i] == c[i]
	}
	if same {
		t.Error("seeds 7 and 8 gave the same 1000 outcomes")
	}
	if fired < 200 || fired > 400 {
		t.Errorf("fired %d times in 1000 at probability 0.3", fired)
	}
}

func TestFirstFiringRuleDecidesAndRemove(t *testing.T) {
	in := New()
	a, _ := in.Add(Rule{API: "Produce", Times: 1, DelayMs: 1})
	b, _ := in.Add(Rule{API: "Produce", DelayMs: 2})
	if d := in.Decide(produceTo("X", 0)); d == nil || d.RuleID != a {
		t.Fatalf("got %+v, want rule %d", d, a)
	}
	if d := in.Decide(produceTo("X", 0)); d == nil || d.RuleID != b {
		t.Fatalf("got %+v, want rule %d once %d is exhausted", d, b, a)
	}
	if !in.Remove(a) || in.Remove(a) {
		t.Fatal("Remove: want true once, then false")
	}
	if len(in.List()) != 1 {
		t.Fatalf("got %d rules, want 1", len(in.List()))
	}
	in.Clear()
	if in.Active() || in.Decide(produceTo("X", 0)) != nil {
		t.Fatal("rules remain after Clear")
	}
}

func TestAddCopiesPointers(t *testing.T) {
	in := New()
	p := int32(1)
	in.Add(Rule{Topic: "X", Partition: &p, DelayMs: 1})
	p = 0
	if in.Decide(produceTo("X", 0)) != nil {
		t.Fatal("changing the caller's partition changed the rule")
	}
}
