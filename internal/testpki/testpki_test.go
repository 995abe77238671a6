package testpki

import (
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"net"
	"os"
	"testing"
)

// The files make a working mutual-TLS pair: a server loaded from the
// keystore file, requiring a certificate signed by the CA file, accepts
// the client certificate, and the client verifies the server as
// 127.0.0.1, localhost and ::1.
func TestFilesMakeAMutualTLSHandshake(t *testing.T) {
	t.Parallel()
	p := New(t)
	ks, err := os.ReadFile(p.ServerKeystore)
	if err != nil {
		t.Fatal(err)
	}
	serverCert, err := tls.X509KeyPair(ks, ks) // key and chain in one file, as Kafka's PEM keystore
	if err != nil {
		t.Fatal(err)
	}
	caPEM, err := os.ReadFile(p.CAFile)
	if err != nil {
		t.Fatal(err)
	}
	clientCAs := x509.NewCertPool()
	if !clientCAs.AppendCertsFromPEM(caPEM) {
		t.Fatal("the CA file holds no certificate")
	}
	for _, name := range []string{"127.0.0.1", "localhost", "::1"} {
		sc, cc := net.Pipe()
		srv := tls.Server(sc, &tls.Config{Certificates: []tls.Certificate{serverCert}, ClientCAs: clientCAs, ClientAuth: tls.RequireAndVerifyClientCert})
		cfg := p.ClientTLS(true)
		cfg.ServerName = name
		cl := tls.Client(cc, cfg)
		done := make(chan error, 1)
		go func() { done <- srv.Handshake() }()
		if err := cl.Handshake(); err != nil {
			t.Fatalf("client handshake as %s: %v", name, err)
		}
		if err := <-done; err != nil {
			t.Fatalf("server handshake: %v", err)
		}
		if got := srv.ConnectionState().PeerCertificates[0].Subject.CommonName; got != "app" {
			t.Fatalf("client certificate CN %q, want app", got)
		}
		// The raw ends: tls.Conn.Close would wait up to 5 s for the
		// unread close_notify to get through the unbuffered pipe.
		cc.Close()
		sc.Close()
	}
	for _, f := range []string{p.ServerKeystore, p.ClientKeystore, p.ClientKeyFile} {
		fi, err := os.Stat(f)
		if err != nil {
			t.Fatal(err)
		}
		if fi.Mode().Perm() != 0o600 {
			t.Errorf("%s: mode %v, want 0600 (it holds a private key)", f, fi.Mode().Perm())
		}
		data, _ := os.ReadFile(f)
		if b, _ := pem.Decode(data); b == nil || (f != p.ClientKeyFile && b.Type != "PRIVATE KEY") {
			t.Errorf("%s does not start with an unencrypted PKCS#8 key", f)
		}
	}
}
