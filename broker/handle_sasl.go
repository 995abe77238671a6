package broker

// SaslHandshake v0–v1 (KIP-43) and SaslAuthenticate v0–v2 (KIP-152; v1
// session_lifetime_ms, KIP-368; v2 flexible), as Kafka's
// SaslServerAuthenticator. The connection's SASL state machine and gate are
// in conn_auth.go.
//
// On a listener without SASL both answer ILLEGAL_SASL_STATE, as Kafka's
// API layer does. A mechanism the listener does not enable gets
// UNSUPPORTED_SASL_MECHANISM with the enabled list, then the connection
// closes. A failed SaslAuthenticate gets SASL_AUTHENTICATION_FAILED with a
// message that does not reveal whether the user exists, after
// connection.failed.authentication.delay.ms, then the connection closes.
//
// Deviations from Apache Kafka: no GSSAPI; an unknown SCRAM user fails at
// the final message rather than the first (hides user existence).

import (
	"slices"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
	"go.uber.org/zap"

	"github.com/kbroker/kbroker/security/authn"
)

func (b *Broker) handleSaslHandshake(c *conn, req *kmsg.SASLHandshakeRequest) (result, error) {
	resp := req.ResponseKind().(*kmsg.SASLHandshakeResponse)
	a := c.auth
	if a == nil {
		resp.ErrorCode = kerr.IllegalSaslState.Code
		return respond(resp)
	}
	resp.SupportedMechanisms = c.l.sec.mechanisms
	reauth := false
	switch a.stage {
	case stageStart, stageAfterApiVersions:
	case stageComplete:
		if a.expiry.IsZero() || time.Since(a.reauthStarted) < reauthMinInterval {
			resp.ErrorCode = kerr.IllegalSaslState.Code
			return respond(resp)
		}
		reauth = true
	default:
		resp.ErrorCode = kerr.IllegalSaslState.Code
		return result{resp: resp}, errCloseAfterResponse
	}
	if !authn.ValidMechanismName(req.Mechanism) || !slices.Contains(c.l.sec.mechanisms, req.Mechanism) {
		resp.ErrorCode = kerr.UnsupportedSaslMechanism.Code
		c.lg.Info("closing connection: SASL mechanism not enabled", zap.Bool("printable", authn.ValidMechanismName(req.Mechanism)))
		return result{resp: resp}, errCloseAfterResponse
	}
	if reauth && req.Mechanism != a.mech {
		// Kafka: "…not supported for re-authentication of mechanism …".
		resp.ErrorCode = kerr.SaslAuthenticationFailed.Code
		c.lg.Info("closing connection: re-authentication with another mechanism")
		return b.delayed(resp), errCloseAfterResponse
	}
	ex, err := b.security.store.NewExchange(req.Mechanism, time.Now)
	if err != nil {
		return result{}, err
	}
	a.mech, a.ex, a.reauth = req.Mechanism, ex, reauth
	if reauth {
		a.reauthStarted = time.Now()
	}
	a.stage = stageAuthenticate
	if req.Version == 0 {
		// The v0 flow continues with raw tokens (no Kafka header); a
		// re-authentication never uses it (KIP-368 needs v1).
		a.stage = stageRawToken
	}
	return respond(resp)
}

func (b *Broker) handleSaslAuthenticate(c *conn, req *kmsg.SASLAuthenticateRequest) (result, error) {
	resp := req.ResponseKind().(*kmsg.SASLAuthenticateResponse)
	a := c.auth
	if a == nil || a.stage != stageAuthenticate {
		resp.ErrorCode = kerr.IllegalSaslState.Code
		resp.ErrorMessage = kmsg.StringPtr("Unexpected SaslAuthenticate request: no SASL handshake in progress")
		return respond(resp)
	}
	answer, done, err := a.ex.Step(req.SASLAuthBytes)
	if err == nil && done && a.reauth && a.ex.Principal() != c.principal {
		err = &authn.Error{Public: "Cannot change principals during re-authentication", Reason: "re-authentication as another principal"}
	}
	if err != nil {
		c.logAuthFailure(err)
		code, msg := authFailure(err)
		resp.ErrorCode, resp.ErrorMessage = code, kmsg.StringPtr(msg)
		a.ex = nil
		return b.delayed(resp), errCloseAfterResponse
	}
	resp.SASLAuthBytes = answer
	if done {
		life := c.completeAuth()
		if req.Version >= 1 {
			resp.SessionLifetimeMillis = life.Milliseconds()
		}
	}
	return respond(resp)
}
