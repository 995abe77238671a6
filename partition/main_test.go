package partition

import (
	"testing"

	"go.uber.org/goleak"

	"github.com/kbroker/kbroker/internal/testenv"
)

// TestMain fails the package if a test leaves a goroutine behind: a Store
// must stop its flush services and background work in Close.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m, testenv.LeakOptions()...) }
