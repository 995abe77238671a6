package integration

// Scale of connections and groups (issue 15, item 6): many idle
// connections cost the broker a bounded amount of memory each, and a
// consumer group of many members settles in bounded time with the
// classic and the consumer (KIP-848) protocol. The CI defaults are small;
// KBROKER_IDLE_CONNECTIONS and KBROKER_GROUP_MEMBERS raise them (10,000
// and 200 were measured by hand: docs/BENCHMARKS.md, Scale).

import (
	"bufio"
	"fmt"
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kbroker/kbroker/internal/testenv"
)

// TestScaleIdleConnections opens KBROKER_IDLE_CONNECTIONS connections
// (default 1,000) to the binary, each after one ApiVersions exchange (so
// that the broker has set it up completely), and leaves them idle. The
// broker's anonymous memory per idle connection must stay under 64 KiB
// (eight times that under -race, which multiplies what goroutines cost),
// and every connection must still answer at the end.
func TestScaleIdleConnections(t *testing.T) {
	t.Parallel()
	needProc(t)
	conns := testenv.Count(t, "KBROKER_IDLE_CONNECTIONS", 1000)
	needFDs(t, uint64(conns)+512)
	b := startBinary(t)
	pid := b.cmd.Process.Pid
	before, err := readProcMem(pid)
	if err != nil {
		t.Fatal(err)
	}
	began := time.Now()
	ncs := make([]net.Conn, conns)
	brs := make([]*bufio.Reader, conns)
	defer func() {
		for _, nc := range ncs {
			if nc != nil {
				nc.Close()
			}
		}
	}()
	var failed atomic.Int64
	var firstErr atomic.Pointer[error]
	var wg sync.WaitGroup
	sem := make(chan struct{}, 64)
	for i := range ncs {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			nc, err := net.DialTimeout("tcp", b.Addr(), 10*time.Second)
			if err == nil {
				ncs[i], brs[i] = nc, bufio.NewReaderSize(nc, 512)
				err = apiVersionsRoundTrip(nc, brs[i], 0)
			}
			if err != nil {
				failed.Add(1)
				firstErr.CompareAndSwap(nil, &err)
			}
		}()
	}
	wg.Wait()
	if n := failed.Load(); n > 0 {
		t.Fatalf("%d of %d connections failed, the first: %v", n, conns, *firstErr.Load())
	}
	connected := time.Since(began)
	after, err := readProcMem(pid)
	if err != nil {
		t.Fatal(err)
	}
	perConn := (after.Anon - before.Anon) / int64(conns)
	limit := int64(64 << 10)
	if raceEnabled {
		// The race detector's shadow memory and its per-goroutine state
		// multiply a connection's cost: 273 KiB measured.
		limit *= 8
	}
	t.Logf("%d idle connections in %v: broker anon memory %s -> %s, %.1f KiB per connection (limit %d KiB); RSS %s -> %s",
		conns, connected.Round(time.Millisecond), fmtMiB(before.Anon), fmtMiB(after.Anon), float64(perConn)/1024, limit>>10,
		fmtMiB(before.RSS), fmtMiB(after.RSS))
	if perConn > limit {
		t.Errorf("an idle connection costs the broker %d bytes of anonymous memory, above %d", perConn, limit)
	}
	// Every connection still answers.
	for i, nc := range ncs {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			if err := apiVersionsRoundTrip(nc, brs[i], 1); err != nil {
				failed.Add(1)
				firstErr.CompareAndSwap(nil, &err)
			}
		}()
	}
	wg.Wait()
	if n := failed.Load(); n > 0 {
		t.Fatalf("%d of %d idle connections did not answer again, the first: %v", n, conns, *firstErr.Load())
	}
}

// TestScaleGroupMembers starts KBROKER_GROUP_MEMBERS kgo members (default
// 20) of one group at once, in this process, on a topic with as many
// partitions, with the classic protocol (cooperative-sticky, assigned by
// the leader) and the consumer protocol (KIP-848, assigned by the
// broker). The group must settle: every member owns exactly one partition,
// within manyMembersWait; the time it took is logged.
func TestScaleGroupMembers(t *testing.T) {
	t.Parallel()
	members := testenv.Count(t, "KBROKER_GROUP_MEMBERS", 20)
	for _, proto := range []string{"classic", "consumer"} {
		t.Run(proto, func(t *testing.T) {
			t.Parallel()
			props := groupBrokerProps
			var extra []kgo.Opt
			if proto == "consumer" {
				props = kip848Props
				extra = kip848Kgo()
			}
			needFDs(t, uint64(members)*4+512)
			b := startInProcess(t, groupOpts(props).edit)
			addr := b.Addr()
			topic, group := topicName(t), groupName(t)
			createGroupTopic(t, newAdmin(t, addr), topic, int32(members))
			tally := newGroupTally()
			began := time.Now()
			ms := make([]*kgoMember, members)
			names := make([]string, members)
			for i := range ms {
				names[i] = fmt.Sprintf("m%03d", i)
				ms[i] = startKgoMember(t, addr, group, topic, names[i], tally, extra...)
			}
			started := time.Since(began)
			deadline := time.Now().Add(manyMembersWait)
			tick := time.NewTicker(50 * time.Millisecond)
			defer tick.Stop()
			for {
				ps := make([][]int32, members)
				for i, m := range ms {
					ps[i] = m.assign.partitions()
				}
				if balancedSplit(int32(members), ps...) {
					break
				}
				if time.Now().After(deadline) {
					owned := 0
					for _, p := range ps {
						owned += len(p)
					}
					t.Fatalf("%d members did not settle within %v: %d partitions owned", members, manyMembersWait, owned)
				}
				<-tick.C
			}
			t.Logf("%s protocol: %d members started in %v, settled (one partition each) %v after the first started",
				proto, members, started.Round(time.Millisecond), time.Since(began).Round(time.Millisecond))
		})
	}
}

// manyMembersWait bounds how long TestScaleGroupMembers waits for its
// group to settle: generous, for 200 members under -race on a loaded
// machine.
const manyMembersWait = 3 * time.Minute
