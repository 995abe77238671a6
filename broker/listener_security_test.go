package broker

import (
	"context"
	"crypto/tls"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	kscram "github.com/twmb/franz-go/pkg/sasl/scram"

	"github.com/kbroker/kbroker/internal/testpki"
)

func TestListenerOverrideSettings(t *testing.T) {
	t.Parallel()
	c := DefaultConfig()
	err := c.LoadProperties(strings.NewReader(`
listeners=SASL_PLAINTEXT://127.0.0.1:0,INTERNAL://127.0.0.1:0
listener.security.protocol.map=SASL_PLAINTEXT:SASL_PLAINTEXT,INTERNAL:SASL_PLAINTEXT
sasl.enabled.mechanisms=SCRAM-SHA-256
listener.name.internal.sasl.enabled.mechanisms=PLAIN
listener.name.internal.connections.max.reauth.ms=60000
listener.name.internal.plain.connections.max.reauth.ms=5000
listener.name.internal.ssl.keystore.key=-----BEGIN PRIVATE KEY-----
`))
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Validate(); err != nil {
		t.Fatalf("valid overrides refused: %v", err)
	}
	props := map[string]string{}
	for _, p := range c.Properties() {
		props[p[0]] = p[1]
	}
	if got := props["listener.name.internal.sasl.enabled.mechanisms"]; got != "PLAIN" {
		t.Errorf("Properties: mechanisms override %q, want PLAIN", got)
	}
	if got := props["listener.name.internal.ssl.keystore.key"]; got != hiddenValue {
		t.Errorf("Properties: a listener's private key shows as %q, want it hidden", got)
	}
	lc, mech := c.forListener("INTERNAL")
	if lc.SASLEnabledMechanisms != "PLAIN" || lc.ConnectionsMaxReauth != time.Minute || mech["PLAIN"] != 5*time.Second {
		t.Errorf("INTERNAL sees mechanisms %q, reauth %v, per mechanism %v", lc.SASLEnabledMechanisms, lc.ConnectionsMaxReauth, mech)
	}
	if lc, _ := c.forListener("SASL_PLAINTEXT"); lc.SASLEnabledMechanisms != "SCRAM-SHA-256" || lc.ConnectionsMaxReauth != 0 {
		t.Errorf("SASL_PLAINTEXT sees %q, %v; want the global settings", lc.SASLEnabledMechanisms, lc.ConnectionsMaxReauth)
	}

	for _, bad := range []struct{ name, value, want string }{
		{"listener.name.internal.plain.sasl.jaas.config", "x", "cannot be set per listener"},
		{"listener.name.internal.num.partitions", "3", "cannot be set per listener"},
		{"listener.name.internal.connections.max.reauth.ms", "soon", "milliseconds"},
		{"listener.name.internal.gssapi.connections.max.reauth.ms", "1", "cannot be set per listener"},
		{"listener.name..ssl.client.auth", "required", "listener.name.<listener>.<property>"},
	} {
		c := DefaultConfig()
		if err := c.Set(bad.name, bad.value); err == nil || !strings.Contains(err.Error(), bad.want) {
			t.Errorf("Set(%s=%s): %v, want an error saying %q", bad.name, bad.value, err, bad.want)
		}
	}
	for _, bad := range []struct {
		override map[string]string
		want     string
	}{
		{map[string]string{"listener.name.other.ssl.client.auth": "required"}, "no listener OTHER"},
		{map[string]string{"listener.name.internal.ssl.client.auth": "maybe"}, "listener INTERNAL: ssl.client.auth"},
		{map[string]string{"listener.name.internal.sasl.enabled.mechanisms": ""}, "INTERNAL: sasl.enabled.mechanisms"},
	} {
		c2 := c
		c2.ListenerOverrides = bad.override
		if err := c2.Validate(); err == nil || !strings.Contains(err.Error(), bad.want) {
			t.Errorf("overrides %v: %v, want an error saying %q", bad.override, err, bad.want)
		}
	}
}

// sessionLifetime logs in with PLAIN on a raw connection to listener and
// returns the session lifetime the broker grants, or the handshake error.
func sessionLifetime(t *testing.T, srv *InProcess, listener, mech string) (int64, int16) {
	t.Helper()
	c := dialListener(t, srv, listener)
	hs := kmsg.NewPtrSASLHandshakeRequest()
	hs.Version, hs.Mechanism = 1, mech
	if r := c.recv(hs, c.send(hs), 5*time.Second).(*kmsg.SASLHandshakeResponse); r.ErrorCode != 0 {
		return 0, r.ErrorCode
	}
	au := kmsg.NewPtrSASLAuthenticateRequest()
	au.Version, au.SASLAuthBytes = 2, []byte("\x00alice\x00alice-secret")
	r := c.recv(au, c.send(au), 5*time.Second).(*kmsg.SASLAuthenticateResponse)
	if r.ErrorCode != 0 {
		t.Fatalf("%s: PLAIN login: %v", listener, kerr.ErrorForCode(r.ErrorCode))
	}
	return r.SessionLifetimeMillis, 0
}

// Each listener offers its own mechanisms and session lifetime.
func TestListenerOverrideSASL(t *testing.T) {
	t.Parallel()
	srv := newSASLServer(t, func(c *Config) {
		c.Listen = "SASL_PLAINTEXT://127.0.0.1:0,LIMITED://127.0.0.1:0"
		c.ListenerSecurityProtocolMap = "SASL_PLAINTEXT:SASL_PLAINTEXT,LIMITED:SASL_PLAINTEXT"
		c.ConnectionsMaxReauth = time.Hour
		c.ListenerOverrides = map[string]string{
			"listener.name.limited.sasl.enabled.mechanisms":                 "PLAIN,SCRAM-SHA-512",
			"listener.name.limited.connections.max.reauth.ms":               "120000",
			"listener.name.limited.scram-sha-512.connections.max.reauth.ms": "30000",
		}
	})
	if life, code := sessionLifetime(t, srv, "SASL_PLAINTEXT", "PLAIN"); code != 0 || life != time.Hour.Milliseconds() {
		t.Errorf("SASL_PLAINTEXT: lifetime %d (code %d), want the global hour", life, code)
	}
	if life, code := sessionLifetime(t, srv, "LIMITED", "PLAIN"); code != 0 || life != 120000 {
		t.Errorf("LIMITED: lifetime %d (code %d), want the listener's 120000", life, code)
	}
	if _, code := sessionLifetime(t, srv, "LIMITED", "SCRAM-SHA-256"); code != kerr.UnsupportedSaslMechanism.Code {
		t.Errorf("SCRAM-SHA-256 on LIMITED: code %d, want UNSUPPORTED_SASL_MECHANISM", code)
	}
	// SCRAM-SHA-512 has its own lifetime there; kgo reports the session
	// through a successful request.
	cl, err := kgo.NewClient(kgo.SeedBrokers(srv.ListenerAddr("LIMITED")),
		kgo.SASL(kscram.Auth{User: "alice", Pass: "alice-secret"}.AsSha512Mechanism()), kgo.RetryTimeout(3*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := cl.Ping(ctx); err != nil {
		t.Fatalf("SCRAM-SHA-512 on LIMITED: %v", err)
	}
	if got := srv.listenerSecurity("LIMITED").sessionLimit("SCRAM-SHA-512"); got != 30*time.Second {
		t.Errorf("LIMITED's SCRAM-SHA-512 session limit %v, want 30s", got)
	}
}

// listenerSecurity is the resolved settings of srv's listener name.
func (ip *InProcess) listenerSecurity(name string) *listenerSecurity {
	return ip.Broker.security.listeners[name]
}

// A SASL_SSL listener requires client certificates only through its own
// ssl.client.auth (Kafka ignores the global one there), and a listener
// can serve another keystore.
func TestListenerOverrideTLS(t *testing.T) {
	t.Parallel()
	p, other := testpki.New(t), testpki.New(t)
	srv, _ := tlsServer(t, p, "none", func(c *Config) {
		c.Listen = "SSL://127.0.0.1:0,SASL_SSL://127.0.0.1:0,OTHER://127.0.0.1:0"
		c.ListenerSecurityProtocolMap = "SSL:SSL,SASL_SSL:SASL_SSL,OTHER:SSL"
		c.ListenerOverrides = map[string]string{
			"listener.name.sasl_ssl.ssl.client.auth":    "required",
			"listener.name.other.ssl.keystore.location": other.ServerKeystore,
		}
	})
	ping := func(listener string, tc *tls.Config) error {
		opts := []kgo.Opt{kgo.SeedBrokers(srv.ListenerAddr(listener)), kgo.DialTLSConfig(tc), kgo.RetryTimeout(2 * time.Second)}
		if listener == "SASL_SSL" {
			opts = append(opts, kgo.SASL(kscram.Auth{User: "alice", Pass: "alice-secret"}.AsSha512Mechanism()))
		}
		cl, err := kgo.NewClient(opts...)
		if err != nil {
			t.Fatal(err)
		}
		defer cl.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		return cl.Ping(ctx)
	}
	noCert, withCert := p.ClientTLS(false), p.ClientTLS(true)
	if err := ping("SSL", noCert); err != nil {
		t.Fatalf("SSL without a client certificate (global none): %v", err)
	}
	if err := ping("SASL_SSL", noCert); err == nil {
		t.Fatal("SASL_SSL let a client without a certificate in; its override requires one")
	}
	if err := ping("SASL_SSL", withCert); err != nil {
		t.Fatalf("SASL_SSL with a client certificate: %v", err)
	}
	if err := ping("OTHER", noCert); err == nil {
		t.Fatal("OTHER served the global keystore, not its own")
	}
	if err := ping("OTHER", other.ClientTLS(false)); err != nil {
		t.Fatalf("OTHER with its own CA: %v", err)
	}
}

// DescribeConfigs lists a listener override with its setting's type, and
// a listener's private key as sensitive, without its value.
func TestListenerOverrideDescribeConfigs(t *testing.T) {
	t.Parallel()
	const secret = "not-shown"
	srv, _ := tlsServer(t, testpki.New(t), "none", func(c *Config) {
		c.ListenerOverrides = map[string]string{
			"listener.name.sasl_ssl.connections.max.reauth.ms": "60000",
			// Unused (the keystore file wins), but still a secret.
			"listener.name.ssl.ssl.keystore.key": secret,
		}
	})
	cl, err := kgo.NewClient(kgo.SeedBrokers(srv.ListenerAddr("PLAINTEXT")), kgo.RetryTimeout(3*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	req := kmsg.NewPtrDescribeConfigsRequest()
	r := kmsg.NewDescribeConfigsRequestResource()
	r.ResourceType, r.ResourceName = kmsg.ConfigResourceTypeBroker, "0"
	req.Resources = append(req.Resources, r)
	resp, err := req.RequestWith(testCtx(t), cl)
	if err != nil {
		t.Fatal(err)
	}
	found := map[string]kmsg.DescribeConfigsResponseResourceConfig{}
	for _, c := range resp.Resources[0].Configs {
		found[c.Name] = c
	}
	reauth, ok := found["listener.name.sasl_ssl.connections.max.reauth.ms"]
	if !ok || reauth.ConfigType != kmsg.ConfigTypeLong || reauth.Value == nil || *reauth.Value != "60000" {
		t.Errorf("reauth override: %+v, want LONG 60000", reauth)
	}
	key, ok := found["listener.name.ssl.ssl.keystore.key"]
	if !ok || !key.IsSensitive || key.Value != nil && *key.Value == secret {
		t.Errorf("key override: %+v, want it listed as sensitive without its value", key)
	}
}
