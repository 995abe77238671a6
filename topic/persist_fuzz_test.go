package topic

import (
	"testing"
)

// FuzzDecode feeds arbitrary bytes to the file decoder: it must return a
// snapshot or an error, never panic.
func FuzzDecode(f *testing.F) {
	s := emptySnapshot()
	data, _, _ := encode(s)
	f.Add(data)
	f.Add([]byte(`{"version": 1, "crc32c": 0, "topics": null}`))
	f.Add([]byte(`{"version": 1, "crc32c": 1, "topics": [{"name": "a", "id": "AAAAAAAAAAAAAAAAAAAAAg", "partitions": 1, "configs": {"retention.ms": "1"}}]}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		d := KafkaDefaults()
		snap, _, err := decode("topics", data, &d)
		if err == nil && snap == nil {
			t.Fatal("nil snapshot without an error")
		}
	})
}
