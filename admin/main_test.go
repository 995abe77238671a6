package admin

import (
	"testing"

	"go.uber.org/goleak"

	"github.com/kbroker/kbroker/internal/testenv"
)

// TestMain checks that servers, brokers and clients leave no goroutine
// behind (Server.Close waits for its sampler and its Serve loop).
func TestMain(m *testing.M) { goleak.VerifyTestMain(m, testenv.LeakOptions()...) }
