package main

import (
	"os"
	"testing"
)

func TestParseStatCPU(t *testing.T) {
	// A command name with spaces and a parenthesis, as /proc shows it.
	stat := []byte("4242 (kb (serve) x) S 1 4242 4242 0 -1 4194560 1234 0 0 0 250 75 0 0 20 0 9 0 100 200000 300 18446744073709551615\n")
	got, err := parseStatCPU(stat)
	if err != nil {
		t.Fatal(err)
	}
	if want := 325 * clockTick; got != want {
		t.Errorf("utime+stime = %v, want %v", got, want)
	}
	for _, bad := range []string{"", "12 (x) S 1 2", "12 (x) S 1 2 3 4 5 6 7 8 9 10 ten 12"} {
		if _, err := parseStatCPU([]byte(bad)); err == nil {
			t.Errorf("parseStatCPU(%q): no error", bad)
		}
	}
}

func TestProcessCPUOfSelf(t *testing.T) {
	if _, err := processCPU(1 << 30); err == nil {
		t.Error("CPU of a process that does not exist: no error")
	}
	d, err := processCPU(os.Getpid())
	if err != nil {
		t.Skipf("no /proc here: %v", err)
	}
	if d < 0 {
		t.Errorf("own CPU %v", d)
	}
}
