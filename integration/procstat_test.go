package integration

// Memory figures of a broker process from /proc/<pid>/status (Linux), for
// the hostile-input and resource-limit tests: a sampler keeps the peak of
// the anonymous resident memory (the heap, stacks and buffers: what a
// memory blow-up grows; file-backed pages of the mapped commit log are
// bounded by the data directory's size) next to the kernel's own peak of
// the whole resident set, VmHWM.

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// procMem is one reading of /proc/<pid>/status, in bytes.
type procMem struct {
	RSS, HWM, Anon, File int64
}

func (m procMem) String() string {
	return fmt.Sprintf("VmRSS %s (anon %s, file %s), VmHWM %s", fmtMiB(m.RSS), fmtMiB(m.Anon), fmtMiB(m.File), fmtMiB(m.HWM))
}

// fmtMiB formats a byte count in MiB.
func fmtMiB(n int64) string { return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20)) }

// readProcMem reads the memory lines of /proc/<pid>/status.
func readProcMem(pid int) (procMem, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return procMem{}, err
	}
	var m procMem
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), ":")
		if !ok {
			continue
		}
		f := strings.Fields(v)
		if len(f) != 2 || f[1] != "kB" {
			continue
		}
		n, err := strconv.ParseInt(f[0], 10, 64)
		if err != nil {
			continue
		}
		switch k {
		case "VmRSS":
			m.RSS = n << 10
		case "VmHWM":
			m.HWM = n << 10
		case "RssAnon":
			m.Anon = n << 10
		case "RssFile":
			m.File = n << 10
		}
	}
	return m, nil
}

// needProc skips the test where /proc/<pid>/status is not available.
func needProc(t *testing.T) {
	t.Helper()
	if runtime.GOOS != "linux" {
		t.Skip("reads /proc/<pid>/status: Linux only")
	}
	if _, err := readProcMem(os.Getpid()); err != nil {
		t.Skipf("cannot read /proc/self/status: %v", err)
	}
}

// memSampler samples a process's memory every 50 ms and keeps the peaks.
type memSampler struct {
	pid  int
	stop chan struct{}
	done chan struct{}

	mu       sync.Mutex
	peakAnon int64
	peakRSS  int64
	last     procMem
	samples  int
}

func startMemSampler(pid int) *memSampler {
	s := &memSampler{pid: pid, stop: make(chan struct{}), done: make(chan struct{})}
	s.sample()
	go func() {
		defer close(s.done)
		tick := time.NewTicker(50 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-s.stop:
				return
			case <-tick.C:
				s.sample()
			}
		}
	}()
	return s
}

func (s *memSampler) sample() {
	m, err := readProcMem(s.pid)
	if err != nil {
		return // the process is gone; its death is reported elsewhere
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.last = m
	s.samples++
	s.peakAnon = max(s.peakAnon, m.Anon)
	s.peakRSS = max(s.peakRSS, m.RSS)
}

// finish stops sampling and returns the last reading (its HWM is the
// kernel's peak of the whole run) and the sampled peak of RssAnon.
func (s *memSampler) finish() (last procMem, peakAnon int64) {
	close(s.stop)
	<-s.done
	s.sample()
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.last, s.peakAnon
}

// dirBytes is the allocated size of the files under dir.
func dirBytes(dir string) int64 {
	var n int64
	_ = walkFileSizes(dir, func(size int64) { n += size })
	return n
}

func walkFileSizes(dir string, fn func(int64)) error {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return err
	}
	for _, e := range ents {
		p := dir + "/" + e.Name()
		if e.IsDir() {
			walkFileSizes(p, fn)
			continue
		}
		if info, err := e.Info(); err == nil {
			fn(info.Size())
		}
	}
	return nil
}

// brokerLogProblems returns the lines of a broker's log that show a crash
// or a bug: a panic, a fatal runtime error, a data race, a memory fault,
// or an error-level log line.
func brokerLogProblems(log string) []string {
	var out []string
	for _, line := range strings.Split(log, "\n") {
		switch {
		case strings.Contains(line, "panic"),
			strings.Contains(line, "fatal error"),
			strings.Contains(line, "DATA RACE"),
			strings.Contains(line, "SIGBUS"),
			strings.Contains(line, "SIGSEGV"),
			strings.Contains(line, "\tERROR\t"),
			strings.Contains(line, `"level":"error"`):
			out = append(out, line)
		}
	}
	return out
}
