package broker

import (
	"strings"
	"testing"
	"time"
)

func TestConfigLoadProperties(t *testing.T) {
	c := DefaultConfig()
	err := c.LoadProperties(strings.NewReader(`
# a comment
! another
listeners=PLAINTEXT://127.0.0.1:19092
log.dirs = /tmp/x
num.partitions=3
auto.create.topics.enable=false
connections.max.idle.ms=1500
kbroker.flush.mode=sync
`))
	if err != nil {
		t.Fatal(err)
	}
	if c.Listen != "127.0.0.1:19092" || c.DataDir != "/tmp/x" || c.DefaultPartitions != 3 || c.AutoCreateTopics ||
		c.ConnectionsMaxIdle != 1500*time.Millisecond || c.FlushMode != "sync" {
		t.Fatalf("loaded %+v", c)
	}
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
	changed := c.changedProperties()
	if !changed["num.partitions"] || changed["message.max.bytes"] {
		t.Fatalf("changed properties %v", changed)
	}
	bad := DefaultConfig()
	err = bad.LoadProperties(strings.NewReader("nope=1\nnum.partitions=x\nno equals sign\n"))
	if err == nil || !strings.Contains(err.Error(), "line 1") || !strings.Contains(err.Error(), "line 2") || !strings.Contains(err.Error(), "line 3") {
		t.Fatalf("bad file: %v", err)
	}
}

func TestConfigValidateReportsEverything(t *testing.T) {
	c := DefaultConfig()
	c.Listen, c.FlushMode, c.SegmentBytes, c.DefaultPartitions = "nope", "fast", 1000, 0
	err := c.Validate()
	for _, want := range []string{"listeners", "kbroker.flush.mode", "log.segment.bytes", "num.partitions"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Fatalf("Validate = %v, missing %s", err, want)
		}
	}
}
