package fault

import (
	"encoding/json"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// FuzzRule feeds the HTTP API's JSON to Add and decides requests of every
// API kmsg knows with whatever rule got in: neither may panic, and a rule
// Add refuses leaves no trace.
func FuzzRule(f *testing.F) {
	for _, s := range []string{
		`{"api":"Produce","topic":"X","after":2,"times":1,"error":"NOT_LEADER_OR_FOLLOWER"}`,
		`{"api":"1","topic":"X","partition":0,"delay_ms":5,"probability":0.5,"seed":7}`,
		`{"group":"g","close":"after"}`,
		`{"transactional_id":"t","swallow":true,"min_version":3,"max_version":2}`,
		`{"client_id":"c","throttle_bytes_per_sec":1000,"listener":"l","connection":"c"}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		var r Rule
		if json.Unmarshal(data, &r) != nil {
			return
		}
		in := New(WithErrorAPIs(func(key int16) bool { return key%2 == 0 }))
		if _, err := in.Add(r); err != nil {
			if in.Active() {
				t.Fatal("a refused rule was added")
			}
			return
		}
		for key := int16(0); key <= maxKey; key++ {
			body := kmsg.RequestForKey(key)
			if body == nil {
				continue
			}
			for _, v := range []int16{body.MaxVersion(), 0} {
				body.SetVersion(v)
				in.Decide(&Request{Key: key, Version: v, Body: body})
			}
		}
		in.Decide(produceTo("X", 0, 1))
	})
}
