package topic

import (
	"errors"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/kbroker/kbroker/internal/testenv"
)

func TestCreate(t *testing.T) {
	t.Parallel()
	r, _ := newTestRegistry(t)
	mustCreate(t, r, "exists", 1, nil)
	mustCreate(t, r, "dotted.name", 1, nil)
	tests := []struct {
		what       string
		name       string
		partitions int32
		configs    map[string]*string
		want       *kerr.Error
	}{
		{"ok", "orders", 3, nil, nil},
		{"ok with configs", "events", 1, map[string]*string{"retention.ms": strp("1000")}, nil},
		{"dash does not collide", "dotted-name", 1, nil, nil},
		{"empty name", "", 1, nil, kerr.InvalidTopicException},
		{"illegal char", "a/b", 1, nil, kerr.InvalidTopicException},
		{"250 chars", strings.Repeat("a", 250), 1, nil, kerr.InvalidTopicException},
		{"249 chars", strings.Repeat("a", 249), 1, nil, nil},
		{"exists", "exists", 1, nil, kerr.TopicAlreadyExists},
		{"exists beats bad partitions", "exists", 0, nil, kerr.TopicAlreadyExists},
		{"collision . vs _", "dotted_name", 1, nil, kerr.InvalidTopicException},
		{"internal", "__consumer_offsets", 1, nil, kerr.InvalidRequest},
		{"internal txn", "__transaction_state", 1, nil, kerr.InvalidRequest},
		{"metadata", "__cluster_metadata", 1, nil, kerr.InvalidRequest},
		{"zero partitions", "p0", 0, nil, kerr.InvalidPartitions},
		{"-2 partitions", "p-2", -2, nil, kerr.InvalidPartitions},
		{"null config", "nullc", 1, map[string]*string{"retention.ms": nil}, kerr.InvalidConfig},
		{"unknown config", "unk", 1, map[string]*string{"retention.hours": strp("1")}, kerr.InvalidConfig},
		{"bad config", "badc", 1, map[string]*string{"retention.ms": strp("-7")}, kerr.InvalidConfig},
		{"compact", "compacted", 1, map[string]*string{"cleanup.policy": strp("compact")}, kerr.InvalidConfig},
	}
	for _, tt := range tests {
		got, err := r.Create(tt.name, tt.partitions, tt.configs, false)
		testenv.WantErr(t, tt.what, err, tt.want)
		if tt.want != nil {
			if got.Name != "" {
				t.Errorf("%s: got topic %+v with the error", tt.what, got)
			}
			if _, ok := r.Get(tt.name); ok && tt.want != kerr.TopicAlreadyExists {
				t.Errorf("%s: topic exists after a failed Create", tt.what)
			}
			continue
		}
		if got.Name != tt.name || got.Partitions != tt.partitions || got.ID.IsZero() || got.Internal {
			t.Errorf("%s: got %+v", tt.what, got)
		}
		if back, ok := r.Get(tt.name); !ok || back.ID != got.ID {
			t.Errorf("%s: Get after Create = %+v, %t", tt.what, back, ok)
		}
		if back, ok := r.ByID(got.ID); !ok || back.Name != tt.name {
			t.Errorf("%s: ByID after Create = %+v, %t", tt.what, back, ok)
		}
	}
}

func TestCreateDefaultPartitions(t *testing.T) {
	t.Parallel()
	d := KafkaDefaults()
	d.NumPartitions = 3
	r, err := Open(t.TempDir(), d)
	if err != nil {
		t.Fatal(err)
	}
	if got := mustCreate(t, r, "auto", -1, nil); got.Partitions != 3 {
		t.Fatalf("Create with -1 partitions: got %d, want num.partitions 3", got.Partitions)
	}
}

func TestCreateValidateOnly(t *testing.T) {
	t.Parallel()
	calls := 0
	r, dir := newTestRegistry(t, WithOnChange(func(_, _ *Topic) { calls++ }))
	got, err := r.Create("orders", 4, map[string]*string{"retention.ms": strp("5")}, true)
	if err != nil {
		t.Fatal(err)
	}
	if got.Name != "orders" || got.Partitions != 4 || got.Configs.RetentionMs() != 5 || !got.ID.IsZero() {
		t.Fatalf("validate-only Create = %+v; want the would-be topic without an id", got)
	}
	if _, ok := r.Get("orders"); ok || calls != 0 || r.journal.tail.Load() != journalHeaderSize || len(listDir(t, dir)) != 2 {
		t.Fatalf("validate-only Create changed something: get %t, calls %d, files %v", ok, calls, listDir(t, dir))
	}
	_, err = r.Create("bad name", 1, nil, true)
	testenv.WantErr(t, "validate-only with a bad name", err, kerr.InvalidTopicException)
}

func TestInternalTopics(t *testing.T) {
	t.Parallel()
	r, _ := newTestRegistry(t)
	tp, err := r.CreateInternal(GroupMetadataTopic, 50, map[string]*string{"retention.ms": strp("-1")})
	if err != nil || !tp.Internal || tp.Partitions != 50 {
		t.Fatalf("CreateInternal = %+v, %v", tp, err)
	}
	_, err = r.CreateInternal(GroupMetadataTopic, 50, nil)
	testenv.WantErr(t, "CreateInternal twice", err, kerr.TopicAlreadyExists)
	// A client's create of an existing internal topic is
	// TOPIC_ALREADY_EXISTS, as in Kafka; of one not created yet
	// INVALID_REQUEST.
	_, err = r.Create(GroupMetadataTopic, 1, nil, false)
	testenv.WantErr(t, "Create(existing internal)", err, kerr.TopicAlreadyExists)
	_, err = r.Create(GroupMetadataTopic, 1, nil, true)
	testenv.WantErr(t, "Create(existing internal, validate only)", err, kerr.TopicAlreadyExists)
	_, err = r.Create(TransactionTopic, 1, nil, false)
	testenv.WantErr(t, "Create(internal not created yet)", err, kerr.InvalidRequest)
	_, err = r.CreateInternal("orders", 1, nil)
	testenv.WantErr(t, "CreateInternal(orders)", err, kerr.InvalidRequest)
	_, err = r.CreateInternal(ClusterMetadataTopic, 1, nil)
	testenv.WantErr(t, "CreateInternal(__cluster_metadata)", err, kerr.InvalidRequest)
	_, err = r.Delete(GroupMetadataTopic)
	testenv.WantErr(t, "Delete(internal)", err, kerr.InvalidRequest)
	_, err = r.CreatePartitions(GroupMetadataTopic, 60, false)
	testenv.WantErr(t, "CreatePartitions(internal)", err, kerr.InvalidRequest)
	// Configs of an internal topic may be altered, as in Kafka.
	if _, err := r.AlterConfigs(GroupMetadataTopic, map[string]*string{"retention.ms": strp("1000")}, false); err != nil {
		t.Fatal(err)
	}
	if got, _ := r.Get(GroupMetadataTopic); got.Configs.RetentionMs() != 1000 || !got.Internal {
		t.Fatalf("after alter: %+v", got)
	}
}

func TestDelete(t *testing.T) {
	t.Parallel()
	r, _ := newTestRegistry(t)
	first := mustCreate(t, r, "orders", 2, nil)
	_, err := r.Delete("missing")
	testenv.WantErr(t, "Delete(missing)", err, kerr.UnknownTopicOrPartition)
	gone, err := r.Delete("orders")
	if err != nil || gone.ID != first.ID {
		t.Fatalf("Delete = %+v, %v; want the deleted topic", gone, err)
	}
	if _, ok := r.Get("orders"); ok {
		t.Fatal("Get finds a deleted topic")
	}
	if _, ok := r.ByID(first.ID); ok {
		t.Fatal("ByID finds a deleted topic")
	}
	_, err = r.Delete("orders")
	testenv.WantErr(t, "Delete twice", err, kerr.UnknownTopicOrPartition)
	// A name freed by Delete can be taken again, with a new id (KIP-516).
	again := mustCreate(t, r, "orders", 1, nil)
	if again.ID == first.ID {
		t.Fatal("re-created topic reuses the old id")
	}
	// And the collision key is freed too.
	mustCreate(t, r, "a.b", 1, nil)
	if _, err := r.Delete("a.b"); err != nil {
		t.Fatal(err)
	}
	mustCreate(t, r, "a_b", 1, nil)
}

func TestCreatePartitions(t *testing.T) {
	t.Parallel()
	r, _ := newTestRegistry(t)
	orig := mustCreate(t, r, "orders", 3, nil)
	tests := []struct {
		what         string
		name         string
		total        int32
		validateOnly bool
		want         *kerr.Error
		after        int32
	}{
		{"missing", "missing", 5, false, kerr.UnknownTopicOrPartition, 3},
		{"same", "orders", 3, false, kerr.InvalidPartitions, 3},
		{"fewer", "orders", 2, false, kerr.InvalidPartitions, 3},
		{"negative", "orders", -1, false, kerr.InvalidPartitions, 3},
		{"validate only", "orders", 5, true, nil, 3},
		{"grow", "orders", 5, false, nil, 5},
		{"grow again", "orders", 6, false, nil, 6},
	}
	for _, tt := range tests {
		got, err := r.CreatePartitions(tt.name, tt.total, tt.validateOnly)
		testenv.WantErr(t, tt.what, err, tt.want)
		if err == nil && got.Partitions != tt.total {
			t.Errorf("%s: returned %d partitions, want %d", tt.what, got.Partitions, tt.total)
		}
		if cur, _ := r.Get("orders"); cur.Partitions != tt.after || cur.ID != orig.ID {
			t.Errorf("%s: now %d partitions (id %v), want %d (id %v)", tt.what, cur.Partitions, cur.ID, tt.after, orig.ID)
		}
	}
	_, err := r.CreatePartitions("orders", 5, false)
	if err == nil || !strings.Contains(err.Error(), "currently has 6 partition(s); 5 would not be an increase") {
		t.Fatalf("shrink: got %v, want Kafka's message", err)
	}
}

func TestAlterConfigs(t *testing.T) {
	t.Parallel()
	r, _ := newTestRegistry(t)
	mustCreate(t, r, "orders", 1, map[string]*string{"retention.ms": strp("1000"), "segment.bytes": strp("2097152")})
	overrides := func() map[string]string {
		tp, _ := r.Get("orders")
		return tp.Configs.Overrides()
	}
	// Replaces the whole set: segment.bytes returns to its default.
	got, err := r.AlterConfigs("orders", map[string]*string{"retention.ms": strp("2000"), "max.message.bytes": strp("100")}, false)
	if err != nil {
		t.Fatal(err)
	}
	if o := overrides(); len(o) != 2 || o["retention.ms"] != "2000" || o["max.message.bytes"] != "100" ||
		got.Configs.MaxMessageBytes() != 100 {
		t.Fatalf("after AlterConfigs: overrides %v, returned %+v", o, got)
	}
	before := overrides()
	for _, tt := range []struct {
		what    string
		name    string
		configs map[string]*string
		valOnly bool
		want    *kerr.Error
	}{
		{"validate only", "orders", map[string]*string{"retention.ms": strp("3000")}, true, nil},
		{"null value", "orders", map[string]*string{"retention.ms": nil}, false, kerr.InvalidRequest},
		{"bad value", "orders", map[string]*string{"retention.ms": strp("-9")}, false, kerr.InvalidConfig},
		{"unknown name", "orders", map[string]*string{"nope": strp("1")}, false, kerr.InvalidConfig},
		{"compact", "orders", map[string]*string{"cleanup.policy": strp("delete,compact")}, false, kerr.InvalidConfig},
		{"missing topic", "missing", map[string]*string{"retention.ms": strp("1")}, false, kerr.UnknownTopicOrPartition},
		{"configs checked before existence", "missing", map[string]*string{"retention.ms": strp("x")}, false, kerr.InvalidConfig},
		{"bad topic name", "bad/name", nil, false, kerr.InvalidTopicException},
		{"empty topic name", "", nil, false, kerr.InvalidRequest},
	} {
		res, err := r.AlterConfigs(tt.name, tt.configs, tt.valOnly)
		testenv.WantErr(t, tt.what, err, tt.want)
		if tt.valOnly && res.Configs.RetentionMs() != 3000 {
			t.Errorf("%s: returned %d, want the would-be 3000", tt.what, res.Configs.RetentionMs())
		}
		if o := overrides(); len(o) != len(before) || o["retention.ms"] != before["retention.ms"] {
			t.Fatalf("%s changed the configs: %v, was %v", tt.what, o, before)
		}
	}
	// An empty set removes every override.
	if _, err := r.AlterConfigs("orders", nil, false); err != nil {
		t.Fatal(err)
	}
	if o := overrides(); len(o) != 0 {
		t.Fatalf("after AlterConfigs(nil): %v", o)
	}
}

func TestIncrementalAlterConfigs(t *testing.T) {
	t.Parallel()
	r, _ := newTestRegistry(t)
	mustCreate(t, r, "orders", 1, map[string]*string{"retention.ms": strp("1000")})
	op := func(name string, o OpType, v *string) AlterOp { return AlterOp{Name: name, Op: o, Value: v} }
	steps := []struct {
		what    string
		ops     []AlterOp
		valOnly bool
		want    *kerr.Error
		after   map[string]string // overrides afterwards
	}{
		{"set", []AlterOp{op("retention.bytes", OpSet, strp("4096"))}, false, nil,
			map[string]string{"retention.ms": "1000", "retention.bytes": "4096"}},
		{"set and delete", []AlterOp{op("retention.ms", OpDelete, nil), op("max.message.bytes", OpSet, strp(" 77 "))}, false, nil,
			map[string]string{"retention.bytes": "4096", "max.message.bytes": "77"}},
		{"delete unset is a no-op", []AlterOp{op("segment.ms", OpDelete, nil)}, false, nil,
			map[string]string{"retention.bytes": "4096", "max.message.bytes": "77"}},
		{"delete unknown is a no-op", []AlterOp{op("no.such.config", OpDelete, strp("x"))}, false, nil,
			map[string]string{"retention.bytes": "4096", "max.message.bytes": "77"}},
		{"append to inherited list", []AlterOp{op("cleanup.policy", OpAppend, strp("delete"))}, false, nil,
			map[string]string{"retention.bytes": "4096", "max.message.bytes": "77", "cleanup.policy": "delete"}},
		{"append list", []AlterOp{op("leader.replication.throttled.replicas", OpAppend, strp("0:1,1:1"))}, false, nil,
			map[string]string{"retention.bytes": "4096", "max.message.bytes": "77", "cleanup.policy": "delete",
				"leader.replication.throttled.replicas": "0:1,1:1"}},
		{"append skips present", []AlterOp{op("leader.replication.throttled.replicas", OpAppend, strp("1:1,2:1"))}, false, nil,
			map[string]string{"retention.bytes": "4096", "max.message.bytes": "77", "cleanup.policy": "delete",
				"leader.replication.throttled.replicas": "0:1,1:1,2:1"}},
		{"subtract", []AlterOp{op("leader.replication.throttled.replicas", OpSubtract, strp("0:1,9:9")),
			op("cleanup.policy", OpSubtract, strp("delete"))}, false, nil,
			map[string]string{"retention.bytes": "4096", "max.message.bytes": "77", "cleanup.policy": "",
				"leader.replication.throttled.replicas": "1:1,2:1"}},
		{"validate only", []AlterOp{op("retention.bytes", OpSet, strp("1"))}, true, nil,
			map[string]string{"retention.bytes": "4096", "max.message.bytes": "77", "cleanup.policy": "",
				"leader.replication.throttled.replicas": "1:1,2:1"}},
	}
	errSteps := []struct {
		what string
		name string
		ops  []AlterOp
		want *kerr.Error
	}{
		{"append to a LONG", "orders", []AlterOp{op("retention.ms", OpAppend, strp("1"))}, kerr.InvalidConfig},
		{"subtract from a STRING", "orders", []AlterOp{op("compression.type", OpSubtract, strp("gzip"))}, kerr.InvalidConfig},
		{"append to unknown", "orders", []AlterOp{op("nope", OpAppend, strp("1"))}, kerr.InvalidConfig},
		{"append compact", "orders", []AlterOp{op("cleanup.policy", OpAppend, strp("compact"))}, kerr.InvalidConfig},
		{"set unknown", "orders", []AlterOp{op("nope", OpSet, strp("1"))}, kerr.InvalidConfig},
		{"set invalid", "orders", []AlterOp{op("max.message.bytes", OpSet, strp("-1"))}, kerr.InvalidConfig},
		{"duplicate names", "orders", []AlterOp{op("retention.ms", OpSet, strp("1")), op("retention.ms", OpDelete, nil)}, kerr.InvalidRequest},
		{"null set", "orders", []AlterOp{op("retention.ms", OpSet, nil)}, kerr.InvalidRequest},
		{"null append", "orders", []AlterOp{op("cleanup.policy", OpAppend, nil)}, kerr.InvalidRequest},
		{"unknown op", "orders", []AlterOp{op("retention.ms", OpType(7), strp("1"))}, kerr.InvalidRequest},
		{"missing topic", "missing", []AlterOp{op("retention.ms", OpSet, strp("1"))}, kerr.UnknownTopicOrPartition},
		{"bad topic name", "..", []AlterOp{op("retention.ms", OpSet, strp("1"))}, kerr.InvalidTopicException},
		{"empty topic name", "", []AlterOp{op("retention.ms", OpSet, strp("1"))}, kerr.InvalidRequest},
	}
	check := func(what string, want map[string]string) {
		t.Helper()
		tp, _ := r.Get("orders")
		got := tp.Configs.Overrides()
		if len(got) != len(want) {
			t.Fatalf("%s: overrides %v, want %v", what, got, want)
		}
		for k, v := range want {
			if got[k] != v {
				t.Fatalf("%s: overrides %v, want %v", what, got, want)
			}
		}
	}
	for _, s := range steps {
		res, err := r.IncrementalAlterConfigs("orders", s.ops, s.valOnly)
		testenv.WantErr(t, s.what, err, s.want)
		check(s.what, s.after)
		if s.valOnly && res.Configs.RetentionBytes() != 1 {
			t.Errorf("%s: returned retention.bytes %d, want the would-be 1", s.what, res.Configs.RetentionBytes())
		}
	}
	if tp, _ := r.Get("orders"); tp.Configs.CleanupPolicy() != (CleanupPolicy{}) {
		t.Fatalf("cleanup.policy emptied by SUBTRACT: got %+v, want no cleanup", tp.Configs.CleanupPolicy())
	}
	last := steps[len(steps)-1].after
	for _, s := range errSteps {
		_, err := r.IncrementalAlterConfigs(s.name, s.ops, false)
		testenv.WantErr(t, s.what, err, s.want)
		check(s.what, last)
	}
	_, err := r.IncrementalAlterConfigs("orders", []AlterOp{op("retention.ms", OpAppend, strp("1"))}, false)
	if err == nil || !strings.Contains(err.Error(), "can't APPEND to key retention.ms because its type is not LIST") {
		t.Fatalf("APPEND to a LONG: got %v, want Kafka's message", err)
	}
}

func TestOnChange(t *testing.T) {
	t.Parallel()
	type call struct {
		old, new string
	}
	var calls []call
	desc := func(tp *Topic) string {
		if tp == nil {
			return "-"
		}
		v, _ := tp.Configs.Override("retention.ms")
		return tp.Name + "/" + string(rune('0'+tp.Partitions)) + "/" + v
	}
	var r *Registry
	r, _ = newTestRegistry(t, WithOnChange(func(old, nu *Topic) {
		calls = append(calls, call{desc(old), desc(nu)})
		if nu != nil {
			// The new state is visible from the hook.
			if got, ok := r.Get(nu.Name); !ok || got.Partitions != nu.Partitions {
				t.Errorf("OnChange: Get(%s) = %+v, %t; want the new state", nu.Name, got, ok)
			}
			nu.Partitions = 9 // a copy: must not reach the registry
		}
	}))
	mustCreate(t, r, "a", 1, nil)
	_, _ = r.Create("a", 1, nil, false)      // fails: no call
	_, _ = r.Create("b", 1, nil, true)       // validate only: no call
	_, _ = r.CreatePartitions("a", 2, false) // call
	_, _ = r.AlterConfigs("a", map[string]*string{"retention.ms": strp("5")}, false)
	_, _ = r.AlterConfigs("a", map[string]*string{"retention.ms": strp("5")}, false) // no change: no call
	_, _ = r.IncrementalAlterConfigs("a", []AlterOp{{Name: "retention.ms", Op: OpDelete}}, false)
	_, _ = r.Delete("a")
	want := []call{{"-", "a/1/"}, {"a/1/", "a/2/"}, {"a/2/", "a/2/5"}, {"a/2/5", "a/2/"}, {"a/2/", "-"}}
	if len(calls) != len(want) {
		t.Fatalf("calls %v, want %v", calls, want)
	}
	for i := range want {
		if calls[i] != want[i] {
			t.Fatalf("calls %v, want %v", calls, want)
		}
	}
}

func TestErrorForm(t *testing.T) {
	t.Parallel()
	r, _ := newTestRegistry(t)
	mustCreate(t, r, "orders", 1, nil)
	_, err := r.Create("orders", 1, nil, false)
	if got := err.Error(); got != "topic: topic 'orders' already exists (TOPIC_ALREADY_EXISTS)" {
		t.Errorf("Error() = %q", got)
	}
	var ke *kerr.Error
	if !errors.As(err, &ke) || ke.Code != 36 {
		t.Errorf("errors.As(*kerr.Error) = %v", ke)
	}
	var te *Error
	if !errors.As(err, &te) || te.Detail != "topic 'orders' already exists" {
		t.Errorf("Detail = %+v", te)
	}
}
