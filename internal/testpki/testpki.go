// Package testpki makes the throwaway certificates of the TLS tests: a CA,
// a server certificate for localhost and 127.0.0.1, and a client
// certificate, written as PEM files in the test's temporary directory the
// way Kafka's PEM keystores and truststores expect them (KIP-651). Nothing
// is ever committed: every test run makes its own.
//
// It imports nothing of kbroker, so the broker's and the end-to-end tests
// share it.
package testpki

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// ClientDN is the client certificate's subject as Kafka prints it (RFC
// 2253, most specific first, with the comma in the organization escaped):
// the principal of an SSL connection that presents it is "User:" + ClientDN
// under the DEFAULT mapping rule.
const ClientDN = `CN=app,OU=eng,O=kbroker\, inc`

// PKI is a CA with a server and a client certificate, as files and as Go
// values.
type PKI struct {
	// CAFile is the CA certificate: the truststore of clients
	// (ssl.truststore.location, ssl.ca.location) and, for client
	// certificates, of the broker.
	CAFile string
	// ServerKeystore holds the server's private key, then its
	// certificate (Kafka's PEM keystore, ssl.keystore.location).
	ServerKeystore string
	// ClientKeystore is the same for the client certificate.
	ClientKeystore string
	// ClientCertFile and ClientKeyFile are the client's certificate and
	// key apart (librdkafka's ssl.certificate.location and
	// ssl.key.location).
	ClientCertFile, ClientKeyFile string
	// Pool trusts the CA.
	Pool *x509.CertPool
	// Client is the client certificate with its key.
	Client tls.Certificate
}

// validity is how long the certificates are valid on either side of now,
// ample for any test and short enough that a leaked one is worthless.
const validity = 24 * time.Hour

// New writes a fresh PKI into a temporary directory of t; it fails t on
// any error.
func New(t testing.TB) *PKI {
	t.Helper()
	p, err := Write(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// Write makes a fresh PKI and writes its files into dir. Private keys are
// unencrypted PKCS#8 and readable by the owner only.
func Write(dir string) (*PKI, error) {
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("testpki: CA key: %w", err)
	}
	now := time.Now()
	caTmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "kbroker test CA"},
		NotBefore: now.Add(-validity), NotAfter: now.Add(validity),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		return nil, fmt.Errorf("testpki: CA certificate: %w", err)
	}
	ca, err := x509.ParseCertificate(caDER)
	if err != nil {
		return nil, fmt.Errorf("testpki: CA certificate: %w", err)
	}
	issue := func(serial int64, subject pkix.Name, usage x509.ExtKeyUsage, dns []string, ips []net.IP) (certPEM, keyPEM []byte, err error) {
		key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		if err != nil {
			return nil, nil, err
		}
		tmpl := &x509.Certificate{
			SerialNumber: big.NewInt(serial), Subject: subject, DNSNames: dns, IPAddresses: ips,
			NotBefore: now.Add(-validity), NotAfter: now.Add(validity),
			ExtKeyUsage: []x509.ExtKeyUsage{usage}, KeyUsage: x509.KeyUsageDigitalSignature,
		}
		der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, &key.PublicKey, caKey)
		if err != nil {
			return nil, nil, err
		}
		kder, err := x509.MarshalPKCS8PrivateKey(key)
		if err != nil {
			return nil, nil, err
		}
		return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
			pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: kder}), nil
	}
	serverCert, serverKey, err := issue(2, pkix.Name{CommonName: "localhost"}, x509.ExtKeyUsageServerAuth,
		[]string{"localhost"}, []net.IP{net.IPv4(127, 0, 0, 1), net.IPv6loopback})
	if err != nil {
		return nil, fmt.Errorf("testpki: server certificate: %w", err)
	}
	clientSubject := pkix.Name{CommonName: "app", OrganizationalUnit: []string{"eng"}, Organization: []string{"kbroker, inc"}}
	clientCert, clientKey, err := issue(3, clientSubject, x509.ExtKeyUsageClientAuth, nil, nil)
	if err != nil {
		return nil, fmt.Errorf("testpki: client certificate: %w", err)
	}
	p := &PKI{
		CAFile:         filepath.Join(dir, "ca.pem"),
		ServerKeystore: filepath.Join(dir, "server-keystore.pem"),
		ClientKeystore: filepath.Join(dir, "client-keystore.pem"),
		ClientCertFile: filepath.Join(dir, "client.pem"),
		ClientKeyFile:  filepath.Join(dir, "client.key"),
		Pool:           x509.NewCertPool(),
	}
	p.Pool.AddCert(ca)
	if p.Client, err = tls.X509KeyPair(clientCert, clientKey); err != nil {
		return nil, fmt.Errorf("testpki: client key pair: %w", err)
	}
	for _, f := range []struct {
		path string
		data []byte
		mode os.FileMode
	}{
		{p.CAFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: caDER}), 0o644},
		{p.ServerKeystore, append(serverKey, serverCert...), 0o600},
		{p.ClientKeystore, append(clientKey, clientCert...), 0o600},
		{p.ClientCertFile, clientCert, 0o644},
		{p.ClientKeyFile, clientKey, 0o600},
	} {
		if err := os.WriteFile(f.path, f.data, f.mode); err != nil {
			return nil, fmt.Errorf("testpki: %w", err)
		}
	}
	return p, nil
}

// ClientTLS is a client configuration that trusts the CA and, with
// withCert, presents the client certificate.
func (p *PKI) ClientTLS(withCert bool) *tls.Config {
	c := &tls.Config{RootCAs: p.Pool, ServerName: "127.0.0.1"}
	if withCert {
		c.Certificates = []tls.Certificate{p.Client}
	}
	return c
}
