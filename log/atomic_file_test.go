package log

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
)

// TestWriteFileAtomicSteps stops a write at each step, as a crash or as a
// failing disk, and checks what a restart would find: the old contents up
// to the rename, the new ones after it, and a temporary file only where a
// crashed process would leave one.
func TestWriteFileAtomicSteps(t *testing.T) {
	t.Parallel()
	diskFull := errors.New("no space left on device")
	for _, tc := range []struct {
		step    string
		newSeen bool
	}{
		{StepWritten, false},
		{StepSynced, false},
		{StepRenamed, true},
		{StepDirSynced, true},
	} {
		for _, stop := range []error{ErrSimulatedCrash, diskFull} {
			t.Run(tc.step+"/"+stop.Error(), func(t *testing.T) {
				t.Parallel()
				path := filepath.Join(t.TempDir(), "state")
				if err := WriteFileAtomic(path, []byte("old")); err != nil {
					t.Fatal(err)
				}
				var steps []string
				err := WriteFileAtomicHooked(path, []byte("new"), func(step, tmp string) error {
					steps = append(steps, step)
					if tmp != path+TempSuffix {
						t.Errorf("temporary file %s, want %s", tmp, path+TempSuffix)
					}
					if step == tc.step {
						return stop
					}
					return nil
				})
				if !errors.Is(err, stop) {
					t.Fatalf("got %v, want %v", err, stop)
				}
				if steps[len(steps)-1] != tc.step {
					t.Fatalf("steps %v went on past %s", steps, tc.step)
				}
				got, err := os.ReadFile(path)
				if err != nil {
					t.Fatal(err)
				}
				if want := map[bool]string{false: "old", true: "new"}[tc.newSeen]; string(got) != want {
					t.Fatalf("contents %q after stopping at %s, want %q", got, tc.step, want)
				}
				_, err = os.Stat(path + TempSuffix)
				leftover := err == nil
				wantLeftover := stop == ErrSimulatedCrash && !tc.newSeen
				if leftover != wantLeftover {
					t.Fatalf("temporary file left: %v, want %v", leftover, wantLeftover)
				}
				// The next write replaces a leftover and succeeds.
				if err := WriteFileAtomic(path, []byte("next")); err != nil {
					t.Fatal(err)
				}
				if got, _ := os.ReadFile(path); string(got) != "next" {
					t.Fatalf("contents %q after a clean write, want %q", got, "next")
				}
			})
		}
	}
}
