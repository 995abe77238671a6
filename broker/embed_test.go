package broker

import (
	"os"
	"testing"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"

	"github.com/kbroker/kbroker/fault"
)

// A consumer group and its data survive a Restart on the same address;
// the fault rules too.
func TestInProcessRestart(t *testing.T) {
	t.Parallel()
	srv := newTestServer(t, func(c *Config) { c.GroupInitialRebalanceDelay = 0 })
	addr := srv.Addr()
	createTopic(t, srv, "r", 1)
	ruleID := addRule(t, srv, fault.Rule{API: "DescribeGroups", DelayMs: 1})
	prod := newClient(t, srv, kgo.DefaultProduceTopic("r"))
	for _, v := range []string{"a", "b"} {
		if err := prod.ProduceSync(testCtx(t), kgo.StringRecord(v)).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	cons := newClient(t, srv, kgo.ConsumeTopics("r"), kgo.ConsumerGroup("g"),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.DisableAutoCommit())
	fs := cons.PollRecords(testCtx(t), 1)
	if err := fs.Err0(); err != nil || len(fs.Records()) != 1 || string(fs.Records()[0].Value) != "a" {
		t.Fatalf("first poll: %v %v", fs.Records(), err)
	}
	if err := cons.CommitUncommittedOffsets(testCtx(t)); err != nil {
		t.Fatal(err)
	}
	cons.Close()

	if err := srv.Restart(testCtx(t)); err != nil {
		t.Fatal(err)
	}
	if srv.Addr() != addr {
		t.Fatalf("restarted on %s, want %s", srv.Addr(), addr)
	}
	if len(srv.Faults().List()) != 1 || srv.Faults().List()[0].ID != ruleID {
		t.Fatalf("rules after restart: %+v", srv.Faults().List())
	}
	// The producer's connection closed; it reconnects.
	if err := prod.ProduceSync(testCtx(t), kgo.StringRecord("c")).FirstErr(); err != nil {
		t.Fatalf("produce after restart: %v", err)
	}
	again := newClient(t, srv, kgo.ConsumeTopics("r"), kgo.ConsumerGroup("g"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	var got []string
	for len(got) < 2 {
		fs := again.PollFetches(testCtx(t))
		if err := fs.Err0(); err != nil {
			t.Fatal(err)
		}
		for _, r := range fs.Records() {
			got = append(got, string(r.Value))
		}
	}
	if got[0] != "b" || got[1] != "c" {
		t.Fatalf("after restart the group read %q, want [b c] (from its committed offset)", got)
	}
}

// Reset leaves only the seed topics, empty, and no groups or offsets.
func TestInProcessReset(t *testing.T) {
	t.Parallel()
	srv := newTestServer(t, func(c *Config) { c.SeedTopics = "seeded:2, other" })
	for _, name := range []string{"seeded", "other"} {
		if _, ok := srv.Topics().Get(name); !ok {
			t.Fatalf("seed topic %s missing", name)
		}
	}
	if tp, _ := srv.Topics().Get("seeded"); tp.Partitions != 2 {
		t.Fatalf("seeded has %d partitions, want 2", tp.Partitions)
	}
	createTopic(t, srv, "mine", 1)
	prod := newClient(t, srv)
	if err := prod.ProduceSync(testCtx(t), &kgo.Record{Topic: "seeded", Value: []byte("x")}, &kgo.Record{Topic: "mine", Value: []byte("y")}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	adm := newAdmin(t, srv)
	if _, err := adm.CommitOffsets(testCtx(t), "g", offsetsFor("seeded", 0, 1)); err != nil {
		t.Fatal(err)
	}
	if err := srv.Reset(testCtx(t)); err != nil {
		t.Fatal(err)
	}
	if _, ok := srv.Topics().Get("mine"); ok {
		t.Fatal("topic mine survived Reset")
	}
	offs, err := adm.ListEndOffsets(testCtx(t), "seeded")
	if err != nil {
		t.Fatal(err)
	}
	if o, _ := offs.Lookup("seeded", 0); o.Err != nil || o.Offset != 0 {
		t.Fatalf("seeded after Reset: end %d (%v), want 0", o.Offset, o.Err)
	}
	groups, err := adm.ListGroups(testCtx(t))
	if err != nil {
		t.Fatal(err)
	}
	if len(groups) != 0 {
		t.Fatalf("groups after Reset: %v", groups.Groups())
	}
	fetched, err := adm.FetchOffsets(testCtx(t), "g")
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := fetched.Lookup("seeded", 0); ok {
		t.Fatalf("committed offsets after Reset: %v", fetched)
	}
}

func TestSeedTopicsConfig(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want []seedTopic
		bad  bool
	}{
		{in: ""},
		{in: "a", want: []seedTopic{{"a", 3}}},
		{in: "a:1, b:7,", want: []seedTopic{{"a", 1}, {"b", 7}}},
		{in: "a:0", bad: true},
		{in: ":2", bad: true},
		{in: "a:x", bad: true},
	} {
		got, err := parseSeedTopics(tc.in, 3)
		if (err != nil) != tc.bad || len(got) != len(tc.want) {
			t.Errorf("parseSeedTopics(%q) = %v, %v", tc.in, got, err)
			continue
		}
		for i := range got {
			if got[i] != tc.want[i] {
				t.Errorf("parseSeedTopics(%q)[%d] = %v, want %v", tc.in, i, got[i], tc.want[i])
			}
		}
	}
	cfg := DefaultConfig()
	cfg.DataDir = t.TempDir()
	cfg.SeedTopics = "x:-1"
	if err := cfg.Validate(); err == nil {
		t.Fatal("Validate accepted a bad kbroker.seed.topics")
	}
}

// offsetsFor is one offset to commit.
func offsetsFor(topic string, partition int32, offset int64) kadm.Offsets {
	offs := kadm.Offsets{}
	offs.Add(kadm.Offset{Topic: topic, Partition: partition, At: offset, LeaderEpoch: -1})
	return offs
}

// Serve makes a broker started by its caller restartable, on the same
// address, and tells OnRestart about each new one.
func TestServeRestart(t *testing.T) {
	t.Parallel()
	cfg := DefaultConfig()
	cfg.Listen, cfg.DataDir, cfg.SegmentBytes = "127.0.0.1:0", t.TempDir(), 4<<20
	b, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := b.Start(); err != nil {
		t.Fatal(err)
	}
	ip := Serve(b, cfg)
	var restarted []*Broker
	ip.OnRestart(func(nb *Broker) { restarted = append(restarted, nb) })
	addr := ip.Addr()
	if err := ip.Reset(testCtx(t)); err != nil {
		t.Fatal(err)
	}
	if len(restarted) != 1 || restarted[0] != ip.Broker || ip.Broker == b || ip.Addr() != addr {
		t.Fatalf("after Reset: %d calls, address %s (was %s)", len(restarted), ip.Addr(), addr)
	}
	if err := ip.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(cfg.DataDir); err != nil {
		t.Fatalf("Close removed the caller's data directory: %v", err)
	}
}

// A crash-like restart goes through crash recovery and keeps what was
// acknowledged: records and a committed offset.
func TestInProcessRestartCrashed(t *testing.T) {
	t.Parallel()
	core, logs := observer.New(zap.InfoLevel)
	ip, err := StartInProcess(t.TempDir(), func(c *Config) { c.FlushMode = "sync" }, WithLogger(zap.New(core)))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ip.Close() })
	createTopic(t, ip, "c", 1)
	prod := newClient(t, ip, kgo.DefaultProduceTopic("c"))
	for _, v := range []string{"a", "b", "c"} {
		if err := prod.ProduceSync(testCtx(t), kgo.StringRecord(v)).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	adm := newAdmin(t, ip)
	if _, err := adm.CommitOffsets(testCtx(t), "g", offsetsFor("c", 0, 2)); err != nil {
		t.Fatal(err)
	}
	addr := ip.Addr()
	if err := ip.RestartCrashed(); err != nil {
		t.Fatal(err)
	}
	if ip.Addr() != addr {
		t.Fatalf("restarted on %s, want %s", ip.Addr(), addr)
	}
	opened := logs.FilterMessage("store opened").All()
	if len(opened) != 2 || opened[1].ContextMap()["clean"] != false {
		t.Fatalf("store opened %d times, last %v; want a second, unclean open", len(opened), opened[len(opened)-1].ContextMap())
	}
	offs, err := adm.ListEndOffsets(testCtx(t), "c")
	if err != nil {
		t.Fatal(err)
	}
	if o, _ := offs.Lookup("c", 0); o.Offset != 3 {
		t.Fatalf("after the crash c ends at %d, want 3", o.Offset)
	}
	fetched, err := adm.FetchOffsets(testCtx(t), "g")
	if err != nil {
		t.Fatal(err)
	}
	if o, ok := fetched.Lookup("c", 0); !ok || o.At != 2 {
		t.Fatalf("committed offset after the crash: %+v, want 2", o)
	}
}
