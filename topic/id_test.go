package topic

import (
	"encoding/json"
	"testing"
)

func TestIDKafkaForm(t *testing.T) {
	t.Parallel()
	// Kafka's Uuid.ONE_UUID (0, 1) prints as this string.
	const one = "AAAAAAAAAAAAAAAAAAAAAQ"
	if got := oneID.String(); got != one {
		t.Fatalf("one UUID: got %q, want %q", got, one)
	}
	for _, s := range []string{one, one + "=="} {
		id, err := ParseID(s)
		if err != nil || id != oneID {
			t.Fatalf("ParseID(%q) = %v, %v; want %v", s, id, err, oneID)
		}
	}
	id := ID{0xfb, 0xff, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14}
	back, err := ParseID(id.String())
	if err != nil || back != id {
		t.Fatalf("round trip of %v: got %v, %v", id, back, err)
	}
	if id.String()[0] != '-' {
		t.Fatalf("%v prints as %q; the test wants an id starting with '-'", id, id.String())
	}
	for _, bad := range []string{"", "AAAA", one + "AA", "AAAAAAAAAAAAAAAAAAAAA*", "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA"} {
		if _, err := ParseID(bad); err == nil {
			t.Errorf("ParseID(%q) succeeded, want an error", bad)
		}
	}
}

func TestIDJSON(t *testing.T) {
	t.Parallel()
	id := newID()
	b, err := json.Marshal(id)
	if err != nil {
		t.Fatal(err)
	}
	if string(b) != `"`+id.String()+`"` {
		t.Fatalf("json.Marshal(%v) = %s, want the Kafka string", id, b)
	}
	var back ID
	if err := json.Unmarshal(b, &back); err != nil || back != id {
		t.Fatalf("json round trip: got %v, %v; want %v", back, err, id)
	}
	if err := json.Unmarshal([]byte(`"nope"`), &back); err == nil {
		t.Fatal("json.Unmarshal of a bad id succeeded")
	}
}

func TestNewID(t *testing.T) {
	t.Parallel()
	seen := map[ID]bool{}
	for range 2000 {
		id := newID()
		s := id.String()
		switch {
		case id.IsZero() || id == oneID:
			t.Fatalf("newID returned reserved id %v", id)
		case seen[id]:
			t.Fatalf("newID returned %v twice", id)
		case len(s) != 22 || s[0] == '-':
			t.Fatalf("newID returned %q: want 22 characters, not starting with '-'", s)
		case id[6]>>4 != 4 || id[8]>>6 != 2:
			t.Fatalf("newID returned %v: want version 4, IETF variant", id)
		}
		seen[id] = true
	}
}
