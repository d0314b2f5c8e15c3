package stack

import (
	"time"

	"github.com/ustack-dev/ustack/stack/internal/trace"
)

// TraceStage is a point on a request's path through a ustack server, from
// the frame taken off the RX ring to the kick that sends the reply.
type TraceStage int

const (
	// StageProcessed: netstack finished the RX batch that carried the
	// request (TCP processed on the worker; for a request queued for a
	// goroutine's Read, all but the ACK it carried, which the worker
	// processes after the reply).
	StageProcessed = TraceStage(trace.StageProcessed)
	// StageRead: the application's Read returned the request.
	StageRead = TraceStage(trace.StageRead)
	// StageWrite: the application called Write with its reply.
	StageWrite = TraceStage(trace.StageWrite)
	// StageTxRing: the reply's frame was on the TX ring.
	StageTxRing = TraceStage(trace.StageTxRing)
	// StageKicked: the kick that hands the TX ring to the kernel returned.
	StageKicked = TraceStage(trace.StageKicked)
	numStages   = TraceStage(trace.NumStages)
)

var stageNames = [numStages]string{"rx→processed", "rx→read", "rx→write", "rx→tx ring", "rx→kicked"}

func (s TraceStage) String() string {
	if s < 0 || s >= numStages {
		return "TraceStage(?)"
	}
	return stageNames[s]
}

// TraceSample is one in how many RX batches Config.Trace samples: the
// latency breakdown counts about one request in TraceSample.
const TraceSample = trace.Sample

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

// traceStats is the Stack's latency breakdown, nil unless tracing.
func (s *Stack) traceStats() *TraceStats {
	t := s.ep.Trace()
	if t == nil {
		return nil
	}
	ts := &TraceStats{}
	for i, st := range t.Stats() {
		ts.Stages = append(ts.Stages, StageStats{Stage: TraceStage(i), Count: st.Count, P50: st.P50, P90: st.P90, P99: st.P99})
	}
	return ts
}

// ResetTrace clears the latency breakdown (Config.Trace), for example
// after a warm-up. It does nothing when tracing is off.
func (s *Stack) ResetTrace() {
	if t := s.ep.Trace(); t != nil {
		t.Reset()
	}
}
