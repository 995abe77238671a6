package acl

import (
	"bytes"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// FuzzDecode feeds arbitrary bytes to the ACL file decoder: no panic, every
// binding it accepts is valid, and the encoding of what it accepts is
// stable.
func FuzzDecode(f *testing.F) {
	good, err := encode([]Binding{{ResourceType: kmsg.ACLResourceTypeTopic, ResourceName: "t", PatternType: kmsg.ACLResourcePatternTypePrefixed,
		Principal: "User:a", Host: "*", Operation: kmsg.ACLOperationRead, Permission: kmsg.ACLPermissionTypeAllow}})
	if err != nil {
		f.Fatal(err)
	}
	f.Add(good)
	f.Add(good[:len(good)-3])
	f.Add([]byte("KBACLS01\x00\x00\x00\x00null"))
	f.Fuzz(func(t *testing.T, data []byte) {
		bs, err := decode(data)
		if err != nil {
			return
		}
		for i := range bs {
			if err := bs[i].Validate(); err != nil {
				t.Fatalf("accepted an invalid binding: %v", err)
			}
		}
		again, err := encode(bs)
		if err != nil {
			t.Fatal(err)
		}
		bs2, err := decode(again)
		if err != nil {
			t.Fatalf("decode of the re-encoding: %v", err)
		}
		third, _ := encode(bs2)
		if !bytes.Equal(again, third) {
			t.Fatal("encoding is not stable")
		}
	})
}
