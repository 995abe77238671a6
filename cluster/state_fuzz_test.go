package cluster

import (
	"reflect"
	"testing"
)

// FuzzDecode feeds arbitrary bytes to the state-file decoder: it never
// panics, and whatever it accepts encodes and decodes back to itself.
func FuzzDecode(f *testing.F) {
	seed, err := Encode(&State{FeaturesEpoch: 1, Features: map[string]int16{"group.version": 1},
		Quotas:        []Quota{{Entity: []EntityPart{{Type: "user"}}, Values: map[string]float64{"producer_byte_rate": 1}}},
		BrokerConfigs: map[string]map[string]string{"": {"a": "b"}}})
	if err != nil {
		f.Fatal(err)
	}
	f.Add(seed)
	f.Add([]byte(`{"version":1,"crc32c":0,"state":{}}`))
	f.Add([]byte(`{}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		st, err := Decode(data)
		if err != nil {
			return
		}
		out, err := Encode(st)
		if err != nil {
			t.Fatalf("encode a decoded state: %v", err)
		}
		back, err := Decode(out)
		if err != nil {
			t.Fatalf("decode an encoded state: %v", err)
		}
		if !reflect.DeepEqual(st, back) {
			t.Fatalf("round trip: %+v became %+v", st, back)
		}
	})
}
