package broker

import (
	"strings"
	"testing"
	"time"
)

// TestKafkaSynonyms: Kafka's coarser names set kbroker's settings, and the
// most specific one set wins wherever it stands in the file, as in Kafka.
func TestKafkaSynonyms(t *testing.T) {
	for _, tc := range []struct {
		name, file string
		check      func(c *Config) bool
	}{
		{"hours", "log.retention.hours=2", func(c *Config) bool { return c.RetentionMs == int64(2*time.Hour/time.Millisecond) }},
		{"minutes over hours, before them", "log.retention.minutes=3\nlog.retention.hours=2",
			func(c *Config) bool { return c.RetentionMs == int64(3*time.Minute/time.Millisecond) }},
		{"ms over minutes and hours, before them", "log.retention.ms=1000\nlog.retention.hours=2\nlog.retention.minutes=3",
			func(c *Config) bool { return c.RetentionMs == 1000 }},
		{"forever", "log.retention.hours=-1", func(c *Config) bool { return c.RetentionMs == -1 }},
		{"roll hours", "log.roll.hours=5", func(c *Config) bool { return c.LogRollMs == int64(5*time.Hour/time.Millisecond) }},
		{"broker.id", "broker.id=5", func(c *Config) bool { return c.NodeID == 5 }},
		{"node.id over broker.id", "node.id=3\nbroker.id=5", func(c *Config) bool { return c.NodeID == 3 }},
		{"an ignored setting", "num.io.threads=8\nprocess.roles=broker", func(c *Config) bool { return true }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := DefaultConfig()
			if err := c.LoadProperties(strings.NewReader(tc.file)); err != nil {
				t.Fatal(err)
			}
			if !tc.check(&c) {
				t.Fatalf("retention %d ms, roll %d ms, node %d", c.RetentionMs, c.LogRollMs, c.NodeID)
			}
		})
	}
	for _, bad := range []string{"log.retention.hours=soon", "log.retention.hours=9223372036854775807", "zookeeper.connect=zk:2181"} {
		c := DefaultConfig()
		if err := c.LoadProperties(strings.NewReader(bad)); err == nil || !strings.Contains(err.Error(), "line 1") {
			t.Errorf("%s: got %v, want an error for line 1", bad, err)
		}
	}
	if why, ok := InapplicableSetting("num.io.threads"); !ok || why == "" {
		t.Errorf("num.io.threads: %q, %v", why, ok)
	}
	if _, ok := InapplicableSetting("num.partitions"); ok {
		t.Error("num.partitions is a kbroker setting, not an ignored one")
	}
}

// TestControllerListenersNotBound: listeners named in
// controller.listener.names are left out of what kbroker binds and
// advertises; naming only those is an error.
func TestControllerListenersNotBound(t *testing.T) {
	c := DefaultConfig()
	c.Listen = "PLAINTEXT://127.0.0.1:0,CONTROLLER://127.0.0.1:0"
	c.AdvertisedListener = "PLAINTEXT://kafka.example:9092,CONTROLLER://kafka.example:9093"
	c.ListenerSecurityProtocolMap = "CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT"
	c.ControllerListenerNames = "controller"
	specs, err := c.listenerSpecs()
	if err != nil {
		t.Fatal(err)
	}
	if len(specs) != 1 || specs[0].name != "PLAINTEXT" || specs[0].adv != "kafka.example:9092" {
		t.Fatalf("specs %+v, want PLAINTEXT only, advertised as kafka.example:9092", specs)
	}
	c.Listen, c.AdvertisedListener = "CONTROLLER://127.0.0.1:0", ""
	if _, err := c.listenerSpecs(); err == nil || !strings.Contains(err.Error(), "controller.listener.names") {
		t.Fatalf("only controller listeners: %v", err)
	}
}
