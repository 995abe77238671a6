package main

import (
	"os"
	"testing"
)

func TestParseMemStatus(t *testing.T) {
	status := []byte("Name:\tkbroker\nVmPeak:\t 2000000 kB\nVmHWM:\t   81920 kB\nVmRSS:\t   40960 kB\n" +
		"RssAnon:\t   30720 kB\nRssFile:\t   10240 kB\nRssShmem:\t       0 kB\nThreads:\t9\n")
	m, err := parseMemStatus(status)
	if err != nil {
		t.Fatal(err)
	}
	want := memStatus{peak: 80 << 20, rss: 40 << 20, anon: 30 << 20, file: 10 << 20}
	if m != want {
		t.Errorf("got %+v, want %+v", m, want)
	}
	for _, bad := range []string{
		"",
		"VmRSS:\t 1 kB\n",                  // no VmHWM
		"VmHWM:\t 1 kB\nVmRSS:\t x kB\n",   // not a number
		"VmHWM:\t 1 kB\nVmRSS:\t 1 MB\n",   // unit
		"VmHWM:\t 1 kB\nVmRSS:\t -1 kB\n",  // negative
		"VmHWM:\t 1 kB\nVmRSS:\t 1 2 kB\n", // fields
	} {
		if _, err := parseMemStatus([]byte(bad)); err == nil {
			t.Errorf("parseMemStatus(%q): no error", bad)
		}
	}
}

// TestRSSOfSelf samples this process: its peak cannot be below its
// median, and a 64 MiB slice touched during the window shows in the peak.
func TestRSSOfSelf(t *testing.T) {
	if _, err := readMemStatus(os.Getpid()); err != nil {
		t.Skipf("no /proc here: %v", err)
	}
	s := startRSS(os.Getpid())
	buf := make([]byte, 64<<20)
	for i := range len(buf) / 4096 {
		buf[i*4096] = 1
	}
	out := metrics{}
	s.finish(out)
	if out["rss_peak_mb"] < out["rss_mb"] || out["rss_mb"] < out["rss_anon_mb"] || out["rss_anon_mb"] <= 0 {
		t.Errorf("peak %.1f MB, median %.1f MB, anon %.1f MB", out["rss_peak_mb"], out["rss_mb"], out["rss_anon_mb"])
	}
	if out["rss_peak_mb"] < 64 {
		t.Errorf("peak %.1f MB after touching 64 MiB", out["rss_peak_mb"])
	}
	buf[len(buf)-1] = 1 // keep buf alive until finish
	none := metrics{}
	startRSS(0).finish(none)
	if len(none) != 0 {
		t.Errorf("a broker without a process: %v", none)
	}
}
