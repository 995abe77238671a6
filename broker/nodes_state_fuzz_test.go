package broker

import "testing"

// FuzzNodesState: any file decodes or is refused, never panics, and what
// decodes keeps the invariants endOffsetFor relies on.
func FuzzNodesState(f *testing.F) {
	f.Add([]byte(`{"version":1,"nodes":3,"leaders":[{"topic":"000102030405060708090a0b0c0d0e0f","partition":0,"node":2,"epoch":2,"epochs":[[1,10],[2,40]]}]}`))
	f.Add([]byte(`{"version":1,"nodes":1,"leaders":[]}`))
	f.Add([]byte(`{"version":1,"nodes":3,"leaders":[{"topic":"00","partition":-1,"node":9,"epoch":-3}]}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		st, leaders, err := decodeNodesState(data)
		if err != nil {
			return
		}
		for k, l := range leaders {
			if k.partition < 0 || l.node < 0 || l.node >= st.Nodes || l.epoch < 0 {
				t.Fatalf("accepted %+v %+v", k, l)
			}
			for i, e := range l.epochs {
				if e.epoch < 1 || e.epoch > l.epoch || (i > 0 && (e.epoch <= l.epochs[i-1].epoch || e.start < l.epochs[i-1].start)) {
					t.Fatalf("accepted history %+v", l.epochs)
				}
			}
			s := newSimCluster(st.Nodes, 0)
			s.leaders[k] = l
			s.endOffsetFor(k, 0, 0, 100)
			s.endOffsetFor(k, l.epoch, 0, 100)
			s.epochAt(k, 50)
		}
	})
}
