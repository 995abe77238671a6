package flush

import (
	"testing"

	"go.uber.org/goleak"

	"github.com/kbroker/kbroker/internal/testenv"
)

// TestMain fails the package if any test leaves a goroutine behind: every
// service must stop all of its goroutines in Close.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m, testenv.LeakOptions()...)
}
