package testenv

import "go.uber.org/goleak"

// LeakOptions are the goleak options of every package's TestMain: the
// goroutines that live as long as the process, by design, are not leaks.
// log's lowPriorityLoop is the one thread at nice 19 that fills commit
// logs' page cache and warms their files; it starts with the package and
// never returns, so every package that imports log has it.
func LeakOptions() []goleak.Option {
	return []goleak.Option{goleak.IgnoreTopFunction("github.com/kbroker/kbroker/log.lowPriorityLoop")}
}
