package topic

import (
	"strconv"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/kbroker/kbroker/internal/testenv"
)

func TestValidateName(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		valid bool
	}{
		{"orders", true},
		{"a", true},
		{"A-Z_a.z-0.9", true},
		{"...", true},
		{".hidden", true},
		{"__consumer_offsets", true}, // legal; Create refuses it for another reason
		{strings.Repeat("x", 249), true},
		{strings.Repeat("x", 250), false},
		{"", false},
		{".", false},
		{"..", false},
		{"with space", false},
		{"slash/name", false},
		{"back\\slash", false},
		{"plus+", false},
		{"colon:", false},
		{"caf\u00e9", false},
		{"tab\t", false},
		{"nul\x00", false},
	}
	for _, tt := range tests {
		err := ValidateName(tt.name)
		if tt.valid {
			testenv.WantErr(t, "ValidateName("+tt.name+")", err, nil)
			continue
		}
		testenv.WantErr(t, "ValidateName("+strconv.Quote(tt.name)+")", err, kerr.InvalidTopicException)
		if !strings.HasPrefix(err.Error(), "topic: topic name is invalid") {
			t.Errorf("ValidateName(%q) = %q, want a \"topic: topic name is invalid\" message", tt.name, err)
		}
	}
}

func TestIsInternal(t *testing.T) {
	t.Parallel()
	for name, want := range map[string]bool{
		"__consumer_offsets": true, "__transaction_state": true, "__share_group_state": true,
		"__cluster_metadata": false, "consumer_offsets": false, "__consumer.offsets": false,
	} {
		if got := IsInternal(name); got != want {
			t.Errorf("IsInternal(%q) = %t, want %t", name, got, want)
		}
	}
}

func TestCollisionKey(t *testing.T) {
	t.Parallel()
	for _, pair := range [][2]string{{"a.b", "a_b"}, {"a.b.c", "a_b_c"}, {"a._", "a__"}} {
		if collisionKey(pair[0]) != collisionKey(pair[1]) {
			t.Errorf("%q and %q should collide", pair[0], pair[1])
		}
	}
	for _, pair := range [][2]string{{"a.b", "a-b"}, {"ab", "a_b"}, {"a.b", "A_b"}} {
		if collisionKey(pair[0]) == collisionKey(pair[1]) {
			t.Errorf("%q and %q should not collide", pair[0], pair[1])
		}
	}
}
