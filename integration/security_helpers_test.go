package integration

import (
	"context"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/sasl"
	kscram "github.com/twmb/franz-go/pkg/sasl/scram"

	"github.com/kbroker/kbroker/broker"
	"github.com/kbroker/kbroker/internal/testpki"
)

// secBroker starts an in-process broker with SASL_PLAINTEXT, SASL_SSL and
// SSL listeners, every mechanism enabled and the user alice.
func secBroker(t *testing.T, p *testpki.PKI, edit func(*broker.Config)) *inProcessBroker {
	t.Helper()
	return startInProcess(t, func(c *broker.Config) {
		c.Listen = "SASL_PLAINTEXT://127.0.0.1:0,SASL_SSL://127.0.0.1:0,SSL://127.0.0.1:0"
		c.SASLEnabledMechanisms = "PLAIN,SCRAM-SHA-256,SCRAM-SHA-512,OAUTHBEARER"
		c.SASLUsers = "alice:alice-secret"
		c.SSLKeystoreLocation = p.ServerKeystore
		c.FailedAuthenticationDelay = 10 * time.Millisecond
		if edit != nil {
			edit(c)
		}
	})
}

// listener is the address of b's listener named name.
func (b *inProcessBroker) listener(name string) string { return b.ip.ListenerAddr(name) }

// scramClient adapts kgo's SCRAM client to sarama's SCRAMClient (sarama
// leaves the SCRAM implementation to the user).
type scramClient struct {
	sha512 bool
	sess   sasl.Session
	first  []byte
	done   bool
}

func (s *scramClient) Begin(user, password, authzID string) error {
	a := kscram.Auth{User: user, Pass: password, Zid: authzID}
	m := a.AsSha256Mechanism()
	if s.sha512 {
		m = a.AsSha512Mechanism()
	}
	sess, first, err := m.Authenticate(context.Background(), "")
	s.sess, s.first = sess, first
	return err
}

func (s *scramClient) Step(challenge string) (string, error) {
	if s.first != nil {
		first := s.first
		s.first = nil
		return string(first), nil
	}
	done, next, err := s.sess.Challenge([]byte(challenge))
	s.done = done
	return string(next), err
}

func (s *scramClient) Done() bool { return s.done }
