package broker

import (
	"bufio"
	"errors"
	"io"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kbroker/kbroker/internal/testenv"
	"github.com/kbroker/kbroker/protocol"
)

// dialFrom connects to srv from the loopback address local (any 127/8
// address works on Linux), closed at cleanup.
func dialFrom(t *testing.T, srv *InProcess, local string) net.Conn {
	t.Helper()
	d := net.Dialer{Timeout: 5 * time.Second, LocalAddr: &net.TCPAddr{IP: net.ParseIP(local)}}
	nc, err := d.Dial("tcp", srv.Addr())
	if err != nil {
		t.Fatalf("dial from %s: %v", local, err)
	}
	t.Cleanup(func() { nc.Close() })
	return nc
}

// served reports whether nc gets an answer to ApiVersions (true) or is
// closed by the broker (false), within 10 s.
func served(t *testing.T, nc net.Conn) bool {
	t.Helper()
	nc.SetDeadline(time.Now().Add(10 * time.Second))
	if _, err := nc.Write(requestFrame(kmsg.NewPtrApiVersionsRequest(), 0, 7)); err != nil {
		return false // closed before the request went out
	}
	_, err := protocol.ReadSize(bufio.NewReader(nc), 1<<20)
	switch {
	case err == nil:
		return true
	case errors.Is(err, io.EOF), errors.Is(err, net.ErrClosed), isReset(err):
		return false
	}
	t.Fatalf("reading the ApiVersions answer: %v", err)
	return false
}

func isReset(err error) bool {
	return err != nil && (strings.Contains(err.Error(), "connection reset") || strings.Contains(err.Error(), "broken pipe"))
}

// awaitServed dials from local until a connection is served (the broker
// notices a closed connection asynchronously), for at most 10 s.
func awaitServed(t *testing.T, srv *InProcess, local string) net.Conn {
	t.Helper()
	var nc net.Conn
	testenv.Eventually(t, 10*time.Second, "a connection from "+local+" served after one was closed", func() bool {
		nc = dialFrom(t, srv, local)
		if served(t, nc) {
			return true
		}
		nc.Close()
		return false
	})
	return nc
}

func TestMaxConnectionsPerIP(t *testing.T) {
	srv := newTestServer(t, func(c *Config) { c.MaxConnectionsPerIP = 2 })
	a := dialFrom(t, srv, "127.0.0.1")
	b := dialFrom(t, srv, "127.0.0.1")
	if !served(t, a) || !served(t, b) {
		t.Fatal("connections within max.connections.per.ip were not served")
	}
	if served(t, dialFrom(t, srv, "127.0.0.1")) {
		t.Fatal("a third connection from 127.0.0.1 was served with max.connections.per.ip=2")
	}
	// Another address has its own count.
	if !served(t, dialFrom(t, srv, "127.0.0.2")) {
		t.Fatal("a connection from 127.0.0.2 was refused: the limit is per IP")
	}
	if got := srv.Stats().RefusedConnections; got != 1 {
		t.Errorf("RefusedConnections = %d, want 1", got)
	}
	// A closed connection frees its slot.
	a.Close()
	awaitServed(t, srv, "127.0.0.1")
	if !served(t, b) {
		t.Fatal("an accepted connection stopped being served")
	}
}

func TestMaxConnections(t *testing.T) {
	srv := newTestServer(t, func(c *Config) { c.MaxConnections = 2 })
	a := dialFrom(t, srv, "127.0.0.1")
	b := dialFrom(t, srv, "127.0.0.2")
	if !served(t, a) || !served(t, b) {
		t.Fatal("connections within max.connections were not served")
	}
	for _, ip := range []string{"127.0.0.1", "127.0.0.3"} {
		if served(t, dialFrom(t, srv, ip)) {
			t.Fatalf("a third connection (from %s) was served with max.connections=2", ip)
		}
	}
	b.Close()
	awaitServed(t, srv, "127.0.0.3")
	if !served(t, a) {
		t.Fatal("an accepted connection stopped being served")
	}
}

func TestConnectionLimitsDefaultAndValidate(t *testing.T) {
	def := DefaultConfig()
	if def.MaxConnections != 1<<31-1 || def.MaxConnectionsPerIP != 1<<31-1 {
		t.Fatalf("defaults max.connections=%d max.connections.per.ip=%d, want Kafka's Integer.MAX_VALUE", def.MaxConnections, def.MaxConnectionsPerIP)
	}
	c := DefaultConfig()
	if err := c.LoadProperties(strings.NewReader("max.connections=10\nmax.connections.per.ip=3\n")); err != nil {
		t.Fatal(err)
	}
	if c.MaxConnections != 10 || c.MaxConnectionsPerIP != 3 {
		t.Fatalf("loaded max.connections=%d max.connections.per.ip=%d", c.MaxConnections, c.MaxConnectionsPerIP)
	}
	c.MaxConnectionsPerIP = 0
	if err := c.Validate(); err == nil || !strings.Contains(err.Error(), "max.connections.per.ip") {
		t.Fatalf("Validate with max.connections.per.ip=0: %v", err)
	}
}
