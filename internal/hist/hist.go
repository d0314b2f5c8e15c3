// Package hist is the histogram the echo clients and the benchmark record
// round-trip times in: log-linear buckets in the manner of HdrHistogram, a
// relative error of at most 1/1024 (better than three significant digits),
// recording without allocation.
//
// It is ustack's own so that the library module does not make its
// importers inherit a histogram library and, through it, a plotting and
// numerics stack.
package hist

import (
	"math"
	"math/bits"
)

const (
	subBits = 11 // values below 2^subBits are counted exactly
	half    = 1 << (subBits - 1)
)

// Histogram counts non-negative int64 values (nanoseconds, for its users)
// up to a bound given to New; larger values are counted in the last
// bucket, and Max still reports them exactly. The zero value is not
// usable. A Histogram is not safe for concurrent use.
type Histogram struct {
	counts []int64
	total  int64
	min    int64
	max    int64
}

// New returns a histogram for values in [0, highest]. highest below 2^11
// is raised to it.
func New(highest int64) *Histogram {
	highest = max(highest, 1<<subBits-1)
	return &Histogram{counts: make([]int64, index(highest)+1), min: math.MaxInt64}
}

// index is v's bucket: values below 2^11 have a bucket each; above, each
// power of two is split into 1024 buckets, so a bucket spans at most
// 1/1024 of the values in it.
func index(v int64) int {
	e := max(bits.Len64(uint64(v))-subBits, 0)
	return e*half + int(v>>e)
}

// bounds returns the lowest and highest value that bucket i counts.
func bounds(i int) (lo, hi int64) {
	if i < 2*half {
		return int64(i), int64(i)
	}
	e := i/half - 1
	lo = int64(half+i%half) << e
	return lo, lo + int64(1)<<e - 1
}

// RecordValue counts v; a negative v counts as 0.
func (h *Histogram) RecordValue(v int64) {
	v = max(v, 0)
	h.counts[min(index(v), len(h.counts)-1)]++
	h.total++
	h.min = min(h.min, v)
	h.max = max(h.max, v)
}

// TotalCount is how many values were recorded.
func (h *Histogram) TotalCount() int64 { return h.total }

// Max is the largest value recorded, exactly; 0 for an empty histogram.
func (h *Histogram) Max() int64 { return h.max }

// Min is the smallest value recorded, exactly; 0 for an empty histogram.
func (h *Histogram) Min() int64 {
	if h.total == 0 {
		return 0
	}
	return h.min
}

// ValueAtQuantile returns the value below or at which q percent of the
// recorded values lie (q in [0, 100]): the highest value of the bucket
// that holds the ⌈q·n/100⌉-th smallest value, capped at Max. It is 0 for
// an empty histogram.
func (h *Histogram) ValueAtQuantile(q float64) int64 {
	if h.total == 0 {
		return 0
	}
	q = min(max(q, 0), 100)
	rank := max(int64(math.Ceil(q/100*float64(h.total)-1e-9)), 1) // 99.9% of 1e5 is 99900, not 99901
	var seen int64
	for i, c := range h.counts {
		if seen += c; seen >= rank {
			_, hi := bounds(i)
			if i == len(h.counts)-1 {
				return h.max // the bucket values above the bound land in
			}
			return min(hi, h.max)
		}
	}
	return h.max
}

// Each calls f for every non-empty bucket, from the lowest: the range of
// values it counts (both ends included; the last bucket's end is Max) and
// its count.
func (h *Histogram) Each(f func(from, to, count int64)) {
	for i, c := range h.counts {
		if c == 0 {
			continue
		}
		lo, hi := bounds(i)
		if i == len(h.counts)-1 || hi > h.max {
			hi = h.max
		}
		f(lo, hi, c)
	}
}
