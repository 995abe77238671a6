package authn

import (
	"bytes"
	"crypto/hmac"
	"crypto/rand"
	"crypto/subtle"
	"encoding/base64"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"
)

// scramExchange is the server side of SCRAM (RFC 5802) as Kafka's
// ScramSaslServer, hardened as SECURITY-REFERENCE.md §3 asks (except that
// the final nonce need only end with the combined nonce, as in Kafka: old
// librdkafka repeats its client nonce there): the channel binding must be the
// base64 of the client's own gs2 header, every field is bounded, and an
// unknown user gets a fake salt and fails at the final step like a wrong
// password.
type scramExchange struct {
	store *Store
	mech  *scramMechanism
	state int
	// Set by the client-first message.
	user        string
	known       bool
	cred        Credential
	gs2Header   string
	clientFirst string // client-first-message-bare
	serverFirst string
	nonce       string // combined nonce
	principal   string
}

const (
	scramStart = iota
	scramFirstSent
	scramDone
	scramFailed
)

// Bounds of SCRAM messages and fields (Kafka bounds only the frame).
const (
	maxScramMessage = 8192
	maxNonce        = 1024
)

func (s *scramExchange) fail(reason string) ([]byte, bool, error) {
	s.state = scramFailed
	return nil, false, failed(s.mech.name, reason)
}

func (s *scramExchange) Step(msg []byte) ([]byte, bool, error) {
	if len(msg) > maxScramMessage {
		return s.fail("SCRAM: message too long")
	}
	if !utf8.Valid(msg) || bytes.IndexByte(msg, 0) >= 0 {
		return s.fail("SCRAM: message is not valid UTF-8 or holds NUL")
	}
	switch s.state {
	case scramStart:
		return s.first(string(msg))
	case scramFirstSent:
		return s.final(string(msg))
	}
	return s.fail("SCRAM: message after the end of the exchange")
}

// first handles client-first-message: gs2-header client-first-message-bare.
func (s *scramExchange) first(msg string) ([]byte, bool, error) {
	// gs2-header = gs2-cbind-flag "," [ authzid ] ","
	var authzid string
	switch {
	case strings.HasPrefix(msg, "n,"):
	default:
		// y (client supports binding) and p= (binding wanted) are refused
		// as Kafka does: there is no channel binding.
		return s.fail("SCRAM: channel binding flag other than n")
	}
	rest := msg[2:]
	comma := strings.IndexByte(rest, ',')
	if comma < 0 {
		return s.fail("SCRAM: no gs2 header end")
	}
	if a := rest[:comma]; a != "" {
		v, ok := strings.CutPrefix(a, "a=")
		if !ok {
			return s.fail("SCRAM: bad authzid")
		}
		var err bool
		if authzid, err = decodeSaslName(v); err {
			return s.fail("SCRAM: bad authzid encoding")
		}
	}
	s.gs2Header = msg[:2+comma+1]
	bare := rest[comma+1:]
	attrs := strings.Split(bare, ",")
	if len(attrs) < 2 || !strings.HasPrefix(attrs[0], "n=") || !strings.HasPrefix(attrs[1], "r=") {
		return s.fail("SCRAM: client-first needs n= then r=")
	}
	user, bad := decodeSaslName(attrs[0][2:])
	if bad || user == "" || len(user) > maxNameLen {
		return s.fail("SCRAM: bad user name")
	}
	cnonce := attrs[1][2:]
	if !validNonce(cnonce) {
		return s.fail("SCRAM: bad client nonce")
	}
	for _, ext := range attrs[2:] {
		k, v, ok := strings.Cut(ext, "=")
		if !ok || len(k) != 1 && !validExtName(k) {
			return s.fail("SCRAM: bad extension")
		}
		if k == "m" {
			return s.fail("SCRAM: mandatory extension m= is not supported")
		}
		if k == "tokenauth" && strings.EqualFold(v, "true") {
			// Delegation tokens (KIP-48) do not exist here; a token id
			// must never be taken for a user name.
			return s.fail("SCRAM: delegation token logins are not supported")
		}
	}
	if authzid != "" && authzid != user {
		return s.fail("SCRAM: authorization id differs from user")
	}
	s.user = user
	s.cred, s.known = s.store.lookup(user, s.mech.name)
	if !s.known {
		s.cred = s.store.fakeCredential(s.mech, user)
	}
	var raw [18]byte // 144 bits; Kafka uses 130
	if _, err := rand.Read(raw[:]); err != nil {
		return s.fail("SCRAM: no randomness for the nonce")
	}
	s.nonce = cnonce + base64.RawURLEncoding.EncodeToString(raw[:])
	s.clientFirst = bare
	s.serverFirst = "r=" + s.nonce + ",s=" + base64.StdEncoding.EncodeToString(s.cred.Salt) + ",i=" + strconv.Itoa(s.cred.Iterations)
	s.state = scramFirstSent
	return []byte(s.serverFirst), false, nil
}

// final handles client-final-message: c=...,r=...[,ext]*,p=...
func (s *scramExchange) final(msg string) ([]byte, bool, error) {
	pi := strings.LastIndex(msg, ",p=")
	if pi < 0 {
		return s.fail("SCRAM: client-final without proof")
	}
	withoutProof := msg[:pi]
	proof, err := base64.StdEncoding.DecodeString(msg[pi+3:])
	if err != nil || len(proof) != s.mech.size {
		return s.fail("SCRAM: bad proof encoding")
	}
	attrs := strings.Split(withoutProof, ",")
	if len(attrs) < 2 || !strings.HasPrefix(attrs[0], "c=") || !strings.HasPrefix(attrs[1], "r=") {
		return s.fail("SCRAM: client-final needs c= then r=")
	}
	if attrs[0][2:] != base64.StdEncoding.EncodeToString([]byte(s.gs2Header)) {
		return s.fail("SCRAM: channel binding does not match the gs2 header")
	}
	// Kafka's check: the nonce ends with the combined nonce, so it holds
	// this exchange's server nonce. Not equality: librdkafka 2.0.2 (kcat
	// 1.7.1 on Debian 12; 2.11 does not) sends its client nonce twice.
	if fn := attrs[1][2:]; len(fn) > maxNonce || !strings.HasSuffix(fn, s.nonce) {
		return s.fail("SCRAM: nonce mismatch")
	}
	authMessage := []byte(s.clientFirst + "," + s.serverFirst + "," + withoutProof)
	sig := hmacSum(s.mech, s.cred.StoredKey, authMessage)
	clientKey := make([]byte, len(proof))
	subtle.XORBytes(clientKey, proof, sig)
	h := s.mech.hash()
	h.Write(clientKey)
	if !hmac.Equal(h.Sum(nil), s.cred.StoredKey) || !s.known {
		return s.fail("SCRAM: bad proof or unknown user")
	}
	s.state = scramDone
	s.principal = "User:" + s.user
	return []byte("v=" + base64.StdEncoding.EncodeToString(hmacSum(s.mech, s.cred.ServerKey, authMessage))), true, nil
}

func (s *scramExchange) Principal() string { return s.principal }
func (s *scramExchange) Expiry() time.Time { return time.Time{} }

// decodeSaslName undoes RFC 5802's escaping: "=2C" is ',', "=3D" is '=',
// any other '=' is an error (bad is true).
func decodeSaslName(s string) (string, bool) {
	if !strings.Contains(s, "=") {
		return s, strings.Contains(s, ",")
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] != '=' {
			b.WriteByte(s[i])
			continue
		}
		switch {
		case strings.HasPrefix(s[i:], "=2C"):
			b.WriteByte(',')
		case strings.HasPrefix(s[i:], "=3D"):
			b.WriteByte('=')
		default:
			return "", true
		}
		i += 2
	}
	return b.String(), false
}

// validNonce: printable ASCII except ',' (RFC 5802), bounded.
func validNonce(n string) bool {
	if n == "" || len(n) > maxNonce {
		return false
	}
	for i := 0; i < len(n); i++ {
		if c := n[i]; c < 0x21 || c > 0x7e || c == ',' {
			return false
		}
	}
	return true
}

// validExtName: Kafka's SCRAM extension names are alphabetic.
func validExtName(k string) bool {
	if k == "" || len(k) > 64 {
		return false
	}
	for i := 0; i < len(k); i++ {
		if c := k[i]; !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z') {
			return false
		}
	}
	return true
}
