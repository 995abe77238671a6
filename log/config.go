package log

import (
	"errors"
	"fmt"
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
	// Warm selects how new files are pre-faulted. Default WarmFault.
	Warm WarmMode
	// WarmFlushPages is the warm-up chunk in 4 KiB pages. Default 4096 (16 MiB).
	WarmFlushPages int
	// Mlock locks warmed files in memory until they are full and flushed.
	Mlock bool
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
	if c.WarmFlushPages == 0 {
		c.WarmFlushPages = 4096
	}
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
	if c.Warm < WarmFault || c.Warm > WarmNone {
		errs = append(errs, fmt.Errorf("log: unknown Warm mode %d", c.Warm))
	}
	if c.PoolBuffers < 0 {
		errs = append(errs, fmt.Errorf("log: PoolBuffers %d is negative", c.PoolBuffers))
	}
	if c.PoolBuffers > 0 && c.SyncFlush {
		errs = append(errs, errors.New("log: the transient store pool is for async flush only"))
	}
	return errors.Join(errs...)
}
