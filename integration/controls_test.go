package integration

import (
	"context"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/IBM/sarama"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"go.uber.org/zap"
	"go.uber.org/zap/zaptest"

	"github.com/kbroker/kbroker/broker"
	"github.com/kbroker/kbroker/fault"
)

// controlledBroker is an in-process broker for the test controls, closed
// at cleanup.
func controlledBroker(t *testing.T, edit func(*broker.Config)) *broker.InProcess {
	t.Helper()
	skipIfExternal(t, "the test controls")
	ip, err := broker.StartInProcess(t.TempDir(), edit, broker.WithLogger(zaptest.NewLogger(t, zaptest.Level(zap.InfoLevel))))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := ip.Close(); err != nil {
			t.Errorf("close broker: %v", err)
		}
	})
	return ip
}

// A sarama idempotent producer retries an injected NOT_LEADER_OR_FOLLOWER
// and its record is stored once.
func TestControlsSaramaProducerRetriesNotLeader(t *testing.T) {
	t.Parallel()
	ip := controlledBroker(t, func(c *broker.Config) { c.SeedTopics = "sarama-faults" })
	id, err := ip.Faults().Add(fault.Rule{API: "Produce", Topic: "sarama-faults", Times: 1, Error: "NOT_LEADER_OR_FOLLOWER"})
	if err != nil {
		t.Fatal(err)
	}
	v36 := sarama.V3_6_0_0
	cfg := saramaConfig(&v36, true)
	prod, err := sarama.NewSyncProducer([]string{ip.Addr()}, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer prod.Close()
	part, off, err := prod.SendMessage(&sarama.ProducerMessage{Topic: "sarama-faults", Value: sarama.StringEncoder("once")})
	if err != nil {
		t.Fatalf("send: %v", err)
	}
	if part != 0 || off != 0 {
		t.Fatalf("stored at %d/%d, want 0/0", part, off)
	}
	st := ip.Faults().List()
	if len(st) != 1 || st[0].ID != id || st[0].Hits != 1 || st[0].Matched < 2 {
		t.Fatalf("rule %+v: want 1 hit and the retry matched", st)
	}
	end := saramaEnd(t, ip.Addr(), cfg, "sarama-faults")
	if end != 1 {
		t.Fatalf("end offset %d, want 1: the refused try stored nothing", end)
	}
}

// saramaEnd is a partition 0's end offset as sarama sees it.
func saramaEnd(t *testing.T, addr string, cfg *sarama.Config, topic string) int64 {
	t.Helper()
	cl, err := sarama.NewClient([]string{addr}, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	end, err := cl.GetOffset(topic, 0, sarama.OffsetNewest)
	if err != nil {
		t.Fatal(err)
	}
	return end
}

// A kgo group consumer lives through a clean and a crash-like restart of
// its broker: it reconnects, carries on as the same member of the same
// generation (kbroker restores the group), reads every record, commits,
// and never again reads what it committed before.
func TestControlsGroupSurvivesRestarts(t *testing.T) {
	t.Parallel()
	ip := controlledBroker(t, func(c *broker.Config) {
		c.SeedTopics = "restarts:2"
		c.FlushMode = "sync"
		c.GroupInitialRebalanceDelay = 0
	})
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	prod, err := kgo.NewClient(kgo.SeedBrokers(ip.Addr()), kgo.DefaultProduceTopic("restarts"),
		kgo.RetryTimeout(30*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	defer prod.Close()
	cons, err := kgo.NewClient(kgo.SeedBrokers(ip.Addr()), kgo.ConsumeTopics("restarts"), kgo.ConsumerGroup("restarts-g"),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.SessionTimeout(6*time.Second),
		kgo.RetryTimeout(30*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	defer cons.Close()

	seen := map[string]int{}
	produceAndRead := func(round string) {
		t.Helper()
		want := map[string]bool{}
		for i := range 10 {
			v := round + "-" + string(rune('a'+i))
			want[v] = true
			if err := prod.ProduceSync(ctx, kgo.StringRecord(v)).FirstErr(); err != nil {
				t.Fatalf("%s: produce: %v", round, err)
			}
		}
		for len(want) > 0 {
			fs := cons.PollFetches(ctx)
			if ctx.Err() != nil {
				t.Fatalf("%s: still waiting for %d records", round, len(want))
			}
			fs.EachRecord(func(r *kgo.Record) {
				seen[string(r.Value)]++
				delete(want, string(r.Value))
			})
		}
		// The group comes back with its member and generation, so a
		// commit after a restart passes as before it.
		if err := cons.CommitUncommittedOffsets(ctx); err != nil {
			t.Fatalf("%s: commit: %v", round, err)
		}
	}
	produceAndRead("before")
	if err := ip.Restart(ctx); err != nil {
		t.Fatal(err)
	}
	produceAndRead("after-restart")
	if err := ip.RestartCrashed(); err != nil {
		t.Fatal(err)
	}
	produceAndRead("after-crash")
	for v, n := range seen {
		if n != 1 {
			t.Errorf("%s read %d times, want once: each round was committed before the next restart", v, n)
		}
	}
	if len(seen) != 30 {
		t.Fatalf("read %d distinct records, want 30", len(seen))
	}
}

// kcat (librdkafka) retries a produce answered NOT_LEADER_OR_FOLLOWER
// and stores each line once.
func TestControlsKcatProducerRetriesNotLeader(t *testing.T) {
	t.Parallel()
	kcat := kcatPath(t)
	ip := controlledBroker(t, func(c *broker.Config) { c.SeedTopics = "kcat-faults" })
	if _, err := ip.Faults().Add(fault.Rule{API: "Produce", Topic: "kcat-faults", Times: 1, Error: "NOT_LEADER_OR_FOLLOWER"}); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, kcat, "-P", "-b", ip.Addr(), "-t", "kcat-faults", "-p", "0",
		"-X", "retry.backoff.ms=50", "-X", "topic.metadata.refresh.fast.interval.ms=50")
	cmd.Stdin = strings.NewReader("one\ntwo\nthree\n")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("kcat: %v\n%s", err, out)
	}
	if st := ip.Faults().List(); st[0].Hits != 1 {
		t.Fatalf("rule hits %d, want 1", st[0].Hits)
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(ip.Addr()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ends, err := kadm.NewClient(cl).ListEndOffsets(ctx, "kcat-faults")
	if err != nil {
		t.Fatal(err)
	}
	if o, _ := ends.Lookup("kcat-faults", 0); o.Offset != 3 {
		t.Fatalf("kcat-faults ends at %d, want 3: each line once", o.Offset)
	}
}
