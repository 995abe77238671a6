package cluster

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"testing"
)

func strp(s string) *string { return &s }

func TestStoreRoundTrip(t *testing.T) {
	dir := t.TempDir()
	s, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	if got := s.Load(); !reflect.DeepEqual(got, &State{}) {
		t.Fatalf("fresh state %+v", got)
	}
	err = s.Update(func(st *State) error {
		st.FeaturesEpoch = 2
		st.Features = map[string]int16{"group.version": 0}
		st.Quotas = []Quota{
			{Entity: []EntityPart{{Type: "user", Name: strp("b")}}, Values: map[string]float64{"producer_byte_rate": 1024}},
			{Entity: []EntityPart{{Type: "user"}, {Type: "client-id", Name: strp("c")}}, Values: map[string]float64{"request_percentage": 50}},
			{Entity: []EntityPart{{Type: "ip", Name: strp("1.2.3.4")}}, Values: map[string]float64{}}, // empty: dropped
		}
		st.BrokerConfigs = map[string]map[string]string{"": {"log.retention.ms": "1000"}, "0": {}}
		st.GroupConfigs = map[string]map[string]string{"g": {"consumer.session.timeout.ms": "30000"}}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	want := &State{
		FeaturesEpoch: 2,
		Features:      map[string]int16{"group.version": 0},
		Quotas: []Quota{
			{Entity: []EntityPart{{Type: "client-id", Name: strp("c")}, {Type: "user"}}, Values: map[string]float64{"request_percentage": 50}},
			{Entity: []EntityPart{{Type: "user", Name: strp("b")}}, Values: map[string]float64{"producer_byte_rate": 1024}},
		},
		BrokerConfigs: map[string]map[string]string{"": {"log.retention.ms": "1000"}},
		GroupConfigs:  map[string]map[string]string{"g": {"consumer.session.timeout.ms": "30000"}},
	}
	if got := s.Load(); !reflect.DeepEqual(got, want) {
		t.Fatalf("after update: got %+v, want %+v", got, want)
	}
	again, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	if got := again.Load(); !reflect.DeepEqual(got, want) {
		t.Fatalf("after reopen: got %+v, want %+v", got, want)
	}

	// A refused update changes nothing, in memory or on disk.
	before, _ := os.ReadFile(filepath.Join(dir, FileName))
	boom := errors.New("boom")
	if err := s.Update(func(st *State) error { st.FeaturesEpoch = 99; return boom }); !errors.Is(err, boom) {
		t.Fatalf("update error %v", err)
	}
	after, _ := os.ReadFile(filepath.Join(dir, FileName))
	if s.Load().FeaturesEpoch != 2 || string(before) != string(after) {
		t.Fatal("a refused update left a trace")
	}
}

func TestOpenRefusesDamage(t *testing.T) {
	dir := t.TempDir()
	s, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Update(func(st *State) error { st.GroupConfigs = map[string]map[string]string{"g": {"k": "v"}}; return nil }); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, FileName)
	data, _ := os.ReadFile(path)
	for i := range data {
		bad := append([]byte(nil), data...)
		bad[i] ^= 0x01
		if st, err := Decode(bad); err == nil && !reflect.DeepEqual(st, s.Load()) {
			t.Fatalf("flipping byte %d (%q) decoded to a different state without an error: %+v", i, data[i], st)
		}
	}
	if err := os.WriteFile(path, data[:len(data)/2], 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Open(dir); err == nil {
		t.Fatal("a torn file opened")
	}
}
