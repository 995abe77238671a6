package log

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
)

// TempSuffix ends the name of the temporary file WriteFileAtomic writes
// beside its target (path + TempSuffix). A crash can leave one behind; it
// is never read, and its owner removes it when it next opens the file.
const TempSuffix = ".tmp"

// ErrSimulatedCrash, returned by a WriteFileAtomicHooked hook, stops the
// write as a killed process would stop it: the temporary file stays where
// it is, for the crash-recovery code under test to find.
var ErrSimulatedCrash = errors.New("log: simulated crash")

// The steps of WriteFileAtomic that WriteFileAtomicHooked reports.
const (
	StepWritten   = "written"    // the data is in the temporary file, not yet synced
	StepSynced    = "synced"     // the temporary file is fsynced and closed
	StepRenamed   = "renamed"    // it replaced the target, the directory is not yet synced
	StepDirSynced = "dir-synced" // the rename is durable
)

// WriteFileAtomic replaces path with data so that a crash leaves either the
// old or the new contents: it writes a temporary file beside it (path +
// TempSuffix), fsyncs it, renames it over path and fsyncs the directory.
// The small metadata files above the log (partition checkpoint,
// producer-id blocks, the topic registry, coordinator snapshots) use it.
// One writer at a time per path: the temporary name is fixed.
func WriteFileAtomic(path string, data []byte) error {
	return WriteFileAtomicHooked(path, data, nil)
}

// WriteFileAtomicHooked is WriteFileAtomic calling hook, when not nil,
// after each step (StepWritten, StepSynced, StepRenamed, StepDirSynced)
// with the step and the temporary file's path. An error from hook stops
// the write there and is returned; the temporary file is removed, unless
// the error is ErrSimulatedCrash. Crash-injection tests use it to stop a
// write at each step, or to fail one as a full disk would.
func WriteFileAtomicHooked(path string, data []byte, hook func(step, tmp string) error) error {
	return writeFileAtomic(path, data, 0o644, hook)
}

// WriteFileAtomicMode is WriteFileAtomic with the new file's mode: secrets
// (SCRAM credentials) are written 0600. The mode is set on the temporary
// file before any byte is written, so the data is never readable by
// others, not even for a moment.
func WriteFileAtomicMode(path string, data []byte, perm os.FileMode) error {
	return writeFileAtomic(path, data, perm, nil)
}

func writeFileAtomic(path string, data []byte, perm os.FileMode, hook func(step, tmp string) error) (err error) {
	tmp := path + TempSuffix
	f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, perm)
	if err != nil {
		return fmt.Errorf("log: create %s: %w", tmp, err)
	}
	// A temporary file left by a crash keeps its old mode through
	// O_CREATE; set the wanted one explicitly.
	if err = f.Chmod(perm); err != nil {
		_ = f.Close()
		_ = os.Remove(tmp)
		return fmt.Errorf("log: chmod %s: %w", tmp, err)
	}
	crashed := false
	defer func() {
		if err != nil {
			_ = f.Close() // may be closed already; the first error matters
			if !crashed {
				_ = os.Remove(tmp) // after a rename there is none
			}
		}
	}()
	step := func(name string) error {
		if hook == nil {
			return nil
		}
		err := hook(name, tmp)
		crashed = errors.Is(err, ErrSimulatedCrash)
		return err
	}
	if _, err = f.Write(data); err != nil {
		return fmt.Errorf("log: write %s: %w", tmp, err)
	}
	if err = step(StepWritten); err != nil {
		return err
	}
	if err = f.Sync(); err != nil {
		return fmt.Errorf("log: fsync %s: %w", tmp, err)
	}
	if err = f.Close(); err != nil {
		return fmt.Errorf("log: close %s: %w", tmp, err)
	}
	if err = step(StepSynced); err != nil {
		return err
	}
	if err = os.Rename(tmp, path); err != nil {
		return fmt.Errorf("log: rename %s: %w", tmp, err)
	}
	if err = step(StepRenamed); err != nil {
		return err
	}
	if err = SyncDir(filepath.Dir(path)); err != nil {
		return err
	}
	return step(StepDirSynced)
}
