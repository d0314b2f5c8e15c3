package link

import (
	"encoding/binary"
	"runtime"
	"time"

	"github.com/ustack-dev/ustack/internal/third_party/gvisor/pkg/buffer"
	"github.com/ustack-dev/ustack/internal/third_party/gvisor/pkg/tcpip"
	gstack "github.com/ustack-dev/ustack/internal/third_party/gvisor/pkg/tcpip/stack"
	"github.com/ustack-dev/ustack/offload"
	"github.com/ustack-dev/ustack/xsk"
)

// The RX path: one worker per queue takes RX batches, verifies and
// copies each frame once into netstack, lets the goroutines whose
// requests the fast path queued read and reply, then runs the rest of
// the TCP processing the batch calls for (the ACKs those requests
// carried among it) before it yields to the goroutines that woke.

// spinYield is how many empty polls a spinning worker makes between
// yields to other goroutines on its P when the workers may hold every P
// of the process (see idleYieldEvery).
const spinYield = 16

// spinYieldShared is the same when the process has more Ps than workers.
// A yield then wakes an idle P's thread (runtime.Gosched puts the worker
// on the global run queue and calls wakep), which on a small machine
// takes the CPU the peer or the application runs on, several µs of it
// each time; and a goroutine readied on the worker's P is stolen by an
// idle P anyway.
const spinYieldShared = 8192

// idleYieldEvery is how many empty polls a spinning worker makes between
// yields of its P, in a process with procs Ps and workers workers: when
// every P may be a worker's, nothing but the worker's yield runs the
// other goroutines.
func idleYieldEvery(procs, workers int) int {
	if procs > workers {
		return spinYieldShared
	}
	return spinYield
}

// osYield is how many empty polls a spinning worker makes between yields
// of its OS thread (sched_yield).
const osYield = 256

// osYieldBusy is the longest a worker that keeps finding work holds its
// CPU without a yield of its OS thread. Under a flood the RX ring is
// seldom empty for osYield polls in a row, and the threads that wake on
// the worker's CPU meanwhile (the application's, a local peer's, the
// softirq work they raise) would otherwise wait for the scheduler to
// preempt the worker at the end of its slice, a millisecond or more, at
// each step of a legitimate connection. A yield with nothing else
// runnable costs a syscall, under 1% of osYieldBusy.
const osYieldBusy = 50 * time.Microsecond

func (e *Endpoint) loadDispatcher() gstack.NetworkDispatcher {
	e.mu.RLock()
	d := e.dispatcher
	e.mu.RUnlock()
	return d
}

// workerState is what a worker's loop carries from one turn to the next.
type workerState struct {
	idle      int       // empty polls in a row
	idleSince time.Time // when the idle spell began (Adaptive)
	behind    int       // loops in a row that left a full batch on the RX ring
	// yieldEvery is idleYieldEvery for the process as it was when last
	// read: runtime.GOMAXPROCS takes the scheduler's lock, so the worker
	// reads it when it starts and then only every osYield empty polls,
	// not at every request.
	yieldEvery int
	// lastOSYield is when the worker last yielded its thread
	// (busyClock).
	lastOSYield time.Duration
}

// worker runs one queue's RX loop until the endpoint stops. Each turn
// kicks what writers queued and serves connections made readable
// (startTurn), then either handles what the RX ring holds (received) or
// waits for more as the polling policy says (idleTurn).
func (e *Endpoint) worker(i int, q *queue) {
	defer e.wg.Done()
	if e.pin {
		// Never unlocked: the pinned thread exits with the worker
		// instead of going back to the scheduler with its affinity.
		runtime.LockOSThread()
		pinToCPU(i % runtime.NumCPU())
	}
	w := workerState{yieldEvery: idleYieldEvery(runtime.GOMAXPROCS(0), len(e.queues))}
	q.startWorker(e.poll != Blocking)
	defer q.stopSpinning()
	for !e.stop.Load() {
		// start is when this turn's work began (busyClock), zero while
		// it has found none: an empty poll reads no clock.
		start := e.startTurn(q)
		if n := q.io.Receive(q.rxDescs[:]); n > 0 {
			if start == 0 {
				start = busyClock()
			}
			q.rxStart = start
			e.received(q, &w, start, n)
			q.rxStart = 0
			continue
		}
		if start != 0 {
			q.addBusy(start)
		}
		e.idleTurn(q, &w)
	}
}

// startTurn kicks the frames writers left on the TX queue and runs the
// consumers of connections a timer or an application's call made
// readable. It returns when that work began (busyClock), or zero if
// there was none.
func (e *Endpoint) startTurn(q *queue) time.Duration {
	var start time.Duration
	if q.io.TxQueued() != 0 {
		start = busyClock()
		q.kickFrom(start)
	}
	if e.ready.n.Load() > 0 {
		if start == 0 {
			start = busyClock()
		}
		e.ready.drain()
	}
	return start
}

// received handles a turn that found n frames on the RX ring, at work
// since start: it delivers them (and the full batches behind them), lets
// the readers the fast path woke reply, runs the batch's deferred TCP
// work, and yields to the goroutines that work readied.
func (e *Endpoint) received(q *queue, w *workerState, start time.Duration, n int) {
	if t := e.trace; t != nil {
		t.Rx()
	}
	n = e.takeBatches(q, n)
	yielded := false
	if q.deferred.late && n < BatchSize && q.takeWoke() {
		// The fast path's receive queued requests for application
		// goroutines and readied them, leaving the ACKs the segments
		// carried to runDeferred (netstack's runLateAckLocked): let them
		// read and write their replies here and now, most likely from
		// this P's runnext, kick the replies, then do the batch's
		// deferred work, which their replies no longer wait for. (A full
		// batch, most likely part of a burst, goes straight on to its
		// deferred work, as below.)
		if t := e.trace; t != nil {
			t.Processed()
		}
		yielded = true
		q.rxYields.Add(1)
		start = q.yield(q.addBusy(start))
		q.flushTx()
	}
	q.deferred.late = false
	q.runDeferred()
	e.promote(q)
	if e.ready.n.Load() > 0 {
		// Worker-read connections the processing made readable
		// (PollOnWorker): their consumers run here too.
		e.ready.drain()
	}
	if t := e.trace; t != nil && !yielded {
		t.Processed()
	}
	w.idle = 0
	e.endBusyTurn(q, w, start, n)
}

// takeBatches delivers the n frames the worker received and recycles
// them, then, while each batch was full, up to maxRxBatches in all. A
// full batch leaves more on the ring, under load most often the rest of
// a burst of ACKs: the worker takes it too before TCP runs, so that loss
// detection and sending act on everything the peer has reported rather
// than on the first batch's stale view (netstack defers them to a
// connection's last queued segment). deliverBatch copied the frames, so
// they are recycled at once. It returns the size of the last batch.
func (e *Endpoint) takeBatches(q *queue, n int) int {
	q.deferred.solo = n == 1
	e.deliverBatch(q, q.rxDescs[:n])
	q.deferred.solo = false
	q.io.Recycle(q.rxDescs[:n])
	for b := 1; n == BatchSize && b < maxRxBatches; b++ {
		if h := e.betweenRxBatches.Load(); h != nil {
			(*h)()
		}
		if n = q.io.Receive(q.rxDescs[:]); n > 0 {
			e.deliverBatch(q, q.rxDescs[:n])
			q.io.Recycle(q.rxDescs[:n])
		}
	}
	return n
}

// endBusyTurn ends a turn that received frames, the last batch n of
// them: it counts the busy time since start and yields to the
// goroutines the turn woke, unless the worker is behind.
func (e *Endpoint) endBusyTurn(q *queue, w *workerState, start time.Duration, n int) {
	if n == BatchSize && w.behind < maxBehindSkips {
		// The worker took maxRxBatches full batches, so more most
		// likely wait on the RX ring: it is behind (a burst of
		// connections, a flood). A yield now would queue it behind
		// every goroutine its batches readied while the ring fills and
		// the fill ring runs dry; the goroutines get their turn within
		// maxBehindSkips turns, the woke flag kept for it.
		w.behind++
		q.addBusy(start)
		return
	}
	w.behind = 0
	now := q.addBusy(start)
	if now-w.lastOSYield > osYieldBusy {
		osYieldNow()
		w.lastOSYield = now
	}
	if q.takeWoke() {
		// The TCP processing in runDeferred readied the application
		// goroutines it had data for, most likely into this P's
		// runnext: let them run (and write their replies before the
		// next kick) here and now rather than wait to be stolen.
		q.rxYields.Add(1)
		q.yield(now)
	}
}

// idleTurn ends a turn that found the RX ring empty: it refills the fill
// ring once per idle spell, lets other threads and goroutines run now
// and then, and spins, sleeps or blocks as the polling policy says.
func (e *Endpoint) idleTurn(q *queue, w *workerState) {
	w.behind = 0
	if w.idle == 0 {
		q.io.Refill()
	}
	w.idle++
	if w.idle%osYield == 0 {
		// Let other threads runnable on this CPU (softirq work, the
		// peer process on a small machine) in: a spinning thread
		// otherwise keeps them waiting until the scheduler tick.
		osYieldNow()
		w.lastOSYield = busyClock()
		w.yieldEvery = idleYieldEvery(runtime.GOMAXPROCS(0), len(e.queues))
	}
	switch e.poll {
	case Spin:
		if w.idle%w.yieldEvery == 0 {
			q.yield(busyClock())
		}
	case Adaptive:
		if w.idle == 1 {
			w.idleSince = time.Now()
		}
		if w.idle%64 == 0 && time.Since(w.idleSince) > e.spinBudget {
			q.sleep(&e.ready)
			w.idle = 0
		} else if w.idle%w.yieldEvery == 0 {
			q.yield(busyClock())
		}
	case Blocking:
		q.wait(&e.ready)
	}
}

// busyEpoch is busyClock's origin.
var busyEpoch = time.Now()

// busyClock is the worker's clock for its busy time: the time since
// busyEpoch, which reads only the monotonic clock (time.Since), half of
// what time.Now costs. Never zero once a worker runs.
func busyClock() time.Duration { return time.Since(busyEpoch) }

// yield gives the worker's P to other goroutines (runtime.Gosched) and
// counts the time from now (busyClock, read by the caller, usually
// through addBusy) until it comes back (Counters.YieldTime): with one P,
// what the application's goroutines ran on the worker's CPU. It returns
// the clock at its return.
func (q *queue) yield(now time.Duration) time.Duration {
	runtime.Gosched()
	back := busyClock()
	q.yieldTime.Add(int64(back - now))
	return back
}

// addBusy counts the worker's time at work since start and returns the
// clock it read.
func (q *queue) addBusy(start time.Duration) time.Duration {
	now := busyClock()
	q.busy.Add(int64(now - start))
	return now
}

// deliverBatch hands a batch of received frames to netstack, copying each once
// into a pooled netstack buffer. TCP and UDP checksums (and IPv4 header
// checksums) are verified here, once, with package offload unless
// trusted: a packet that fails is dropped and counted, a packet that
// passes is marked so netstack does not checksum it again. Frames
// offload does not check (ARP, ICMP, fragments, IPv6 extension headers)
// go to netstack unmarked, and netstack checks them. With GRO, runs of
// verified in-order segments of one TCP flow are first merged into one
// packet (offload.FindRun, offload.Merge), copied once as well.
func (e *Endpoint) deliverBatch(q *queue, descs []xsk.Desc) {
	d := e.loadDispatcher()
	if d == nil {
		return
	}
	frames, valid := q.rxFrames[:len(descs)], q.rxValid[:len(descs)]
	for i := range descs {
		frames[i] = q.io.Data(descs[i])
		valid[i] = e.verify(q, frames[i])
	}
	end := 0 // frames[i:end] are all verified
	for i := 0; i < len(frames); {
		if end <= i {
			for end = i; end < len(frames) && valid[end] == rxValid; end++ {
			}
		}
		if n := e.coalesce(q, d, frames[i:end]); n > 0 {
			i += n
			continue
		}
		if valid[i] != rxDrop {
			e.deliverFrame(q, d, frames[i], valid[i] == rxValid)
		}
		i++
	}
	clear(frames)
	q.rxPackets.Add(uint64(len(descs)))
}

// deliver delivers a batch and runs the TCP processing it calls for.
func (e *Endpoint) deliver(q *queue, descs []xsk.Desc) {
	e.deliverBatch(q, descs)
	q.runDeferred()
	e.promote(q)
}

// promote sends the ACKs the owned fast path's segments left owed, and
// offers it the connections the batch delivered segments for, once
// their TCP processing is done.
func (e *Endpoint) promote(q *queue) {
	if len(q.own.acks) > 0 {
		q.sendAcks()
	}
	if len(q.own.cands) > 0 {
		e.demux.promote(q)
	}
}

// runDeferred runs to completion the TCP processing the batches delivered
// since the last call require: here, on the worker, outside netstack's
// demuxer locks, once per endpoint; it readies the application
// goroutines it has data for.
func (q *queue) runDeferred() {
	q.rxInline.Add(uint64(len(q.deferred.work)))
	q.deferred.run()
}

// maxRxBatches is how many full batches the worker takes from the RX ring
// before running the TCP processing they call for.
const maxRxBatches = 4

// maxBehindSkips bounds how many loops in a row a worker that is behind
// (its RX ring still full after maxRxBatches) skips its yield to the
// goroutines it woke: 8 loops of 4 full batches, 2,048 frames.
const maxBehindSkips = 8

// The worker's verdicts on received frames.
const (
	rxDrop      = iota // runt or bad checksum: dropped, counted
	rxUnchecked        // for netstack to check
	rxValid            // checksums verified (or trusted)
)

// verify classifies a received frame, counting drops.
func (e *Endpoint) verify(q *queue, data []byte) uint8 {
	if len(data) < ethHeaderLen {
		q.rxRunt.Add(1)
		return rxDrop
	}
	if e.trustRx {
		return rxValid
	}
	switch offload.Verify(data) {
	case offload.Valid:
		return rxValid
	case offload.Partial:
		if !e.partialOK {
			q.rxBadChecksum.Add(1)
			return rxDrop
		}
		q.rxPartialChecksum.Add(1)
		return rxValid
	case offload.Invalid:
		q.rxBadChecksum.Add(1)
		return rxDrop
	}
	return rxUnchecked
}

// deliverFrame hands one frame to netstack (or the early demux).
func (e *Endpoint) deliverFrame(q *queue, d gstack.NetworkDispatcher, data []byte, valid bool) {
	if e.demux != nil && valid && !e.handOff && e.demux.deliver(q, data, nil) {
		return
	}
	e.dispatch(q, d, buffer.MakeWithData(data), data, valid)
}

// dispatch delivers a packet (the whole frame in payload; data aliases
// its bytes or the frame's) through netstack's NIC. It takes ownership of
// payload.
func (e *Endpoint) dispatch(q *queue, d gstack.NetworkDispatcher, payload buffer.Buffer, data []byte, valid bool) {
	proto := tcpip.NetworkProtocolNumber(binary.BigEndian.Uint16(data[12:14]))
	pkt := gstack.NewPacketBuffer(gstack.PacketBufferOptions{Payload: payload})
	pkt.LinkHeader().Consume(ethHeaderLen)
	pkt.NetworkProtocolNumber = proto
	pkt.RXChecksumValidated = valid
	if !e.handOff {
		pkt.Deferrer = &q.deferred
	}
	d.DeliverNetworkPacket(proto, pkt)
	pkt.DecRef()
}

// coalesce merges the run of TCP segments that starts at frames[0] (all
// of them verified), if GRO is on and the run has more than one,
// delivers the merged packet and returns how many frames it took; 0
// otherwise.
func (e *Endpoint) coalesce(q *queue, d gstack.NetworkDispatcher, frames [][]byte) int {
	if !e.gro {
		return 0
	}
	segs := offload.FindRun(q.groSegs, frames)
	if len(segs) < 2 {
		return 0
	}
	v := buffer.NewViewUnzeroed(offload.MergedLen(segs)) // Merge writes it all
	offload.Merge(v.AsSlice(), frames, segs)
	q.rxCoalesced.Add(uint64(len(segs) - 1))
	if e.demux != nil && !e.handOff && e.demux.deliver(q, v.AsSlice(), v) {
		return len(segs)
	}
	e.dispatch(q, d, buffer.MakeWithView(v), v.AsSlice(), true)
	return len(segs)
}

// deferred is a netstack Deferrer: the transport work of one RX batch.
type deferred struct {
	work []gstack.DeferredWork
	// solo is set while the worker delivers an RX batch of one frame:
	// a request alone, whose reply the worker kicks as soon as it is
	// written (Stream.runDirect) rather than after the batch's work.
	solo bool
	// late is set when the fast path's receive left the ACK of a
	// segment it queued for a reader to the deferred work
	// (tcp.LateAckNoter): the worker lets the reader run first.
	late bool
}

// Defer implements gstack.Deferrer.
func (d *deferred) Defer(w gstack.DeferredWork) { d.work = append(d.work, w) }

// NoteLateAck implements tcp.LateAckNoter.
func (d *deferred) NoteLateAck() { d.late = true }

func (d *deferred) run() {
	for i, w := range d.work {
		w.RunDeferred()
		d.work[i] = nil
	}
	d.work = d.work[:0]
}
