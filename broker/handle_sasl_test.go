package broker

import (
	"bufio"
	"context"
	"encoding/base64"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/sasl"
	"github.com/twmb/franz-go/pkg/sasl/oauth"
	"github.com/twmb/franz-go/pkg/sasl/plain"
	kscram "github.com/twmb/franz-go/pkg/sasl/scram"

	"github.com/kbroker/kbroker/security/authn"
)

// newSASLServer starts a broker with a PLAINTEXT and a SASL_PLAINTEXT
// listener on free ports and the users alice and bob.
func newSASLServer(t *testing.T, edit func(*Config)) *InProcess {
	t.Helper()
	return newTestServer(t, func(c *Config) {
		c.Listen = "PLAINTEXT://127.0.0.1:0,SASL_PLAINTEXT://127.0.0.1:0"
		c.SASLEnabledMechanisms = "PLAIN,SCRAM-SHA-256,SCRAM-SHA-512"
		c.SASLUsers = "alice:alice-secret,bob:bob-secret"
		c.FailedAuthenticationDelay = 20 * time.Millisecond
		c.TLSHandshakeTimeout = 5 * time.Second
		if edit != nil {
			edit(c)
		}
	})
}

// saslClient is a kgo client on srv's SASL listener.
func saslClient(t *testing.T, srv *InProcess, m sasl.Mechanism, opts ...kgo.Opt) *kgo.Client {
	t.Helper()
	opts = append([]kgo.Opt{
		kgo.SeedBrokers(srv.ListenerAddr("SASL_PLAINTEXT")),
		kgo.SASL(m),
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

func TestListenersReportPortsAndAdvertiseTheirOwn(t *testing.T) {
	t.Parallel()
	srv := newSASLServer(t, func(c *Config) {
		c.AdvertisedListener = "SASL_PLAINTEXT://sasl.example:19094"
	})
	ls := srv.Listeners()
	if len(ls) != 2 || ls[0].Name != "PLAINTEXT" || ls[1].Protocol != protoSASLPlaintext {
		t.Fatalf("listeners %+v", ls)
	}
	for _, l := range ls {
		if strings.HasSuffix(l.Addr, ":0") {
			t.Fatalf("listener %s reports port 0", l.Name)
		}
	}
	if ls[1].Advertised != "sasl.example:19094" || ls[0].Advertised != ls[0].Addr {
		t.Fatalf("advertised %+v", ls)
	}
	// Metadata over each listener names that listener's address.
	ctx := testCtx(t)
	md, err := kmsg.NewPtrMetadataRequest().RequestWith(ctx, newClient(t, srv))
	if err != nil {
		t.Fatal(err)
	}
	if got := net.JoinHostPort(md.Brokers[0].Host, strconv.Itoa(int(md.Brokers[0].Port))); got != ls[0].Addr {
		t.Fatalf("PLAINTEXT metadata names %s, want %s", got, ls[0].Addr)
	}
	cl := saslClient(t, srv, kscram.Auth{User: "alice", Pass: "alice-secret"}.AsSha256Mechanism())
	// The seed connection answers; kgo then dials what it was told, which
	// does not resolve, so ask the seed broker directly.
	md2, err := kmsg.NewPtrMetadataRequest().RequestWith(ctx, cl.SeedBrokers()[0])
	if err != nil {
		t.Fatal(err)
	}
	if md2.Brokers[0].Host != "sasl.example" || md2.Brokers[0].Port != 19094 {
		t.Fatalf("SASL metadata names %s:%d", md2.Brokers[0].Host, md2.Brokers[0].Port)
	}
	dc, err := kmsg.NewPtrDescribeClusterRequest().RequestWith(ctx, cl.SeedBrokers()[0])
	if err != nil || dc.Brokers[0].Host != "sasl.example" {
		t.Fatalf("DescribeCluster %v %+v", err, dc)
	}
	fc := kmsg.NewPtrFindCoordinatorRequest()
	fc.CoordinatorKeys = []string{"g"}
	fr, err := fc.RequestWith(ctx, cl.SeedBrokers()[0])
	if err != nil || fr.Coordinators[0].Port != 19094 {
		t.Fatalf("FindCoordinator %v %+v", err, fr)
	}
}

func TestSASLLoginsWithKgo(t *testing.T) {
	t.Parallel()
	srv := newSASLServer(t, nil)
	for _, tt := range []struct {
		name string
		m    sasl.Mechanism
	}{
		{"plain", plain.Auth{User: "alice", Pass: "alice-secret"}.AsMechanism()},
		{"scram-sha-256", kscram.Auth{User: "alice", Pass: "alice-secret"}.AsSha256Mechanism()},
		{"scram-sha-512", kscram.Auth{User: "bob", Pass: "bob-secret"}.AsSha512Mechanism()},
	} {
		t.Run(tt.name, func(t *testing.T) {
			topic := "sasl-" + tt.name
			cl := saslClient(t, srv, tt.m, kgo.DefaultProduceTopic(topic), kgo.ConsumeTopics(topic))
			ctx := testCtx(t)
			if err := cl.ProduceSync(ctx, &kgo.Record{Value: []byte("v")}).FirstErr(); err != nil {
				t.Fatalf("produce: %v", err)
			}
			fs := cl.PollRecords(ctx, 1)
			if err := fs.Err(); err != nil || fs.NumRecords() != 1 {
				t.Fatalf("consume: %v, %d records", err, fs.NumRecords())
			}
		})
	}
}

func TestSASLFailures(t *testing.T) {
	t.Parallel()
	srv := newSASLServer(t, func(c *Config) { c.SASLEnabledMechanisms = "SCRAM-SHA-256" })
	for _, tt := range []struct {
		name string
		m    sasl.Mechanism
		want *kerr.Error
	}{
		{"bad password", kscram.Auth{User: "alice", Pass: "wrong"}.AsSha256Mechanism(), kerr.SaslAuthenticationFailed},
		{"unknown user", kscram.Auth{User: "nonexistent", Pass: "wrongpassword"}.AsSha256Mechanism(), kerr.SaslAuthenticationFailed},
		{"disabled mechanism", plain.Auth{User: "alice", Pass: "alice-secret"}.AsMechanism(), kerr.UnsupportedSaslMechanism},
	} {
		t.Run(tt.name, func(t *testing.T) {
			cl := saslClient(t, srv, tt.m)
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			err := cl.Ping(ctx)
			if !errors.Is(err, tt.want) {
				t.Fatalf("ping: %v, want %v", err, tt.want)
			}
			if strings.Contains(err.Error(), "alice") || strings.Contains(err.Error(), "nonexistent") {
				t.Fatalf("error reveals the user: %v", err)
			}
		})
	}
}

// dialListener is a raw connection to one of srv's listeners.
func dialListener(t *testing.T, srv *InProcess, name string) *rawConn {
	t.Helper()
	nc, err := net.DialTimeout("tcp", srv.ListenerAddr(name), 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { nc.Close() })
	return &rawConn{t: t, nc: nc, br: bufio.NewReader(nc), fmt: kmsg.NewRequestFormatter(kmsg.FormatterClientID("raw-test"))}
}

// expectClosed checks that the broker closes c without sending anything.
func expectClosed(t *testing.T, c *rawConn) {
	t.Helper()
	c.nc.SetReadDeadline(time.Now().Add(5 * time.Second))
	var b [1]byte
	n, err := c.br.Read(b[:])
	if n != 0 || err == nil || errors.Is(err, errTimeout) || isTimeout(err) {
		t.Fatalf("read %d bytes, %v; want the connection closed without an answer", n, err)
	}
}

var errTimeout = errors.New("timeout")

func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

func TestSASLGateBeforeAuthentication(t *testing.T) {
	t.Parallel()
	srv := newSASLServer(t, nil)
	t.Run("metadata first", func(t *testing.T) {
		c := dialListener(t, srv, "SASL_PLAINTEXT")
		req := kmsg.NewPtrMetadataRequest()
		req.Version = 12
		c.send(req)
		expectClosed(t, c)
	})
	t.Run("second api versions", func(t *testing.T) {
		c := dialListener(t, srv, "SASL_PLAINTEXT")
		av := kmsg.NewPtrApiVersionsRequest()
		av.Version = 3
		av.ClientSoftwareName, av.ClientSoftwareVersion = "t", "1"
		c.recv(av, c.send(av), 5*time.Second)
		c.send(av)
		expectClosed(t, c)
	})
	// During the exchange, another request gets its API's error answer
	// with ILLEGAL_SASL_STATE (Kafka's handleSaslToken), then the
	// connection closes.
	produce := kmsg.NewPtrProduceRequest()
	produce.Version, produce.Acks, produce.TimeoutMillis = 9, -1, 1000
	pt := kmsg.NewProduceRequestTopic()
	pt.Topic = "t"
	pt.Partitions = append(pt.Partitions, kmsg.NewProduceRequestTopicPartition())
	produce.Topics = append(produce.Topics, pt)
	metadata := kmsg.NewPtrMetadataRequest()
	metadata.Version = 12
	mt := kmsg.NewMetadataRequestTopic()
	mt.Topic = kmsg.StringPtr("t")
	metadata.Topics = append(metadata.Topics, mt)
	join := kmsg.NewPtrJoinGroupRequest()
	join.Version, join.Group, join.ProtocolType = 9, "g", "consumer"
	describeACLs := kmsg.NewPtrDescribeACLsRequest()
	describeACLs.Version = 3
	for _, tt := range []struct {
		req   kmsg.Request
		check func(kmsg.Response) []int16
	}{
		{produce, func(r kmsg.Response) []int16 {
			return []int16{r.(*kmsg.ProduceResponse).Topics[0].Partitions[0].ErrorCode}
		}},
		{metadata, func(r kmsg.Response) []int16 { return []int16{r.(*kmsg.MetadataResponse).Topics[0].ErrorCode} }},
		{join, func(r kmsg.Response) []int16 { return []int16{r.(*kmsg.JoinGroupResponse).ErrorCode} }},
		{describeACLs, func(r kmsg.Response) []int16 {
			if m := r.(*kmsg.DescribeACLsResponse).ErrorMessage; m == nil || !strings.Contains(*m, "DescribeACLs") {
				t.Errorf("DescribeACLs error message %v, want one naming the request", m)
			}
			return []int16{r.(*kmsg.DescribeACLsResponse).ErrorCode}
		}},
	} {
		t.Run(kmsg.NameForKey(tt.req.Key())+" during authenticate", func(t *testing.T) {
			c := dialListener(t, srv, "SASL_PLAINTEXT")
			hs := kmsg.NewPtrSASLHandshakeRequest()
			hs.Version, hs.Mechanism = 1, "PLAIN"
			if r := c.recv(hs, c.send(hs), 5*time.Second).(*kmsg.SASLHandshakeResponse); r.ErrorCode != 0 {
				t.Fatalf("handshake: %v", kerr.ErrorForCode(r.ErrorCode))
			}
			for _, code := range tt.check(c.recv(tt.req, c.send(tt.req), 5*time.Second)) {
				if code != kerr.IllegalSaslState.Code {
					t.Fatalf("error code %v, want ILLEGAL_SASL_STATE", kerr.ErrorForCode(code))
				}
			}
			expectClosed(t, c)
		})
	}
	t.Run("unsupported version during authenticate", func(t *testing.T) {
		c := dialListener(t, srv, "SASL_PLAINTEXT")
		hs := kmsg.NewPtrSASLHandshakeRequest()
		hs.Version, hs.Mechanism = 1, "PLAIN"
		c.recv(hs, c.send(hs), 5*time.Second)
		p := kmsg.NewPtrProduceRequest()
		p.Version = 2 // below what the broker serves: closed without an answer, as Kafka's parse fails
		c.send(p)
		expectClosed(t, c)
	})
	t.Run("oversized first frame", func(t *testing.T) {
		c := dialListener(t, srv, "SASL_PLAINTEXT")
		frame := binary.BigEndian.AppendUint32(nil, 600<<10)
		c.nc.Write(frame)
		expectClosed(t, c)
	})
	t.Run("handshake on plaintext", func(t *testing.T) {
		c := dialListener(t, srv, "PLAINTEXT")
		hs := kmsg.NewPtrSASLHandshakeRequest()
		hs.Version, hs.Mechanism = 1, "PLAIN"
		if r := c.recv(hs, c.send(hs), 5*time.Second).(*kmsg.SASLHandshakeResponse); r.ErrorCode != kerr.IllegalSaslState.Code {
			t.Fatalf("handshake on PLAINTEXT: %d", r.ErrorCode)
		}
	})
	t.Run("failed login answers then closes", func(t *testing.T) {
		c := dialListener(t, srv, "SASL_PLAINTEXT")
		hs := kmsg.NewPtrSASLHandshakeRequest()
		hs.Version, hs.Mechanism = 1, "PLAIN"
		c.recv(hs, c.send(hs), 5*time.Second)
		au := kmsg.NewPtrSASLAuthenticateRequest()
		au.Version = 2
		au.SASLAuthBytes = []byte("\x00alice\x00nope")
		start := time.Now()
		r := c.recv(au, c.send(au), 5*time.Second).(*kmsg.SASLAuthenticateResponse)
		if r.ErrorCode != kerr.SaslAuthenticationFailed.Code || r.ErrorMessage == nil {
			t.Fatalf("authenticate: %+v", r)
		}
		if time.Since(start) < 20*time.Millisecond {
			t.Fatal("the failure was not delayed")
		}
		expectClosed(t, c)
	})
}

// The SaslHandshake v0 flow: raw tokens without Kafka headers.
func TestSASLHandshakeV0RawTokens(t *testing.T) {
	t.Parallel()
	srv := newSASLServer(t, nil)
	c := dialListener(t, srv, "SASL_PLAINTEXT")
	hs := kmsg.NewPtrSASLHandshakeRequest()
	hs.Version, hs.Mechanism = 0, "PLAIN"
	if r := c.recv(hs, c.send(hs), 5*time.Second).(*kmsg.SASLHandshakeResponse); r.ErrorCode != 0 {
		t.Fatalf("handshake: %d", r.ErrorCode)
	}
	token := []byte("\x00alice\x00alice-secret")
	c.nc.Write(append(binary.BigEndian.AppendUint32(nil, uint32(len(token))), token...))
	var size [4]byte
	c.nc.SetReadDeadline(time.Now().Add(5 * time.Second))
	if _, err := io.ReadFull(c.br, size[:]); err != nil || binary.BigEndian.Uint32(size[:]) != 0 {
		t.Fatalf("PLAIN v0 success frame: %v %x", err, size)
	}
	md := kmsg.NewPtrMetadataRequest()
	md.Version = 12
	c.recv(md, c.send(md), 5*time.Second)

	// A bad password in the v0 flow closes without a message.
	c2 := dialListener(t, srv, "SASL_PLAINTEXT")
	c2.recv(hs, c2.send(hs), 5*time.Second)
	bad := []byte("\x00alice\x00nope")
	c2.nc.Write(append(binary.BigEndian.AppendUint32(nil, uint32(len(bad))), bad...))
	expectClosed(t, c2)
}

// KIP-368: the lifetime is announced; a client that does not
// re-authenticate is closed at its first request after expiry; kgo
// re-authenticates and keeps working.
func TestSASLReauthentication(t *testing.T) {
	t.Parallel()
	// Above the 1 s Kafka requires between re-authentications.
	const life = 1200 * time.Millisecond
	srv := newSASLServer(t, func(c *Config) { c.ConnectionsMaxReauth = life })

	c := dialListener(t, srv, "SASL_PLAINTEXT")
	hs := kmsg.NewPtrSASLHandshakeRequest()
	hs.Version, hs.Mechanism = 1, "PLAIN"
	c.recv(hs, c.send(hs), 5*time.Second)
	au := kmsg.NewPtrSASLAuthenticateRequest()
	au.Version = 1
	au.SASLAuthBytes = []byte("\x00alice\x00alice-secret")
	r := c.recv(au, c.send(au), 5*time.Second).(*kmsg.SASLAuthenticateResponse)
	if r.ErrorCode != 0 || r.SessionLifetimeMillis != life.Milliseconds() {
		t.Fatalf("authenticate: code %d lifetime %d", r.ErrorCode, r.SessionLifetimeMillis)
	}
	md := kmsg.NewPtrMetadataRequest()
	md.Version = 12
	c.recv(md, c.send(md), 5*time.Second)
	<-time.After(life + 100*time.Millisecond) // the session must have ended
	c.send(md)
	expectClosed(t, c)

	// kgo re-authenticates before expiry: requests keep succeeding across
	// several lifetimes on one connection.
	cl := saslClient(t, srv, kscram.Auth{User: "alice", Pass: "alice-secret"}.AsSha512Mechanism(),
		kgo.DefaultProduceTopic("reauth"))
	ctx := testCtx(t)
	expired := srv.Stats().ExpiredSessions // the raw client's
	deadline := time.Now().Add(3 * life)
	for time.Now().Before(deadline) {
		if err := cl.ProduceSync(ctx, &kgo.Record{Value: []byte("v")}).FirstErr(); err != nil {
			t.Fatalf("produce across re-authentication: %v", err)
		}
	}
	// kgo reconnects transparently, so the produce loop alone would not
	// tell a re-authentication from a killed connection: the counters do.
	st := srv.Stats()
	if st.ExpiredSessions != expired || st.Reauthentications < 2 {
		t.Fatalf("%d sessions expired (want %d), %d re-authentications (want at least 2)", st.ExpiredSessions, expired, st.Reauthentications)
	}
}

// Re-authentication as another user fails and closes.
func TestSASLReauthenticationCannotChangePrincipal(t *testing.T) {
	t.Parallel()
	srv := newSASLServer(t, func(c *Config) { c.ConnectionsMaxReauth = time.Hour })
	c := dialListener(t, srv, "SASL_PLAINTEXT")
	login := func(user, pw string) *kmsg.SASLAuthenticateResponse {
		hs := kmsg.NewPtrSASLHandshakeRequest()
		hs.Version, hs.Mechanism = 1, "PLAIN"
		if r := c.recv(hs, c.send(hs), 5*time.Second).(*kmsg.SASLHandshakeResponse); r.ErrorCode != 0 {
			t.Fatalf("handshake: %d", r.ErrorCode)
		}
		au := kmsg.NewPtrSASLAuthenticateRequest()
		au.Version = 2
		au.SASLAuthBytes = []byte("\x00" + user + "\x00" + pw)
		return c.recv(au, c.send(au), 5*time.Second).(*kmsg.SASLAuthenticateResponse)
	}
	if r := login("alice", "alice-secret"); r.ErrorCode != 0 {
		t.Fatalf("login: %d", r.ErrorCode)
	}
	// Within a second of the start, a handshake is an ordinary request
	// (ILLEGAL_SASL_STATE); the first re-authentication is allowed at once.
	if r := login("bob", "bob-secret"); r.ErrorCode != kerr.SaslAuthenticationFailed.Code {
		t.Fatalf("re-authentication as bob: %d", r.ErrorCode)
	}
	expectClosed(t, c)
}

func TestScramCredentialAPIsAndRestart(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	edit := func(c *Config) {
		c.Listen = "PLAINTEXT://127.0.0.1:0,SASL_PLAINTEXT://127.0.0.1:0"
		c.SASLEnabledMechanisms = "SCRAM-SHA-256,SCRAM-SHA-512,PLAIN"
	}
	srv, err := StartInProcess(dir, edit)
	if err != nil {
		t.Fatal(err)
	}
	adm := kadm.NewClient(newClient(t, srv))
	ctx := testCtx(t)
	res, err := adm.AlterUserSCRAMs(ctx, nil, []kadm.UpsertSCRAM{
		{User: "carol", Mechanism: kadm.ScramSha256, Iterations: 4096, Password: "carol-pw"},
	})
	if err != nil {
		t.Fatal(err)
	}
	if r := res["carol"]; r.Err != nil {
		t.Fatalf("carol: %v", r.Err)
	}
	// What kadm refuses to send: too few iterations, an empty name, an
	// unknown mechanism.
	raw := kmsg.NewPtrAlterUserSCRAMCredentialsRequest()
	for _, u := range []struct {
		name string
		mech int8
		it   int32
	}{{"dave", 2, 100}, {"", 1, 4096}, {"erin", 9, 4096}} {
		up := kmsg.NewAlterUserSCRAMCredentialsRequestUpsertion()
		up.Name, up.Mechanism, up.Iterations, up.Salt, up.SaltedPassword = u.name, u.mech, u.it, []byte("salt"), []byte("salted")
		raw.Upsertions = append(raw.Upsertions, up)
	}
	rr, err := raw.RequestWith(ctx, newClient(t, srv))
	if err != nil || len(rr.Results) != 3 {
		t.Fatalf("raw alter: %v %+v", err, rr)
	}
	for i, want := range []*kerr.Error{kerr.UnacceptableCredential, kerr.UnacceptableCredential, kerr.UnsupportedSaslMechanism} {
		if rr.Results[i].ErrorCode != want.Code {
			t.Errorf("result %d (%q): %d, want %v", i, rr.Results[i].User, rr.Results[i].ErrorCode, want)
		}
	}
	dup, err := adm.AlterUserSCRAMs(ctx, []kadm.DeleteSCRAM{{User: "carol", Mechanism: kadm.ScramSha512}},
		[]kadm.UpsertSCRAM{{User: "carol", Mechanism: kadm.ScramSha256, Iterations: 4096, Password: "other"}})
	if err != nil || !errors.Is(dup["carol"].Err, kerr.DuplicateResource) {
		t.Fatalf("carol twice: %v %v", err, dup["carol"].Err)
	}
	del, err := adm.AlterUserSCRAMs(ctx, []kadm.DeleteSCRAM{{User: "nobody", Mechanism: kadm.ScramSha256}}, nil)
	if err != nil || !errors.Is(del["nobody"].Err, kerr.ResourceNotFound) {
		t.Fatalf("delete missing: %v %v", err, del["nobody"].Err)
	}
	desc, err := adm.DescribeUserSCRAMs(ctx, "carol", "nobody")
	if err != nil {
		t.Fatal(err)
	}
	if c := desc["carol"]; c.Err != nil || len(c.CredInfos) != 1 || c.CredInfos[0].Iterations != 4096 {
		t.Fatalf("describe carol: %+v", c)
	}
	if !errors.Is(desc["nobody"].Err, kerr.ResourceNotFound) {
		t.Fatalf("describe nobody: %v", desc["nobody"].Err)
	}
	login := func(srv *InProcess) error {
		cl := saslClient(t, srv, kscram.Auth{User: "carol", Pass: "carol-pw"}.AsSha256Mechanism())
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		return cl.Ping(ctx)
	}
	if err := login(srv); err != nil {
		t.Fatalf("carol logs in: %v", err)
	}
	if err := srv.Close(); err != nil {
		t.Fatal(err)
	}
	// The credential survives a restart.
	srv2, err := StartInProcess(dir, edit)
	if err != nil {
		t.Fatal(err)
	}
	defer srv2.Close()
	if err := login(srv2); err != nil {
		t.Fatalf("carol after restart: %v", err)
	}
	_ = authn.FileName
}

// Without an authorizer, the ACL APIs answer SECURITY_DISABLED, as Kafka's.
func TestACLAPIsSecurityDisabled(t *testing.T) {
	t.Parallel()
	srv := newTestServer(t, nil)
	adm := newAdmin(t, srv)
	ctx := testCtx(t)
	// What MirrorMaker 2 and kafka-ui send: describeAcls(ANY).
	dreq := kmsg.NewPtrDescribeACLsRequest()
	dreq.ResourceType, dreq.ResourcePatternType = kmsg.ACLResourceTypeAny, kmsg.ACLResourcePatternTypeAny
	dreq.Operation, dreq.PermissionType = kmsg.ACLOperationAny, kmsg.ACLPermissionTypeAny
	dresp, err := dreq.RequestWith(ctx, newClient(t, srv))
	if err != nil || dresp.ErrorCode != kerr.SecurityDisabled.Code || dresp.ErrorMessage == nil {
		t.Fatalf("describe ACLs: %v %+v", err, dresp)
	}
	created, err := adm.CreateACLs(ctx, kadm.NewACLs().Topics("t").Allow("User:a").Operations(kadm.OpRead).ResourcePatternType(kadm.ACLPatternLiteral))
	if err != nil || len(created) != 1 || !errors.Is(created[0].Err, kerr.SecurityDisabled) {
		t.Fatalf("create ACLs: %v %+v", err, created)
	}
	deleted, err := adm.DeleteACLs(ctx, kadm.NewACLs().AnyResource().Allow("User:a").AllowHosts("*").Operations(kadm.OpAny).ResourcePatternType(kadm.ACLPatternAny))
	if err != nil || len(deleted) != 1 || !errors.Is(deleted[0].Err, kerr.SecurityDisabled) {
		t.Fatalf("delete ACLs: %v %+v", err, deleted)
	}
}

// OAUTHBEARER with kgo's sasl/oauth and unsecured tokens: the session
// lifetime is the token's remaining life (below connections.max.reauth.ms),
// and an expired token fails with the reason.
func TestSASLOAuthBearerWithKgo(t *testing.T) {
	t.Parallel()
	srv := newSASLServer(t, func(c *Config) {
		c.SASLEnabledMechanisms = "OAUTHBEARER"
		c.ConnectionsMaxReauth = time.Hour
	})
	token := func(exp time.Time) string {
		claims := fmt.Sprintf(`{"sub":"svc","exp":%d,"iat":%d}`, exp.Unix(), time.Now().Unix())
		return base64.RawURLEncoding.EncodeToString([]byte(`{"alg":"none"}`)) + "." + base64.RawURLEncoding.EncodeToString([]byte(claims)) + "."
	}
	ctx := testCtx(t)
	good := saslClient(t, srv, oauth.Auth{Token: token(time.Now().Add(10 * time.Minute))}.AsMechanism())
	if err := good.Ping(ctx); err != nil {
		t.Fatalf("good token: %v", err)
	}
	expired := saslClient(t, srv, oauth.Auth{Token: token(time.Now().Add(-time.Minute))}.AsMechanism())
	pctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	err := expired.Ping(pctx)
	if !errors.Is(err, kerr.SaslAuthenticationFailed) || !strings.Contains(err.Error(), "expired") {
		t.Fatalf("expired token: %v", err)
	}

	// The lifetime a raw client is told: the token's, not the hour.
	c := dialListener(t, srv, "SASL_PLAINTEXT")
	hs := kmsg.NewPtrSASLHandshakeRequest()
	hs.Version, hs.Mechanism = 1, "OAUTHBEARER"
	c.recv(hs, c.send(hs), 5*time.Second)
	au := kmsg.NewPtrSASLAuthenticateRequest()
	au.Version = 2
	au.SASLAuthBytes = []byte("n,,\x01auth=Bearer " + token(time.Now().Add(90*time.Second)) + "\x01\x01")
	r := c.recv(au, c.send(au), 5*time.Second).(*kmsg.SASLAuthenticateResponse)
	if r.ErrorCode != 0 || r.SessionLifetimeMillis <= 0 || r.SessionLifetimeMillis > 90_000 {
		t.Fatalf("lifetime %d ms (code %d), want at most the token's 90 s", r.SessionLifetimeMillis, r.ErrorCode)
	}
}

// Kafka's answers around the handshake: an ApiVersions version the broker
// does not know gets UNSUPPORTED_VERSION and may be retried before
// authentication; after a login without session expiry a SaslHandshake is
// an ordinary request answered ILLEGAL_SASL_STATE, and so is a
// SaslAuthenticate; the connection stays usable.
func TestSASLHandshakeEdges(t *testing.T) {
	t.Parallel()
	srv := newSASLServer(t, nil)
	c := dialListener(t, srv, "SASL_PLAINTEXT")
	c.corr++
	frame := binary.BigEndian.AppendUint32(nil, 0)
	frame = binary.BigEndian.AppendUint16(frame, 18)
	frame = binary.BigEndian.AppendUint16(frame, 99) // unknown version
	frame = binary.BigEndian.AppendUint32(frame, uint32(c.corr))
	frame = binary.BigEndian.AppendUint16(frame, 0xffff)
	binary.BigEndian.PutUint32(frame, uint32(len(frame)-4))
	c.nc.Write(frame)
	v0 := kmsg.NewPtrApiVersionsRequest()
	if r := c.recv(v0, c.corr, 5*time.Second).(*kmsg.ApiVersionsResponse); r.ErrorCode != kerr.UnsupportedVersion.Code {
		t.Fatalf("unknown ApiVersions version: %d", r.ErrorCode)
	}
	av := kmsg.NewPtrApiVersionsRequest()
	av.Version, av.ClientSoftwareName, av.ClientSoftwareVersion = 3, "t", "1"
	if r := c.recv(av, c.send(av), 5*time.Second).(*kmsg.ApiVersionsResponse); r.ErrorCode != 0 {
		t.Fatalf("retried ApiVersions: %d", r.ErrorCode)
	}
	hs := kmsg.NewPtrSASLHandshakeRequest()
	hs.Version, hs.Mechanism = 1, "PLAIN"
	c.recv(hs, c.send(hs), 5*time.Second)
	au := kmsg.NewPtrSASLAuthenticateRequest()
	au.Version = 2
	au.SASLAuthBytes = []byte("\x00alice\x00alice-secret")
	if r := c.recv(au, c.send(au), 5*time.Second).(*kmsg.SASLAuthenticateResponse); r.ErrorCode != 0 || r.SessionLifetimeMillis != 0 {
		t.Fatalf("login: code %d lifetime %d", r.ErrorCode, r.SessionLifetimeMillis)
	}
	if r := c.recv(hs, c.send(hs), 5*time.Second).(*kmsg.SASLHandshakeResponse); r.ErrorCode != kerr.IllegalSaslState.Code {
		t.Fatalf("handshake after login: %d", r.ErrorCode)
	}
	if r := c.recv(au, c.send(au), 5*time.Second).(*kmsg.SASLAuthenticateResponse); r.ErrorCode != kerr.IllegalSaslState.Code {
		t.Fatalf("authenticate after login: %d", r.ErrorCode)
	}
	md := kmsg.NewPtrMetadataRequest()
	md.Version = 12
	c.recv(md, c.send(md), 5*time.Second)
}

// A restart in place keeps every listener on its port, and the SCRAM
// credentials with them.
func TestRestartKeepsListeners(t *testing.T) {
	t.Parallel()
	srv := newSASLServer(t, nil)
	before := srv.Listeners()
	ctx := testCtx(t)
	if err := srv.Restart(ctx); err != nil {
		t.Fatal(err)
	}
	after := srv.Listeners()
	if len(after) != len(before) {
		t.Fatalf("listeners %+v after restart, were %+v", after, before)
	}
	for i := range before {
		if after[i] != before[i] {
			t.Fatalf("listener %d: %+v after restart, was %+v", i, after[i], before[i])
		}
	}
	cl := saslClient(t, srv, kscram.Auth{User: "alice", Pass: "alice-secret"}.AsSha256Mechanism())
	if err := cl.Ping(ctx); err != nil {
		t.Fatalf("login after restart: %v", err)
	}
}

// Every API kmsg knows gets an encodable ILLEGAL_SASL_STATE answer or
// none (the connection then closes silently); the reflective fallback
// never panics, at the oldest or the newest version.
func TestIllegalSASLStateResponseEveryAPI(t *testing.T) {
	t.Parallel()
	answered := 0
	for key := int16(0); key <= kmsg.MaxKey; key++ {
		req := kmsg.RequestForKey(key)
		if req == nil {
			continue
		}
		for _, v := range []int16{0, req.MaxVersion()} {
			req.SetVersion(v)
			resp := illegalSASLStateResponse(req, "m")
			if resp == nil {
				continue
			}
			answered++
			if resp.Key() != key {
				t.Fatalf("%s: answered with %s", kmsg.NameForKey(key), kmsg.NameForKey(resp.Key()))
			}
			resp.SetVersion(v)
			back := req.ResponseKind()
			back.SetVersion(v)
			if err := back.ReadFrom(resp.AppendTo(nil)); err != nil {
				t.Fatalf("%s v%d: the answer does not decode: %v", kmsg.NameForKey(key), v, err)
			}
		}
	}
	if answered < 40 {
		t.Fatalf("only %d API versions get an answer; the fallback finds no error code", answered)
	}
}
