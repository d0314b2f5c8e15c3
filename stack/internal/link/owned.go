package link

import (
	"sync"
	"sync/atomic"
	"time"

	"github.com/ustack-dev/ustack/internal/third_party/gvisor/pkg/tcpip"
	"github.com/ustack-dev/ustack/internal/third_party/gvisor/pkg/tcpip/transport/tcp"
	"github.com/ustack-dev/ustack/stack/internal/fastflow"
)

// The owned fast path: ustack, not netstack, carries an established
// connection while it is in the common case (in order, loss-free, not
// limited by the window). Its state is a fastflow.Flow in the queue's
// slab; the worker receives its segments with header prediction
// (fastflow.Flow.Receive), gives the payload to the connection's owner
// (a handler's stream, or a connection read on the worker: a queue
// pair's) straight from the frame, and cuts the owner's
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
// stream, or a connection read on the worker (a queue pair's). Every
// method but Lock, TryLock and End is called with its lock held.
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
	// Begin is called before each segment the fast path receives for
	// the connection. If it returns false the owner cannot take bytes
	// now: the connection goes back to netstack (DemoteOwner), which
	// takes the segment. Otherwise End follows, after the segment.
	Begin() bool
	// Traffic gives the owner bytes that arrived in order; b is the
	// receive frame, valid only during the call.
	Traffic(b []byte)
	// End is called after each segment Begin admitted, once the fast
	// path is done with it and the lock is released: an owner that
	// answers outside its lock (a queue pair's engine, whose writes
	// take it) answers here, what it writes carrying the segment's ACK.
	End()
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
	// inRx is set while the worker gives the owner a segment's bytes
	// (Traffic), under the owner's lock: its writes then take the
	// segment's time (owned.rxClock) instead of reading the clock.
	inRx  bool
	ep    *tcp.Endpoint
	owner Owner
	// held is set when the parked endpoint holds a segment that came
	// through netstack's ordinary path (HeldSegment): the queue's tick
	// hands the connection back, and netstack processes it.
	held atomic.Bool
}

// heldSegment marks e for demotion at the queue's next tick: its parked
// endpoint holds a segment.
func (e *Owned) heldSegment() {
	e.held.Store(true)
	e.q.own.tick.Push()
}

// HeldSegment is netstack's hook (tcp.SetHeldHook): a parked endpoint
// holds a segment of its connection that came through netstack's ordinary
// path (IP options, a fragment, a race with the hand-out). The queue that
// carries the connection hands it back at its next tick, and netstack
// processes the segment then. Called with ep's lock held: it takes only
// the queues' table locks.
func (e *Endpoint) HeldSegment(ep *tcp.Endpoint) {
	id := ep.ID
	if id.LocalAddress.Len() != 4 || id.RemoteAddress.Len() != 4 {
		return
	}
	key := ownKey{la: id.LocalAddress.As4(), ra: id.RemoteAddress.As4(), lp: id.LocalPort, rp: id.RemotePort}
	for _, q := range e.queues {
		o := &q.own
		o.mu.Lock()
		own := o.table[key]
		o.mu.Unlock()
		if own != nil && own.ep == ep {
			own.heldSegment()
			return
		}
	}
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
	// (the Owned whose inRx is set), for the owner's writes during the
	// call. Worker only.
	rxClock fastflow.Clock
	// chaos, if set, is asked before each segment whether to demote the
	// connection first (tests: demotions at random points).
	chaos func() bool

	promotions, pureAcks               atomic.Uint64
	takeBackFailed                     atomic.Uint64 // netstack refused a demotion's state (a bug)
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
	// DemoteClose: the owner closed or shut the connection down, or
	// the stack is closing (DisownAll).
	DemoteClose
	// DemoteOwner: the owner asked (its writes held back, say).
	DemoteOwner
	// DemoteHeld: netstack holds a segment of the connection that came
	// through its ordinary path (Owned.HeldSegment).
	DemoteHeld
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
	TakeBackFailed    uint64
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
	case DemoteHeld:
		return "held"
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

// DisownAll hands every connection the owned fast path carries back to
// netstack and promotes none from then on: before the stack aborts its
// endpoints (its Close), so that each ends with the RST netstack sends,
// as any other connection does. Not from a handler: it takes every
// owner's lock.
func (e *Endpoint) DisownAll() {
	e.ownOff.Store(true)
	for _, q := range e.queues {
		for _, own := range q.own.carried() {
			own.owner.Lock()
			if own.live {
				own.demote(DemoteClose)
			}
			own.owner.Unlock()
		}
	}
}

// carried returns the connections the queue carries now, a snapshot
// taken under the table's lock: each may be demoted by the time its
// owner's lock is taken (its live says).
func (o *owned) carried() []*Owned {
	o.mu.Lock()
	defer o.mu.Unlock()
	live := make([]*Owned, 0, len(o.table))
	for _, e := range o.table {
		live = append(live, e)
	}
	return live
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
		PureAcks: o.pureAcks.Load(), Flows: int(o.n.Load()), TakeBackFailed: o.takeBackFailed.Load(),
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
