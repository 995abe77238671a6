package main

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"strconv"
	"sync"
	"time"
)

// memStatus is a process's resident memory in bytes, from the Vm* and
// Rss* lines of /proc/<pid>/status.
type memStatus struct {
	// peak is VmHWM: the most the process has had resident since it
	// started, or since its peak was last reset (resetPeakRSS).
	peak int64
	// rss is VmRSS, now: anon + file + shmem.
	rss int64
	// anon is RssAnon: heap and other private memory (the Go heap; the
	// JVM's heap, code cache and metaspace).
	anon int64
	// file is RssFile: pages of mapped files that are resident. For
	// kbroker these are the commit-log and consume-queue mappings, page
	// cache that the kernel reclaims under pressure like any other; a
	// broker that reads and writes its files with read(2) and write(2)
	// (Kafka's log segments) uses the same page cache without it counting
	// in its RSS.
	file int64
}

// readMemStatus reads pid's memory figures.
func readMemStatus(pid int) (memStatus, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return memStatus{}, err
	}
	return parseMemStatus(b)
}

// parseMemStatus reads the contents of a /proc/<pid>/status file. VmHWM
// and VmRSS are required; RssAnon and RssFile (Linux 4.5 and later) are
// left at 0 when missing.
func parseMemStatus(b []byte) (memStatus, error) {
	var m memStatus
	var haveHWM, haveRSS bool
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		name, rest, ok := bytes.Cut(sc.Bytes(), []byte(":"))
		if !ok {
			continue
		}
		var dst *int64
		switch string(name) {
		case "VmHWM":
			dst, haveHWM = &m.peak, true
		case "VmRSS":
			dst, haveRSS = &m.rss, true
		case "RssAnon":
			dst = &m.anon
		case "RssFile":
			dst = &m.file
		default:
			continue
		}
		f := bytes.Fields(rest)
		if len(f) != 2 || string(f[1]) != "kB" {
			return memStatus{}, fmt.Errorf("unreadable /proc status line %q", sc.Bytes())
		}
		kb, err := strconv.ParseInt(string(f[0]), 10, 64)
		if err != nil || kb < 0 {
			return memStatus{}, fmt.Errorf("unreadable /proc status line %q", sc.Bytes())
		}
		*dst = kb << 10
	}
	if !haveHWM || !haveRSS {
		return memStatus{}, fmt.Errorf("no VmHWM or VmRSS in /proc status")
	}
	return m, nil
}

// resetPeakRSS sets pid's VmHWM back to its current VmRSS (writing 5 to
// /proc/<pid>/clear_refs, Linux 4.0 and later), so that the peak read
// after a case is that case's. It needs to own the process, which kbench
// does for the brokers it starts.
func resetPeakRSS(pid int) error {
	return os.WriteFile(fmt.Sprintf("/proc/%d/clear_refs", pid), []byte("5"), 0)
}

// rssInterval is how often rssSampler reads a broker's resident memory.
const rssInterval = 100 * time.Millisecond

// rssSampler follows a broker's resident memory through a case: the peak
// (VmHWM, reset at the start) and the median of VmRSS and RssAnon read
// every rssInterval, which is what the broker holds while it works
// ("steady"), as opposed to the peak of a moment.
type rssSampler struct {
	pid        int
	peakReset  bool
	stop, done chan struct{}
	mu         sync.Mutex
	rss, anon  []float64
}

// startRSS starts sampling pid (no-op for pid 0: a broker whose process
// is unknown).
func startRSS(pid int) *rssSampler {
	s := &rssSampler{pid: pid, stop: make(chan struct{}), done: make(chan struct{})}
	if pid == 0 {
		close(s.done)
		return s
	}
	s.peakReset = resetPeakRSS(pid) == nil
	go func() {
		defer close(s.done)
		t := time.NewTicker(rssInterval)
		defer t.Stop()
		for {
			s.sample()
			select {
			case <-s.stop:
				return
			case <-t.C:
			}
		}
	}()
	return s
}

func (s *rssSampler) sample() {
	m, err := readMemStatus(s.pid)
	if err != nil {
		return
	}
	s.mu.Lock()
	s.rss = append(s.rss, float64(m.rss)/1e6)
	s.anon = append(s.anon, float64(m.anon)/1e6)
	s.mu.Unlock()
}

// finish stops sampling and adds to out, in MB: rss_peak_mb (the case's
// peak; since the process started if the peak could not be reset),
// rss_mb and rss_anon_mb (medians over the case). A case shorter than
// rssInterval has one sample, taken at its start, and one at its end.
func (s *rssSampler) finish(out metrics) {
	if s.pid == 0 {
		return
	}
	close(s.stop)
	<-s.done
	s.sample()
	m, err := readMemStatus(s.pid)
	if err != nil {
		return
	}
	out["rss_peak_mb"] = float64(m.peak) / 1e6
	s.mu.Lock()
	defer s.mu.Unlock()
	out["rss_mb"] = median(s.rss)
	out["rss_anon_mb"] = median(s.anon)
}
