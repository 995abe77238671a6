package integration

// Security with real clients: kcat (librdkafka 2.0) and sarama against
// SASL_PLAINTEXT, SASL_SSL and SSL listeners; the real binary's credentials
// and ACLs across SIGKILL; and hostile handshakes. kgo's own SASL, TLS
// and ACL tests are in broker/; confluent-kafka-go's in
// security_confluent_test.go.

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/IBM/sarama"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/sasl/plain"

	"github.com/kbroker/kbroker/broker"
	"github.com/kbroker/kbroker/internal/testpki"
	kscram "github.com/twmb/franz-go/pkg/sasl/scram"
)

// kcatSecurity are the -X settings of a librdkafka client on a listener.
func kcatSecurity(p *testpki.PKI, protocol, mech, user, pass string) []string {
	args := []string{"-X", "security.protocol=" + protocol}
	if mech != "" {
		args = append(args, "-X", "sasl.mechanisms="+mech, "-X", "sasl.username="+user, "-X", "sasl.password="+pass)
	}
	if strings.HasSuffix(protocol, "SSL") {
		args = append(args, "-X", "ssl.ca.location="+p.CAFile)
	}
	return args
}

func TestSecurityKcat(t *testing.T) {
	t.Parallel()
	kcatPath(t)
	p := testpki.New(t)
	b := secBroker(t, p, nil)
	for _, tt := range []struct {
		listener, protocol, mech string
	}{
		{"SASL_PLAINTEXT", "SASL_PLAINTEXT", "PLAIN"},
		{"SASL_PLAINTEXT", "SASL_PLAINTEXT", "SCRAM-SHA-256"},
		{"SASL_SSL", "SASL_SSL", "SCRAM-SHA-512"},
		{"SSL", "SSL", ""},
	} {
		t.Run(tt.protocol+"/"+tt.mech, func(t *testing.T) {
			topic := topicName(t)
			sec := kcatSecurity(p, tt.protocol, tt.mech, "alice", "alice-secret")
			base := append([]string{"-b", b.listener(tt.listener)}, sec...)
			base = append(base, kcatOpts...)
			runKcat(t, "k1:v1\nk2:v2\n", append(base, "-P", "-t", topic, "-K", ":")...)
			out := runKcat(t, "", append(base, "-C", "-t", topic, "-o", "beginning", "-e", "-c", "2", "-f", "%k=%s\n")...)
			if got := string(out); got != "k1=v1\nk2=v2\n" {
				t.Fatalf("consumed %q", got)
			}
		})
	}
	t.Run("bad password", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		args := append([]string{"-b", b.listener("SASL_PLAINTEXT"), "-L", "-m", "5"},
			kcatSecurity(p, "SASL_PLAINTEXT", "SCRAM-SHA-256", "alice", "wrong")...)
		out, err := exec.CommandContext(ctx, kcatPath(t), args...).CombinedOutput()
		if err == nil || !strings.Contains(string(out), "Authentication failed") {
			t.Fatalf("kcat with a bad password: %v\n%s", err, out)
		}
		if strings.Contains(string(out), "alice") && strings.Contains(string(out), "unknown") {
			t.Fatalf("the failure reveals whether the user exists:\n%s", out)
		}
	})
}

func TestSecuritySarama(t *testing.T) {
	t.Parallel()
	p := testpki.New(t)
	b := secBroker(t, p, nil)
	for _, tt := range []struct {
		name     string
		listener string
		tls      bool
		mech     sarama.SASLMechanism
		version  int16
		sha512   bool
	}{
		{"plain v1", "SASL_PLAINTEXT", false, sarama.SASLTypePlaintext, sarama.SASLHandshakeV1, false},
		{"plain v0", "SASL_PLAINTEXT", false, sarama.SASLTypePlaintext, sarama.SASLHandshakeV0, false},
		{"scram-256", "SASL_PLAINTEXT", false, sarama.SASLTypeSCRAMSHA256, sarama.SASLHandshakeV1, false},
		{"scram-512 over TLS", "SASL_SSL", true, sarama.SASLTypeSCRAMSHA512, sarama.SASLHandshakeV1, true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			cfg := saramaConfig(nil, false)
			cfg.Net.SASL.Enable = true
			cfg.Net.SASL.Mechanism = tt.mech
			cfg.Net.SASL.Version = tt.version
			if tt.version == sarama.SASLHandshakeV0 {
				cfg.ApiVersionsRequest = false // sarama's rule for the v0 flow
			}
			cfg.Net.SASL.User, cfg.Net.SASL.Password = "alice", "alice-secret"
			if tt.mech != sarama.SASLTypePlaintext {
				sha512 := tt.sha512
				cfg.Net.SASL.SCRAMClientGeneratorFunc = func() sarama.SCRAMClient { return &scramClient{sha512: sha512} }
			}
			if tt.tls {
				cfg.Net.TLS.Enable, cfg.Net.TLS.Config = true, p.ClientTLS(false)
			}
			topic := topicName(t)
			prod, err := sarama.NewSyncProducer([]string{b.listener(tt.listener)}, cfg)
			if err != nil {
				t.Fatalf("sarama producer: %v", err)
			}
			defer prod.Close()
			for i := range 3 {
				if _, _, err := prod.SendMessage(&sarama.ProducerMessage{Topic: topic, Value: sarama.StringEncoder(fmt.Sprint(i))}); err != nil {
					t.Fatalf("send: %v", err)
				}
			}
			cons, err := sarama.NewConsumer([]string{b.listener(tt.listener)}, cfg)
			if err != nil {
				t.Fatal(err)
			}
			defer cons.Close()
			pc, err := cons.ConsumePartition(topic, 0, sarama.OffsetOldest)
			if err != nil {
				t.Fatal(err)
			}
			defer pc.Close()
			for i := range 3 {
				select {
				case m := <-pc.Messages():
					if string(m.Value) != fmt.Sprint(i) {
						t.Fatalf("message %d: %q", i, m.Value)
					}
				case <-time.After(10 * time.Second):
					t.Fatalf("message %d did not arrive", i)
				}
			}
		})
	}
	t.Run("bad password", func(t *testing.T) {
		cfg := saramaConfig(nil, false)
		cfg.Net.SASL.Enable, cfg.Net.SASL.Mechanism = true, sarama.SASLTypeSCRAMSHA256
		cfg.Net.SASL.User, cfg.Net.SASL.Password = "alice", "nope"
		cfg.Net.SASL.SCRAMClientGeneratorFunc = func() sarama.SCRAMClient { return &scramClient{} }
		cfg.Metadata.Retry.Max = 0
		_, err := sarama.NewClient([]string{b.listener("SASL_PLAINTEXT")}, cfg)
		if !errors.Is(err, sarama.ErrSASLAuthenticationFailed) && (err == nil || !strings.Contains(err.Error(), "SASL")) {
			t.Fatalf("sarama with a bad password: %v", err)
		}
	})
}

// TestSecurityBinaryKill9: the real binary, seeded with --sasl-user and
// running the authorizer from its config file, gets a SCRAM user, a topic
// and ACLs over the wire, is killed with SIGKILL, and after the restart
// the new user still logs in, the ACLs still allow and deny.
func TestSecurityBinaryKill9(t *testing.T) {
	t.Parallel()
	conf := writeTempFile(t, "server.properties", `authorizer.class.name=org.apache.kafka.metadata.authorizer.StandardAuthorizer
super.users=User:admin
sasl.enabled.mechanisms=SCRAM-SHA-256,PLAIN
`)
	b := startBinary(t, "--config", conf, "--listen", "SASL_PLAINTEXT://127.0.0.1:0", "--sasl-user", "admin:admin-secret", "--flush", "sync")
	ctx := testCtx(t)
	client := func(user, pass string, opts ...kgo.Opt) *kgo.Client {
		opts = append([]kgo.Opt{kgo.SeedBrokers(b.Addr()), kgo.SASL(kscram.Auth{User: user, Pass: pass}.AsSha256Mechanism()),
			kgo.RetryTimeout(5 * time.Second)}, opts...)
		cl, err := kgo.NewClient(opts...)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(cl.Close)
		return cl
	}
	adm := kadm.NewClient(client("admin", "admin-secret"))
	if _, err := adm.AlterUserSCRAMs(ctx, nil, []kadm.UpsertSCRAM{{User: "carol", Mechanism: kadm.ScramSha256, Iterations: 4096, Password: "carol-pw"}}); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"granted", "other"} {
		if _, err := adm.CreateTopic(ctx, 1, 1, nil, name); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := adm.CreateACLs(ctx, kadm.NewACLs().Allow("User:carol").AllowHosts("*").Topics("granted").
		Operations(kadm.OpWrite, kadm.OpRead).ResourcePatternType(kadm.ACLPatternLiteral)); err != nil {
		t.Fatal(err)
	}
	if err := b.cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	<-b.exited
	b.cmd = nil
	b.start(t)

	carol := client("carol", "carol-pw", kgo.DefaultProduceTopic("granted"))
	if err := carol.ProduceSync(ctx, &kgo.Record{Value: []byte("after kill")}).FirstErr(); err != nil {
		t.Fatalf("carol after SIGKILL: %v", err)
	}
	md := kmsg.NewPtrMetadataRequest()
	mt := kmsg.NewMetadataRequestTopic()
	mt.Topic = kmsg.StringPtr("other")
	md.Topics = append(md.Topics, mt)
	resp, err := md.RequestWith(ctx, carol)
	if err != nil || resp.Topics[0].ErrorCode != kerr.TopicAuthorizationFailed.Code {
		t.Fatalf("carol's metadata of other after SIGKILL: %v %+v", err, resp)
	}
	bad := client("carol", "wrong")
	pctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	if err := bad.Ping(pctx); !errors.Is(err, kerr.SaslAuthenticationFailed) {
		t.Fatalf("a wrong password after SIGKILL: %v", err)
	}
}

// writeTempFile writes text to a new file in a test directory.
func writeTempFile(t *testing.T, name, text string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestSecurityHostileHandshakes: on a SASL listener, thousands of failed
// logins, oversized and malformed tokens, frames announced and never sent,
// and connections that never speak: every one is closed, the heap stays
// bounded, and a good login still works afterwards.
func TestSecurityHostileHandshakes(t *testing.T) {
	// Not parallel: the heap bound below is measured in this process, and
	// parallel tests' clients and brokers would count against it (it once
	// saw 120 MiB of other tests' heap).
	p := testpki.New(t)
	b := secBroker(t, p, func(c *broker.Config) {
		c.TLSHandshakeTimeout = 2 * time.Second
		c.FailedAuthenticationDelay = time.Millisecond
	})
	addr := b.listener("SASL_PLAINTEXT")
	frame := func(key, version int16, corr int32, body []byte) []byte {
		f := binary.BigEndian.AppendUint32(nil, 0)
		f = binary.BigEndian.AppendUint16(f, uint16(key))
		f = binary.BigEndian.AppendUint16(f, uint16(version))
		f = binary.BigEndian.AppendUint32(f, uint32(corr))
		f = binary.BigEndian.AppendUint16(f, 0xffff) // null client id
		f = append(f, body...)
		binary.BigEndian.PutUint32(f, uint32(len(f)-4))
		return f
	}
	handshake := func(mech string) []byte {
		req := kmsg.NewPtrSASLHandshakeRequest()
		req.Version, req.Mechanism = 1, mech
		return frame(17, 1, 1, req.AppendTo(nil))
	}
	authenticate := func(token []byte) []byte {
		req := kmsg.NewPtrSASLAuthenticateRequest()
		req.Version, req.SASLAuthBytes = 1, token
		return frame(36, 1, 2, req.AppendTo(nil))
	}
	// closedAfter sends data and reads until the broker closes; it
	// reports whether the connection was closed (not timed out).
	closedAfter := func(data []byte) bool {
		nc, err := net.DialTimeout("tcp", addr, 5*time.Second)
		if err != nil {
			t.Error(err)
			return false
		}
		defer nc.Close()
		nc.Write(data)
		nc.SetReadDeadline(time.Now().Add(10 * time.Second))
		_, err = io.Copy(io.Discard, nc)
		var ne net.Error
		return err == nil || !errors.As(err, &ne) || !ne.Timeout()
	}
	heap := func() uint64 {
		runtime.GC()
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		return ms.HeapAlloc
	}
	before := heap()

	cases := map[string][]byte{
		"metadata first":      frame(3, 12, 1, kmsg.NewPtrMetadataRequest().AppendTo(nil)),
		"garbage":             bytes.Repeat([]byte{0xff}, 64),
		"oversized frame":     binary.BigEndian.AppendUint32(nil, 600<<10),
		"long mechanism":      handshake(strings.Repeat("A", 10000)),
		"1 MiB token":         append(handshake("PLAIN"), authenticate(make([]byte, 1<<20))...),
		"empty token":         append(handshake("SCRAM-SHA-256"), authenticate(nil)...),
		"bad scram":           append(handshake("SCRAM-SHA-512"), authenticate([]byte("n,,n=alice,r=x,m=1"))...),
		"plain four fields":   append(handshake("PLAIN"), authenticate([]byte("a\x00alice\x00alice-secret\x00x"))...),
		"oauth not base64":    append(handshake("OAUTHBEARER"), authenticate([]byte("n,,\x01auth=Bearer !!.!!.\x01\x01"))...),
		"truncated handshake": handshake("PLAIN")[:9],
		"announced, not sent": binary.BigEndian.AppendUint32(nil, 500<<10),
		"nothing at all":      nil,
		"unknown mechanism":   handshake("GSSAPI"),
		"authenticate first":  authenticate([]byte("\x00alice\x00alice-secret")),
	}
	for name, data := range cases {
		if !closedAfter(data) {
			t.Errorf("%s: the connection was not closed", name)
		}
	}

	// Failed logins in parallel: each answered and closed; PBKDF2 runs
	// are bounded by the broker, not by the attacker.
	const logins = 300
	var wg sync.WaitGroup
	sem := make(chan struct{}, 32)
	var mu sync.Mutex
	failures := 0
	for i := range logins {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			token := fmt.Appendf(nil, "\x00user%d\x00wrong", i%7)
			if !closedAfter(append(handshake("PLAIN"), authenticate(token)...)) {
				mu.Lock()
				failures++
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	if failures > 0 {
		t.Fatalf("%d of %d failed logins were not closed", failures, logins)
	}
	if grown := int64(heap()) - int64(before); grown > 64<<20 {
		t.Fatalf("the heap grew by %d MiB over the hostile handshakes", grown>>20)
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.SASL(plain.Auth{User: "alice", Pass: "alice-secret"}.AsMechanism()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	if err := cl.Ping(testCtx(t)); err != nil {
		t.Fatalf("a good login after the hostile ones: %v", err)
	}
}
