package integration

// Groups across broker restarts: the members of a Stable group go on
// through a clean restart, a crash restart and (for the binary) a kill -9,
// without a rebalance, as they do with Kafka, which persists classic
// groups (GroupMetadata records) and consumer groups (KIP-848 records) in
// __consumer_offsets.

import (
	"context"
	"encoding/binary"
	"fmt"
	"maps"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/IBM/sarama"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kbroker/kbroker/broker"
)

// restartable is a broker that comes back on the same address, as a
// restarted Kafka broker does, so that clients reconnect on their own.
type restartable interface {
	Addr() string
	// restart stops the broker cleanly, or as a crash (an in-process
	// crash restart; SIGKILL for the binary), and starts it again.
	restart(t *testing.T, crash bool)
}

// inProcessRestartable restarts a broker.InProcess in place.
type inProcessRestartable struct{ ip *broker.InProcess }

func (b inProcessRestartable) Addr() string { return b.ip.Addr() }

func (b inProcessRestartable) restart(t *testing.T, crash bool) {
	t.Helper()
	var err error
	if crash {
		err = b.ip.RestartCrashed()
	} else {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		err = b.ip.Restart(ctx)
	}
	if err != nil {
		t.Fatalf("restart (crash %v): %v", crash, err)
	}
}

// binaryRestartable restarts the kbroker binary on the port it had.
type binaryRestartable struct{ b *binaryBroker }

func (b binaryRestartable) Addr() string { return b.b.Addr() }

func (b binaryRestartable) restart(t *testing.T, crash bool) {
	t.Helper()
	addr := b.b.Addr()
	if crash {
		b.b.kill9(t, "restart", crashWait)
	} else {
		b.b.stop(t)
	}
	args := b.b.args
	b.b.args = append(args[:len(args):len(args)], "--listen", addr)
	defer func() { b.b.args = args }()
	b.b.start(t)
	if b.b.Addr() != addr {
		t.Fatalf("restarted on %s, want %s", b.b.Addr(), addr)
	}
}

// eachRestartable runs f against an in-process broker and, with binary,
// the binary, started with o, in parallel.
func eachRestartable(t *testing.T, o brokerOpts, binary bool, f func(t *testing.T, b restartable)) {
	t.Helper()
	o.check(t)
	skipIfExternal(t, "restarts the broker")
	t.Run("in-process", func(t *testing.T) {
		t.Parallel()
		f(t, inProcessRestartable{controlledBroker(t, o.edit)})
	})
	if !binary {
		return
	}
	t.Run("binary", func(t *testing.T) {
		t.Parallel()
		f(t, binaryRestartable{startBinary(t, o.args(t)...)})
	})
}

// persistMember is a group member whose session the test can watch.
type persistMember interface {
	groupMember
	// session is the member id and generation (member epoch for the
	// consumer protocol) of its group session now, and how many
	// rebalance callbacks its client ran so far.
	session() (id string, generation int32, callbacks int)
	// lastHeartbeat is when it last got a heartbeat answered (zero: not
	// yet); watched is false for a client that needs no quiet moment for
	// a restart.
	lastHeartbeat() (last time.Time, watched bool)
}

// persistSarama is a sarama member whose heartbeats the test watches,
// through its connections (Net.Proxy.Dialer): sarama writes each request
// frame in one Write.
type persistSarama struct {
	*saramaMember
	hb *heartbeatWatch
}

func (m persistSarama) lastHeartbeat() (time.Time, bool) { return m.hb.lastAnswer(), true }

// watchingDialer dials connections that report the answers read.
type watchingDialer struct{ hb *heartbeatWatch }

func (d watchingDialer) Dial(network, addr string) (net.Conn, error) {
	c, err := (&net.Dialer{Timeout: 5 * time.Second}).Dial(network, addr)
	if err != nil {
		return nil, err
	}
	return &watchedConn{Conn: c, hb: d.hb, keys: map[int32]int16{}}, nil
}

// watchedConn notes the API key of each request frame written (a client
// that writes each frame in one Write) by correlation id, and parses the
// response frames read to tell hb which requests were answered.
type watchedConn struct {
	net.Conn
	hb *heartbeatWatch

	mu   sync.Mutex
	keys map[int32]int16 // correlation id → API key, until answered
	head []byte          // the start of the response frame being read
	skip int             // bytes of the current frame's body still to come
}

func (c *watchedConn) Write(b []byte) (int, error) {
	if len(b) >= 12 {
		c.mu.Lock()
		c.keys[int32(binary.BigEndian.Uint32(b[8:12]))] = int16(binary.BigEndian.Uint16(b[4:6]))
		c.mu.Unlock()
	}
	return c.Conn.Write(b)
}

func (c *watchedConn) Read(b []byte) (int, error) {
	n, err := c.Conn.Read(b)
	c.mu.Lock()
	var answered []int16
	for p := b[:n]; len(p) > 0; {
		if c.skip > 0 {
			k := min(c.skip, len(p))
			c.skip -= k
			p = p[k:]
			continue
		}
		k := min(8-len(c.head), len(p))
		c.head = append(c.head, p[:k]...)
		p = p[k:]
		if len(c.head) == 8 {
			corr := int32(binary.BigEndian.Uint32(c.head[4:8]))
			if key, ok := c.keys[corr]; ok {
				delete(c.keys, corr)
				answered = append(answered, key)
			}
			c.skip = int(binary.BigEndian.Uint32(c.head[:4])) - 4
			c.head = c.head[:0]
		}
	}
	c.mu.Unlock()
	for _, key := range answered {
		c.hb.answered(key)
	}
	return n, err
}

func (m *kgoMember) session() (string, int32, int) {
	id, gen := m.cl.GroupMetadata()
	_, n := m.assign.get()
	return id, gen, n
}

func (m *saramaMember) session() (string, int32, int) {
	m.mu.Lock()
	id, gen := m.sessionID, m.generation
	m.mu.Unlock()
	_, n := m.assign.get()
	return id, gen, n
}

// Members of these tests must ride out the broker's downtime, as they
// would have to with Kafka: kgo and sarama give up their session when a
// heartbeat meets a refused connection and rejoin, which Setup and the
// assignment callbacks show even when the generation stays. So their
// members heartbeat every persistHeartbeat, the broker restarts when no
// member's next heartbeat is due for persistQuiet (quietMoment), and
// they run against the in-process broker, whose restart in place takes
// milliseconds; the binary's restart (and kill -9) takes long enough
// under load and the race detector that one of their heartbeats still
// meets it now and then. librdkafka retries its heartbeats through a
// restart, so its test runs against the binary too, killed with SIGKILL.
const (
	persistHeartbeat = 8 * time.Second
	persistQuiet     = 3 * time.Second
)

// persistKgo is a kgo member whose heartbeats the test watches.
type persistKgo struct {
	*kgoMember
	hb *heartbeatWatch
}

func (m persistKgo) lastHeartbeat() (time.Time, bool) { return m.hb.lastAnswer(), true }

// startPersistKgo starts a kgo member that heartbeats every
// persistHeartbeat (classic; the broker sets a consumer group's interval).
func startPersistKgo(t *testing.T, addr, group, topic, name string, tally *groupTally, extra ...kgo.Opt) persistMember {
	hb := &heartbeatWatch{}
	opts := append([]kgo.Opt{
		kgo.WithHooks(hb),
		kgo.HeartbeatInterval(persistHeartbeat),
		kgo.SessionTimeout(3 * persistHeartbeat),
	}, extra...)
	return persistKgo{startKgoMember(t, addr, group, topic, name, tally, opts...), hb}
}

// quietMoment waits until no member's next heartbeat is due for
// persistQuiet (each heartbeats persistHeartbeat after its last answer).
func quietMoment(t *testing.T, members []persistMember) {
	t.Helper()
	awaitGroup(t, "a moment without heartbeats due", func() bool {
		for _, m := range members {
			last, watched := m.lastHeartbeat()
			if watched && (last.IsZero() || time.Until(last.Add(persistHeartbeat)) < persistQuiet) {
				return false
			}
		}
		return true
	}, func() string { return "the members' heartbeats never left a gap" })
}

// heartbeatWatch tells when a client read the answer to its next
// Heartbeat or ConsumerGroupHeartbeat request: a kgo hook, or fed by a
// watchedConn.
type heartbeatWatch struct {
	mu   sync.Mutex
	last time.Time
}

// lastAnswer is when the last heartbeat was answered.
func (h *heartbeatWatch) lastAnswer() time.Time {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.last
}

// OnBrokerRead implements kgo.HookBrokerRead.
func (h *heartbeatWatch) OnBrokerRead(_ kgo.BrokerMetadata, key int16, _ int, _, _ time.Duration, err error) {
	if err == nil {
		h.answered(key)
	}
}

// answered hears of the answer to a request of API key.
func (h *heartbeatWatch) answered(key int16) {
	if key != int16(kmsg.Heartbeat) && key != int16(kmsg.ConsumerGroupHeartbeat) {
		return
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	h.last = time.Now()
}

// runGroupPersistScenario: two members (started by start) split the 4
// partitions of a topic and consume and commit its records; the broker
// restarts cleanly, then as after a crash; after each restart more
// records are produced and the members consume them as the same members
// of the same generation (or member epoch), with no rebalance callback,
// every record exactly once: they had committed everything before each
// restart, so there is no uncommitted tail to read again.
func runGroupPersistScenario(t *testing.T, b restartable, kip848 bool, start func(t *testing.T, addr, group, topic, name string, tally *groupTally) persistMember) {
	const partitions = 4
	topic, group := topicName(t), groupName(t)
	adm := newAdmin(t, b.Addr())
	createGroupTopic(t, adm, topic, partitions)
	tally := newGroupTally()
	ma := start(t, b.Addr(), group, topic, "a", tally)
	mb := start(t, b.Addr(), group, topic, "b", tally)
	members := []persistMember{ma, mb}
	names := []string{"a", "b"}
	splitDone := func() bool {
		return balancedSplit(partitions, ma.partitions(t), mb.partitions(t))
	}
	awaitGroup(t, "the members to split the partitions", splitDone, func() string {
		return fmt.Sprintf("a has %v, b has %v", ma.partitions(t), mb.partitions(t))
	})

	type sess struct {
		id        string
		gen       int32
		callbacks int
	}
	sessions := func() []sess {
		out := make([]sess, len(members))
		for i, m := range members {
			out[i].id, out[i].gen, out[i].callbacks = m.session()
		}
		return out
	}
	round := func(tag string) map[int32]int64 {
		produceGroupRecords(t, b.Addr(), topic, partitions, 200, tag)
		ends := endOffsets(t, adm, topic)
		tally.awaitAll(t, ends)
		awaitCommitted(t, adm, group, topic, ends)
		return ends
	}
	round("before")
	before := sessions()
	_, describedBefore, epochBefore := groupView(t, adm, group, kip848)
	for _, crash := range []bool{false, true} {
		quietMoment(t, members)
		b.restart(t, crash)
		ends := round(fmt.Sprintf("crash-%v", crash))
		after := sessions()
		for i := range members {
			if after[i] != before[i] {
				t.Errorf("after a restart (crash %v), member %s: id %q generation %d with %d rebalance callbacks, before id %q generation %d with %d: it rebalanced",
					crash, names[i], after[i].id, after[i].gen, after[i].callbacks, before[i].id, before[i].gen, before[i].callbacks)
			}
		}
		// The broker knows them as they are: Stable, the same members.
		state, described, epoch := groupView(t, adm, group, kip848)
		if state != "Stable" || len(described) != len(members) || epoch != epochBefore {
			t.Errorf("after a restart (crash %v): the group is %s with %d members at epoch %d, want Stable with %d at epoch %d",
				crash, state, len(described), epoch, len(members), epochBefore)
		}
		if !maps.Equal(described, describedBefore) {
			t.Errorf("after a restart (crash %v): members %v, before %v", crash, described, describedBefore)
		}
		for _, s := range after {
			if s.id != "" && !described[s.id] {
				t.Errorf("after a restart (crash %v): member %s not described (%v)", crash, s.id, described)
			}
		}
		tally.check(t, ends, true)
		if t.Failed() {
			return
		}
		t.Logf("restart (crash %v): members kept their sessions %+v; %s", crash, after, tally.summary())
	}
	for _, m := range members {
		m.close(t)
	}
}

// TestGroupPersistKgo: classic kgo members (cooperative-sticky) keep
// their generation and partitions across restarts.
func TestGroupPersistKgo(t *testing.T) {
	t.Parallel()
	eachRestartable(t, groupOpts(nil), false, func(t *testing.T, b restartable) {
		runGroupPersistScenario(t, b, false, func(t *testing.T, addr, group, topic, name string, tally *groupTally) persistMember {
			return startPersistKgo(t, addr, group, topic, name, tally)
		})
	})
}

// TestGroupPersistSarama: sarama members (range) keep their session and
// generation across restarts.
func TestGroupPersistSarama(t *testing.T) {
	t.Parallel()
	eachRestartable(t, groupOpts(nil), false, func(t *testing.T, b restartable) {
		runGroupPersistScenario(t, b, false, func(t *testing.T, addr, group, topic, name string, tally *groupTally) persistMember {
			hb := &heartbeatWatch{}
			m := startSaramaMember(t, addr, group, topic, name, tally, 0, func(c *sarama.Config) {
				c.Net.Proxy.Enable = true
				c.Net.Proxy.Dialer = watchingDialer{hb}
				c.Consumer.Group.Heartbeat.Interval = persistHeartbeat
				c.Consumer.Group.Session.Timeout = 3 * persistHeartbeat
			})
			m.expectRestarts()
			return persistSarama{m, hb}
		})
	})
}

// groupView is the group as DescribeGroups (classic) or
// ConsumerGroupDescribe (kip848) shows it: its state, its member ids and,
// for a consumer group, its group epoch (0 for a classic group, whose
// generation DescribeGroups does not show).
func groupView(t *testing.T, adm *kadm.Client, group string, kip848 bool) (state string, members map[string]bool, epoch int32) {
	t.Helper()
	members = map[string]bool{}
	if kip848 {
		ds, err := adm.DescribeConsumerGroups(testCtx(t), group)
		if err != nil {
			t.Fatalf("DescribeConsumerGroups %s: %v", group, err)
		}
		d, ok := ds[group]
		if !ok || d.Err != nil {
			t.Fatalf("DescribeConsumerGroups %s: %+v", group, d)
		}
		for _, m := range d.Members {
			members[m.MemberID] = true
		}
		return d.State, members, d.Epoch
	}
	ds, err := adm.DescribeGroups(testCtx(t), group)
	if err != nil {
		t.Fatalf("DescribeGroups %s: %v", group, err)
	}
	d, ok := ds[group]
	if !ok || d.Err != nil {
		t.Fatalf("DescribeGroups %s: %+v", group, d)
	}
	for _, m := range d.Members {
		members[m.MemberID] = true
	}
	return d.State, members, 0
}

// TestGroupPersistKIP848Kgo: kgo members of a consumer group (KIP-848,
// the broker's uniform assignor) keep their member ids, member epochs and
// partitions across restarts, heartbeating on with their epochs.
func TestGroupPersistKIP848Kgo(t *testing.T) {
	t.Parallel()
	props := maps.Clone(kip848Props)
	props["group.consumer.heartbeat.interval.ms"] = fmt.Sprint(persistHeartbeat.Milliseconds())
	eachRestartable(t, groupOpts(props), false, func(t *testing.T, b restartable) {
		runGroupPersistScenario(t, b, true, func(t *testing.T, addr, group, topic, name string, tally *groupTally) persistMember {
			return startPersistKgo(t, addr, group, topic, name, tally, kip848Kgo()...)
		})
	})
}
