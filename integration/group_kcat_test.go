package integration

// Consumer groups with kcat -G (librdkafka's balanced KafkaConsumer, the
// system's librdkafka): automatic offset store and commit (every 200 ms,
// on a rebalance's revoke and on close). kcat prints each record's
// partition and offset; it reports rebalances on stderr ("assigned: t [0],
// t [2]"), which gives the member's partitions. Skipped when kcat is not on
// PATH (outside CI).

import (
	"bufio"
	"fmt"
	"io"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// kcatGroupArgs are the arguments of a kcat group member: librdkafka
// settings with this file's short group timing. Without -o, kcat starts
// each assigned partition at its committed offset (-o would override
// the commits), or at the earliest offset when there is none.
func kcatGroupArgs(addr, group, name string) []string {
	return []string{"-b", addr, "-G", group, "-u", "-f", "%p %o\n",
		"-X", "client.id=" + name,
		"-X", "auto.offset.reset=earliest",
		"-X", "partition.assignment.strategy=range",
		"-X", fmt.Sprint("session.timeout.ms=", groupSessionTimeout.Milliseconds()),
		"-X", fmt.Sprint("heartbeat.interval.ms=", groupHeartbeat.Milliseconds()),
		"-X", "max.poll.interval.ms=10000", // librdkafka's rebalance timeout
		"-X", "auto.commit.interval.ms=200",
		"-X", fmt.Sprint("fetch.wait.max.ms=", groupFetchWait.Milliseconds()),
		"-X", "socket.timeout.ms=5000",
		"-X", "reconnect.backoff.ms=50", "-X", "reconnect.backoff.max.ms=500",
	}
}

// kcatMember is a kcat -G process.
type kcatMember struct {
	name   string
	cmd    *exec.Cmd
	assign *assignment
	log    *memberLog
	done   chan struct{} // closed when the process exited and its output was read
	err    error         // from Wait, once done is closed
	closed bool
}

// kcatRebalance is kcat's stderr line about a rebalance.
var kcatRebalance = regexp.MustCompile(`rebalanced \(memberid [^)]*\): (assigned|revoked): (.*)$`)

// kcatPartition is a partition in such a line: "topic [3]".
var kcatPartition = regexp.MustCompile(`(\S+) \[(\d+)\]`)

// startKcatMember starts kcat as member name of group on topic, with the
// extra arguments before the topic; the records it prints go to tally.
// The test's cleanup stops it.
func startKcatMember(t *testing.T, addr, group, topic, name string, tally *groupTally, extra ...string) *kcatMember {
	t.Helper()
	m := &kcatMember{name: name, assign: newAssignment(), log: newMemberLog(t, "kcat member "+name), done: make(chan struct{})}
	args := append(kcatGroupArgs(addr, group, name), extra...)
	if groupDebug(t) {
		args = append(args, "-d", "cgrp")
	}
	args = append(args, topic)
	m.cmd = exec.Command(kcatPath(t), args...)
	dieWithParent(m.cmd)
	stdout, err := m.cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	stderr, err := m.cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := m.cmd.Start(); err != nil {
		t.Fatalf("start kcat: %v", err)
	}
	m.log.Printf("test: kcat %s", strings.Join(args, " "))
	var readers sync.WaitGroup
	readers.Add(2)
	go func() {
		defer readers.Done()
		m.readRecords(stdout, tally)
	}()
	go func() {
		defer readers.Done()
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			line := sc.Text()
			m.log.Printf("stderr: %s", line)
			if sm := kcatRebalance.FindStringSubmatch(line); sm != nil {
				var ps []int32
				for _, pm := range kcatPartition.FindAllStringSubmatch(sm[2], -1) {
					if pm[1] == topic {
						p, _ := strconv.Atoi(pm[2])
						ps = append(ps, int32(p))
					}
				}
				if sm[1] == "assigned" {
					m.assign.set(ps)
				} else {
					m.assign.set(nil)
				}
			}
		}
	}()
	go func() {
		readers.Wait()
		m.err = m.cmd.Wait()
		m.log.Printf("test: kcat exited: %v", m.err)
		close(m.done)
	}()
	t.Cleanup(func() { m.close(t) })
	return m
}

// readRecords reads "partition offset" lines into tally.
func (m *kcatMember) readRecords(r io.Reader, tally *groupTally) {
	last := map[int32]int64{}
	defer func() { m.log.Printf("test: last offsets printed by partition: %v", last) }()
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		var (
			p int32
			o int64
		)
		if _, err := fmt.Sscanf(sc.Text(), "%d %d", &p, &o); err != nil {
			m.log.Printf("test: unexpected output line %q: %v", sc.Text(), err)
			continue
		}
		tally.add(m.name, p, o)
		last[p] = o
	}
}

func (m *kcatMember) partitions(*testing.T) []int32 { return m.assign.partitions() }

// close stops kcat with SIGTERM, on which it closes its consumer
// (committing and leaving the group) and exits; it must exit with status
// 0 and print no error.
func (m *kcatMember) close(t *testing.T) {
	t.Helper()
	if m.closed {
		return
	}
	m.closed = true
	select {
	case <-m.done:
		t.Errorf("kcat member %s exited on its own: %v", m.name, m.err)
		return
	default:
	}
	if err := m.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Errorf("kcat member %s: SIGTERM: %v", m.name, err)
	}
	m.wait(t)
}

// wait waits for kcat to exit, and fails the test unless it exited with
// status 0 without printing an error.
func (m *kcatMember) wait(t *testing.T) {
	t.Helper()
	select {
	case <-m.done:
	case <-time.After(groupWait):
		t.Errorf("kcat member %s still running %v after SIGTERM: killing it", m.name, groupWait)
		m.cmd.Process.Kill()
		<-m.done
	}
	if m.err != nil {
		t.Errorf("kcat member %s: %v", m.name, m.err)
	}
	if s := m.log.buf.String(); strings.Contains(s, "ERROR") {
		t.Errorf("kcat member %s printed errors", m.name)
	}
}

// TestGroupKcat: runGroupScenario with kcat -G members (range): two
// members split 4 partitions, one leaves, every record exactly once.
// kcat may skip one record when it stops (SIGTERM): a message librdkafka
// returned to it, and so stored for the commit on close, is not printed
// once kcat is told to stop. So the producer pauses and the group drains
// before a member leaves. Then
// `kcat -G -e` in the same group, after more records were produced, reads
// exactly those (it resumes at the commits) and exits at their end,
// committing them.
func TestGroupKcat(t *testing.T) {
	t.Parallel()
	kcatPath(t)
	eachBroker(t, groupOpts(nil), func(t *testing.T, b testBroker) {
		addr := b.Addr()
		topic, group := topicName(t), groupName(t)
		runGroupScenario(t, addr, topic, group, scenarioOpts{quiesceBeforeLeave: true}, func(t *testing.T, name string, tally *groupTally) groupMember {
			return startKcatMember(t, addr, group, topic, name, tally)
		})

		adm := newAdmin(t, addr)
		before := endOffsets(t, adm, topic)
		produceGroupRecords(t, addr, topic, 4, 40, "after")
		ends := endOffsets(t, adm, topic)
		tally := newGroupTally()
		e := startKcatMember(t, addr, group, topic, "e", tally, "-e", "-X", "enable.partition.eof=true")
		e.closed = true // it exits by itself
		e.wait(t)
		tally.mu.Lock()
		for p, os := range tally.seen {
			for o, n := range os {
				if o < before[p] || o >= ends[p] || n != 1 {
					t.Errorf("kcat -G -e: partition %d offset %d printed %d times; want each of [%d, %d) once", p, o, n, before[p], ends[p])
				}
			}
		}
		tally.mu.Unlock()
		if got := tally.total(); got != 40 {
			t.Errorf("kcat -G -e printed %d records, want the 40 produced after the group's commits", got)
		}
		checkCommitted(t, adm, group, topic, ends)
	})
}
