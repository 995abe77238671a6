package log

import (
	"runtime"

	"golang.org/x/sys/unix"
)

// lowPriority is the process's one thread at nice 19, which runs the work
// done ahead of need for every commit log: the filler's system calls and
// the warm-up of mapped appends. On a busy machine that work should take
// the CPU only when the connections and the clients beside the broker
// leave it idle (with the filler at normal priority, one kgo producer of
// 100 B records on 2 cores ran at 0.73x floor-write's rate).
//
// It starts with the package, outside any testing/synctest bubble: a
// goroutine started inside one that never ends deadlocks the bubble, and
// the first fill or warm-up may come from a test's bubble. So every
// channel the thread touches is made here too (the runtime stops a
// goroutine that uses a bubble's channel from outside the bubble), and
// the work it runs must touch none of a caller's channels.
var lowPriority = startLowPriorityThread()

// lowPriorityThread hands functions to the thread one caller at a time.
type lowPriorityThread struct {
	turn chan struct{} // holds a token while a caller's function is handed over and runs
	work chan func()
	done chan struct{}
}

func startLowPriorityThread() *lowPriorityThread {
	t := &lowPriorityThread{turn: make(chan struct{}, 1), work: make(chan func()), done: make(chan struct{})}
	go lowPriorityLoop(t.work, t.done)
	return t
}

// lowPriorityLoop runs the functions sent on work, on a thread locked to
// it at nice 19, and never returns. A goroutine that exits locked to a
// thread makes the runtime end the thread (it cannot give the thread back
// at nice 19, and an unprivileged thread cannot raise its priority again),
// and a child process that a program embedding the broker started from
// that thread with a parent-death signal (os/exec with Pdeathsig) is
// killed with it. With one such thread per commit log, ended when the log
// closed, one of the integration tests' kbroker processes was.
func lowPriorityLoop(work <-chan func(), done chan<- struct{}) {
	runtime.LockOSThread()
	_ = unix.Setpriority(unix.PRIO_PROCESS, unix.Gettid(), 19)
	for fn := range work {
		fn()
		done <- struct{}{}
	}
}

// onLowPriorityThread runs fn on the low-priority thread and returns true
// once it has run, or false without running it if stop closes first: the
// thread is shared, and at nice 19 on a busy machine it may take a while
// to come to this caller, which a closing log should not wait for.
func onLowPriorityThread(stop <-chan struct{}, fn func()) bool {
	select {
	case lowPriority.turn <- struct{}{}:
	case <-stop:
		return false
	}
	lowPriority.work <- fn
	<-lowPriority.done
	<-lowPriority.turn
	return true
}
