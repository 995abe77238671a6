//go:build cgo

package integration

// confluent-kafka-go (librdkafka 2.11) on secured listeners: SCRAM over
// SASL_SSL with a consumer group, OAUTHBEARER with librdkafka's unsecured
// JWT, KIP-368 re-authentication across several session lifetimes, and a
// bad password.

import (
	"fmt"
	"strings"
	"testing"
	"time"

	ckafka "github.com/confluentinc/confluent-kafka-go/v2/kafka"

	"github.com/kbroker/kbroker/broker"
	"github.com/kbroker/kbroker/internal/testpki"
)

// confluentSecure adds security settings to a confluent config.
func confluentSecure(cfg ckafka.ConfigMap, p *testpki.PKI, protocol, mech, user, pass string) ckafka.ConfigMap {
	cfg["security.protocol"] = protocol
	if mech != "" {
		cfg["sasl.mechanisms"] = mech
	}
	if user != "" {
		cfg["sasl.username"], cfg["sasl.password"] = user, pass
	}
	if strings.HasSuffix(protocol, "SSL") {
		cfg["ssl.ca.location"] = p.CAFile
	}
	return cfg
}

// confluentRoundTrip produces n records and consumes them back in a
// consumer group, both with the given security settings; produceEvery
// spaces the records out (to span re-authentications).
func confluentRoundTrip(t *testing.T, addr string, secure func(ckafka.ConfigMap) ckafka.ConfigMap, n int, produceEvery time.Duration) {
	t.Helper()
	topic := topicName(t)
	pcfg := secure(confluentBase(addr))
	pcfg["message.timeout.ms"] = 15000
	prod, err := ckafka.NewProducer(&pcfg)
	if err != nil {
		t.Fatal(err)
	}
	defer prod.Close()
	for i := range n {
		dr := make(chan ckafka.Event, 1)
		if err := prod.Produce(&ckafka.Message{TopicPartition: ckafka.TopicPartition{Topic: &topic, Partition: ckafka.PartitionAny},
			Value: fmt.Appendf(nil, "v%d", i)}, dr); err != nil {
			t.Fatal(err)
		}
		select {
		case ev := <-dr:
			if m := ev.(*ckafka.Message); m.TopicPartition.Error != nil {
				t.Fatalf("record %d: %v", i, m.TopicPartition.Error)
			}
		case <-time.After(20 * time.Second):
			t.Fatalf("record %d: no delivery report", i)
		}
		if produceEvery > 0 {
			<-time.After(produceEvery) // spaces the records over the session lifetimes
		}
	}
	ccfg := secure(confluentBase(addr))
	ccfg["group.id"] = topic
	ccfg["auto.offset.reset"] = "earliest"
	ccfg["session.timeout.ms"] = 6000
	ccfg["heartbeat.interval.ms"] = 1000
	c, err := ckafka.NewConsumer(&ccfg)
	if err != nil {
		t.Fatal(err)
	}
	defer closeConfluent(t, c)
	if err := c.Subscribe(topic, nil); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(30 * time.Second)
	for got := 0; got < n; {
		if time.Now().After(deadline) {
			t.Fatalf("consumed %d of %d records", got, n)
		}
		switch ev := c.Poll(200).(type) {
		case *ckafka.Message:
			if want := fmt.Sprintf("v%d", got); string(ev.Value) != want {
				t.Fatalf("record %d: %q, want %q", got, ev.Value, want)
			}
			got++
		case ckafka.Error:
			if ev.IsFatal() {
				t.Fatal(ev)
			}
			t.Logf("confluent consumer: %v", ev)
		}
	}
	if _, err := c.Commit(); err != nil {
		t.Fatalf("commit: %v", err)
	}
}

func TestSecurityConfluent(t *testing.T) {
	t.Parallel()
	p := testpki.New(t)
	b := secBroker(t, p, nil)
	t.Run("scram-sha-512 over SASL_SSL", func(t *testing.T) {
		confluentRoundTrip(t, b.listener("SASL_SSL"), func(cfg ckafka.ConfigMap) ckafka.ConfigMap {
			return confluentSecure(cfg, p, "SASL_SSL", "SCRAM-SHA-512", "alice", "alice-secret")
		}, 5, 0)
	})
	t.Run("plain over SASL_PLAINTEXT", func(t *testing.T) {
		confluentRoundTrip(t, b.listener("SASL_PLAINTEXT"), func(cfg ckafka.ConfigMap) ckafka.ConfigMap {
			return confluentSecure(cfg, p, "SASL_PLAINTEXT", "PLAIN", "alice", "alice-secret")
		}, 5, 0)
	})
	t.Run("oauthbearer unsecured jwt", func(t *testing.T) {
		confluentRoundTrip(t, b.listener("SASL_PLAINTEXT"), func(cfg ckafka.ConfigMap) ckafka.ConfigMap {
			cfg = confluentSecure(cfg, p, "SASL_PLAINTEXT", "OAUTHBEARER", "", "")
			cfg["enable.sasl.oauthbearer.unsecure.jwt"] = true
			cfg["sasl.oauthbearer.config"] = "principal=svc lifeSeconds=3600"
			return cfg
		}, 3, 0)
	})
	t.Run("bad password", func(t *testing.T) {
		cfg := confluentSecure(confluentBase(b.listener("SASL_PLAINTEXT")), p, "SASL_PLAINTEXT", "SCRAM-SHA-256", "alice", "wrong")
		a, err := ckafka.NewAdminClient(&cfg)
		if err != nil {
			t.Fatal(err)
		}
		defer a.Close()
		_, err = a.GetMetadata(nil, true, 5000)
		if err == nil {
			t.Fatal("metadata with a bad password succeeded")
		}
	})
}

// TestSecurityConfluentReauthentication: with connections.max.reauth.ms
// of 10 s, librdkafka re-authenticates (KIP-368) and keeps producing and
// consuming over several session lifetimes on its connections.
//
// librdkafka re-authenticates at 90% of the lifetime, so a request it
// sends just before then must reach the broker within the last tenth:
// 200 ms of a 2 s lifetime is little on a loaded machine under -race;
// 1 s of 10 s is the margin kgo keeps for itself.
func TestSecurityConfluentReauthentication(t *testing.T) {
	t.Parallel()
	const life = 10 * time.Second
	p := testpki.New(t)
	b := secBroker(t, p, func(c *broker.Config) { c.ConnectionsMaxReauth = life })
	confluentRoundTrip(t, b.listener("SASL_PLAINTEXT"), func(cfg ckafka.ConfigMap) ckafka.ConfigMap {
		return confluentSecure(cfg, p, "SASL_PLAINTEXT", "SCRAM-SHA-256", "alice", "alice-secret")
	}, 10, life/4) // 10 records over 2.5 lifetimes
	// librdkafka reconnects after a close, so the round trip alone would
	// not tell re-authentication from killed connections.
	if st := b.ip.Stats(); st.ExpiredSessions != 0 || st.Reauthentications == 0 {
		t.Fatalf("%d sessions expired, %d re-authentications; want 0 and some", st.ExpiredSessions, st.Reauthentications)
	}
}
