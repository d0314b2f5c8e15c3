package trace

import "testing"

// TestLatencyHist checks the tracer's histogram against exact quantiles.
func TestLatencyHist(t *testing.T) {
	var h latencyHist
	vals := []int64{0, 1, 15, 16, 17, 100, 1000, 12345, 1 << 20, 5e9}
	for _, v := range vals {
		i := histIndex(v)
		if got := histValue(i); v >= histSub && (got < v-v/16 || got > v+v/16) {
			t.Errorf("%d lands in bucket %d, valued %d", v, i, got)
		}
	}
	for v := int64(1); v <= 10000; v++ {
		h.record(v * 100) // 100 ns .. 1 ms, uniform
	}
	if h.count() != 10000 {
		t.Fatalf("count %d", h.count())
	}
	for _, q := range []float64{0.5, 0.9, 0.99} {
		exact := int64(q*10000) * 100
		if got := h.quantile(q); got < exact-exact/16 || got > exact+exact/16 {
			t.Errorf("p%v: %d, exact %d", q*100, got, exact)
		}
	}
	h.reset()
	if h.count() != 0 || h.quantile(0.5) != 0 {
		t.Error("reset left counts")
	}
}
