package stack

import (
	"sync"
	"sync/atomic"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"
)

// TraceStage is a point on a request's path through a ustack server, from
// the frame taken off the RX ring to the kick that sends the reply.
type TraceStage int

const (
	// StageProcessed: netstack finished the RX batch that carried the
	// request (TCP processed on the worker).
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
// use; a nil *tracer records nothing (tracing off costs a nil check).
type tracer struct {
	start time.Time

	lastRx, lastDone atomic.Int64 // the worker's last RX batch: taken, processed (ns since start)
	reqAt            atomic.Int64 // RX time of the request in flight, 0 if none
	seen             atomic.Uint32

	mu   sync.Mutex
	hist [numStages]*hdrhistogram.Histogram
}

func newTracer() *tracer {
	t := &tracer{start: time.Now()}
	for i := range t.hist {
		t.hist[i] = hdrhistogram.New(1, int64(10*time.Second), 3)
	}
	return t
}

func (t *tracer) now() int64 { return int64(time.Since(t.start)) + 1 }

// rx and processed are called by the worker around an RX batch.
func (t *tracer) rx()        { t.lastRx.Store(t.now()) }
func (t *tracer) processed() { t.lastDone.Store(t.now()) }

// read is called when the application's Read returns data: a request
// starts at the RX batch that carried it.
func (t *tracer) read() {
	if t.reqAt.Load() != 0 {
		return
	}
	at, done := t.lastRx.Load(), t.lastDone.Load()
	if at == 0 {
		return
	}
	if done < at {
		// The application, on another P, read before the worker got to
		// note that it had finished the batch: it had, by now.
		done = t.now()
	}
	t.seen.Store(0)
	t.reqAt.Store(at)
	t.record(StageProcessed, done-at)
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
	t.record(s, t.now()-at)
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

func (t *tracer) record(s TraceStage, d int64) {
	t.mu.Lock()
	t.hist[s].RecordValue(d)
	t.mu.Unlock()
}

func (t *tracer) stats() *TraceStats {
	t.mu.Lock()
	defer t.mu.Unlock()
	ts := &TraceStats{}
	for s, h := range t.hist {
		ts.Stages = append(ts.Stages, StageStats{
			Stage: TraceStage(s), Count: uint64(h.TotalCount()),
			P50: time.Duration(h.ValueAtQuantile(50)), P90: time.Duration(h.ValueAtQuantile(90)), P99: time.Duration(h.ValueAtQuantile(99)),
		})
	}
	return ts
}

func (t *tracer) reset() {
	t.mu.Lock()
	for _, h := range t.hist {
		h.Reset()
	}
	t.mu.Unlock()
	t.reqAt.Store(0)
}

// ResetTrace clears the latency breakdown (Config.Trace), for example
// after a warm-up. It does nothing when tracing is off.
func (s *Stack) ResetTrace() {
	if t := s.ep.trace; t != nil {
		t.reset()
	}
}
