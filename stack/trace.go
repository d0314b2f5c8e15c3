package stack

import (
	"math/bits"
	"sync/atomic"
	"time"
)

// TraceStage is a point on a request's path through a ustack server, from
// the frame taken off the RX ring to the kick that sends the reply.
type TraceStage int

const (
	// StageProcessed: netstack finished the RX batch that carried the
	// request (TCP processed on the worker; for a request queued for a
	// goroutine's Read, all but the ACK it carried, which the worker
	// processes after the reply).
	StageProcessed TraceStage = iota
	// StageRead: the application's Read returned the request.
	StageRead
	// StageWrite: the application called Write with its reply.
	StageWrite
	// StageTxRing: the reply's frame was on the TX ring.
	StageTxRing
	// StageKicked: the kick that hands the TX ring to the kernel returned.
	StageKicked
	numStages
)

var stageNames = [numStages]string{"rx→processed", "rx→read", "rx→write", "rx→tx ring", "rx→kicked"}

func (s TraceStage) String() string {
	if s < 0 || s >= numStages {
		return "TraceStage(?)"
	}
	return stageNames[s]
}

// StageStats is the time from a request's frame leaving the RX ring to one
// stage.
type StageStats struct {
	Stage         TraceStage
	Count         uint64
	P50, P90, P99 time.Duration
}

// TraceStats is the latency breakdown Config.Trace records: per stage,
// the time since the request's RX batch was taken off the ring.
type TraceStats struct {
	Stages []StageStats
}

// tracer records the latency breakdown. It follows one request at a time:
// the RX batch a Read returns data from starts a request, the kick after
// the reply's frame ends it. That is exact for request/response traffic on
// one connection (the benchmark's ping-pong); with many connections in
// flight the stages mix requests. Its methods are safe for concurrent
// use and take no lock; a nil *tracer records nothing (tracing off costs a
// nil check).
//
// It samples: only one RX batch in TraceSample can start a request, so
// that the clock reads (seven a request, some tens of nanoseconds each
// in a VM) burden one request in TraceSample; the others cost an atomic
// add and a few loads.
type tracer struct {
	start time.Time

	lastRx, lastDone atomic.Int64 // the worker's last sampled RX batch: taken, processed (ns since start); lastRx 0 if the last batch was not sampled
	reqAt            atomic.Int64 // RX time of the request in flight, 0 if none
	seen             atomic.Uint32
	batches          atomic.Uint32 // RX batches seen, for sampling

	hist [numStages]latencyHist
}

// TraceSample is one in how many RX batches Config.Trace samples: the
// latency breakdown counts about one request in TraceSample.
const TraceSample = 8

func newTracer() *tracer { return &tracer{start: time.Now()} }

func (t *tracer) now() int64 { return int64(time.Since(t.start)) + 1 }

// rx and processed are called by the worker around an RX batch.
func (t *tracer) rx() {
	if t.batches.Add(1)%TraceSample != 0 || t.reqAt.Load() != 0 {
		t.lastRx.Store(0)
		return
	}
	t.lastRx.Store(t.now())
}

func (t *tracer) processed() {
	if t.lastRx.Load() != 0 {
		t.lastDone.Store(t.now())
	}
}

// read is called when the application's Read returns data: a request
// starts at the RX batch that carried it.
func (t *tracer) read() {
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
	t.mark(StageRead)
}

// mark records that the request in flight reached s (once per request).
func (t *tracer) mark(s TraceStage) {
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

// kicked ends the request in flight if its reply reached the TX ring.
func (t *tracer) kicked() {
	if t.seen.Load()&(1<<StageTxRing) != 0 {
		t.mark(StageKicked)
	}
}

func (t *tracer) stats() *TraceStats {
	ts := &TraceStats{}
	for s := range t.hist {
		h := &t.hist[s]
		ts.Stages = append(ts.Stages, StageStats{
			Stage: TraceStage(s), Count: h.count(),
			P50: time.Duration(h.quantile(0.50)), P90: time.Duration(h.quantile(0.90)), P99: time.Duration(h.quantile(0.99)),
		})
	}
	return ts
}

func (t *tracer) reset() {
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

// ResetTrace clears the latency breakdown (Config.Trace), for example
// after a warm-up. It does nothing when tracing is off.
func (s *Stack) ResetTrace() {
	if t := s.ep.trace; t != nil {
		t.reset()
	}
}
