package authn

import (
	"testing"
	"time"
)

// FuzzExchange feeds arbitrary messages to every mechanism: no panic, no
// success without a credential, and bounded answers.
func FuzzExchange(f *testing.F) {
	for _, seed := range []string{
		"\x00alice\x00alice-secret", "alice\x00alice\x00pw", "n,,n=alice,r=abc", "n,a=alice,n=alice,r=abc,ext=1",
		"c=biws,r=abc,p=AAAA", "n,,\x01auth=Bearer eyJhbGciOiJub25lIn0.eyJzdWIiOiJ4IiwiZXhwIjo5OTk5OTk5OTk5fQ.\x01\x01",
		"n,,n==2C=3D,r=x", "\x01",
	} {
		f.Add(0, []byte(seed), []byte("c=biws,r=x,p=AAAA"))
	}
	s, err := Open("")
	if err != nil {
		f.Fatal(err)
	}
	if err := s.SetPasswords(map[string]string{"alice": "alice-secret"}); err != nil {
		f.Fatal(err)
	}
	now := time.Unix(1_700_000_000, 0)
	f.Fuzz(func(t *testing.T, which int, first, second []byte) {
		mech := Supported[uint(which)%uint(len(Supported))]
		ex, err := s.NewExchange(mech, func() time.Time { return now })
		if err != nil {
			t.Fatal(err)
		}
		for _, msg := range [][]byte{first, second} {
			ans, done, err := ex.Step(msg)
			if len(ans) > 4096 {
				t.Fatalf("%s answered %d bytes", mech, len(ans))
			}
			if err != nil {
				return
			}
			if done {
				// Only a forged unsecured token or alice's real password
				// can succeed.
				if mech != OAuthBearer && ex.Principal() != "User:alice" {
					t.Fatalf("%s authenticated %q", mech, ex.Principal())
				}
				return
			}
		}
	})
}
