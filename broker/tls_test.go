package broker

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"net"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	kscram "github.com/twmb/franz-go/pkg/sasl/scram"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"

	"github.com/kbroker/kbroker/internal/testpki"
)

// tlsServer starts a broker with PLAINTEXT, SSL and SASL_SSL listeners;
// logs at debug go to the returned observer as well.
func tlsServer(t testing.TB, p *testpki.PKI, clientAuth string, edit func(*Config)) (*InProcess, *observer.ObservedLogs) {
	t.Helper()
	core, logs := observer.New(zapcore.DebugLevel)
	ip, err := StartInProcess(t.TempDir(), func(c *Config) {
		c.Listen = "PLAINTEXT://127.0.0.1:0,SSL://127.0.0.1:0,SASL_SSL://127.0.0.1:0"
		c.SASLEnabledMechanisms = "SCRAM-SHA-512,PLAIN"
		c.SASLUsers = "alice:alice-secret"
		c.SSLKeystoreLocation = p.ServerKeystore
		c.SSLTruststoreLocation = p.CAFile
		c.SSLClientAuth = clientAuth
		// Generous: it covers the TLS handshake and SASL's round trips of
		// clients on a loaded machine under -race; the test of a stalled
		// handshake sets its own.
		c.TLSHandshakeTimeout = 10 * time.Second
		if edit != nil {
			edit(c)
		}
	}, WithLogger(zap.New(core)))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ip.Close() })
	return ip, logs
}

func tlsClient(t *testing.T, srv *InProcess, listener string, tc *tls.Config, opts ...kgo.Opt) *kgo.Client {
	t.Helper()
	opts = append([]kgo.Opt{
		kgo.SeedBrokers(srv.ListenerAddr(listener)),
		kgo.DialTLSConfig(tc),
		kgo.AllowAutoTopicCreation(),
		kgo.RequestTimeoutOverhead(5 * time.Second),
		kgo.RetryTimeout(5 * time.Second),
	}, opts...)
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	return cl
}

// principals are the principals TLS connections were given.
func principals(logs *observer.ObservedLogs) []string {
	var out []string
	for _, e := range logs.FilterMessage("TLS handshake done").All() {
		out = append(out, e.ContextMap()["principal"].(string))
	}
	return out
}

// Records of several sizes, one larger than a copy chunk, come back byte
// for byte over TLS, copied out of the mapping rather than sent with
// sendfile.
func TestTLSProduceFetchCopies(t *testing.T) {
	t.Parallel()
	p := testpki.New(t)
	srv, logs := tlsServer(t, p, "none", func(c *Config) { c.MessageMaxBytes = 3 << 20 })
	cl := tlsClient(t, srv, "SSL", &tls.Config{RootCAs: p.Pool}, kgo.DefaultProduceTopic("tls"),
		kgo.ConsumeTopics("tls"), kgo.ProducerBatchMaxBytes(3<<20), kgo.FetchMaxBytes(8<<20), kgo.FetchMaxPartitionBytes(8<<20))
	ctx := testCtx(t)
	var want [][]byte
	for _, n := range []int{10, 20 << 10, (1 << 20) + 12345, 2<<20 + 7} {
		v := make([]byte, n)
		rand.Read(v)
		want = append(want, v)
		if err := cl.ProduceSync(ctx, &kgo.Record{Value: v}).FirstErr(); err != nil {
			t.Fatalf("produce %d bytes: %v", n, err)
		}
	}
	before := srv.Stats().CopiedBytes
	var got [][]byte
	for len(got) < len(want) {
		fs := cl.PollFetches(ctx)
		if err := fs.Err(); err != nil {
			t.Fatal(err)
		}
		fs.EachRecord(func(r *kgo.Record) { got = append(got, r.Value) })
	}
	for i := range want {
		if !bytes.Equal(got[i], want[i]) {
			t.Fatalf("record %d: %d bytes back, %d sent, or different bytes", i, len(got[i]), len(want[i]))
		}
	}
	if copied := srv.Stats().CopiedBytes - before; copied < int64(3<<20) {
		t.Fatalf("%d bytes copied for the TLS fetch, want every record byte", copied)
	}
	if ps := principals(logs); len(ps) == 0 || ps[0] != anonymous {
		t.Fatalf("principals %v, want %s without a client certificate", ps, anonymous)
	}
}

func TestTLSClientAuth(t *testing.T) {
	t.Parallel()
	p := testpki.New(t)
	ping := func(cl *kgo.Client) error {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		return cl.Ping(ctx)
	}
	withCert := &tls.Config{RootCAs: p.Pool, Certificates: []tls.Certificate{p.Client}}
	noCert := &tls.Config{RootCAs: p.Pool}

	t.Run("required", func(t *testing.T) {
		t.Parallel()
		srv, logs := tlsServer(t, p, "required", func(c *Config) {
			c.SSLPrincipalMappingRules = `RULE:^CN=([^,]*),OU=eng.*$/$1@eng/U,DEFAULT`
		})
		if err := ping(tlsClient(t, srv, "SSL", noCert)); err == nil {
			t.Fatal("a client without a certificate got in")
		}
		if err := ping(tlsClient(t, srv, "SSL", withCert)); err != nil {
			t.Fatalf("client with a certificate: %v", err)
		}
		if ps := principals(logs); len(ps) == 0 || ps[len(ps)-1] != "User:APP@ENG" {
			t.Fatalf("principals %v, want User:APP@ENG", ps)
		}
	})
	t.Run("requested", func(t *testing.T) {
		t.Parallel()
		srv, logs := tlsServer(t, p, "requested", nil)
		if err := ping(tlsClient(t, srv, "SSL", noCert)); err != nil {
			t.Fatalf("no certificate, requested: %v", err)
		}
		if err := ping(tlsClient(t, srv, "SSL", withCert)); err != nil {
			t.Fatalf("certificate, requested: %v", err)
		}
		ps := principals(logs)
		if len(ps) < 2 || ps[0] != anonymous || ps[len(ps)-1] != "User:"+testpki.ClientDN {
			t.Fatalf("principals %v, want %s then User:%s", ps, anonymous, testpki.ClientDN)
		}
	})
	t.Run("untrusted server", func(t *testing.T) {
		t.Parallel()
		srv, _ := tlsServer(t, p, "none", nil)
		if err := ping(tlsClient(t, srv, "SSL", &tls.Config{RootCAs: x509.NewCertPool()})); err == nil {
			t.Fatal("the client trusted an unknown CA")
		}
	})
	t.Run("sasl_ssl", func(t *testing.T) {
		t.Parallel()
		srv, _ := tlsServer(t, p, "none", nil)
		cl := tlsClient(t, srv, "SASL_SSL", noCert, kgo.SASL(kscram.Auth{User: "alice", Pass: "alice-secret"}.AsSha512Mechanism()),
			kgo.DefaultProduceTopic("sasl-ssl"))
		ctx := testCtx(t)
		if err := cl.ProduceSync(ctx, &kgo.Record{Value: []byte("v")}).FirstErr(); err != nil {
			t.Fatalf("produce over SASL_SSL: %v", err)
		}
		bad := tlsClient(t, srv, "SASL_SSL", noCert, kgo.SASL(kscram.Auth{User: "alice", Pass: "nope"}.AsSha512Mechanism()))
		if err := ping(bad); err == nil {
			t.Fatal("a bad password got in over SASL_SSL")
		}
	})
	t.Run("stalled handshake", func(t *testing.T) {
		t.Parallel()
		srv, _ := tlsServer(t, p, "none", func(c *Config) { c.TLSHandshakeTimeout = 200 * time.Millisecond })
		nc, err := net.Dial("tcp", srv.ListenerAddr("SSL"))
		if err != nil {
			t.Fatal(err)
		}
		defer nc.Close()
		nc.SetReadDeadline(time.Now().Add(5 * time.Second))
		var b [1]byte
		if _, err := nc.Read(b[:]); err == nil || isTimeout(err) {
			t.Fatalf("a silent peer was not closed at the handshake deadline: %v", err)
		}
	})
}

func TestPrincipalMappingRules(t *testing.T) {
	t.Parallel()
	dn := "CN=Duke,OU=ServiceUsers,O=Org,C=US"
	for _, tt := range []struct{ rules, want string }{
		{"DEFAULT", dn},
		{"", dn},
		{"RULE:^CN=(.*?),OU=ServiceUsers.*$/$1/,DEFAULT", "Duke"},
		{"RULE:^CN=(.*?),OU=ServiceUsers.*$/$1/L,DEFAULT", "duke"},
		{"RULE:^CN=(.*?),OU=(.*?),O=(.*?),C=(.*?)$/$1@$2/U", "DUKE@SERVICEUSERS"},
		{"RULE:^CN=Other.*$/x/, DEFAULT", dn},
	} {
		m, err := parsePrincipalRules(tt.rules)
		if err != nil {
			t.Fatalf("%q: %v", tt.rules, err)
		}
		if got, err := m.name(dn); err != nil || got != tt.want {
			t.Errorf("%q: got %q, %v; want %q", tt.rules, got, err, tt.want)
		}
	}
	m, _ := parsePrincipalRules("RULE:^CN=Other.*$/x/")
	if _, err := m.name(dn); err == nil {
		t.Error("no matching rule gave a principal")
	}
	for _, bad := range []string{"RULE:(?=x)/y/", "RULE:x/y", "NOPE"} {
		if _, err := parsePrincipalRules(bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}
