package authn

import (
	"bytes"
	"testing"
)

// FuzzDecodeFile feeds arbitrary bytes to the credentials file decoder:
// no panic, and whatever it accepts encodes and decodes to the same users.
func FuzzDecodeFile(f *testing.F) {
	s, err := Open("")
	if err != nil {
		f.Fatal(err)
	}
	if err := s.SetPasswords(map[string]string{"alice": "pw", "b,o=b": "x"}); err != nil {
		f.Fatal(err)
	}
	good, err := encodeFile(*s.snap.Load())
	if err != nil {
		f.Fatal(err)
	}
	f.Add(good)
	f.Add(good[:len(good)/2])
	f.Add([]byte("KBSCRAM1\x00\x00\x00\x00[]"))
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, data []byte) {
		u, err := decodeFile(data)
		if err != nil {
			return
		}
		again, err := encodeFile(u)
		if err != nil {
			t.Fatalf("re-encode: %v", err)
		}
		u2, err := decodeFile(again)
		if err != nil {
			t.Fatalf("decode of the re-encoding: %v", err)
		}
		third, _ := encodeFile(u2)
		if !bytes.Equal(again, third) {
			t.Fatal("encoding is not stable")
		}
	})
}
