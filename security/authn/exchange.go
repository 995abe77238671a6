package authn

import (
	"fmt"
	"strings"
	"time"
)

// Mechanism names, as sasl.enabled.mechanisms and SaslHandshake spell them.
const (
	Plain        = "PLAIN"
	ScramSHA256  = "SCRAM-SHA-256"
	ScramSHA512  = "SCRAM-SHA-512"
	OAuthBearer  = "OAUTHBEARER"
	mechanismMax = 32 // longest mechanism name accepted in a handshake
)

// Supported lists the mechanisms kbroker implements.
var Supported = []string{Plain, ScramSHA256, ScramSHA512, OAuthBearer}

// ParseMechanisms parses sasl.enabled.mechanisms: a comma-separated list of
// supported mechanism names (upper case, as Kafka requires).
func ParseMechanisms(s string) ([]string, error) {
	var out []string
	for _, m := range strings.Split(s, ",") {
		m = strings.TrimSpace(m)
		if m == "" {
			continue
		}
		ok := false
		for _, sup := range Supported {
			if m == sup {
				ok = true
			}
		}
		if !ok {
			if m == "GSSAPI" {
				return nil, fmt.Errorf("sasl.enabled.mechanisms: GSSAPI (Kerberos) is not supported by kbroker")
			}
			return nil, fmt.Errorf("sasl.enabled.mechanisms: unknown mechanism %q (supported: %s)", m, strings.Join(Supported, ", "))
		}
		dup := false
		for _, o := range out {
			dup = dup || o == m
		}
		if !dup {
			out = append(out, m)
		}
	}
	return out, nil
}

// Exchange is the server side of one SASL authentication.
type Exchange interface {
	// Step takes the client's next message and returns the server's
	// answer. done reports that the exchange succeeded: answer is the
	// last message to send and Principal and Expiry are valid. An error
	// ends the exchange as a failure; it is an *Error.
	Step(msg []byte) (answer []byte, done bool, err error)
	// Principal is the authenticated principal ("User:alice").
	Principal() string
	// Expiry is when the credential used expires (an OAUTHBEARER token's
	// exp), or the zero time when it does not.
	Expiry() time.Time
}

// Error is a failed authentication. Public is what the client is told,
// Reason what the broker logs; neither holds a secret.
type Error struct {
	Public string
	Reason string
}

func (e *Error) Error() string { return "authn: " + e.Reason }

// failed is the generic failure of a mechanism: Kafka's text, which does
// not say whether the user exists.
func failed(mech, reason string) *Error {
	return &Error{
		Public: "Authentication failed during authentication due to invalid credentials with SASL mechanism " + mech,
		Reason: reason,
	}
}

// NewExchange starts an exchange of mechanism mech (one of Supported)
// against the store s; now is the clock OAUTHBEARER checks tokens with.
func (s *Store) NewExchange(mech string, now func() time.Time) (Exchange, error) {
	switch mech {
	case Plain:
		return &plainExchange{store: s}, nil
	case ScramSHA256, ScramSHA512:
		return &scramExchange{store: s, mech: scramMechanisms[mech]}, nil
	case OAuthBearer:
		return &oauthExchange{now: now}, nil
	}
	return nil, fmt.Errorf("authn: unsupported mechanism %q", mech)
}

// ValidMechanismName bounds what a handshake may name before it is
// compared or logged.
func ValidMechanismName(m string) bool {
	if len(m) == 0 || len(m) > mechanismMax {
		return false
	}
	for i := 0; i < len(m); i++ {
		c := m[i]
		if !(c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_') {
			return false
		}
	}
	return true
}
