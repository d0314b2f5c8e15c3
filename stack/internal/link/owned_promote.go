package link

import (
	"github.com/ustack-dev/ustack/internal/third_party/gvisor/pkg/tcpip"
	"github.com/ustack-dev/ustack/internal/third_party/gvisor/pkg/tcpip/transport/tcp"
	"github.com/ustack-dev/ustack/stack/internal/fastflow"
)

// ownCand is a promotion candidate: its endpoint and owner, and the MAC
// its segment came from (the way back).
type ownCand struct {
	ep    *tcp.Endpoint
	owner Owner
	key   ownKey
	mac   [6]byte
}

// noteCandidate records that the batch delivered a segment of ep's, for
// promotion once the batch's TCP processing is done. The worker's.
// The flow cache's slot (nil if the segment's connection is not in it)
// remembers ep's owner, or that it has none, until an owner registers or
// goes: a net.Conn's segments then cost no lookup.
func (f *Demux) noteCandidate(q *queue, ep *tcp.Endpoint, slot *flowSlotEntry, key *ownKey, frame []byte) {
	if len(q.own.cands) == BatchSize {
		return
	}
	var owner Owner
	gen := f.ep.ownersGen.Load()
	if slot != nil && slot.ep == ep && slot.ownerGen == gen {
		owner = slot.owner
	} else {
		owner = f.ep.ownerOf(ep)
		if slot != nil && slot.ep == ep {
			slot.owner, slot.ownerGen = owner, gen
		}
	}
	if owner == nil {
		return
	}
	for i := range q.own.cands {
		if q.own.cands[i].ep == ep {
			return
		}
	}
	c := ownCand{ep: ep, owner: owner, key: *key}
	copy(c.mac[:], frame[6:12])
	q.own.cands = append(q.own.cands, c)
}

// promote hands the batch's candidates to the owned fast path where they
// are quiet; the worker's, after the batch's TCP processing.
func (f *Demux) promote(q *queue) {
	for i := range q.own.cands {
		c := &q.own.cands[i]
		f.promoteOne(q, c)
		*c = ownCand{}
	}
	q.own.cands = q.own.cands[:0]
}

// maxHandOutSegs is the most segments in flight a connection is promoted
// with: the flow's in-flight record.
const maxHandOutSegs = 8

func (f *Demux) promoteOne(q *queue, c *ownCand) {
	if f.ep.ownOff.Load() || !c.owner.TryLock() {
		return
	}
	defer c.owner.Unlock()
	if !c.owner.Ownable() {
		return
	}
	o := &q.own
	var buf [2048]byte
	h, unacked, miss := c.ep.HandOut(buf[:0], maxHandOutSegs)
	if miss != tcp.HandOutOK {
		o.promoteRefused[miss].Add(1)
		return
	}
	st := f.fastState(&h, c)
	key := c.key
	o.mu.Lock()
	if f.ep.ownOff.Load() {
		// DisownAll came between the look above and here: it sees the
		// table under this lock, so nothing joins it now.
		o.mu.Unlock()
		giveBack(o, c.ep, &h, unacked)
		return
	}
	if o.slab == nil {
		s, err := fastflow.NewSlab(OwnedSlab)
		if err != nil {
			o.mu.Unlock()
			giveBack(o, c.ep, &h, unacked)
			o.promoteRefused[0].Add(1)
			return
		}
		o.slab, o.table = s, make(map[ownKey]*Owned)
	}
	idx, err := o.slab.Alloc()
	var ring uint32
	if err == nil && len(unacked) > 0 {
		if ring, err = o.slab.AllocRing(); err != nil {
			o.slab.Free(idx)
		}
	}
	if err == nil {
		var r []byte
		if len(unacked) > 0 {
			r = o.slab.Ring(ring)
		}
		if err = o.slab.Flow(idx).InitInFlight(&st, r, unacked); err != nil {
			o.slab.Free(idx)
			if len(unacked) > 0 {
				o.slab.FreeRing(ring)
			}
		}
	}
	if err != nil {
		o.mu.Unlock()
		giveBack(o, c.ep, &h, unacked)
		o.promoteRefused[0].Add(1)
		return
	}
	// Made per promotion, never reused: a lookup without the lock may
	// hold it after its demotion, and reads only its key and owner.
	e := &Owned{q: q, idx: idx, ring: ring, hasRing: len(unacked) > 0, key: key, live: true, ep: c.ep, owner: c.owner}
	o.table[key] = e
	o.cache[key.slot()].Store(e)
	o.n.Add(1)
	o.mu.Unlock()
	o.promotions.Add(1)
	c.owner.Owned(e)
	if c.ep.HoldsSegments() {
		// A segment came through netstack's ordinary path between the
		// hand-out and the table's entry, where the hook could not
		// find the connection.
		e.heldSegment()
	}
	clk := q.batchClock()
	if owed, _ := o.slab.Flow(idx).AckOwed(); owed && o.delack == 0 {
		e.ack(clk)
	}
	o.arm(e, clk)
}

// ownedDelack is the delayed-ACK time in microseconds the owned fast
// path keeps (fastflow.DelayedAck unless configured otherwise).
func (e *Endpoint) ownedDelack() uint32 {
	if len(e.queues) == 0 || e.queues[0].own.delack == 0 {
		return 0
	}
	return e.queues[0].own.delack
}

// giveBack returns a connection handed out and not carried after all to
// netstack as it was; if netstack refused its own state, nothing can
// continue the connection correctly, so it ends (counted).
func giveBack(o *owned, ep *tcp.Endpoint, h *tcp.HandOver, unacked []byte) {
	if err := ep.TakeBack(h, unacked, nil); err != nil {
		o.takeBackFailed.Add(1)
		ep.Abort()
	}
}

// fastState turns netstack's hand-over into the flow's State (IPv4).
func (f *Demux) fastState(h *tcp.HandOver, c *ownCand) fastflow.State {
	key := &c.key
	clk := fastflow.ClockAt(h.Now.Sub(tcpip.MonotonicTime{}).Nanoseconds())
	st := fastflow.State{
		DstMAC: c.mac, SrcIP: key.la, DstIP: key.ra, SrcPort: key.lp, DstPort: key.rp,
		TTL: h.TTL, TOS: h.TOS,
		SndUna: h.SndUna, SndNxt: h.SndNxt, SndWnd: h.SndWnd, SndWL1: h.SndWL1, SndWL2: h.SndWL2,
		SndShift: h.SndShift, MSS: h.MSS, Cwnd: h.Cwnd,
		RcvNxt: h.RcvNxt, RcvEdge: h.RcvEdge, RcvShift: h.RcvShift,
		// What the window field can say at our scale (netstack's buffer
		// may be larger than an unscaled window).
		RcvSpace: min(h.RcvSpace, 0xffff<<h.RcvShift),
		TS:       h.TS, TSRecent: h.TSRecent, TSOffset: h.TSVal - clk.Ms, LastAckSent: h.LastAckSent,
		SRTT: uint32(h.SRTT.Microseconds()), RTTVar: uint32(h.RTTVar.Microseconds()), RTO: uint32(h.RTO.Microseconds()),
	}
	copy(st.SrcMAC[:], f.mac)
	if h.LastAckSent != h.RcvNxt {
		// netstack owed an ACK (its delayed-ACK timer, stopped by the
		// hand-out): due as netstack would have sent it, about.
		st.AckOwed = true
		st.DelAckAt = clk.Us + f.ep.ownedDelack()
	}
	us := func(t tcpip.MonotonicTime) uint32 {
		return fastflow.ClockAt(t.Sub(tcpip.MonotonicTime{}).Nanoseconds()).Us
	}
	for _, s := range h.InFlight {
		st.InFlight = append(st.InFlight, fastflow.Sent{End: s.End, At: us(s.At)})
	}
	st.Probe = h.Probe
	if h.ProbeAt != (tcpip.MonotonicTime{}) {
		st.ProbeAt = us(h.ProbeAt)
	}
	return st
}
