// Package trace is the latency breakdown (stack's Config.Trace): where a
// request's time goes inside a ustack server, from its frame leaving the
// RX ring to the kick that sends the reply. The worker marks the RX batch
// and its processing, the connection APIs the read and the write, the TX
// path the frame on the ring and the kick.
package trace

import (
	"math/bits"
	"sync/atomic"
	"time"
)

// Stage is a point on a request's path (stack.TraceStage numbers them
// the same).
type Stage int

// The stages, in the order a request reaches them.
const (
	StageProcessed Stage = iota // netstack finished the request's RX batch
	StageRead                   // the application read the request
	StageWrite                  // the application wrote its reply
	StageTxRing                 // the reply's frame was on the TX ring
	StageKicked                 // the kick that sends it returned
	NumStages
)

// Tracer records the latency breakdown. It follows one request at a time:
// the RX batch a Read returns data from starts a request, the kick after
// the reply's frame ends it. That is exact for request/response traffic on
// one connection (the benchmark's ping-pong); with many connections in
// flight the stages mix requests. Its methods are safe for concurrent
// use and take no lock; a nil *Tracer records nothing (tracing off costs a
// nil check).
//
// It samples: only one RX batch in Sample can start a request, so
// that the clock reads (seven a request, some tens of nanoseconds each
// in a VM) burden one request in Sample; the others cost an atomic
// add and a few loads.
type Tracer struct {
	start time.Time

	lastRx, lastDone atomic.Int64 // the worker's last sampled RX batch: taken, processed (ns since start); lastRx 0 if the last batch was not sampled
	reqAt            atomic.Int64 // RX time of the request in flight, 0 if none
	seen             atomic.Uint32
	batches          atomic.Uint32 // RX batches seen, for sampling

	hist [NumStages]latencyHist
}

// Sample is one in how many RX batches the tracer samples: the latency
// breakdown counts about one request in Sample.
const Sample = 8

// New returns a tracer whose clock starts now.
func New() *Tracer { return &Tracer{start: time.Now()} }

func (t *Tracer) now() int64 { return int64(time.Since(t.start)) + 1 }

// Rx and Processed are called by the worker around an RX batch.
func (t *Tracer) Rx() {
	if t.batches.Add(1)%Sample != 0 || t.reqAt.Load() != 0 {
		t.lastRx.Store(0)
		return
	}
	t.lastRx.Store(t.now())
}

func (t *Tracer) Processed() {
	if t.lastRx.Load() != 0 {
		t.lastDone.Store(t.now())
	}
}

// Read is called when the application's Read returns data: a request
// starts at the RX batch that carried it.
func (t *Tracer) Read() {
	if t.reqAt.Load() != 0 {
		return
	}
	at, done := t.lastRx.Load(), t.lastDone.Load()
	if at == 0 {
		// Not a sampled batch.
		return
	}
	if done < at {
		// The application, on another P, read before the worker got to
		// note that it had finished the batch: it had, by now.
		done = t.now()
	}
	t.seen.Store(0)
	t.reqAt.Store(at)
	t.hist[StageProcessed].record(done - at)
	t.Mark(StageRead)
}

// Mark records that the request in flight reached s (once per request).
func (t *Tracer) Mark(s Stage) {
	at := t.reqAt.Load()
	if at == 0 {
		return
	}
	bit := uint32(1) << s
	if t.seen.Or(bit)&bit != 0 {
		return
	}
	t.hist[s].record(t.now() - at)
	if s == StageKicked {
		t.reqAt.Store(0)
	}
}

// Kicked ends the request in flight if its reply reached the TX ring.
func (t *Tracer) Kicked() {
	if t.seen.Load()&(1<<StageTxRing) != 0 {
		t.Mark(StageKicked)
	}
}

// StageStats is one stage's figures: how many requests reached it, and
// the time from their RX batch to it.
type StageStats struct {
	Count         uint64
	P50, P90, P99 time.Duration
}

// Stats returns every stage's figures, indexed by Stage.
func (t *Tracer) Stats() [NumStages]StageStats {
	var st [NumStages]StageStats
	for s := range t.hist {
		h := &t.hist[s]
		st[s] = StageStats{Count: h.count(),
			P50: time.Duration(h.quantile(0.50)), P90: time.Duration(h.quantile(0.90)), P99: time.Duration(h.quantile(0.99))}
	}
	return st
}

// Reset clears the figures (and the request in flight).
func (t *Tracer) Reset() {
	for s := range t.hist {
		t.hist[s].reset()
	}
	t.reqAt.Store(0)
}

// latencyHist is a lock-free log-linear histogram of nanoseconds: 16
// buckets per power of two (a bucket spans at most 1/16 of its value,
// about 6%), up to 2^40 ns. Recording is one atomic add.
type latencyHist struct {
	buckets [histPowers * histSub]atomic.Uint64
}

const (
	histSubBits = 4
	histSub     = 1 << histSubBits
	histPowers  = 41 - histSubBits
)

func histIndex(v int64) int {
	if v < histSub {
		return int(max(v, 0))
	}
	e := bits.Len64(uint64(v)) - histSubBits - 1 // v >> e is in [16, 32)
	i := (e+1)*histSub + int(v>>e) - histSub
	return min(i, len(latencyHist{}.buckets)-1)
}

// histValue is the middle of bucket i.
func histValue(i int) int64 {
	if i < histSub {
		return int64(i)
	}
	e := i/histSub - 1
	lo := int64(histSub+i%histSub) << e
	return lo + int64(1)<<e/2
}

func (h *latencyHist) record(v int64) { h.buckets[histIndex(v)].Add(1) }

func (h *latencyHist) count() uint64 {
	var n uint64
	for i := range h.buckets {
		n += h.buckets[i].Load()
	}
	return n
}

func (h *latencyHist) quantile(q float64) int64 {
	n := h.count()
	if n == 0 {
		return 0
	}
	want := uint64(q*float64(n-1)) + 1
	var seen uint64
	for i := range h.buckets {
		seen += h.buckets[i].Load()
		if seen >= want {
			return histValue(i)
		}
	}
	return histValue(len(h.buckets) - 1)
}

func (h *latencyHist) reset() {
	for i := range h.buckets {
		h.buckets[i].Store(0)
	}
}
