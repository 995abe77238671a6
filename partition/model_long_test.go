package partition

import (
	"strconv"
	"testing"

	"github.com/kbroker/kbroker/internal/testenv"
)

// TestStoreModelLong runs the model with more steps and seeds:
// KBROKER_MODEL_SEEDS=20 KBROKER_MODEL_STEPS=3000 go test -run StoreModelLong ./partition/
func TestStoreModelLong(t *testing.T) {
	seeds := testenv.Count(t, "KBROKER_MODEL_SEEDS", 0)
	if seeds == 0 {
		t.Skip("set KBROKER_MODEL_SEEDS to run")
	}
	steps := testenv.Count(t, "KBROKER_MODEL_STEPS", 2000)
	for seed := 1; seed <= seeds; seed++ {
		for _, mode := range []FlushMode{FlushSync, FlushAsync} {
			t.Run(mode.String()+"/seed="+strconv.Itoa(seed), func(t *testing.T) {
				runModel(t, mode, steps, uint64(seed))
			})
		}
	}
}
