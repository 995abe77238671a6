package topic

import (
	"slices"
	"testing"
)

// FuzzReadJournal feeds arbitrary bytes after a valid header to the
// journal reader: records or an error, never a panic.
func FuzzReadJournal(f *testing.F) {
	base := journalBase{crc: 7, len: 2}
	hdr := []byte("KBTJ\x00\x00\x00\x01\x00\x00\x00\x07\x00\x00\x00\x02")
	f.Add([]byte{})
	f.Add([]byte("\x00\x00\x00\x0b\x00\x00\x00\x00{\"del\":\"a\"}"))
	f.Add([]byte("\xff\xff\xff\xff"))
	f.Fuzz(func(t *testing.T, data []byte) {
		recs, _, err := parseJournal("j", append(slices.Clone(hdr), data...), base)
		if err == nil {
			d := KafkaDefaults()
			_, _ = replay(emptySnapshot(), recs, "j", &d)
		}
	})
}
