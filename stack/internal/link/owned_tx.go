package link

import (
	"time"

	"github.com/ustack-dev/ustack/internal/third_party/gvisor/pkg/tcpip"
	"github.com/ustack-dev/ustack/internal/third_party/gvisor/pkg/tcpip/transport/tcp"
	"github.com/ustack-dev/ustack/stack/internal/fastflow"
	"github.com/ustack-dev/ustack/xsk"
)

// Write appends b to the connection's send ring and sends what the
// window allows. It returns how many bytes it took: all of b, or fewer
// when the connection went back to netstack (the ring is full, or the
// window or the in-flight record would hold the bytes back), which then
// takes the rest. Called by the owner, its lock held.
func (e *Owned) Write(b []byte) int {
	if !e.live {
		return 0
	}
	o := &e.q.own
	f := o.slab.Flow(e.idx)
	if !e.hasRing {
		o.mu.Lock()
		ring, err := o.slab.AllocRing()
		o.mu.Unlock()
		if err != nil {
			e.demote(int(fastflow.RingFull))
			return 0
		}
		e.ring, e.hasRing = ring, true
	}
	n, r := f.Write(o.slab.Ring(e.ring), b)
	// The segment's time if the worker is giving this owner one (it
	// wrote rxClock then); otherwise a clock read, since other owners'
	// writers run off the worker and rxClock is the worker's alone.
	var clk fastflow.Clock
	if e.inRx {
		clk = o.rxClock
	} else {
		clk, _ = o.now()
	}
	if !e.send(clk) {
		return n
	}
	if r != fastflow.OK {
		e.demote(int(r))
		return n
	}
	e.q.kickAfterWrite(1)
	o.arm(e, clk)
	return n
}

// Demote hands the connection back to netstack (the owner's close, say).
// Called by the owner, its lock held.
func (e *Owned) Demote(reason int) {
	if e.live {
		e.demote(reason)
	}
}

// send cuts what the ring holds unsent into TX frames, as far as the
// window allows, and reports whether the flow is still the connection's:
// a segment the window or the in-flight record holds back demotes it,
// netstack then sending the rest. Under the owner's lock.
func (e *Owned) send(clk fastflow.Clock) bool {
	o := &e.q.own
	f := o.slab.Flow(e.idx)
	if f.Unsent() == 0 {
		return true
	}
	ring := o.slab.Ring(e.ring)
	q := e.q
	nxt := f.SndNxt()
	q.txMu.Lock()
	// No reaping of sent frames first: allocFrame reaps when the pool
	// is empty, and the completion ring holds as many as there are TX
	// frames.
	descs := q.txDescs[:0]
	r := fastflow.OK
	for f.Unsent() > 0 && len(descs) < BatchSize {
		addr, ok := q.allocFrame()
		if !ok {
			break
		}
		n, rr := f.Cut(q.io.Frame(addr), ring, clk)
		if rr != fastflow.OK || n == 0 {
			q.io.Free(addr)
			r = rr
			break
		}
		descs = append(descs, xsk.Desc{Addr: addr, Len: uint32(n)})
	}
	// Segments that do not fit a full TX ring were cut, so they are in
	// flight as far as the flow knows, and are lost as on a wire.
	enq := q.enqueueTx(descs)
	q.txPackets.Add(uint64(enq))
	q.txMu.Unlock()
	o.segsOut.Add(uint64(len(descs)))
	o.bytesOut.Add(uint64(f.SndNxt() - nxt))
	if r != fastflow.OK || f.Unsent() > 0 {
		if r == fastflow.OK {
			r = fastflow.WindowLimited
		}
		e.demote(int(r))
		return false
	}
	return true
}

// dropRing gives the flow's send ring back once it holds nothing: the
// queue's timer finds idle flows, so a connection holds a ring only
// while it is busy. Under the owner's lock.
func (e *Owned) dropRing() {
	if !e.hasRing {
		return
	}
	o := &e.q.own
	o.mu.Lock()
	o.slab.FreeRing(e.ring)
	o.mu.Unlock()
	e.hasRing = false
}

// ack sends a pure ACK for what the flow owes. Under the owner's lock.
func (e *Owned) ack(clk fastflow.Clock) {
	q := e.q
	f := q.own.slab.Flow(e.idx)
	q.txMu.Lock()
	defer q.txMu.Unlock()
	addr, ok := q.allocFrame()
	if !ok {
		q.txNoFrame.Add(1)
		return
	}
	n, r := f.Ack(q.io.Frame(addr), clk)
	if r != fastflow.OK {
		q.io.Free(addr)
		return
	}
	if !q.enqueueOne(addr, n) {
		q.txNoFrame.Add(1)
		return
	}
	q.txPackets.Add(1)
	q.own.segsOut.Add(1)
	q.own.pureAcks.Add(1)
}

// demote hands the connection back to netstack: the flow's state, the
// bytes in flight and unsent, then frees the flow. Under the owner's
// lock.
func (e *Owned) demote(reason int) {
	o := &e.q.own
	f := o.slab.Flow(e.idx)
	st := f.Export()
	clk, now := o.now()
	h := handOver(&st, clk, now)
	var inflight, unsent []byte
	if e.hasRing {
		ring := o.slab.Ring(e.ring)
		mask := uint32(len(ring) - 1)
		bytesOf := func(from, n uint32) []byte {
			b := make([]byte, n)
			at := from & mask
			c := copy(b, ring[at:])
			copy(b[c:], ring)
			return b
		}
		inflight = bytesOf(st.SndUna, st.SndNxt-st.SndUna)
		unsent = bytesOf(st.SndNxt, f.Unsent())
	}
	e.live = false
	o.mu.Lock()
	delete(o.table, e.key)
	o.cache[e.key.slot()].CompareAndSwap(e, nil)
	o.slab.Free(e.idx)
	if e.hasRing {
		o.slab.FreeRing(e.ring)
		e.hasRing = false
	}
	o.n.Add(-1)
	o.mu.Unlock()
	o.demotions[reason].Add(1)
	e.owner.Owned(nil)
	if err := e.ep.TakeBack(&h, inflight, unsent); err != nil {
		// netstack refused the connection's state: nothing can
		// continue it correctly, so it ends (a parked endpoint sends
		// nothing; the peer's next segment draws a reset). Counted: it
		// is a bug.
		o.takeBackFailed.Add(1)
		e.ep.Abort()
	}
}

// handOver turns the flow's exported state back into netstack's terms,
// its times relative to now (clk is now's Clock).
func handOver(st *fastflow.State, clk fastflow.Clock, now tcpip.MonotonicTime) tcp.HandOver {
	// at turns a Clock.Us into the stack's time: past (a send) or
	// future (a probe deadline), by their signed difference.
	at := func(us uint32) tcpip.MonotonicTime {
		return now.Add(time.Duration(int32(us-clk.Us)) * time.Microsecond)
	}
	h := tcp.HandOver{
		SndUna: st.SndUna, SndNxt: st.SndNxt, SndWnd: st.SndWnd, SndWL1: st.SndWL1, SndWL2: st.SndWL2,
		SndShift: st.SndShift, MSS: st.MSS, Cwnd: st.Cwnd,
		RcvNxt: st.RcvNxt, RcvEdge: st.RcvEdge, RcvSpace: st.RcvSpace, RcvShift: st.RcvShift,
		TS: st.TS, TSRecent: st.TSRecent, TSVal: st.TSOffset + clk.Ms, LastAckSent: st.LastAckSent,
		SRTT:   time.Duration(st.SRTT) * time.Microsecond,
		RTTVar: time.Duration(st.RTTVar) * time.Microsecond,
		RTO:    time.Duration(st.RTO) * time.Microsecond,
		Now:    now, AckOwed: st.AckOwed, TTL: st.TTL, TOS: st.TOS,
	}
	for _, s := range st.InFlight {
		h.InFlight = append(h.InFlight, tcp.HandOverSeg{End: s.End, At: at(s.At)})
	}
	if st.Probe && len(st.InFlight) > 0 {
		h.Probe, h.ProbeAt = true, at(st.ProbeAt)
	}
	return h
}
