package fastflow

import (
	"bytes"
	"runtime"
	"testing"
	"time"

	"github.com/ustack-dev/ustack/offload"
)

// wire is the prototype's memory wire: a client and a
// server flow, one frame each way, a 64-byte request and an echo handler.
type wire struct {
	c, s   *end
	req    []byte
	toS    []byte // the request frame
	toC    []byte // the reply frame
	verify bool   // check each frame's checksums first, as the RX path does
	echoed []byte // the last reply payload the client received
}

func newWire(tb testing.TB, verify bool) *wire {
	c, s := newPair(tb, 1000, 5000)
	req := make([]byte, 64)
	for i := range req {
		req[i] = byte(i)
	}
	return &wire{c: c, s: s, req: req, toS: make([]byte, 2048), toC: make([]byte, 2048), verify: verify}
}

// roundTrip moves one request and its reply: the client writes and cuts
// the request, the server receives it (ACK first, then the payload from
// the frame) and its handler echoes it, the reply is cut with the ACK
// riding, and the client receives it. It returns the first Reason that
// is not OK.
func (w *wire) roundTrip(clk Clock) Reason {
	c, s := w.c, w.s
	// Client: the request.
	if _, r := c.f.Write(c.ring, w.req); r != OK {
		return r
	}
	n, r := c.f.Cut(w.toS, c.ring, clk)
	if r != OK {
		return r
	}
	// Server: receive, echo, cut.
	fr := w.toS[:n]
	if w.verify && offload.Verify(fr) != offload.Valid {
		return Malformed
	}
	in, r := s.f.Receive(fr, clk)
	if r != OK {
		return r
	}
	if _, r := s.f.Write(s.ring, in.Payload); r != OK {
		return r
	}
	n, r = s.f.Cut(w.toC, s.ring, clk)
	if r != OK {
		return r
	}
	// Client: the reply.
	fr = w.toC[:n]
	if w.verify && offload.Verify(fr) != offload.Valid {
		return Malformed
	}
	in, r = c.f.Receive(fr, clk)
	w.echoed = in.Payload
	return r
}

// BenchmarkFlowRoundTrip is the fast path's measure-first prototype: request
// → server's receive → handler → reply → client's receive on the memory
// wire, with one Clock per round trip standing in for the worker's one
// clock read per batch. ns/side is the round trip's time over its two
// sides, each of which does one Receive, one Write and one Cut;
// cpu-ns/side is the same in the benchmark thread's CPU time, which
// other tenants of a shared machine inflate less than wall time. The
// verify variant adds offload.Verify per frame, the checksum check the
// RX path does before the fast path sees a frame.
func BenchmarkFlowRoundTrip(b *testing.B) {
	for _, v := range []struct {
		name   string
		verify bool
	}{{"echo", false}, {"verify", true}} {
		b.Run(v.name, func(b *testing.B) {
			w := newWire(b, v.verify)
			var clk Clock
			cpu := startCPU()
			b.ReportAllocs()
			b.SetBytes(int64(2 * len(w.req)))
			for b.Loop() {
				clk.Us += 3
				clk.Ms = clk.Us >> 10
				if r := w.roundTrip(clk); r != OK {
					b.Fatalf("round trip: %v", r)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/2, "ns/side")
			cpu.report(b, 2, "cpu-ns/side")
		})
	}
}

// TestRoundTripAllocs holds the request path to zero allocations.
func TestRoundTripAllocs(t *testing.T) {
	w := newWire(t, true)
	var clk Clock
	allocs := testing.AllocsPerRun(1000, func() {
		clk.Us += 3
		clk.Ms = clk.Us >> 10
		if r := w.roundTrip(clk); r != OK {
			t.Fatalf("round trip: %v", r)
		}
	})
	if allocs != 0 {
		t.Errorf("%v allocations per round trip, want 0", allocs)
	}
	if !bytes.Equal(w.echoed, w.req) {
		t.Errorf("echo %x, want %x", w.echoed, w.req)
	}
	// Steady state: the request is acknowledged, the reply is in flight
	// until the next request's ACK, nothing is owed by the server (the
	// reply carried its ACK), and the client owes the ACK of the reply,
	// which its next request carries: no pure ACKs.
	if w.c.f.InFlight() != 0 || w.s.f.InFlight() != uint32(len(w.req)) {
		t.Errorf("in flight: client %d, server %d", w.c.f.InFlight(), w.s.f.InFlight())
	}
	if w.c.f.segsOut != w.s.f.segsIn || w.s.f.segsOut != w.c.f.segsIn {
		t.Errorf("segments: client out %d in %d, server out %d in %d",
			w.c.f.segsOut, w.c.f.segsIn, w.s.f.segsOut, w.s.f.segsIn)
	}
	if owed, _ := w.s.f.AckOwed(); owed {
		t.Error("server owes an ACK after its reply")
	}
	if owed, _ := w.c.f.AckOwed(); !owed {
		t.Error("client owes no ACK for the reply")
	}
}

// BenchmarkCut is one side's transmit of a 64-byte reply: Write into the
// ring and Cut into a frame, the ACK of it simulated by resetting the
// flow's send state between iterations.
func BenchmarkCut(b *testing.B) {
	w := newWire(b, false)
	f, ring := w.s.f, w.s.ring
	var clk Clock
	cpu := startCPU()
	b.ReportAllocs()
	for b.Loop() {
		clk.Us++
		f.Write(ring, w.req)
		if _, r := f.Cut(w.toC, ring, clk); r != OK {
			b.Fatal(r)
		}
		f.sndUna, f.fltLen, f.room = f.sndNxt, 0, f.cwnd
	}
	cpu.report(b, 1, "cpu-ns/op")
}

// BenchmarkReceive is one side's receive of a 64-byte request: the
// predicate, the ACK of the previous reply and the payload, from a flow
// state restored (256 bytes copied) before each iteration.
func BenchmarkReceive(b *testing.B) {
	w := newWire(b, false)
	if r := w.roundTrip(Clock{Us: 1}); r != OK {
		b.Fatal(r)
	}
	w.c.f.Write(w.c.ring, w.req)
	n, _ := w.c.f.Cut(w.toS, w.c.ring, Clock{Us: 2})
	fr := w.toS[:n]
	saved := *w.s.f
	clk := Clock{Us: 3}
	cpu := startCPU()
	b.ReportAllocs()
	for b.Loop() {
		*w.s.f = saved
		if _, r := w.s.f.Receive(fr, clk); r != OK {
			b.Fatal(r)
		}
	}
	cpu.report(b, 1, "cpu-ns/op")
}

// cpuMeter measures a benchmark loop's CPU time on its thread.
type cpuMeter struct {
	start time.Duration
	ok    bool
}

// startCPU locks the benchmark to its thread and reads its CPU time.
func startCPU() cpuMeter {
	runtime.LockOSThread()
	t, ok := threadCPU()
	return cpuMeter{t, ok}
}

// report reports the CPU time since startCPU per b.N·div as unit, and
// unlocks the thread.
func (m cpuMeter) report(b *testing.B, div int, unit string) {
	t, ok := threadCPU()
	runtime.UnlockOSThread()
	if ok && m.ok {
		b.ReportMetric(float64((t-m.start).Nanoseconds())/float64(b.N*div), unit)
	}
}
