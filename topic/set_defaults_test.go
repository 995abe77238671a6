package topic

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestSetDefaults checks that a new broker default reaches the topics that
// do not override it, with its dynamic source, and that OnChange hears of
// exactly those.
func TestSetDefaults(t *testing.T) {
	var changed []string
	r, err := Open(t.TempDir(), KafkaDefaults(), WithOnChange(func(old, nu *Topic) { changed = append(changed, nu.Name) }))
	if err != nil {
		t.Fatal(err)
	}
	ms := "1000"
	if _, err := r.Create("inherits", 1, nil, false); err != nil {
		t.Fatal(err)
	}
	if _, err := r.Create("overrides", 1, map[string]*string{"retention.ms": &ms}, false); err != nil {
		t.Fatal(err)
	}
	changed = nil
	d := KafkaDefaults()
	d.RetentionMs = 5000
	d.Dynamic = map[string]kmsg.ConfigSource{"log.retention.ms": kmsg.ConfigSourceDynamicDefaultBrokerConfig}
	if err := r.SetDefaults(d); err != nil {
		t.Fatal(err)
	}
	if len(changed) != 1 || changed[0] != "inherits" {
		t.Fatalf("OnChange heard of %v, want [inherits]", changed)
	}
	for name, want := range map[string]struct {
		value string
		src   kmsg.ConfigSource
	}{
		"inherits":  {"5000", kmsg.ConfigSourceDynamicDefaultBrokerConfig},
		"overrides": {"1000", kmsg.ConfigSourceDynamicTopicConfig},
	} {
		entries, err := r.DescribeConfigs(name)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range entries {
			if e.Name == "retention.ms" && (e.Value != want.value || e.Source != want.src) {
				t.Errorf("%s retention.ms: %s from %v, want %s from %v", name, e.Value, e.Source, want.value, want.src)
			}
		}
	}
	d.RetentionMs = -5
	if err := r.SetDefaults(d); err == nil {
		t.Fatal("an invalid default was accepted")
	}
}

// TestSetDefaultsSurvivesLaterChanges: a change accepted after SetDefaults
// publishes a state built on the re-resolved topics, not on the ones
// resolved against the old defaults (the journal's head and the published
// state must move together).
func TestSetDefaultsSurvivesLaterChanges(t *testing.T) {
	r, err := Open(t.TempDir(), KafkaDefaults())
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if _, err := r.Create("first", 1, nil, false); err != nil {
		t.Fatal(err)
	}
	d := KafkaDefaults()
	d.RetentionMs = 5000
	if err := r.SetDefaults(d); err != nil {
		t.Fatal(err)
	}
	if _, err := r.Create("second", 1, nil, false); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"first", "second"} {
		got, ok := r.Get(name)
		if !ok {
			t.Fatalf("%s is gone", name)
		}
		if ms := got.Configs.RetentionMs(); ms != 5000 {
			t.Errorf("%s retention.ms = %d after a later create, want 5000", name, ms)
		}
	}
}
