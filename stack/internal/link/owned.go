package link

import (
	"sync"
	"sync/atomic"
	"time"

	"github.com/ustack-dev/ustack/internal/third_party/gvisor/pkg/tcpip"
	"github.com/ustack-dev/ustack/internal/third_party/gvisor/pkg/tcpip/transport/tcp"
	"github.com/ustack-dev/ustack/stack/internal/fastflow"
	"github.com/ustack-dev/ustack/stack/internal/trace"
	"github.com/ustack-dev/ustack/xsk"
)

// The owned fast path: ustack, not netstack, carries an established
// connection while it is in the common case (in order, loss-free, not
// limited by the window). Its state is a fastflow.Flow in the queue's
// slab; the worker receives its segments with header prediction
// (fastflow.Flow.Receive), gives the payload to the connection's owner
// (a handler's stream) straight from the frame, and cuts the owner's
// writes from the flow's send ring into TX frames behind the header
// template (Flow.Cut). netstack keeps the connection parked meanwhile
// (tcp.Endpoint.HandOut) and takes it back (TakeBack) with the flow's
// state, its in-flight and unsent bytes, at the first thing the fast
// path does not do: any segment Receive declines (the same segment then
// goes netstack's way), a write the ring or the window cannot take, a
// retransmission deadline, a close.
//
// Promotion happens on the worker after a batch's TCP processing, for
// the connections whose segments the batch delivered: a connection whose
// owner is quiet (nothing held back, not closing) and that netstack finds
// quiet (no loss recovery, nothing unsent, at most a few segments in
// flight) is handed out.
//
// Locking: the owner's lock (Owner.Lock) guards the flow; a flow is
// touched only under it, whichever goroutine does. The queue's table of
// flows has its own lock, taken inside the owner's; the TX lock is taken
// inside both.

// Owner is a connection the owned fast path can carry: a handler's
// stream. Every method but Lock and TryLock is called with its lock held.
type Owner interface {
	sync.Locker
	TryLock() bool
	// Ownable reports whether the owner's side is quiet: nothing written
	// and held back, no close under way.
	Ownable() bool
	// Owned tells the owner its connection is carried by o (promotion)
	// or, with nil, by netstack again (demotion): writes go to o.Write
	// while it is owned.
	Owned(o *Owned)
	// Traffic gives the owner bytes that arrived in order; b is the
	// receive frame, valid only during the call.
	Traffic(b []byte)
}

// OwnedSlab sizes each queue's owned flows: at most this many
// connections per queue are carried at once, each with a send ring of
// this many bytes (a write that does not fit demotes).
var OwnedSlab = fastflow.SlabConfig{Flows: 1024, RingSize: 16 << 10}

// ownKey is an IPv4 connection's four-tuple, local first.
type ownKey struct {
	la, ra [4]byte
	lp, rp uint16
}

// Owned is one connection the owned fast path carries: its flow's place
// in the queue's slab, and the netstack endpoint parked meanwhile.
type Owned struct {
	q       *queue
	idx     uint32
	ring    uint32 // the flow's send ring while hasRing
	hasRing bool   // the flow holds bytes written and unacknowledged
	// ackQueued: on the queue's list of ACKs to send at the batch's end
	// (owned.acks).
	ackQueued bool
	key       ownKey
	live      bool // under the owner's lock: the flow is the connection's
	ep        *tcp.Endpoint
	owner     Owner
}

// owned is a queue's owned fast path.
type owned struct {
	// n is how many flows the queue carries: early demux looks a
	// segment up only when it is not zero.
	n atomic.Int32

	mu    sync.Mutex // guards table, the cache's writes and slab's free lists
	table map[ownKey]*Owned
	slab  *fastflow.Slab
	// cache is a direct-mapped view of table for the worker's lookups
	// without the lock: written under mu as table changes, read with
	// atomics. A connection found there may have been demoted since (its
	// Owned's live, under the owner's lock, says); promotions happen on
	// the worker only, so none can come between a lookup and its use.
	cache [ownCacheSize]atomic.Pointer[Owned]

	// acks are the connections owed an ACK now that no reply carried
	// yet, sent at the batch's end (worker only).
	acks []*Owned
	// cands are the connections the worker's batch delivered segments
	// for whose owners could be promoted (worker only).
	cands []ownCand

	timerMu sync.Mutex
	timer   *time.Timer // the queue's deadlines: delayed ACKs and retransmissions
	// armedAt is the Clock.Us the timer fires at, with bit 32 set; 0
	// while it is not armed. Written under timerMu.
	armedAt atomic.Uint64
	stopped bool  // the endpoint stopped: never armed again (timerMu)
	tick    Ready // the timer's work, on a worker

	clock tcpip.Clock
	// busyToMono turns the worker's busyClock into the stack clock's
	// time since its zero, at most a few nanoseconds behind it.
	busyToMono time.Duration
	delack     uint32 // µs an owed ACK may wait for a reply (0: none)
	// rxClock is the Clock of the segment the worker is giving an owner
	// (inRx, rxOwner: whose), for the owner's writes during the call.
	// Worker only.
	rxClock fastflow.Clock
	inRx    bool
	rxOwner Owner
	// chaos, if set, is asked before each segment whether to demote the
	// connection first (tests: demotions at random points).
	chaos func() bool

	promotions, pureAcks               atomic.Uint64
	segsIn, segsOut, bytesIn, bytesOut atomic.Uint64
	demotions                          [NumDemoteReasons]atomic.Uint64
	// promoteRefused counts the promotions netstack refused, by
	// tcp.HandOutMiss; [tcp.HandOutOK] those the fast path itself could
	// not take (slab full, a state it does not carry).
	promoteRefused [tcp.NumHandOutMiss]atomic.Uint64
}

// Demotion reasons beyond fastflow's: why the connection went back to
// netstack other than a segment or a send the fast path declined.
const (
	// DemoteTimeout: data in flight past the retransmission deadline.
	DemoteTimeout = fastflow.NumReasons + iota
	// DemoteClose: the owner closed or shut the connection down.
	DemoteClose
	// DemoteOwner: the owner asked (its writes held back, say).
	DemoteOwner
	numOwnReasonsEnd
)

const numOwnReasons = numOwnReasonsEnd - fastflow.NumReasons

// NumDemoteReasons is the length of the demotion counters: fastflow's
// reasons, then DemoteTimeout, DemoteClose and DemoteOwner.
const NumDemoteReasons = fastflow.NumReasons + numOwnReasons

// ownCacheSize is the number of slots of owned.cache.
const ownCacheSize = 256

// slot is key's place in owned.cache.
func (k *ownKey) slot() int {
	h := uint32(k.rp)*0x9e3779b1 ^ uint32(k.lp)*0x85ebca6b ^ uint32(k.ra[3])*0xc2b2ae35 ^ uint32(k.ra[2])*0x27d4eb2f
	return int(h>>24) % ownCacheSize
}

// ownCand is a promotion candidate: its endpoint and owner, and the MAC
// its segment came from (the way back).
type ownCand struct {
	ep    *tcp.Endpoint
	owner Owner
	key   ownKey
	mac   [6]byte
}

// OwnedCounters are a queue's owned fast path's counters.
type OwnedCounters struct {
	Promotions uint64
	// PromoteRefused counts refused promotions by tcp.HandOutMiss
	// ([tcp.HandOutOK]: refused by the fast path, not netstack).
	PromoteRefused    [tcp.NumHandOutMiss]uint64
	Demotions         [NumDemoteReasons]uint64
	SegsIn, SegsOut   uint64
	BytesIn, BytesOut uint64
	PureAcks          uint64
	Flows             int
}

// DemoteReasonName returns demotion reason r's metric label.
func DemoteReasonName(r int) string {
	switch r {
	case DemoteTimeout:
		return "timeout"
	case DemoteClose:
		return "close"
	case DemoteOwner:
		return "owner"
	}
	return fastflow.Reason(r).String()
}

// RegisterOwner marks ep's connection as one the owned fast path may
// carry, for owner (until UnregisterOwner). It is off unless the
// endpoint's owned fast path is on (SetOwned).
func (e *Endpoint) RegisterOwner(ep *tcp.Endpoint, owner Owner) {
	if !e.ownOn {
		return
	}
	e.ownersMu.Lock()
	if e.owners == nil {
		e.owners = make(map[*tcp.Endpoint]Owner)
	}
	e.owners[ep] = owner
	e.ownersGen.Add(1)
	e.ownersMu.Unlock()
}

// UnregisterOwner forgets ep's owner. The connection must not be owned.
func (e *Endpoint) UnregisterOwner(ep *tcp.Endpoint) {
	if !e.ownOn {
		return
	}
	e.ownersMu.Lock()
	delete(e.owners, ep)
	e.ownersGen.Add(1)
	e.ownersMu.Unlock()
}

// ownerOf returns ep's registered owner, or nil.
func (e *Endpoint) ownerOf(ep *tcp.Endpoint) Owner {
	e.ownersMu.Lock()
	o := e.owners[ep]
	e.ownersMu.Unlock()
	return o
}

// SetOwned turns the owned fast path on (before the workers start):
// clock is netstack's, and delack the longest an ACK owed waits for a
// reply to carry it (0 or less: none; an ACK goes out as the handler's
// call returns without a reply).
func (e *Endpoint) SetOwned(on bool, clock tcpip.Clock, delack time.Duration) {
	e.ownOn = on
	// The stack clock's reading less busyClock's, read in that order so
	// that a time derived from busyClock is never ahead of the stack
	// clock's (a timestamp must not go back when netstack takes a
	// connection back).
	mono := clock.NowMonotonic().Sub(tcpip.MonotonicTime{})
	busyToMono := mono - busyClock()
	for _, q := range e.queues {
		q.own.clock = clock
		q.own.busyToMono = busyToMono
		q.own.delack = uint32(max(delack, 0) / time.Microsecond)
		q.own.tick.Init(&e.ready, q.ownedTick, 0)
	}
}

// SetOwnedChaos has every queue's owned fast path ask chaos, before each
// segment of a connection it carries, whether to hand the connection back
// to netstack first (DemoteOwner): tests of the hand-over at random
// points. Set it before traffic starts; nil stops it.
func (e *Endpoint) SetOwnedChaos(chaos func() bool) {
	for _, q := range e.queues {
		q.own.chaos = chaos
	}
}

// OwnedCounters returns a snapshot of queue i's owned fast path counters.
func (e *Endpoint) OwnedCounters(i int) OwnedCounters {
	o := &e.queues[i].own
	c := OwnedCounters{
		Promotions: o.promotions.Load(),
		SegsIn:     o.segsIn.Load(), SegsOut: o.segsOut.Load(),
		BytesIn: o.bytesIn.Load(), BytesOut: o.bytesOut.Load(),
		PureAcks: o.pureAcks.Load(), Flows: int(o.n.Load()),
	}
	for j := range c.Demotions {
		c.Demotions[j] = o.demotions[j].Load()
	}
	for j := range c.PromoteRefused {
		c.PromoteRefused[j] = o.promoteRefused[j].Load()
	}
	return c
}

// now returns the fast path's Clock and the stack clock's time it is of.
func (o *owned) now() (fastflow.Clock, tcpip.MonotonicTime) {
	t := o.clock.NowMonotonic()
	return fastflow.ClockAt(t.Sub(tcpip.MonotonicTime{}).Nanoseconds()), t
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

// sendAcks sends the ACKs the batch's segments made owed now and no reply
// carried; the worker's, at the batch's end.
func (q *queue) sendAcks() {
	o := &q.own
	clk := q.batchClock()
	for i, e := range o.acks {
		e.owner.Lock()
		e.ackQueued = false
		if e.live {
			if owed, _ := o.slab.Flow(e.idx).AckOwed(); owed {
				e.ack(clk)
			}
		}
		e.owner.Unlock()
		o.acks[i] = nil
	}
	o.acks = o.acks[:0]
}

// batchClock returns the Clock of the RX batches the worker is
// delivering (from its reading as they began), or the clock's now
// outside them.
func (q *queue) batchClock() fastflow.Clock {
	if q.rxStart != 0 {
		return fastflow.ClockAt(int64(q.rxStart + q.own.busyToMono))
	}
	clk, _ := q.own.now()
	return clk
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
	if !c.owner.TryLock() {
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
	if o.slab == nil {
		s, err := fastflow.NewSlab(OwnedSlab)
		if err != nil {
			o.mu.Unlock()
			giveBack(c.ep, &h, unacked)
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
		giveBack(c.ep, &h, unacked)
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
// continue the connection correctly, so it ends as a TCP would (RST).
func giveBack(ep *tcp.Endpoint, h *tcp.HandOver, unacked []byte) {
	if err := ep.TakeBack(h, unacked, nil); err != nil {
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
	for _, s := range h.InFlight {
		st.InFlight = append(st.InFlight, fastflow.Sent{End: s.End, At: fastflow.ClockAt(s.At.Sub(tcpip.MonotonicTime{}).Nanoseconds()).Us})
	}
	return st
}

// ownedLookup returns the owned connection a segment of key is for, or
// nil.
func (q *queue) ownedLookup(key *ownKey) *Owned {
	o := &q.own
	slot := &o.cache[key.slot()]
	if e := slot.Load(); e != nil && e.key == *key {
		return e
	}
	o.mu.Lock()
	e := o.table[*key]
	if e != nil {
		slot.Store(e)
	}
	o.mu.Unlock()
	return e
}

// ownedReceive offers an owned connection's segment (frame, checksums
// verified) to the fast path, and reports whether it took it. If not,
// the connection is netstack's again and the caller delivers the same
// segment the ordinary way.
func (q *queue) ownedReceive(e *Owned, frame []byte) bool {
	owner := e.owner
	owner.Lock()
	defer owner.Unlock()
	if !e.live {
		return false
	}
	o := &q.own
	if o.chaos != nil && o.chaos() {
		e.demote(DemoteOwner)
		return false
	}
	f := o.slab.Flow(e.idx)
	// The batch's time, read by the worker as it began: no clock read
	// per segment. The handler's writes during Traffic take it too.
	clk := q.batchClock()
	o.rxClock, o.inRx, o.rxOwner = clk, true, owner
	defer func() { o.inRx, o.rxOwner = false, nil }()
	in, r := f.Receive(frame, clk)
	if r != fastflow.OK {
		e.demote(int(r))
		return false
	}
	o.segsIn.Add(1)
	if len(in.Payload) > 0 {
		o.bytesIn.Add(uint64(len(in.Payload)))
		owner.Traffic(in.Payload)
	}
	if !e.live {
		return true // the owner's write or close demoted it
	}
	if e.send(clk) {
		if owed, due := f.AckOwed(); owed {
			switch {
			case in.AckNow || o.delack == 0:
				// At the batch's end, if no reply carries it by then:
				// one pure ACK a flow a batch, however many of its
				// segments the batch held.
				if !e.ackQueued {
					e.ackQueued = true
					o.acks = append(o.acks, e)
				}
			case o.delack != fastflow.DelayedAck && due == clk.Us+fastflow.DelayedAck:
				// Owed since this segment: due after Config.DelayedAck.
				f.SetAckDue(clk.Us + o.delack)
			}
		}
	}
	if e.live {
		o.arm(e, clk)
	}
	return true
}

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
	clk := o.rxClock
	if !o.inRx || e.q.own.rxOwner != e.owner {
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
	if t := q.trace; t != nil && len(descs) > 0 {
		t.Mark(trace.StageTxRing)
	}
	enq := q.io.Enqueue(descs)
	for _, d := range descs[enq:] {
		// The TX ring is full: the segments were cut, so they are in
		// flight as far as the flow knows, and are lost as on a wire.
		q.io.Free(d.Addr)
	}
	q.txFrames.Add(uint64(enq))
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
	q.txDescs[0] = xsk.Desc{Addr: addr, Len: uint32(n)}
	if q.io.Enqueue(q.txDescs[:1]) != 1 {
		q.io.Free(addr)
		q.txNoFrame.Add(1)
		return
	}
	q.txFrames.Add(1)
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
		// netstack refused its own connection's state: nothing can
		// continue it correctly, so end it as a TCP would (RST).
		e.ep.Abort()
	}
}

// handOver turns the flow's exported state back into netstack's terms,
// its times relative to now (clk is now's Clock).
func handOver(st *fastflow.State, clk fastflow.Clock, now tcpip.MonotonicTime) tcp.HandOver {
	at := func(us uint32) tcpip.MonotonicTime {
		return now.Add(-time.Duration(clk.Us-us) * time.Microsecond)
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
	return h
}

// arm makes sure the queue's timer fires by e's next deadline: its owed
// ACK's, or its retransmission deadline while data is in flight. The
// timer is armed for the earliest deadline and re-armed only when it
// fires, not per request: a deadline later than the armed one costs a
// comparison. clk is the caller's Clock. Under e's owner's lock.
func (o *owned) arm(e *Owned, clk fastflow.Clock) {
	f := o.slab.Flow(e.idx)
	owed, due := f.AckOwed()
	var at uint32
	switch {
	case owed:
		at = due
	case f.InFlight() > 0:
		at = f.ProbeAt()
	default:
		return
	}
	if a := o.armedAt.Load(); a != 0 && int32(uint32(a)-at) <= 0 {
		return
	}
	wait := time.Duration(max(int32(at-clk.Us), 0)) * time.Microsecond
	o.timerMu.Lock()
	defer o.timerMu.Unlock()
	if a := o.armedAt.Load(); o.stopped || a != 0 && int32(uint32(a)-at) <= 0 {
		return
	}
	o.armedAt.Store(uint64(at) | 1<<32)
	if o.timer == nil {
		o.timer = time.AfterFunc(wait, o.fire)
		return
	}
	o.timer.Reset(wait)
}

// stopOwned stops the queue's timer (the endpoint closing).
func (q *queue) stopOwned() {
	o := &q.own
	o.timerMu.Lock()
	if o.timer != nil {
		o.timer.Stop()
	}
	o.stopped = true
	o.timerMu.Unlock()
}

// fire is the timer's: it has a worker run ownedTick.
func (o *owned) fire() {
	o.timerMu.Lock()
	o.armedAt.Store(0)
	o.timerMu.Unlock()
	o.tick.Push()
}

// ownedTick sends the ACKs owed past their deadline and demotes the flows
// whose data is in flight past its retransmission deadline (netstack then
// retransmits), then re-arms the timer for the next deadline. On a
// worker.
func (q *queue) ownedTick() {
	o := &q.own
	o.mu.Lock()
	live := make([]*Owned, 0, len(o.table))
	for _, e := range o.table {
		live = append(live, e)
	}
	o.mu.Unlock()
	for _, e := range live {
		owner := e.owner
		if !owner.TryLock() {
			// Busy elsewhere: look again soon.
			clk, _ := o.now()
			o.timerMu.Lock()
			if !o.stopped {
				o.armedAt.Store(uint64(clk.Us+1000) | 1<<32)
				o.timer.Reset(time.Millisecond)
			}
			o.timerMu.Unlock()
			continue
		}
		if e.live {
			q.ownedDeadlines(e)
		}
		owner.Unlock()
	}
	q.flushTx()
}

// ownedDeadlines acts on e's deadlines that have passed. Under its
// owner's lock.
func (q *queue) ownedDeadlines(e *Owned) {
	o := &q.own
	f := o.slab.Flow(e.idx)
	clk, _ := o.now()
	if f.InFlight() > 0 && int32(clk.Us-f.ProbeAt()) >= 0 {
		// The tail loss probe's deadline: netstack, taking the
		// connection back, sends the probe (or retransmits) at once.
		e.demote(DemoteTimeout)
		return
	}
	if owed, due := f.AckOwed(); owed && int32(clk.Us-due) >= 0 {
		e.ack(clk)
	}
	if f.InFlight() == 0 && f.Unsent() == 0 {
		// Idle since at least the last deadline: the ring goes back
		// (kept between a flow's requests, so as not to take and give
		// it back per reply).
		e.dropRing()
	}
	o.arm(e, clk)
}
