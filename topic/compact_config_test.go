package topic

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/kbroker/kbroker/internal/testenv"
)

// openWith opens a registry in a fresh directory with the given defaults.
func openWith(t *testing.T, d Defaults) *Registry {
	t.Helper()
	r, err := Open(filepath.Join(t.TempDir(), "metadata"), d)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	return r
}

// TestCompactGate checks that "compact" is refused on every path while the
// broker has no cleaner, and accepted on every path (including switching a
// live topic) once it has one.
func TestCompactGate(t *testing.T) {
	t.Parallel()
	off := openWith(t, KafkaDefaults())
	for _, policy := range []string{"compact", "compact,delete", "delete, compact"} {
		_, err := off.Create("c", 1, map[string]*string{"cleanup.policy": strp(policy)}, false)
		testenv.WantErr(t, "create "+policy+" without a cleaner", err, kerr.InvalidConfig)
		if !strings.Contains(err.Error(), "compaction is not enabled") {
			t.Errorf("create %s: error %q does not say why", policy, err)
		}
	}
	mustCreate(t, off, "d", 1, nil)
	_, err := off.AlterConfigs("d", map[string]*string{"cleanup.policy": strp("compact")}, false)
	testenv.WantErr(t, "alter to compact without a cleaner", err, kerr.InvalidConfig)
	_, err = off.IncrementalAlterConfigs("d", []AlterOp{{Name: "cleanup.policy", Op: OpAppend, Value: strp("compact")}}, false)
	testenv.WantErr(t, "append compact without a cleaner", err, kerr.InvalidConfig)

	// Internal topics are compacted by their coordinators' snapshots and
	// report "compact" as Kafka's do, cleaner or not.
	it, err := off.CreateInternal(GroupMetadataTopic, 1, map[string]*string{"cleanup.policy": strp("compact")})
	testenv.WantErr(t, "internal compact topic", err, nil)
	if !it.Configs.CleanupPolicy().Compact || it.Configs.CleanupPolicy().Delete {
		t.Errorf("internal topic policy: got %+v, want compact only", it.Configs.CleanupPolicy())
	}

	d := KafkaDefaults()
	d.AllowCompact = true
	on := openWith(t, d)
	tp := mustCreate(t, on, "c", 1, map[string]*string{"cleanup.policy": strp("compact, delete")})
	if got, _ := tp.Configs.Override("cleanup.policy"); got != "compact,delete" {
		t.Errorf("stored policy %q, want canonical compact,delete", got)
	}
	if p := tp.Configs.CleanupPolicy(); !p.Compact || !p.Delete {
		t.Errorf("policy %+v, want compact and delete", p)
	}
	// Live switches, both ways and by each API.
	mustCreate(t, on, "s", 1, nil)
	tp, err = on.IncrementalAlterConfigs("s", []AlterOp{{Name: "cleanup.policy", Op: OpSet, Value: strp("compact")}}, false)
	testenv.WantErr(t, "set compact", err, nil)
	if p := tp.Configs.CleanupPolicy(); !p.Compact || p.Delete {
		t.Errorf("after SET compact: %+v", p)
	}
	tp, err = on.IncrementalAlterConfigs("s", []AlterOp{{Name: "cleanup.policy", Op: OpAppend, Value: strp("delete")}}, false)
	testenv.WantErr(t, "append delete", err, nil)
	if got, _ := tp.Configs.Override("cleanup.policy"); got != "compact,delete" {
		t.Errorf("after APPEND delete: %q", got)
	}
	tp, err = on.AlterConfigs("s", map[string]*string{"cleanup.policy": strp("delete")}, false)
	testenv.WantErr(t, "alter back to delete", err, nil)
	if p := tp.Configs.CleanupPolicy(); p.Compact || !p.Delete {
		t.Errorf("after AlterConfigs delete: %+v", p)
	}
	if cur, _ := on.Get("s"); cur.Configs.CleanupPolicy().Compact {
		t.Errorf("registry still has compact after the switch back")
	}
}

// TestCompactionConfigs checks the effective values of the cleaner's topic
// configs, inherited from the broker and overridden on the topic, and
// Kafka's cross-config rule on the effective lags.
func TestCompactionConfigs(t *testing.T) {
	t.Parallel()
	d := KafkaDefaults()
	d.AllowCompact = true
	d.CleanupPolicy = "compact"
	d.MinCleanableRatio = 0.25
	d.DeleteRetentionMs = 5000
	d.MinCompactionLagMs = 10
	d.MaxCompactionLagMs = 1000
	d.SegmentMs = 100
	if err := d.Validate(); err != nil {
		t.Fatalf("Validate: %v", err)
	}
	c, err := NewConfigs(nil, d)
	if err != nil {
		t.Fatal(err)
	}
	if p := c.CleanupPolicy(); !p.Compact || p.Delete {
		t.Errorf("inherited policy %+v, want compact", p)
	}
	if c.MinCleanableDirtyRatio() != 0.25 || c.DeleteRetentionMs() != 5000 || c.MinCompactionLagMs() != 10 ||
		c.MaxCompactionLagMs() != 1000 || c.SegmentMs() != 100 || c.SegmentBytes() != 1<<30 {
		t.Errorf("inherited: ratio %v, delete %d, lags %d..%d, segment %d ms %d bytes", c.MinCleanableDirtyRatio(),
			c.DeleteRetentionMs(), c.MinCompactionLagMs(), c.MaxCompactionLagMs(), c.SegmentMs(), c.SegmentBytes())
	}
	byName := map[string]ConfigEntry{}
	for _, e := range c.Describe(d) {
		byName[e.Name] = e
	}
	for name, want := range map[string]string{
		"cleanup.policy": "compact", "min.cleanable.dirty.ratio": "0.25", "delete.retention.ms": "5000",
		"min.compaction.lag.ms": "10", "max.compaction.lag.ms": "1000", "segment.ms": "100",
	} {
		if got := byName[name].Value; got != want {
			t.Errorf("Describe %s: got %q, want %q", name, got, want)
		}
	}

	c, err = NewConfigs(map[string]*string{
		"min.cleanable.dirty.ratio": strp("0.01"), "delete.retention.ms": strp("2000"),
		"min.compaction.lag.ms": strp("0"), "segment.ms": strp("100"), "segment.bytes": strp("1048576"),
	}, d)
	if err != nil {
		t.Fatal(err)
	}
	if c.MinCleanableDirtyRatio() != 0.01 || c.DeleteRetentionMs() != 2000 || c.MinCompactionLagMs() != 0 ||
		c.SegmentMs() != 100 || c.SegmentBytes() != 1<<20 {
		t.Errorf("overridden: ratio %v, delete %d, min lag %d, segment %d ms %d bytes", c.MinCleanableDirtyRatio(),
			c.DeleteRetentionMs(), c.MinCompactionLagMs(), c.SegmentMs(), c.SegmentBytes())
	}

	// The rule min lag ≤ max lag holds on the effective values: a topic
	// that sets only its min lag is checked against the broker's max lag.
	_, err = NewConfigs(map[string]*string{"min.compaction.lag.ms": strp("2000")}, d)
	testenv.WantErr(t, "min lag above the broker's max lag", err, kerr.InvalidConfig)
	_, err = NewConfigs(map[string]*string{"min.compaction.lag.ms": strp("2000"), "max.compaction.lag.ms": strp("3000")}, d)
	testenv.WantErr(t, "both lags set", err, nil)

	bad := d
	bad.MinCompactionLagMs = 2000
	if err := bad.Validate(); err == nil || !strings.Contains(err.Error(), "log.cleaner.min.compaction.lag.ms") {
		t.Errorf("Validate with min lag > max lag: got %v", err)
	}
	bad = d
	bad.MinCleanableRatio = 1.5
	if err := bad.Validate(); err == nil || !strings.Contains(err.Error(), "log.cleaner.min.cleanable.ratio") {
		t.Errorf("Validate with ratio 1.5: got %v", err)
	}
	bad = d
	bad.AllowCompact = false
	if err := bad.Validate(); err == nil || !strings.Contains(err.Error(), "compaction is not enabled") {
		t.Errorf("Validate of log.cleanup.policy=compact without a cleaner: got %v", err)
	}
}
