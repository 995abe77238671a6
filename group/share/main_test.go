package share

import (
	"testing"

	"go.uber.org/goleak"

	"github.com/kbroker/kbroker/internal/testenv"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m, testenv.LeakOptions()...)
}
