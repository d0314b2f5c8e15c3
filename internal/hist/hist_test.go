package hist

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"
	"time"
)

// TestBuckets: every value lands in a bucket whose bounds hold it, the
// buckets tile the values without gaps, and none spans more than 1/1024
// of its lowest value.
func TestBuckets(t *testing.T) {
	prevHi := int64(-1)
	for i := range index(int64(10*time.Second)) + 1 {
		lo, hi := bounds(i)
		if lo != prevHi+1 || hi < lo {
			t.Fatalf("bucket %d is [%d, %d], the one before ended at %d", i, lo, hi, prevHi)
		}
		if lo >= 2*half && float64(hi-lo+1) > float64(lo)/1024 {
			t.Fatalf("bucket %d [%d, %d] is wider than 1/1024 of its values", i, lo, hi)
		}
		if index(lo) != i || index(hi) != i {
			t.Fatalf("bucket %d [%d, %d]: the ends index to %d and %d", i, lo, hi, index(lo), index(hi))
		}
		prevHi = hi
	}
}

// TestQuantilesAgainstSorting: for random values, every quantile is the
// exact order statistic to within a bucket's width, and Max and Min are
// exact.
func TestQuantilesAgainstSorting(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	h := New(int64(10 * time.Second))
	var vals []int64
	for range 100_000 {
		v := int64(r.ExpFloat64() * 20_000) // around 20 µs, a long tail
		h.RecordValue(v)
		vals = append(vals, v)
	}
	slices.Sort(vals)
	if h.TotalCount() != int64(len(vals)) || h.Max() != vals[len(vals)-1] || h.Min() != vals[0] {
		t.Fatalf("count %d max %d min %d, want %d %d %d", h.TotalCount(), h.Max(), h.Min(), len(vals), vals[len(vals)-1], vals[0])
	}
	for _, q := range []float64{0, 1, 10, 50, 90, 99, 99.9, 99.99, 100} {
		rank := max(int(math.Ceil(q/100*float64(len(vals))-1e-9)), 1)
		want := vals[rank-1]
		got := h.ValueAtQuantile(q)
		if got < want || float64(got-want) > float64(want)/1024+1 {
			t.Errorf("p%v = %d, the sorted values say %d", q, got, want)
		}
	}
}

// TestExactBelow2048 and the edges: small values are exact, a value past
// the bound is counted and reported by Max, an empty histogram says 0.
func TestEdges(t *testing.T) {
	h := New(1_000_000)
	if h.ValueAtQuantile(50) != 0 || h.Max() != 0 || h.Min() != 0 {
		t.Fatal("an empty histogram reports values")
	}
	for v := int64(1); v <= 100; v++ {
		h.RecordValue(v)
	}
	if got := h.ValueAtQuantile(50); got != 50 {
		t.Errorf("p50 of 1..100 = %d", got)
	}
	h.RecordValue(5_000_000_000)
	h.RecordValue(-7)
	if h.Max() != 5_000_000_000 || h.ValueAtQuantile(100) != 5_000_000_000 || h.Min() != 0 {
		t.Errorf("max %d p100 %d min %d", h.Max(), h.ValueAtQuantile(100), h.Min())
	}
	var n, last int64
	h.Each(func(from, to, count int64) {
		if from > to || from < last {
			t.Errorf("bucket [%d, %d] after %d", from, to, last)
		}
		n += count
		last = to
	})
	if n != h.TotalCount() || last != h.Max() {
		t.Errorf("Each covered %d values up to %d, want %d up to %d", n, last, h.TotalCount(), h.Max())
	}
}

func TestRecordDoesNotAllocate(t *testing.T) {
	h := New(int64(10 * time.Second))
	v := int64(0)
	if a := testing.AllocsPerRun(1000, func() { v += 7919; h.RecordValue(v) }); a != 0 {
		t.Errorf("%v allocations per RecordValue", a)
	}
}

func BenchmarkRecordValue(b *testing.B) {
	h := New(int64(10 * time.Second))
	for i := range b.N {
		h.RecordValue(int64(i&0xffff) * 100)
	}
}
