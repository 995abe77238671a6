package authn

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/sasl"
	"github.com/twmb/franz-go/pkg/sasl/oauth"
	"github.com/twmb/franz-go/pkg/sasl/plain"
	kscram "github.com/twmb/franz-go/pkg/sasl/scram"
)

func seeded(t *testing.T, dir string) *Store {
	t.Helper()
	path := ""
	if dir != "" {
		path = filepath.Join(dir, FileName)
	}
	s, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.SetPasswords(map[string]string{"alice": "alice-secret", "b,o=b": "pw"}); err != nil {
		t.Fatal(err)
	}
	return s
}

// run drives a kgo client mechanism against a server exchange and returns
// the server's principal or its error.
func run(t *testing.T, s *Store, m sasl.Mechanism, now time.Time) (string, error) {
	t.Helper()
	ex, err := s.NewExchange(m.Name(), func() time.Time { return now })
	if err != nil {
		t.Fatal(err)
	}
	sess, msg, err := m.Authenticate(context.Background(), "host")
	if err != nil {
		t.Fatal(err)
	}
	for range 5 {
		answer, done, err := ex.Step(msg)
		if err != nil {
			return "", err
		}
		cdone, next, cerr := sess.Challenge(answer)
		if cerr != nil {
			t.Fatalf("client rejected the server's answer: %v", cerr)
		}
		if done {
			if !cdone {
				t.Fatal("server done, client not")
			}
			return ex.Principal(), nil
		}
		msg = next
	}
	t.Fatal("exchange did not end")
	return "", nil
}

func TestExchangesWithKgoClients(t *testing.T) {
	t.Parallel()
	s := seeded(t, "")
	now := time.Now()
	tests := []struct {
		name string
		m    sasl.Mechanism
		want string // principal, or "" for a failure
	}{
		{"plain", plain.Auth{User: "alice", Pass: "alice-secret"}.AsMechanism(), "User:alice"},
		{"plain authzid", plain.Auth{Zid: "alice", User: "alice", Pass: "alice-secret"}.AsMechanism(), "User:alice"},
		{"plain other authzid", plain.Auth{Zid: "bob", User: "alice", Pass: "alice-secret"}.AsMechanism(), ""},
		{"plain bad password", plain.Auth{User: "alice", Pass: "nope"}.AsMechanism(), ""},
		{"plain unknown user", plain.Auth{User: "mallory", Pass: "alice-secret"}.AsMechanism(), ""},
		{"scram-256", kscram.Auth{User: "alice", Pass: "alice-secret"}.AsSha256Mechanism(), "User:alice"},
		{"scram-512", kscram.Auth{User: "alice", Pass: "alice-secret"}.AsSha512Mechanism(), "User:alice"},
		{"scram escaped name", kscram.Auth{User: "b,o=b", Pass: "pw"}.AsSha512Mechanism(), "User:b,o=b"},
		{"scram bad password", kscram.Auth{User: "alice", Pass: "wrong"}.AsSha256Mechanism(), ""},
		{"scram unknown user", kscram.Auth{User: "mallory", Pass: "x"}.AsSha256Mechanism(), ""},
		{"scram token auth", kscram.Auth{User: "alice", Pass: "alice-secret", IsToken: true}.AsSha256Mechanism(), ""},
		{"oauth", oauth.Auth{Token: unsecuredToken(`{"alg":"none"}`, map[string]any{"sub": "svc", "exp": now.Add(time.Hour).Unix()})}.AsMechanism(), "User:svc"},
		{"oauth expired", oauth.Auth{Token: unsecuredToken(`{"alg":"none"}`, map[string]any{"sub": "svc", "exp": now.Add(-time.Second).Unix()})}.AsMechanism(), ""},
		{"oauth no sub", oauth.Auth{Token: unsecuredToken(`{"alg":"none"}`, map[string]any{"exp": now.Add(time.Hour).Unix()})}.AsMechanism(), ""},
		{"oauth signed", oauth.Auth{Token: unsecuredToken(`{"alg":"HS256"}`, map[string]any{"sub": "svc", "exp": now.Add(time.Hour).Unix()})}.AsMechanism(), ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := run(t, s, tt.m, now)
			if tt.want == "" {
				var ae *Error
				if err == nil {
					t.Fatalf("got principal %q, want a failure", got)
				}
				if !asError(err, &ae) || ae.Public == "" {
					t.Fatalf("failure %v is not an *Error with a public text", err)
				}
				for _, secret := range []string{"alice-secret", "mallory"} {
					if strings.Contains(ae.Public, secret) || strings.Contains(ae.Reason, secret) {
						t.Fatalf("failure text %q / %q reveals %q", ae.Public, ae.Reason, secret)
					}
				}
				return
			}
			if err != nil || got != tt.want {
				t.Fatalf("got %q, %v; want %q", got, err, tt.want)
			}
		})
	}
}

func asError(err error, target **Error) bool {
	e, ok := err.(*Error)
	*target = e
	return ok
}

// unsecuredToken builds a JWS with an empty signature.
func unsecuredToken(header string, claims map[string]any) string {
	c, _ := json.Marshal(claims)
	return base64.RawURLEncoding.EncodeToString([]byte(header)) + "." + base64.RawURLEncoding.EncodeToString(c) + "."
}

func TestOAuthExpiryIsTokenExp(t *testing.T) {
	t.Parallel()
	s := seeded(t, "")
	now := time.Now()
	exp := now.Add(90 * time.Second).Truncate(time.Second)
	ex, _ := s.NewExchange(OAuthBearer, func() time.Time { return now })
	tok := unsecuredToken(`{"alg":"none"}`, map[string]any{"sub": "svc", "exp": exp.Unix(), "iat": now.Unix()})
	if _, done, err := ex.Step([]byte("n,,\x01auth=Bearer " + tok + "\x01\x01")); !done || err != nil {
		t.Fatalf("done %v err %v", done, err)
	}
	if !ex.Expiry().Equal(exp) {
		t.Fatalf("expiry %v, want %v", ex.Expiry(), exp)
	}
}

// An unknown user is told a salt that does not change between attempts,
// like a real user's, and fails only at the final step.
func TestScramUnknownUserLooksKnown(t *testing.T) {
	t.Parallel()
	s := seeded(t, "")
	first := func(user string) string {
		ex, _ := s.NewExchange(ScramSHA256, time.Now)
		ans, done, err := ex.Step([]byte("n,,n=" + user + ",r=abcdefgh"))
		if err != nil || done {
			t.Fatalf("first step for %s: %v", user, err)
		}
		_, salt, _ := strings.Cut(string(ans), ",s=")
		return salt
	}
	if a, b := first("ghost"), first("ghost"); a != b {
		t.Fatalf("fake salts differ: %q %q", a, b)
	}
	if a, b := first("ghost"), first("ghost2"); a == b {
		t.Fatal("fake salts of two users are equal")
	}
}

func TestScramRejectsMalformed(t *testing.T) {
	t.Parallel()
	s := seeded(t, "")
	for _, msg := range []string{
		"", "n", "y,,n=alice,r=x", "p=tls-unique,,n=alice,r=x", "n,,r=x,n=alice", "n,,n=al=ice,r=x",
		"n,,n=alice,r=", "n,,n=alice,r=a,b", "n,,n=alice,r=x,m=ext", "n,a=bob,n=alice,r=x",
		"n,,n=,r=x", "n,,n=alice,r=x\x00", "n,,n=alice,r=" + strings.Repeat("x", maxNonce+1),
	} {
		ex, _ := s.NewExchange(ScramSHA256, time.Now)
		if _, _, err := ex.Step([]byte(msg)); err == nil {
			t.Errorf("client-first %q accepted", msg)
		}
	}
	// Final messages against a good first step.
	for _, final := range []string{
		"", "c=biws,r=WRONG,p=AAAA", "c=eSws,r=%s,p=" + base64.StdEncoding.EncodeToString(make([]byte, 32)),
		"c=biws,r=%s,p=!!!", "c=biws,r=%s,p=" + base64.StdEncoding.EncodeToString(make([]byte, 31)),
		"c=biws,r=%s,p=" + base64.StdEncoding.EncodeToString(make([]byte, 32)),
	} {
		ex, _ := s.NewExchange(ScramSHA256, time.Now)
		ans, _, err := ex.Step([]byte("n,,n=alice,r=abc"))
		if err != nil {
			t.Fatal(err)
		}
		nonce := strings.TrimPrefix(strings.Split(string(ans), ",")[0], "r=")
		msg := strings.ReplaceAll(final, "%s", nonce)
		if _, _, err := ex.Step([]byte(msg)); err == nil {
			t.Errorf("client-final %q accepted", msg)
		}
	}
}

func TestStorePersistsOnlyKeys(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	s := seeded(t, dir)
	path := filepath.Join(dir, FileName)
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != 0o600 {
		t.Fatalf("credentials file mode %v, want 0600", fi.Mode().Perm())
	}
	data, _ := os.ReadFile(path)
	if strings.Contains(string(data), "alice-secret") {
		t.Fatal("the password is on disk")
	}
	c, _ := s.lookup("alice", ScramSHA256)
	sp, _ := SaltPassword(ScramSHA256, "alice-secret", c.Salt, c.Iterations)
	if strings.Contains(string(data), base64.StdEncoding.EncodeToString(sp)) {
		t.Fatal("the salted password is on disk")
	}
	// Reopened, the credentials still log in.
	s2, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	if p, err := run(t, s2, kscram.Auth{User: "alice", Pass: "alice-secret"}.AsSha512Mechanism(), time.Now()); err != nil || p != "User:alice" {
		t.Fatalf("after reopen: %q %v", p, err)
	}
	// Deleting one mechanism keeps the other; a missing one is an error
	// and changes nothing.
	if err := s2.Apply(nil, []Deletion{{User: "alice", Mechanism: ScramSHA256}}); err != nil {
		t.Fatal(err)
	}
	if err := s2.Apply(nil, []Deletion{{User: "alice", Mechanism: ScramSHA256}}); err == nil {
		t.Fatal("deleting a missing credential succeeded")
	}
	got := s2.Describe("alice")
	if len(got) != 1 || len(got[0].Mechanisms) != 1 || got[0].Mechanisms[ScramSHA512] != DefaultIterations {
		t.Fatalf("describe after delete: %+v", got)
	}
	// A damaged file refuses to open rather than dropping users.
	data, _ = os.ReadFile(path)
	data[len(data)-3] ^= 1
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := Open(path); err == nil {
		t.Fatal("a damaged file opened")
	}
}

func TestParseMechanisms(t *testing.T) {
	t.Parallel()
	got, err := ParseMechanisms(" PLAIN, SCRAM-SHA-256,PLAIN")
	if err != nil || len(got) != 2 {
		t.Fatalf("got %v %v", got, err)
	}
	for _, bad := range []string{"GSSAPI", "plain", "FOO"} {
		if _, err := ParseMechanisms(bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}
