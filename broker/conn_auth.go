package broker

// The SASL state of a connection on a SASL_PLAINTEXT or SASL_SSL
// listener, after Kafka's SaslServerAuthenticator and KafkaChannel:
//
//	start ──ApiVersions──> afterApiVersions ──SaslHandshake──> authenticate ──SaslAuthenticate…──> complete
//	  └──────────────SaslHandshake──────────────────────────┘        (v0 handshake: raw tokens)
//	complete ──SaslHandshake (session with expiry, ≥ 1 s since the last)──> authenticate (re-authentication)
//
// Before the handshake, the gate runs on the request header alone, before
// the API table or the body parser sees any byte (Kafka keeps
// unauthenticated bytes away from the complex schemas): a request out of
// place closes the connection without an answer. Frames are capped at 512 KiB
// (sasl.server.max.receive.size) and do not count against
// queued.max.request.bytes, so unauthenticated peers cannot reach the
// shared budget. After complete, a request other than SaslHandshake that
// arrives once the session expired closes the connection (KIP-368).
//
// During authenticate (after a successful handshake, which bounds who gets
// this far to a client speaking Kafka's SASL), a request other than
// SaslAuthenticate is parsed and answered with that API's error response carrying
// ILLEGAL_SASL_STATE, then the connection closes, as Kafka's
// SaslServerAuthenticator.handleSaslToken does (an unknown version or an
// unreadable body closes without an answer, as there).

import (
	"crypto/tls"
	"encoding/binary"
	"errors"
	"fmt"
	"reflect"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
	"go.uber.org/zap"

	"github.com/kbroker/kbroker/fault"
	"github.com/kbroker/kbroker/protocol"
	"github.com/kbroker/kbroker/security/authn"
)

// saslMaxReceive is Kafka's sasl.server.max.receive.size: the largest
// frame before authentication completes.
const saslMaxReceive = 512 << 10

// reauthMinInterval is how soon after one re-authentication another
// SaslHandshake is an ordinary request again (Kafka's KafkaChannel).
const reauthMinInterval = time.Second

type saslStage uint8

const (
	stageStart saslStage = iota
	stageAfterApiVersions
	stageAuthenticate
	stageRawToken
	stageComplete
)

// saslState is a connection's authentication progress; only the reader
// goroutine (and the handlers it runs) use it.
type saslState struct {
	stage saslStage
	// mech and ex are the mechanism and exchange in progress (mech stays
	// after completion: a re-authentication must use the same).
	mech string
	ex   authn.Exchange
	// authenticated is set at the first success and stays through
	// re-authentications.
	authenticated bool
	// reauth marks the exchange in progress as a re-authentication.
	reauth bool
	// expiry ends the session (zero: never).
	expiry time.Time
	// reauthStarted is when the last re-authentication began.
	reauthStarted time.Time
	// deadline is when the first authentication must be done.
	deadline time.Time
}

// Errors that close a connection; the answer queued before, if any, is
// sent first.
var (
	errIllegalSASLState = errors.New("broker: request not allowed in this SASL state")
	errSessionExpired   = errors.New("broker: SASL session expired")
	// errAnswerIllegalSASLState asks handleFrame to answer the request
	// with ILLEGAL_SASL_STATE (answerIllegalSASLState), then close.
	errAnswerIllegalSASLState = errors.New("broker: request other than SaslAuthenticate during a SASL exchange")
	// errCloseAfterResponse is returned by a handler whose response must
	// be sent and then the connection closed (failed logins, refused
	// mechanisms).
	errCloseAfterResponse = errors.New("broker: closing after the response")
)

// startTLS runs the TLS handshake of an SSL or SASL_SSL connection within
// the authentication timeout, in the connection's own goroutine (a slow
// peer never stalls the accept loop), and takes the principal of an SSL
// connection from its verified client certificate.
func (c *conn) startTLS() bool {
	tc := tls.Server(c.nc, c.l.tlsConfig)
	c.nc.SetDeadline(time.Now().Add(c.b.authTimeout()))
	if err := tc.HandshakeContext(c.ctx); err != nil {
		c.lg.Debug("closing connection: TLS handshake failed", zap.Error(err))
		return false
	}
	c.nc.SetDeadline(time.Time{})
	if c.stopping.Load() {
		return false
	}
	c.io, c.tls = tc, true
	if certs := tc.ConnectionState().PeerCertificates; c.l.protocol == protoSSL && len(certs) > 0 {
		name, err := c.l.sec.mapper.name(subjectDN(certs[0]))
		if err != nil {
			c.lg.Info("closing connection: client certificate subject not mapped", zap.String("subject", subjectDN(certs[0])), zap.Error(err))
			return false
		}
		c.principal = "User:" + name
	}
	if ce := c.lg.Check(zap.DebugLevel, "TLS handshake done"); ce != nil {
		ce.Write(zap.String("principal", c.principal), zap.Uint16("version", tc.ConnectionState().Version))
	}
	return true
}

// gateSASL checks a request header against the connection's SASL state
// before anything else looks at the request.
func (c *conn) gateSASL(h *protocol.Header) error {
	a := c.auth
	switch a.stage {
	case stageComplete:
		if !a.expiry.IsZero() && h.Key != 17 && time.Now().After(a.expiry) {
			c.lg.Info("closing connection: SASL session expired", zap.String("principal", c.principal))
			c.b.expiredSessions.Add(1)
			return errSessionExpired
		}
		return nil
	case stageStart:
		switch h.Key {
		case 18:
			if c.b.idx.lookup(h.Key, h.Version) != nil {
				a.stage = stageAfterApiVersions
			}
			return nil
		case 17:
			return nil
		}
	case stageAfterApiVersions:
		if h.Key == 17 {
			return nil
		}
	case stageAuthenticate:
		if h.Key == 36 {
			return nil
		}
		return errAnswerIllegalSASLState
	}
	c.lg.Info("closing connection: request before authentication",
		zap.String("api", kmsg.NameForKey(h.Key)), zap.Int16("key", h.Key))
	return errIllegalSASLState
}

// handleRawToken handles one token of the SaslHandshake v0 flow: raw
// frames without a Kafka header, answered the same way.
func (c *conn) handleRawToken(token []byte) error {
	a := c.auth
	answer, done, err := a.ex.Step(token)
	if err != nil {
		// Kafka closes the v0 flow on failure without a message.
		c.logAuthFailure(err)
		return errCloseAfterResponse
	}
	if done {
		c.completeAuth()
	}
	return c.enqueue(0, result{raw: true, rawToken: append([]byte(nil), answer...)}, timing{})
}

// completeAuth ends a successful exchange and returns the session
// lifetime to tell the client (0: none): min(connections.max.reauth.ms,
// credential expiry - now).
func (c *conn) completeAuth() time.Duration {
	a := c.auth
	c.principal = a.ex.Principal()
	var life time.Duration
	if m := c.l.sec.sessionLimit(a.mech); m > 0 {
		life = m
	}
	if exp := a.ex.Expiry(); !exp.IsZero() {
		if d := time.Until(exp); life == 0 || d < life {
			life = max(d, time.Millisecond)
		}
	}
	c.b.authentications.Add(1)
	if a.reauth {
		c.b.reauthentications.Add(1)
	}
	a.expiry = time.Time{}
	if life > 0 {
		a.expiry = time.Now().Add(life)
	}
	a.stage, a.ex, a.authenticated, a.reauth = stageComplete, nil, true, false
	c.lg.Debug("authenticated", zap.String("principal", c.principal), zap.String("mechanism", a.mech))
	return life
}

// logAuthFailure logs a failed login without secrets.
func (c *conn) logAuthFailure(err error) {
	c.b.failedAuthentications.Add(1)
	reason := err.Error()
	var ae *authn.Error
	if errors.As(err, &ae) {
		reason = ae.Reason
	}
	c.lg.Info("authentication failed", zap.String("mechanism", c.auth.mech), zap.String("reason", reason))
}

// delayed holds a failure response back for
// connection.failed.authentication.delay.ms (KIP-306) without blocking the
// reader: the writer waits for ready.
func (b *Broker) delayed(resp kmsg.Response) result {
	ready := make(chan struct{})
	time.AfterFunc(b.cfg.FailedAuthenticationDelay, func() { close(ready) })
	return result{resp: resp, ready: ready}
}

// appendRawToken frames a v0 token: a 4-byte length and the bytes.
func appendRawToken(buf, token []byte) []byte {
	buf = binary.BigEndian.AppendUint32(buf, uint32(len(token)))
	return append(buf, token...)
}

// authCode maps an exchange failure to its Kafka error and public text.
func authFailure(err error) (int16, string) {
	var ae *authn.Error
	if errors.As(err, &ae) {
		return kerr.SaslAuthenticationFailed.Code, ae.Public
	}
	return kerr.SaslAuthenticationFailed.Code, "Authentication failed"
}

// answerIllegalSASLState answers a request that came during a SASL
// exchange in place of SaslAuthenticate with its API's error response
// (ILLEGAL_SASL_STATE), and returns the error that then closes the
// connection. Like Kafka, it parses the body first: a version the broker
// does not serve or an unreadable body closes without an answer.
func (c *conn) answerIllegalSASLState(h *protocol.Header, body []byte) error {
	name := kmsg.NameForKey(h.Key)
	c.lg.Info("closing connection: request during a SASL exchange", zap.String("api", name), zap.Int16("key", h.Key))
	if c.b.idx.lookup(h.Key, h.Version) == nil {
		return errIllegalSASLState
	}
	req, err := protocol.ParseBody(*h, body)
	if err != nil {
		return errIllegalSASLState
	}
	msg := fmt.Sprintf("Unexpected Kafka request of type %s during SASL authentication.", name)
	resp := illegalSASLStateResponse(req, msg)
	if resp == nil {
		return errIllegalSASLState
	}
	if err := c.enqueue(h.CorrelationID, result{resp: resp}, timing{}); err != nil {
		return err
	}
	return errIllegalSASLState
}

// illegalSASLStateResponse is req's error response with
// ILLEGAL_SASL_STATE, as Kafka's AbstractRequest.getErrorResponse builds
// it: the code on every partition of the data APIs, and on the group and
// transaction APIs as a fault rule answers them; for other APIs, the
// response's top-level error code and message. nil for an API whose
// response has no place for an error code.
func illegalSASLStateResponse(req kmsg.Request, msg string) kmsg.Response {
	code := kerr.IllegalSaslState.Code
	switch r := req.(type) {
	case *kmsg.ProduceRequest:
		resp := r.ResponseKind().(*kmsg.ProduceResponse)
		for _, t := range r.Topics {
			rt := kmsg.NewProduceResponseTopic()
			rt.Topic, rt.TopicID = t.Topic, t.TopicID
			for _, p := range t.Partitions {
				rp := kmsg.NewProduceResponseTopicPartition()
				rp.Partition, rp.ErrorCode = p.Partition, code
				rt.Partitions = append(rt.Partitions, rp)
			}
			resp.Topics = append(resp.Topics, rt)
		}
		return resp
	case *kmsg.FetchRequest:
		resp := r.ResponseKind().(*kmsg.FetchResponse)
		resp.ErrorCode = code
		for _, t := range r.Topics {
			rt := kmsg.NewFetchResponseTopic()
			rt.Topic, rt.TopicID = t.Topic, t.TopicID
			for _, p := range t.Partitions {
				rp := kmsg.NewFetchResponseTopicPartition()
				rp.Partition, rp.ErrorCode = p.Partition, code
				rp.HighWatermark, rp.LastStableOffset, rp.LogStartOffset = -1, -1, -1
				rt.Partitions = append(rt.Partitions, rp)
			}
			resp.Topics = append(resp.Topics, rt)
		}
		return resp
	case *kmsg.ListOffsetsRequest:
		resp := r.ResponseKind().(*kmsg.ListOffsetsResponse)
		for _, t := range r.Topics {
			rt := kmsg.NewListOffsetsResponseTopic()
			rt.Topic = t.Topic
			for _, p := range t.Partitions {
				rp := kmsg.NewListOffsetsResponseTopicPartition()
				rp.Partition, rp.ErrorCode = p.Partition, code
				rt.Partitions = append(rt.Partitions, rp)
			}
			resp.Topics = append(resp.Topics, rt)
		}
		return resp
	case *kmsg.MetadataRequest:
		resp := r.ResponseKind().(*kmsg.MetadataResponse)
		for _, t := range r.Topics {
			rt := kmsg.NewMetadataResponseTopic()
			rt.Topic, rt.TopicID, rt.ErrorCode = t.Topic, t.TopicID, code
			resp.Topics = append(resp.Topics, rt)
		}
		return resp
	}
	if resp := injectedResponse(req, &fault.Decision{Error: code}); resp != nil {
		return resp
	}
	resp := req.ResponseKind()
	v := reflect.ValueOf(resp).Elem()
	ec := v.FieldByName("ErrorCode")
	if !ec.IsValid() || ec.Kind() != reflect.Int16 {
		return nil
	}
	ec.SetInt(int64(code))
	if em := v.FieldByName("ErrorMessage"); em.IsValid() && em.Type() == reflect.TypeFor[*string]() {
		em.Set(reflect.ValueOf(&msg))
	}
	return resp
}
