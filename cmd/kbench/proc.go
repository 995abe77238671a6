package main

import (
	"bytes"
	"fmt"
	"os"
	"strconv"
	"syscall"
	"time"
)

// clockTick is the unit of utime and stime in /proc/<pid>/stat: USER_HZ,
// 100 on every Linux platform Go supports.
const clockTick = 10 * time.Millisecond

// processCPU is the user+system CPU time a process has used so far, all
// its threads together, from /proc/<pid>/stat.
func processCPU(pid int) (time.Duration, error) {
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, err
	}
	return parseStatCPU(stat)
}

// parseStatCPU reads utime and stime (fields 14 and 15) from the contents
// of a /proc/<pid>/stat file. The command name (field 2) is in
// parentheses and may hold spaces and parentheses of its own, so fields
// are counted from the last ')'.
func parseStatCPU(stat []byte) (time.Duration, error) {
	i := bytes.LastIndexByte(stat, ')')
	if i < 0 {
		return 0, fmt.Errorf("unreadable /proc stat %q", stat)
	}
	fields := bytes.Fields(stat[i+1:]) // field 3 (state) on
	if len(fields) < 13 {
		return 0, fmt.Errorf("unreadable /proc stat %q", stat)
	}
	utime, err1 := strconv.ParseInt(string(fields[11]), 10, 64)
	stime, err2 := strconv.ParseInt(string(fields[12]), 10, 64)
	if err1 != nil || err2 != nil {
		return 0, fmt.Errorf("unreadable /proc stat %q", stat)
	}
	return time.Duration(utime+stime) * clockTick, nil
}

// selfCPU is this process's user+system CPU time so far: the clients'
// share, since brokers run in child processes (which RUSAGE_SELF does not
// count).
func selfCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
