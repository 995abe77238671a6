package topic

import (
	"crypto/rand"
	"encoding/base64"
	"fmt"
	"strings"
)

// ID is a topic id (KIP-516): 16 bytes, printed and parsed as Kafka's
// Uuid.toString does, URL-safe base64 without padding (22 characters). The
// zero ID means "no id" on the wire (Uuid.ZERO_UUID), so a topic never has it.
type ID [16]byte

// String returns the id in Kafka's form, e.g. "AAAAAAAAAAAAAAAAAAAAAQ" for
// the id whose last byte is 1.
func (id ID) String() string {
	return base64.RawURLEncoding.EncodeToString(id[:])
}

// IsZero reports whether id is the zero UUID, which means "no id".
func (id ID) IsZero() bool { return id == ID{} }

// ParseID parses an id printed by Kafka or by String. Like Uuid.fromString it
// accepts the padded form too and rejects anything that is not 16 bytes.
func ParseID(s string) (ID, error) {
	var id ID
	if len(s) > 24 {
		return id, fmt.Errorf("topic: id %.24q... is too long to be a base64 UUID", s)
	}
	b, err := base64.RawURLEncoding.DecodeString(strings.TrimRight(s, "="))
	if err != nil {
		return id, fmt.Errorf("topic: id %q is not URL-safe base64: %w", s, err)
	}
	if len(b) != len(id) {
		return id, fmt.Errorf("topic: id %q decodes to %d bytes, want 16", s, len(b))
	}
	copy(id[:], b)
	return id, nil
}

// MarshalText encodes the id as String does; the topics file stores ids so.
func (id ID) MarshalText() ([]byte, error) { return []byte(id.String()), nil }

// UnmarshalText parses the id as ParseID does.
func (id *ID) UnmarshalText(b []byte) error {
	v, err := ParseID(string(b))
	if err != nil {
		return err
	}
	*id = v
	return nil
}

// oneID is Kafka's Uuid.ONE_UUID, reserved for the metadata topic.
var oneID = ID{15: 1}

// newID returns a random version-4 UUID as Kafka's Uuid.randomUuid does: it
// never returns the reserved zero and one ids, nor an id whose string starts
// with '-', which command-line tools would take for a flag.
func newID() ID {
	for {
		var id ID
		_, _ = rand.Read(id[:])   // crypto/rand.Read never fails (it crashes the program instead)
		id[6] = id[6]&0x0f | 0x40 // version 4, as java.util.UUID.randomUUID
		id[8] = id[8]&0x3f | 0x80 // IETF variant
		if id != oneID && !id.IsZero() && id.String()[0] != '-' {
			return id
		}
	}
}
