package authn

import (
	"bytes"
	"crypto/subtle"
	"time"
	"unicode/utf8"
)

// plainExchange is PLAIN (RFC 4616): one message, authzid NUL authcid NUL
// password. As Kafka's PlainSaslServer: exactly three fields, user and
// password non-empty, authzid empty or the user. The password is checked
// against the user's SCRAM credential (kbroker keeps no PLAIN passwords).
type plainExchange struct {
	store     *Store
	principal string
	done      bool
}

// maxPlainMessage bounds a PLAIN message (Kafka bounds only the frame).
const maxPlainMessage = 4096

func (p *plainExchange) Step(msg []byte) ([]byte, bool, error) {
	if p.done {
		return nil, false, &Error{Public: "Authentication failed: unexpected message", Reason: "PLAIN: message after completion"}
	}
	p.done = true
	if len(msg) > maxPlainMessage {
		return nil, false, plainInvalid("PLAIN: message too long")
	}
	parts := bytes.Split(msg, []byte{0})
	if len(parts) != 3 {
		return nil, false, &Error{Public: "Invalid SASL/PLAIN response: expected 3 tokens", Reason: "PLAIN: not three fields"}
	}
	authz, user, pw := parts[0], parts[1], parts[2]
	if len(user) == 0 || len(pw) == 0 || !utf8.Valid(user) || !utf8.Valid(authz) {
		return nil, false, plainInvalid("PLAIN: empty or invalid user or password")
	}
	if len(authz) > 0 && !bytes.Equal(authz, user) {
		return nil, false, &Error{Public: "Authentication failed: Client requested an authorization id that is different from username",
			Reason: "PLAIN: authorization id differs from user"}
	}
	if !p.store.checkPassword(string(user), pw) {
		return nil, false, plainInvalid("PLAIN: bad user name or password")
	}
	p.principal = "User:" + string(user)
	return nil, true, nil
}

func plainInvalid(reason string) *Error {
	return &Error{Public: "Authentication failed: Invalid username or password", Reason: reason}
}

func (p *plainExchange) Principal() string { return p.principal }
func (p *plainExchange) Expiry() time.Time { return time.Time{} }

// checkPassword checks a password against the user's SCRAM credential
// (SHA-256 if there is one, else SHA-512) in constant time. An unknown
// user costs the same PBKDF2 run against a fake credential, so timing
// does not tell users apart.
func (s *Store) checkPassword(user string, pw []byte) bool {
	m := sha256Mech
	c, ok := s.lookup(user, m.name)
	if !ok {
		m = sha512Mech
		c, ok = s.lookup(user, m.name)
	}
	if !ok {
		m = sha256Mech
		c = s.fakeCredential(m, user)
	}
	sp, err := s.saltPassword(m, string(pw), c.Salt, c.Iterations)
	if err != nil {
		return false
	}
	stored, _ := deriveKeys(m, sp)
	return subtle.ConstantTimeCompare(stored, c.StoredKey) == 1 && ok
}
