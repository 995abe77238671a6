package log

import (
	"errors"
	"fmt"
	"time"
)

// Config configures a CommitLog. The zero value of every field means its
// default, filled in by Open; DefaultConfig shows them.
type Config struct {
	// Dir is the data directory. The log keeps its files in Dir/commitlog,
	// its checkpoint in Dir/checkpoint, the abort marker in Dir/abort and the
	// directory lock in Dir/lock.
	Dir string
	// FileSize is the size of every commit-log file, a multiple of 4 KiB.
	// Default 4 MiB (the kbroker command sets 128 MiB; RocketMQ uses 1 GiB).
	FileSize int64
	// KeySize is the fixed length of the opaque key stored with each entry
	// (the broker stores topic id and partition: 20 bytes). Default 20.
	KeySize int
	// SyncFlush tells warm-up that the log runs in sync-flush mode, so it
	// flushes warmed pages every WarmFlushPages pages (RocketMQ's
	// flushLeastPagesWhenWarmMapedFile).
	SyncFlush bool
	// Append selects how entries reach a file: copied into the mapping
	// (AppendMapped, the default) or written with pwritev (AppendPwrite,
	// the broker's default; then there is nothing to warm, and Warm and
	// Mlock are ignored).
	Append AppendMode
	// Warm selects how new files are pre-faulted. Default WarmFault.
	Warm WarmMode
	// WarmFlushPages is the warm-up chunk in 4 KiB pages. Default 4096 (16 MiB).
	WarmFlushPages int
	// Mlock locks warmed files in memory until they are full and flushed.
	Mlock bool
	// HugePages maps commit-log files for transparent huge pages and has
	// the allocator fill the page cache of what it allocates with huge
	// folios ahead of the appends (pageCacheFiller), where the kernel
	// allows it. Only with pwritev appends and no pool buffer. Off by
	// default: it speeds up fetches and large appends, but a consumer at
	// the tail saw p99 stalls of 15-20 ms with it, from the readahead its
	// filled pages set off (docs/BENCHMARKS.md, "Huge pages for the commit
	// log").
	HugePages bool
	// PoolBuffers is the number of TransientStorePool buffers (each
	// FileSize bytes). 0 disables the pool; only async mode may use it.
	PoolBuffers int
	// PoolMlock mlocks the pool buffers, as RocketMQ does.
	PoolMlock bool
	// TruncateCorrupt lets recovery cut the log at an invalid entry even
	// when that entry lies below the durable position (data loss the
	// operator accepts); without it such an entry stops Open with a
	// *CorruptionError.
	TruncateCorrupt bool
	// AllocateAhead is the least the log keeps allocated on disk ahead of
	// its write position; under load the lead grows to AllocateHorizon of
	// writes, up to two files, and a file the lead reaches into is
	// allocated whole before it is written to (grow.go). Default 4 MiB,
	// at most FileSize.
	AllocateAhead int64
	// AllocateHorizon is how many seconds of writes, at the rate last
	// measured, the allocator keeps allocated ahead. Default 1 s.
	AllocateHorizon time.Duration
	// AllocateHook, when set, runs before each new file is allocated; an
	// error from it fails that allocation as if fallocate had. Tests use it
	// to simulate a full disk.
	AllocateHook func(path string, size int64) error
}

// DefaultConfig returns a Config with every default filled in, for Dir.
func DefaultConfig(dir string) Config {
	c := Config{Dir: dir}
	c.withDefaults()
	return c
}

func (c *Config) withDefaults() {
	if c.FileSize == 0 {
		c.FileSize = 4 << 20
	}
	if c.KeySize == 0 {
		c.KeySize = 20
	}
	if c.AllocateAhead == 0 {
		c.AllocateAhead = 4 << 20
	}
	c.AllocateAhead = min(alignUp(c.AllocateAhead, pageSize), c.FileSize)
	if c.AllocateHorizon == 0 {
		c.AllocateHorizon = time.Second
	}
	if c.WarmFlushPages == 0 {
		c.WarmFlushPages = 4096
	}
	if c.Append == AppendPwrite {
		// Nothing writes through the mapping: faulting its pages in
		// ahead would only add page-table work (and, in sync mode,
		// flush zeros to the disk).
		c.Warm, c.Mlock = WarmNone, false
	}
}

// hugePages reports whether commit-log files are mapped for huge pages and
// their page cache filled ahead: only when nothing writes through their
// mappings (pwritev appends, no transient store pool).
func (c *Config) hugePages() bool {
	return c.HugePages && c.Append == AppendPwrite && c.PoolBuffers == 0
}

// AppendMode says how entries are written into a commit-log file. Either
// way the bytes are in the page cache when Append returns (a killed
// process loses nothing), reads and sendfile see them at once, and the
// flush services make them durable with msync over the same range.
type AppendMode int

const (
	// AppendMapped copies each entry into the file's mapping (RocketMQ's
	// MappedByteBuffer put). An append costs no system call, so it suits
	// many small entries, but each fresh page costs a write fault (the
	// allocator's warm-up takes most of them ahead of the appender).
	AppendMapped AppendMode = iota
	// AppendPwrite writes each entry with one pwritev(2) at its position
	// (as RocketMQ's transient store pool commits through its
	// FileChannel): the kernel fills the page cache without page faults,
	// zeroing or page-table work, at a system call per append. For the
	// large batches Kafka producers send it is cheaper and far steadier
	// (docs/BENCHMARKS.md, "Mapped or written appends").
	AppendPwrite
)

// ParseAppendMode reads a mode as String spells it.
func ParseAppendMode(s string) (AppendMode, error) {
	for m := AppendMapped; m <= AppendPwrite; m++ {
		if m.String() == s {
			return m, nil
		}
	}
	return 0, fmt.Errorf("log: unknown append mode %q (mapped or pwrite)", s)
}

// String names the mode as the configuration spells it.
func (m AppendMode) String() string {
	switch m {
	case AppendMapped:
		return "mapped"
	case AppendPwrite:
		return "pwrite"
	}
	return fmt.Sprintf("AppendMode(%d)", int(m))
}

// Validate reports every problem with the configuration at once.
func (c *Config) Validate() error {
	var errs []error
	if c.Dir == "" {
		errs = append(errs, errors.New("log: Dir is empty"))
	}
	if c.FileSize < pageSize || c.FileSize%pageSize != 0 || c.FileSize > 1<<31-pageSize {
		errs = append(errs, fmt.Errorf("log: FileSize %d must be a multiple of %d between %d and 2 GiB", c.FileSize, pageSize, pageSize))
	}
	if c.KeySize < 0 || c.KeySize > 1024 {
		errs = append(errs, fmt.Errorf("log: KeySize %d out of range [0, 1024]", c.KeySize))
	}
	if c.WarmFlushPages < 0 {
		errs = append(errs, fmt.Errorf("log: WarmFlushPages %d is negative", c.WarmFlushPages))
	}
	if c.Append < AppendMapped || c.Append > AppendPwrite {
		errs = append(errs, fmt.Errorf("log: unknown Append mode %d", c.Append))
	}
	if c.Warm < WarmFault || c.Warm > WarmNone {
		errs = append(errs, fmt.Errorf("log: unknown Warm mode %d", c.Warm))
	}
	if c.AllocateAhead < 0 || c.AllocateHorizon < 0 {
		errs = append(errs, fmt.Errorf("log: AllocateAhead %d and AllocateHorizon %v must not be negative", c.AllocateAhead, c.AllocateHorizon))
	}
	if c.PoolBuffers < 0 {
		errs = append(errs, fmt.Errorf("log: PoolBuffers %d is negative", c.PoolBuffers))
	}
	if c.PoolBuffers > 0 && c.SyncFlush {
		errs = append(errs, errors.New("log: the transient store pool is for async flush only"))
	}
	return errors.Join(errs...)
}
