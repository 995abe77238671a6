package authn

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"math"
	"strings"
	"time"
)

// oauthExchange is OAUTHBEARER (RFC 7628, KIP-255) with Kafka's unsecured
// token validator (OAuthBearerUnsecuredJws and its validator utils): for
// tests only, as in Kafka, since the token is not signed. The JWS must
// have header alg "none", an empty signature, a non-empty "sub" (the
// principal) and an "exp" in the future; "iat", when present, must be a
// number. A rejected token is answered with an RFC 7628 error challenge;
// the client acknowledges it with a single 0x01 and the login then fails
// with the reason.
type oauthExchange struct {
	now       func() time.Time
	state     int
	reason    string
	principal string
	expiry    time.Time
}

const (
	oauthStart = iota
	oauthRejected
	oauthOver
)

// maxOAuthMessage bounds the client's message (a token is a few KiB).
const maxOAuthMessage = 64 << 10

func (o *oauthExchange) Step(msg []byte) ([]byte, bool, error) {
	switch o.state {
	case oauthStart:
		o.state = oauthOver
		if len(msg) > maxOAuthMessage {
			return nil, false, o.publicFail("the message is too long")
		}
		sub, exp, why := o.validate(msg)
		if why != "" {
			o.state, o.reason = oauthRejected, why
			return []byte(`{"status":"invalid_token"}`), false, nil
		}
		o.principal, o.expiry = "User:"+sub, exp
		return nil, true, nil
	case oauthRejected:
		o.state = oauthOver
		return nil, false, o.publicFail(o.reason)
	}
	return nil, false, o.publicFail("unexpected message")
}

// publicFail sends the reason back: it names what is wrong with the
// token (the token's owner sent it), never a secret.
func (o *oauthExchange) publicFail(reason string) *Error {
	return &Error{
		Public: "Authentication failed during authentication due to invalid credentials with SASL mechanism OAUTHBEARER: " + reason,
		Reason: "OAUTHBEARER: " + reason,
	}
}

// validate parses the client's first message and checks its token; why
// is empty when the token is good.
func (o *oauthExchange) validate(msg []byte) (sub string, exp time.Time, why string) {
	// gs2-header "," then kvpairs separated by 0x01, ending in 0x01 0x01.
	gs2, rest, ok := bytes.Cut(msg, []byte{0x01})
	if !ok || !bytes.HasPrefix(gs2, []byte("n,")) || !bytes.HasSuffix(gs2, []byte(",")) {
		return "", exp, "invalid OAUTHBEARER client message"
	}
	if !bytes.HasSuffix(rest, []byte{0x01, 0x01}) {
		return "", exp, "invalid OAUTHBEARER client message"
	}
	var token string
	for _, kv := range bytes.Split(rest[:len(rest)-2], []byte{0x01}) {
		k, v, ok := bytes.Cut(kv, []byte("="))
		if !ok {
			return "", exp, "invalid OAUTHBEARER client message"
		}
		if string(k) == "auth" {
			t, ok := bytes.CutPrefix(v, []byte("Bearer "))
			if !ok {
				return "", exp, "the auth value is not a Bearer token"
			}
			token = string(t)
		}
	}
	if token == "" {
		return "", exp, "no token"
	}
	parts := strings.Split(token, ".")
	if len(parts) != 3 {
		return "", exp, "the token is not a JWS of three parts"
	}
	if parts[2] != "" {
		return "", exp, "the unsecured validator takes only tokens without a signature"
	}
	var header struct {
		Alg *string `json:"alg"`
	}
	if err := decodeJWSPart(parts[0], &header); err != nil {
		return "", exp, "the token header is not base64url JSON"
	}
	if header.Alg == nil || *header.Alg != "none" {
		return "", exp, `the token header must have "alg": "none"`
	}
	var claims map[string]any
	if err := decodeJWSPart(parts[1], &claims); err != nil {
		return "", exp, "the token claims are not base64url JSON"
	}
	s, ok := claims["sub"].(string)
	if !ok || strings.TrimSpace(s) == "" {
		return "", exp, `the token has no "sub" claim`
	}
	e, ok := claims["exp"].(float64)
	if !ok || math.IsNaN(e) || math.IsInf(e, 0) {
		return "", exp, `the token has no numeric "exp" claim`
	}
	if v, present := claims["iat"]; present {
		if _, ok := v.(float64); !ok {
			return "", exp, `the token's "iat" claim is not a number`
		}
	}
	exp = time.UnixMilli(int64(min(e, 1<<40) * 1000)) // clamped: no overflow
	if !exp.After(o.now()) {
		return "", exp, "the token expired"
	}
	return s, exp, ""
}

// decodeJWSPart decodes one base64url part (padding tolerated) as JSON.
func decodeJWSPart(p string, v any) error {
	b, err := base64.RawURLEncoding.DecodeString(strings.TrimRight(p, "="))
	if err != nil {
		return err
	}
	return json.Unmarshal(b, v)
}

func (o *oauthExchange) Principal() string { return o.principal }
func (o *oauthExchange) Expiry() time.Time { return o.expiry }
