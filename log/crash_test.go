package log

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/kbroker/kbroker/internal/testenv"
)

// The crash test re-executes the test binary as a child that appends in
// sync mode and reports each entry once it is durable; the parent kills it
// with SIGKILL at a random moment, recovers the log, and checks that every
// reported entry is intact and the log ends on an entry boundary.
//
// KBROKER_STORE_KILLS sets the number of kills (default 20); run more by
// hand, e.g. KBROKER_STORE_KILLS=500 go test -run TestCrashKill9 ./log/.
const (
	crashDirEnv = "KBROKER_LOG_CRASH_CHILD_DIR"
	crashRunEnv = "KBROKER_LOG_CRASH_CHILD_RUN"
)

// crashConfig is the log's configuration in run; runs alternate between
// the two append modes, so each recovers what the other wrote.
func crashConfig(dir string, run int) Config {
	return Config{Dir: dir, FileSize: 128 << 10, KeySize: 20, SyncFlush: true, WarmFlushPages: 8, Append: AppendMode(run % 2)}
}

// crashKey identifies an entry by run, writer and sequence.
func crashKey(run, w, seq int) []byte {
	k := make([]byte, 20)
	binary.BigEndian.PutUint32(k[0:], uint32(run))
	binary.BigEndian.PutUint32(k[4:], uint32(w))
	binary.BigEndian.PutUint64(k[8:], uint64(seq))
	return k
}

func crashPayload(k []byte) []byte {
	n := int(binary.BigEndian.Uint64(k[8:])*131+uint64(binary.BigEndian.Uint32(k[4:]))*17) % 6000
	return payload(int(k[19])+int(k[3])*7, n+1)
}

// TestCrashChild is the child side; it does nothing unless run by
// TestCrashKill9.
func TestCrashChild(t *testing.T) {
	dir := os.Getenv(crashDirEnv)
	if dir == "" {
		t.Skip("child of TestCrashKill9 only")
	}
	run, _ := strconv.Atoi(os.Getenv(crashRunEnv))
	l, _, err := Open(crashConfig(dir, run), 0, nil)
	if err != nil {
		fmt.Printf("OPENFAIL %v\n", err)
		os.Exit(3)
	}
	var outMu sync.Mutex
	fmt.Println("READY")
	var wg sync.WaitGroup
	for w := 0; w < 4; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			for seq := 0; ; seq++ {
				k := crashKey(run, w, seq)
				r, err := l.Append(k, crashPayload(k))
				if err != nil {
					fmt.Printf("APPENDFAIL %v\n", err)
					os.Exit(4)
				}
				// Concurrent flushes serialise on the queue's flush lock, so
				// one msync often covers several writers (a tiny group commit).
				if l.FlushedPosition() < r.End() {
					if _, err := l.Flush(0); err != nil {
						fmt.Printf("FLUSHFAIL %v\n", err)
						os.Exit(5)
					}
				}
				if l.FlushedPosition() < r.End() {
					fmt.Printf("NOTDURABLE %d < %d\n", l.FlushedPosition(), r.End())
					os.Exit(6)
				}
				outMu.Lock()
				fmt.Printf("ACK %d %d %d %d\n", run, w, seq, r.Pos)
				outMu.Unlock()
			}
		}(w)
	}
	wg.Wait()
}

type ack struct {
	key []byte
	pos int64
}

func TestCrashKill9(t *testing.T) {
	if os.Getenv(crashDirEnv) != "" {
		t.Skip("in the child")
	}
	kills := testenv.Count(t, "KBROKER_STORE_KILLS", 20)
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	rng := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 7))
	var acked []ack
	for run := 0; run < kills; run++ {
		cmd := exec.Command(exe, "-test.run=^TestCrashChild$", "-test.count=1")
		cmd.Env = append(os.Environ(), crashDirEnv+"="+dir, crashRunEnv+"="+strconv.Itoa(run))
		out, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		lines := make(chan string, 1024)
		go readLines(out, lines)
		// Wait for the child to be running, then let it write for a while.
		select {
		case l, ok := <-lines:
			if !ok || l != "READY" {
				cmd.Process.Kill()
				cmd.Wait()
				t.Fatalf("run %d: child said %q, stderr: %s", run, l, stderr.String())
			}
		case <-time.After(60 * time.Second):
			cmd.Process.Kill()
			cmd.Wait()
			t.Fatalf("run %d: child never got ready", run)
		}
		time.Sleep(time.Duration(5+rng.IntN(120)) * time.Millisecond)
		cmd.Process.Kill() // SIGKILL
		for l := range lines {
			f := strings.Fields(l)
			if len(f) == 0 {
				continue
			}
			if f[0] != "ACK" || len(f) != 5 {
				t.Fatalf("run %d: child failed: %s", run, l)
			}
			r, _ := strconv.Atoi(f[1])
			w, _ := strconv.Atoi(f[2])
			seq, _ := strconv.Atoi(f[3])
			pos, _ := strconv.ParseInt(f[4], 10, 64)
			acked = append(acked, ack{key: crashKey(r, w, seq), pos: pos})
		}
		cmd.Wait()
		verifyCrashLog(t, dir, acked, run, rng.IntN(2) == 0)
	}
	t.Logf("%d kills, %d acknowledged entries verified", kills, len(acked))
}

// readLines sends each complete line; a line cut by the kill is dropped.
func readLines(r io.Reader, out chan<- string) {
	defer close(out)
	br := bufio.NewReader(r)
	for {
		l, err := br.ReadString('\n')
		if err != nil {
			return
		}
		out <- strings.TrimSuffix(l, "\n")
	}
}

// verifyCrashLog recovers the log and checks every acknowledged entry. It
// leaves the log closed cleanly or, with crashAgain, abandoned as by a crash
// (so the next child recovers too).
func verifyCrashLog(t *testing.T, dir string, acked []ack, run int, crashAgain bool) {
	t.Helper()
	l, rep, err := Open(crashConfig(dir, 0), 0, nil)
	if err != nil {
		t.Fatalf("run %d: recovery failed: %v", run, err)
	}
	if rep.Corruption != nil {
		t.Fatalf("run %d: corruption: %v", run, rep.Corruption)
	}
	byPos := map[int64][]byte{}
	var lastEnd int64
	err = l.Iterate(l.MinOffset(), func(e Entry) error {
		if e.Pos < lastEnd {
			return fmt.Errorf("entry at %d overlaps the previous one ending at %d", e.Pos, lastEnd)
		}
		if !bytes.Equal(e.Payload, crashPayload(e.Key)) {
			return fmt.Errorf("entry at %d: payload does not match its key", e.Pos)
		}
		byPos[e.Pos] = bytes.Clone(e.Key)
		lastEnd = e.End()
		return nil
	})
	if err != nil {
		t.Fatalf("run %d: %v", run, err)
	}
	if lastEnd != rep.End && rep.End%l.FileSize() != 0 {
		t.Fatalf("run %d: log ends at %d, last entry at %d", run, rep.End, lastEnd)
	}
	for _, a := range acked {
		k, ok := byPos[a.pos]
		if !ok || !bytes.Equal(k, a.key) {
			t.Fatalf("run %d: acknowledged entry %x at %d lost", run, a.key, a.pos)
		}
	}
	if crashAgain {
		crash(l)
	} else if err := l.Close(); err != nil {
		t.Fatalf("run %d: close: %v", run, err)
	}
}
