package integration

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/sasl"
	kscram "github.com/twmb/franz-go/pkg/sasl/scram"

	"github.com/kbroker/kbroker/broker"
)

// secPKI is a test CA and a server certificate for 127.0.0.1, as PEM files:
// the CA (clients' trust) and the server's key and chain in one file
// (Kafka's PEM keystore, ssl.keystore.location).
type secPKI struct {
	caFile, serverFile string
	pool               *x509.CertPool
}

func newSecPKI(t *testing.T) *secPKI {
	t.Helper()
	dir := t.TempDir()
	caKey, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	caTmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "kbroker integration CA"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	ca, _ := x509.ParseCertificate(caDER)
	key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: "localhost"},
		DNSNames: []string{"localhost"}, IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}, KeyUsage: x509.KeyUsageDigitalSignature}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, &key.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	kder, _ := x509.MarshalPKCS8PrivateKey(key)
	p := &secPKI{caFile: filepath.Join(dir, "ca.pem"), serverFile: filepath.Join(dir, "server.pem"), pool: x509.NewCertPool()}
	p.pool.AddCert(ca)
	if err := os.WriteFile(p.caFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: caDER}), 0o644); err != nil {
		t.Fatal(err)
	}
	keystore := append(pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: kder}), pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})...)
	if err := os.WriteFile(p.serverFile, keystore, 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// secBroker starts an in-process broker with SASL_PLAINTEXT, SASL_SSL and
// SSL listeners, every mechanism enabled and the user alice.
func secBroker(t *testing.T, p *secPKI, edit func(*broker.Config)) *inProcessBroker {
	t.Helper()
	return startInProcess(t, func(c *broker.Config) {
		c.Listen = "SASL_PLAINTEXT://127.0.0.1:0,SASL_SSL://127.0.0.1:0,SSL://127.0.0.1:0"
		c.SASLEnabledMechanisms = "PLAIN,SCRAM-SHA-256,SCRAM-SHA-512,OAUTHBEARER"
		c.SASLUsers = "alice:alice-secret"
		c.SSLKeystoreLocation = p.serverFile
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

// clientTLS trusts the test CA.
func (p *secPKI) clientTLS() *tls.Config {
	return &tls.Config{RootCAs: p.pool, ServerName: "127.0.0.1"}
}
