package stack

import (
	"encoding/binary"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ustack-dev/ustack/internal/third_party/gvisor/pkg/buffer"
	"github.com/ustack-dev/ustack/internal/third_party/gvisor/pkg/tcpip"
	"github.com/ustack-dev/ustack/internal/third_party/gvisor/pkg/tcpip/header"
	gstack "github.com/ustack-dev/ustack/internal/third_party/gvisor/pkg/tcpip/stack"
	"github.com/ustack-dev/ustack/offload"
	"github.com/ustack-dev/ustack/xsk"
)

// batchSize is how many frames a worker takes off the RX ring at once and
// how many packets a TX batch holds.
const batchSize = 64

const ethHeaderLen = header.EthernetMinimumSize

// spinYield is how many empty polls a spinning worker makes between
// yields to other goroutines on its P.
const spinYield = 16

// osYield is how many empty polls a spinning worker makes between yields
// of its OS thread (sched_yield).
const osYield = 256

var (
	_ gstack.LinkEndpoint       = (*endpoint)(nil)
	_ gstack.SinglePacketWriter = (*endpoint)(nil)
)

// queue is one interface queue: its port, the worker state (RX side,
// owned by the worker goroutine) and the TX state (guarded by txMu).
type queue struct {
	p port

	rxDescs [batchSize]xsk.Desc // worker only
	// deferred collects the TCP endpoints an RX batch touched, for the
	// worker to process once the whole batch is delivered (worker only).
	deferred deferred

	txMu    sync.Mutex
	txDescs [batchSize]xsk.Desc // under txMu
	txPkt   [batchSize]int      // under txMu: index in the batch of txDescs[i]'s packet

	rxPackets, txPackets, txNoFrame, txOversize, rxRunt, rxBadChecksum, rxPartialChecksum, rxInline atomic.Uint64

	// spinning is set while the worker busy-polls (not blocked in Wait):
	// only then may a kick be left to it.
	spinning atomic.Bool
	trace    *tracer // the endpoint's, nil unless tracing
	// kickWanted is set when data was queued for the worker to kick.
	kickWanted atomic.Bool
}

// flushTx kicks what writers left on the TX ring for the worker, and
// anything a kick left behind (EAGAIN). Called by the worker only.
func (q *queue) flushTx() {
	if q.p.TxQueued() == 0 {
		return
	}
	q.kickWanted.Store(false)
	q.kick()
}

// kick asks the kernel to send what is on the TX ring.
func (q *queue) kick() error {
	err := q.p.Kick()
	if t := q.trace; t != nil {
		t.kicked()
	}
	return err
}

// maxTxStalls bounds how often WritePackets kicks and retries when it
// finds no free frame or TX slot before it gives up on the rest.
const maxTxStalls = 16

// endpoint is the netstack link endpoint over a set of queues.
type endpoint struct {
	queues []*queue
	mtu    uint32
	mac    tcpip.LinkAddress
	caps   gstack.LinkEndpointCapabilities

	poll       PollPolicy
	spinBudget time.Duration
	pin        bool
	trustRx    bool
	partialOK  bool      // accept offload.Partial checksums (a veth peer)
	handOff    bool      // Config.HandOffTCP
	fast       *fastPath // early demux, set by newStack (nil: none)
	trace      *tracer   // nil unless Config.Trace

	mu         sync.RWMutex
	dispatcher gstack.NetworkDispatcher // guarded by mu; read once per batch
	onClose    func()

	stop atomic.Bool
	wg   sync.WaitGroup
}

func newEndpoint(ports []port, link linkInfo, cfg *Config) *endpoint {
	e := &endpoint{mtu: link.mtu, mac: tcpip.LinkAddress(link.mac), poll: cfg.Poll, spinBudget: cfg.SpinBudget, pin: cfg.Pin,
		trustRx: cfg.TrustRxChecksum, partialOK: link.partialChecksums, handOff: cfg.HandOffTCP}
	e.caps = gstack.CapabilityResolutionRequired
	if cfg.Trace {
		e.trace = newTracer()
	}
	for _, p := range ports {
		q := &queue{p: p, trace: e.trace}
		q.deferred.work = make([]gstack.DeferredWork, 0, batchSize)
		e.queues = append(e.queues, q)
	}
	return e
}

// MTU implements gstack.LinkEndpoint.
func (e *endpoint) MTU() uint32 { return e.mtu }

// SetMTU implements gstack.LinkEndpoint. The MTU is the interface's.
func (e *endpoint) SetMTU(uint32) {}

// MaxHeaderLength implements gstack.LinkEndpoint.
func (e *endpoint) MaxHeaderLength() uint16 { return ethHeaderLen }

// LinkAddress implements gstack.LinkEndpoint.
func (e *endpoint) LinkAddress() tcpip.LinkAddress { return e.mac }

// SetLinkAddress implements gstack.LinkEndpoint. The MAC is the
// interface's.
func (e *endpoint) SetLinkAddress(tcpip.LinkAddress) {}

// Capabilities implements gstack.LinkEndpoint.
func (e *endpoint) Capabilities() gstack.LinkEndpointCapabilities { return e.caps }

// ARPHardwareType implements gstack.LinkEndpoint.
func (e *endpoint) ARPHardwareType() header.ARPHardwareType { return header.ARPHardwareEther }

// AddHeader implements gstack.LinkEndpoint.
func (e *endpoint) AddHeader(pkt *gstack.PacketBuffer) {
	eth := header.Ethernet(pkt.LinkHeader().Push(ethHeaderLen))
	eth.Encode(&header.EthernetFields{
		SrcAddr: pkt.EgressRoute.LocalLinkAddress,
		DstAddr: pkt.EgressRoute.RemoteLinkAddress,
		Type:    pkt.NetworkProtocolNumber,
	})
}

// ParseHeader implements gstack.LinkEndpoint.
func (e *endpoint) ParseHeader(pkt *gstack.PacketBuffer) bool {
	_, ok := pkt.LinkHeader().Consume(ethHeaderLen)
	return ok
}

// Attach implements gstack.LinkEndpoint: a dispatcher starts the workers,
// nil stops them.
func (e *endpoint) Attach(d gstack.NetworkDispatcher) {
	e.mu.Lock()
	prev := e.dispatcher
	e.dispatcher = d
	e.mu.Unlock()
	switch {
	case d != nil && prev == nil:
		e.stop.Store(false)
		for i, q := range e.queues {
			e.wg.Add(1)
			go e.worker(i, q)
		}
	case d == nil && prev != nil:
		// Only signal: netstack calls this holding its own lock, which a
		// worker in the middle of a delivery may be waiting for. Wait
		// (or stopWorkers) collects the workers afterwards.
		e.signalStop()
	}
}

func (e *endpoint) signalStop() {
	e.stop.Store(true)
	for _, q := range e.queues {
		q.p.Interrupt()
	}
}

// stopWorkers stops the workers and waits for them. It must not be called
// with netstack's locks held.
func (e *endpoint) stopWorkers() {
	e.signalStop()
	e.wg.Wait()
}

// IsAttached implements gstack.LinkEndpoint.
func (e *endpoint) IsAttached() bool {
	e.mu.RLock()
	defer e.mu.RUnlock()
	return e.dispatcher != nil
}

// Wait implements gstack.LinkEndpoint.
func (e *endpoint) Wait() { e.wg.Wait() }

// Close implements gstack.LinkEndpoint.
func (e *endpoint) Close() {
	e.signalStop()
	e.mu.Lock()
	f := e.onClose
	e.onClose = nil
	e.mu.Unlock()
	if f != nil {
		f()
	}
}

// SetOnCloseAction implements gstack.LinkEndpoint.
func (e *endpoint) SetOnCloseAction(f func()) {
	e.mu.Lock()
	e.onClose = f
	e.mu.Unlock()
}

// WritePacket implements gstack.SinglePacketWriter: WritePackets for one
// packet, without a list.
func (e *endpoint) WritePacket(pkt *gstack.PacketBuffer) tcpip.Error {
	one := [1]*gstack.PacketBuffer{pkt}
	_, err := e.write(one[:])
	return err
}

// WritePackets implements gstack.LinkWriter. It copies each packet into a
// UMEM frame of the queue the first packet's flow hash selects, and kicks
// once for the batch. It does not take ownership of pkts.
func (e *endpoint) WritePackets(pkts gstack.PacketBufferList) (int, tcpip.Error) {
	return e.write(pkts.AsSlice())
}

func (e *endpoint) write(all []*gstack.PacketBuffer) (int, tcpip.Error) {
	if len(all) == 0 {
		return 0, nil
	}
	q := e.queues[0]
	if len(e.queues) > 1 {
		q = e.queues[all[0].Hash%uint32(len(e.queues))]
	}
	sent, stalls := 0, 0
	for sent < len(all) {
		n := e.writeBatch(q, all[sent:])
		if n == 0 {
			// Out of frames or TX slots: what is queued must go first,
			// and it may be waiting for a kick left to the worker.
			if stalls == maxTxStalls {
				break
			}
			stalls++
			q.kick()
			runtime.Gosched()
			continue
		}
		sent += n
	}
	switch {
	case sent == 0:
	case q.p.TxQueued() >= batchSize:
		// A full batch is waiting: send it now rather than after the
		// worker's next turn.
		q.kickWanted.Store(false)
		q.kickQueued()
	case q.spinning.Load():
		// The spinning worker kicks at the top of its next loop, once
		// for everything writers queued meanwhile: after a delivery it
		// yields to the readied goroutines first, so their replies
		// leave in one batch.
		q.kickWanted.Store(true)
		q.kickIfWorkerStopped()
	default:
		q.kickQueued()
	}
	q.txPackets.Add(uint64(sent))
	if sent == 0 {
		q.txNoFrame.Add(1)
		return 0, &tcpip.ErrNoBufferSpace{}
	}
	return sent, nil
}

// kickQueued kicks for packets WritePackets has already put on the TX
// ring. A failed kick does not unsend them: they stay queued for the next
// kick (the worker's, or the next writer's), so it is not reported to
// netstack, which would otherwise count queued packets as lost.
func (q *queue) kickQueued() { _ = q.kick() }

// writeBatch copies up to batchSize packets into frames, enqueues them,
// and returns how many of pkts it consumed (queued, or dropped as
// oversize); 0 when no frame or TX slot was free.
func (e *endpoint) writeBatch(q *queue, pkts []*gstack.PacketBuffer) int {
	q.txMu.Lock()
	defer q.txMu.Unlock()
	// Reap sent frames every batch (one shared-memory load when there
	// are none), so frames and completion slots never run short.
	q.p.Complete()
	descs := q.txDescs[:0]
	consumed := 0
	for _, pkt := range pkts {
		if len(descs) == batchSize {
			break
		}
		addr, ok := q.p.Alloc()
		if !ok {
			// Reap what the kernel has sent and try once more.
			if q.p.Complete() == 0 {
				break
			}
			if addr, ok = q.p.Alloc(); !ok {
				break
			}
		}
		q.txPkt[len(descs)] = consumed
		consumed++
		frame := q.p.Frame(addr)
		if pkt.Size() > len(frame) {
			// Netstack segments to the MTU, so this cannot happen
			// short of a bug; drop rather than truncate.
			q.p.Free(addr)
			q.txOversize.Add(1)
			continue
		}
		descs = append(descs, xsk.Desc{Addr: addr, Len: uint32(copyPacket(frame, pkt))})
	}
	if t := q.trace; t != nil && len(descs) > 0 {
		// Before Enqueue: once a frame is on the ring, a kick may
		// take it before this goroutine gets to note it.
		t.mark(StageTxRing)
	}
	n := q.p.Enqueue(descs)
	for _, d := range descs[n:] {
		q.p.Free(d.Addr)
	}
	if n < len(descs) {
		// TX ring full: the packets from descs[n] on were not sent.
		return q.txPkt[n]
	}
	return consumed
}

// copyPacket copies pkt's bytes into frame and returns how many.
func copyPacket(frame []byte, pkt *gstack.PacketBuffer) int {
	views, off := pkt.AsViewList()
	w := 0
	for v := views.Front(); v != nil; v = v.Next() {
		b := v.AsSlice()
		if off >= len(b) {
			off -= len(b)
			continue
		}
		w += copy(frame[w:], b[off:])
		off = 0
	}
	return w
}

func (e *endpoint) loadDispatcher() gstack.NetworkDispatcher {
	e.mu.RLock()
	d := e.dispatcher
	e.mu.RUnlock()
	return d
}

// worker runs one queue's RX loop until the endpoint stops.
func (e *endpoint) worker(i int, q *queue) {
	defer e.wg.Done()
	if e.pin {
		// Never unlocked: the pinned thread exits with the worker
		// instead of going back to the scheduler with its affinity.
		runtime.LockOSThread()
		pinToCPU(i % runtime.NumCPU())
	}
	var idleSince time.Time
	idle := 0
	q.spinning.Store(e.poll != Blocking)
	defer q.stopSpinning()
	for !e.stop.Load() {
		q.flushTx()
		n := q.p.Receive(q.rxDescs[:])
		if n > 0 {
			if t := e.trace; t != nil {
				t.rx()
			}
			e.deliver(q, q.rxDescs[:n])
			if t := e.trace; t != nil {
				t.processed()
			}
			q.p.Recycle(q.rxDescs[:n])
			idle = 0
			// Delivery readied netstack's TCP processor and the
			// application goroutines, most likely into this P's
			// runnext: let them run here and now rather than wait to
			// be stolen.
			runtime.Gosched()
			continue
		}
		if idle == 0 {
			q.p.Refill()
		}
		idle++
		if idle%osYield == 0 {
			// Let other threads runnable on this CPU (softirq work, the
			// peer process on a small machine) in: a spinning thread
			// otherwise keeps them waiting until the scheduler tick.
			osYieldNow()
		}
		switch e.poll {
		case Spin:
			if idle%spinYield == 0 {
				runtime.Gosched()
			}
		case Adaptive:
			if idle == 1 {
				idleSince = time.Now()
			}
			if idle%64 == 0 && time.Since(idleSince) > e.spinBudget {
				q.sleep()
				idle = 0
			} else if idle%spinYield == 0 {
				runtime.Gosched()
			}
		case Blocking:
			q.p.Wait(100 * time.Millisecond)
		}
	}
}

// stopSpinning hands the kicks back to the writers and sends what they
// left for the worker. Paired with kickIfWorkerStopped: a writer either
// queued its frames before this flush sees the ring, or sees spinning
// false and kicks itself (sequentially consistent atomics on both sides).
func (q *queue) stopSpinning() {
	q.spinning.Store(false)
	if q.p.TxQueued() > 0 {
		q.kickWanted.Store(false)
		q.kick()
	}
}

// kickIfWorkerStopped is called by a writer after leaving its kick to the
// worker: if the worker stopped spinning meanwhile, the writer kicks.
func (q *queue) kickIfWorkerStopped() {
	if !q.spinning.Load() {
		q.kick()
	}
}

// sleep blocks an adaptive worker in Wait, first making sure nothing is
// left for it to kick.
func (q *queue) sleep() {
	q.stopSpinning()
	q.p.Wait(100 * time.Millisecond)
	q.spinning.Store(true)
}

// deliver hands a batch of received frames to netstack, copying each once
// into a pooled netstack buffer. TCP and UDP checksums (and IPv4 header
// checksums) are verified here, once, with package offload unless
// trusted: a packet that fails is dropped and counted, a packet that
// passes is marked so netstack does not checksum it again. Frames
// offload does not check (ARP, ICMP, fragments, IPv6 extension headers)
// go to netstack unmarked, and netstack checks them.
func (e *endpoint) deliver(q *queue, descs []xsk.Desc) {
	d := e.loadDispatcher()
	if d == nil {
		return
	}
	for i := range descs {
		data := q.p.Data(descs[i])
		if len(data) < ethHeaderLen {
			q.rxRunt.Add(1)
			continue
		}
		proto := tcpip.NetworkProtocolNumber(binary.BigEndian.Uint16(data[12:14]))
		valid := e.trustRx
		if !valid {
			switch offload.Verify(data) {
			case offload.Valid:
				valid = true
			case offload.Partial:
				if !e.partialOK {
					q.rxBadChecksum.Add(1)
					continue
				}
				q.rxPartialChecksum.Add(1)
				valid = true
			case offload.Invalid:
				q.rxBadChecksum.Add(1)
				continue
			}
		}
		if e.fast != nil && valid && !e.handOff && e.fast.deliver(data, &q.deferred) {
			continue
		}
		pkt := gstack.NewPacketBuffer(gstack.PacketBufferOptions{
			Payload: buffer.MakeWithData(data),
		})
		pkt.LinkHeader().Consume(ethHeaderLen)
		pkt.NetworkProtocolNumber = proto
		pkt.RXChecksumValidated = valid
		if !e.handOff {
			pkt.Deferrer = &q.deferred
		}
		d.DeliverNetworkPacket(proto, pkt)
		pkt.DecRef()
	}
	q.rxPackets.Add(uint64(len(descs)))
	q.rxInline.Add(uint64(len(q.deferred.work)))
	// Run to completion: the TCP processing the batch calls for happens
	// here, on the worker, outside netstack's demuxer locks, once per
	// endpoint; it readies the application goroutines it has data for.
	q.deferred.run()
}

// deferred is a netstack Deferrer: the transport work of one RX batch.
type deferred struct {
	work []gstack.DeferredWork
}

// Defer implements gstack.Deferrer.
func (d *deferred) Defer(w gstack.DeferredWork) { d.work = append(d.work, w) }

func (d *deferred) run() {
	for i, w := range d.work {
		w.RunDeferred()
		d.work[i] = nil
	}
	d.work = d.work[:0]
}
