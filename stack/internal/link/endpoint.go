package link

import (
	"errors"
	"math"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ustack-dev/ustack/internal/third_party/gvisor/pkg/tcpip"
	"github.com/ustack-dev/ustack/internal/third_party/gvisor/pkg/tcpip/header"
	gstack "github.com/ustack-dev/ustack/internal/third_party/gvisor/pkg/tcpip/stack"
	"github.com/ustack-dev/ustack/internal/third_party/gvisor/pkg/tcpip/transport/tcp"
	"github.com/ustack-dev/ustack/offload"
	"github.com/ustack-dev/ustack/stack/internal/frameio"
	"github.com/ustack-dev/ustack/stack/internal/trace"
	"github.com/ustack-dev/ustack/xsk"
)

// BatchSize is how many frames a worker takes off the RX ring at once and
// how many packets a TX batch holds.
const BatchSize = 64

const ethHeaderLen = header.EthernetMinimumSize

// gsoMaxSize is the largest TCP packet netstack may hand down with GSO:
// an IPv4 packet's total length fits 16 bits.
const gsoMaxSize = 0xffff

var (
	_ gstack.LinkEndpoint       = (*Endpoint)(nil)
	_ gstack.SinglePacketWriter = (*Endpoint)(nil)
	_ gstack.GSOEndpoint        = (*Endpoint)(nil)
)

// queue is one interface queue: its port, the worker state (RX side,
// owned by the worker goroutine) and the TX state (guarded by txMu).
type queue struct {
	io frameio.IO // the chain the worker and writers drive (stack's middleware)

	rxDescs [BatchSize]xsk.Desc // worker only
	// Worker only: the batch's frames and verdicts, and GRO's scratch.
	rxFrames [BatchSize][]byte
	rxValid  [BatchSize]uint8
	groSegs  []offload.Seg
	// deferred collects the TCP endpoints an RX batch touched, for the
	// worker to process once the whole batch is delivered (worker only).
	deferred deferred

	txMu    sync.Mutex
	txDescs [BatchSize]xsk.Desc // under txMu
	txPos   [BatchSize]txPos    // under txMu: which packet and segment txDescs[i] holds
	tx      offload.Tx          // under txMu: the packet being written
	txViews [][]byte            // under txMu: its bytes (reused)

	rxPackets, txPackets, txFrames, txNoFrame, txRingFull, txOversize, rxRunt, rxBadChecksum, rxPartialChecksum, rxInline, rxCoalesced atomic.Uint64
	// rxYields counts the worker's yields of its P after an RX batch
	// (tests).
	rxYields atomic.Uint64
	// busy is the worker's time at work, in nanoseconds (busyClock);
	// kickTime the time kicks took, whoever made them.
	busy, kickTime atomic.Int64
	// yieldTime is the time the worker's P ran other goroutines when
	// the worker yielded it (Counters.YieldTime).
	yieldTime atomic.Int64
	// rxFast counts the TCP fast path's verdicts on the segments early
	// demux offered it (tcp.FastHit, then the misses by reason).
	rxFast [tcp.NumFastMiss]atomic.Uint64
	// synFast counts the verdicts on the SYNs early demux offered a
	// listener to answer on the worker (tcp.SynVerdict, then
	// SynMissRoute and SynMissUnresolved).
	synFast [NumSynVerdicts]atomic.Uint64
	// synPressure counts the SYNs the worker answered with a cookie
	// while rxPressure frames or more waited on the RX ring.
	synPressure atomic.Uint64
	// rxPressure is the RX backlog at which the worker answers every
	// listener's SYN with a cookie (Options.RxFrames / 2; tests set it
	// with SetRxPressure).
	rxPressure atomic.Int64
	// nextHops are the default routers, per family (IPv4, IPv6), for
	// the SYN-ACKs the worker sends to off-link peers (Demux.nextHop).
	nextHops [2]nextHopCache
	// flows is early demux's cache of established connections.
	flows flowCache
	// own is the owned fast path's state (owned.go).
	own owned
	// rxStart is the worker's clock (busyClock) when the RX batches it is
	// delivering began, zero outside them: the owned fast path's time
	// for their segments (worker only).
	rxStart time.Duration
	// flags are the kick protocol's (kick.go).
	flags workerFlags
	trace *trace.Tracer // the endpoint's, nil unless tracing
}

// Poll is how a queue's worker waits for packets (stack.PollPolicy, in
// the same order).
type Poll int

// The polling policies.
const (
	Adaptive Poll = iota // busy-poll while traffic flows, then block
	Spin                 // busy-poll always
	Blocking             // block whenever the RX ring is empty
)

// Options configure an Endpoint: what stack's Config and the link say.
type Options struct {
	MTU uint32
	MAC tcpip.LinkAddress
	// PartialChecksums: the peer is local (veth) and may send TCP and UDP
	// with checksums left for offload, accepted as the kernel accepts
	// them.
	PartialChecksums bool

	Poll       Poll
	SpinBudget time.Duration // how long Adaptive spins when idle
	Pin        bool          // pin each worker to a CPU
	// TrustRxChecksum skips the verification of received checksums.
	TrustRxChecksum bool
	// HandOffTCP hands TCP segments to netstack's processor goroutines
	// instead of processing them on the worker.
	HandOffTCP bool
	NoGRO      bool // no receive coalescing
	// NoTxChecksum leaves TX checksums to netstack (and turns GSO off).
	NoTxChecksum bool
	NoGSO        bool
	Trace        bool // record the latency breakdown
	// RxFrames is how many frames each queue receives into: once half
	// of them wait on the RX ring, the worker answers listeners' SYNs
	// with cookies (0: never for that reason).
	RxFrames uint32
}

// Endpoint is the netstack link endpoint over a set of queues, with a
// worker per queue.
type Endpoint struct {
	queues []*queue
	mtu    uint32
	mac    tcpip.LinkAddress
	caps   gstack.LinkEndpointCapabilities

	poll       Poll
	spinBudget time.Duration
	pin        bool
	trustRx    bool
	partialOK  bool   // accept offload.Partial checksums (a veth peer)
	txCsum     bool   // TX checksums computed in the copy (Options.NoTxChecksum unset)
	gso        bool   // TCP segmentation offload (not Options.NoGSO)
	gro        bool   // receive coalescing (Options.NoGRO unset)
	handOff    bool   // Options.HandOffTCP
	demux      *Demux // early demux (SetDemux; nil: none)
	// ownOn turns the owned fast path on (SetOwned); owners are the
	// connections it may carry (RegisterOwner).
	ownOn bool
	// ownOff stops promotions for good (DisownAll: the stack closing).
	ownOff   atomic.Bool
	ownersMu sync.Mutex
	owners   map[*tcp.Endpoint]Owner
	// ownersGen changes as owners register and go (the flow cache's
	// record of an owner is valid while it has not).
	ownersGen atomic.Uint64
	trace     *trace.Tracer // nil unless Options.Trace

	// ready is the worker-read connections with something to read
	// (PollOnWorker).
	ready ReadyList
	// betweenRxBatches, if set, is called by a worker between the RX
	// batches of a burst it takes before TCP runs (tests only).
	betweenRxBatches atomic.Pointer[func()]

	mu         sync.RWMutex
	dispatcher gstack.NetworkDispatcher // guarded by mu; read once per batch
	onClose    func()

	stop atomic.Bool
	wg   sync.WaitGroup
}

// New returns an endpoint over ios, one per queue; its workers start
// when netstack attaches it.
func New(ios []frameio.IO, o Options) *Endpoint {
	e := &Endpoint{mtu: o.MTU, mac: o.MAC, poll: o.Poll, spinBudget: o.SpinBudget, pin: o.Pin,
		trustRx: o.TrustRxChecksum, partialOK: o.PartialChecksums, handOff: o.HandOffTCP}
	e.caps = gstack.CapabilityResolutionRequired
	e.ready.ep = e
	e.gro = !o.NoGRO
	if !o.NoTxChecksum {
		e.txCsum = true
		e.caps |= gstack.CapabilityTXChecksumOffload
		e.gso = !o.NoGSO
	}
	if o.Trace {
		e.trace = trace.New()
	}
	for _, io := range ios {
		q := &queue{io: io, trace: e.trace, groSegs: make([]offload.Seg, 0, BatchSize)}
		q.rxPressure.Store(int64(o.RxFrames / 2))
		if o.RxFrames == 0 {
			q.rxPressure.Store(math.MaxInt64)
		}
		q.deferred.work = make([]gstack.DeferredWork, 0, BatchSize)
		for fam := range q.nextHops {
			q.nextHops[fam].init()
		}
		e.queues = append(e.queues, q)
	}
	return e
}

// MTU implements gstack.LinkEndpoint.
func (e *Endpoint) MTU() uint32 { return e.mtu }

// SetMTU implements gstack.LinkEndpoint. The MTU is the interface's.
func (e *Endpoint) SetMTU(uint32) {}

// MaxHeaderLength implements gstack.LinkEndpoint.
func (e *Endpoint) MaxHeaderLength() uint16 { return ethHeaderLen }

// LinkAddress implements gstack.LinkEndpoint.
func (e *Endpoint) LinkAddress() tcpip.LinkAddress { return e.mac }

// SetLinkAddress implements gstack.LinkEndpoint. The MAC is the
// interface's.
func (e *Endpoint) SetLinkAddress(tcpip.LinkAddress) {}

// Capabilities implements gstack.LinkEndpoint.
func (e *Endpoint) Capabilities() gstack.LinkEndpointCapabilities { return e.caps }

// GSOMaxSize implements gstack.GSOEndpoint.
func (e *Endpoint) GSOMaxSize() uint32 {
	if !e.gso {
		return 0
	}
	return gsoMaxSize
}

// SupportedGSO implements gstack.GSOEndpoint: with GSO on, the host kind,
// whose contract is a NIC's: TCP packets up to GSOMaxSize with the
// pseudo-header sum in the checksum field and the MSS in the packet's
// GSO options, cut and checksummed by the link (offload.Tx).
func (e *Endpoint) SupportedGSO() gstack.SupportedGSO {
	if !e.gso {
		return gstack.GSONotSupported
	}
	return gstack.HostGSOSupported
}

// ARPHardwareType implements gstack.LinkEndpoint.
func (e *Endpoint) ARPHardwareType() header.ARPHardwareType { return header.ARPHardwareEther }

// AddHeader implements gstack.LinkEndpoint.
func (e *Endpoint) AddHeader(pkt *gstack.PacketBuffer) {
	eth := header.Ethernet(pkt.LinkHeader().Push(ethHeaderLen))
	eth.Encode(&header.EthernetFields{
		SrcAddr: pkt.EgressRoute.LocalLinkAddress,
		DstAddr: pkt.EgressRoute.RemoteLinkAddress,
		Type:    pkt.NetworkProtocolNumber,
	})
}

// ParseHeader implements gstack.LinkEndpoint.
func (e *Endpoint) ParseHeader(pkt *gstack.PacketBuffer) bool {
	_, ok := pkt.LinkHeader().Consume(ethHeaderLen)
	return ok
}

// Attach implements gstack.LinkEndpoint: a dispatcher starts the workers,
// nil stops them.
func (e *Endpoint) Attach(d gstack.NetworkDispatcher) {
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
		// (or StopWorkers) collects the workers afterwards.
		e.signalStop()
	}
}

func (e *Endpoint) signalStop() {
	e.stop.Store(true)
	for _, q := range e.queues {
		q.io.Interrupt()
	}
}

// StopWorkers stops the workers and waits for them, then closes every
// queue's frame I/O chain: each layer gives back what it holds (frames,
// buffered capture) and closes the one below. It must not be called with
// netstack's locks held.
func (e *Endpoint) StopWorkers() error {
	e.signalStop()
	e.wg.Wait()
	var errs []error
	for _, q := range e.queues {
		q.stopOwned()
		errs = append(errs, q.io.Close())
	}
	return errors.Join(errs...)
}

// IsAttached implements gstack.LinkEndpoint.
func (e *Endpoint) IsAttached() bool {
	e.mu.RLock()
	defer e.mu.RUnlock()
	return e.dispatcher != nil
}

// Wait implements gstack.LinkEndpoint.
func (e *Endpoint) Wait() { e.wg.Wait() }

// Close implements gstack.LinkEndpoint.
func (e *Endpoint) Close() {
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
func (e *Endpoint) SetOnCloseAction(f func()) {
	e.mu.Lock()
	e.onClose = f
	e.mu.Unlock()
}

// SetDemux sets early demux (before netstack attaches the endpoint).
func (e *Endpoint) SetDemux(d *Demux) {
	e.demux = d
	if d != nil {
		d.ep, d.ownOn = e, e.ownOn
	}
}

// Demux returns the endpoint's early demux, nil if none.
func (e *Endpoint) Demux() *Demux { return e.demux }

// Trace returns the latency breakdown's tracer, nil unless tracing.
func (e *Endpoint) Trace() *trace.Tracer { return e.trace }

// Ready returns the endpoint's ready list: what its workers run when
// they find it readied (ready.go).
func (e *Endpoint) Ready() *ReadyList { return &e.ready }

// NumQueues returns how many queues (and workers) the endpoint has.
func (e *Endpoint) NumQueues() int { return len(e.queues) }

// QueueIO returns queue i's frame I/O chain.
func (e *Endpoint) QueueIO(i int) frameio.IO { return e.queues[i].io }

// Counters are one queue's counters (stack.QueueStats says what each
// counts).
type Counters struct {
	RxPackets, TxPackets, TxFrames, TxNoFrame, TxOversize, RxRunt uint64
	// TxRingFull counts frames written that found the TX ring full and
	// were freed unsent (netstack retries them; a SYN-ACK or pure ACK is
	// lost as on a wire).
	TxRingFull                                              uint64
	RxBadChecksum, RxPartialChecksum, RxInline, RxCoalesced uint64
	// RxYields counts the worker's yields of its P after an RX batch.
	RxYields uint64
	// WorkerBusy is the time the queue's worker spent at work: RX
	// batches and the TCP processing, deferred work and worker-read
	// connections they ran, kicks of the TX ring, and connections made
	// ready off the worker. Not counted: polling an empty ring, sleeping,
	// and the goroutines it yields its P to.
	WorkerBusy time.Duration
	// KickTime is the time the queue's kicks took, whoever made them
	// (the worker's are part of WorkerBusy): in copy mode a kick copies
	// the frames into the kernel's buffers and, on veth, runs the peer's
	// receive path inside the call.
	KickTime time.Duration
	// YieldTime is the time the worker spent in its yields of the P
	// (runtime.Gosched): with one P, the application goroutines' time.
	YieldTime time.Duration
	// Fast counts the TCP fast path's verdicts on the segments early
	// demux offered it (tcp.FastHit, then the misses by reason).
	Fast [tcp.NumFastMiss]uint64
	// Syn counts the verdicts on the SYNs early demux offered a
	// listener to answer on the worker (tcp.SynVerdict, then
	// SynMissRoute and SynMissUnresolved).
	Syn [NumSynVerdicts]uint64
	// SynPressure counts the SYNs of Syn[tcp.SynAnswered] the worker
	// answered with a cookie because half its receive frames waited on
	// the RX ring.
	SynPressure uint64
}

// Counters returns a snapshot of queue i's counters.
func (e *Endpoint) Counters(i int) Counters {
	q := e.queues[i]
	// Frames before packets: a write counts its frames first, so a write
	// under way never shows more frames than packets.
	c := Counters{TxFrames: q.txFrames.Load()}
	c.RxPackets, c.TxPackets, c.TxNoFrame, c.TxOversize, c.RxRunt = q.rxPackets.Load(), q.txPackets.Load(), q.txNoFrame.Load(), q.txOversize.Load(), q.rxRunt.Load()
	c.RxBadChecksum, c.RxPartialChecksum, c.RxInline, c.RxCoalesced = q.rxBadChecksum.Load(), q.rxPartialChecksum.Load(), q.rxInline.Load(), q.rxCoalesced.Load()
	c.RxYields, c.TxRingFull = q.rxYields.Load(), q.txRingFull.Load()
	c.WorkerBusy = time.Duration(q.busy.Load())
	c.KickTime = time.Duration(q.kickTime.Load())
	c.YieldTime = time.Duration(q.yieldTime.Load())
	for j := range c.Fast {
		c.Fast[j] = q.rxFast[j].Load()
	}
	for j := range c.Syn {
		c.Syn[j] = q.synFast[j].Load()
	}
	c.SynPressure = q.synPressure.Load()
	return c
}

// SetRxPressure sets the RX backlog at which every queue's worker answers
// listeners' SYNs with cookies (tests only).
func (e *Endpoint) SetRxPressure(frames int) {
	for _, q := range e.queues {
		q.rxPressure.Store(int64(frames))
	}
}

// SetBetweenRxBatches has the workers call f between the RX batches of a
// burst they take before TCP runs; nil stops it (tests only).
func (e *Endpoint) SetBetweenRxBatches(f func()) {
	if f == nil {
		e.betweenRxBatches.Store(nil)
		return
	}
	e.betweenRxBatches.Store(&f)
}

// FlushIfSolo kicks every queue's TX ring if d is the deferred work of an
// RX batch of one frame: a request alone, whose reply the caller (a
// handler's, or a worker-read connection's consumer, on the worker) has
// just written, leaves now rather than after the batch's work. Batches
// of several frames keep one kick for all their replies.
func (e *Endpoint) FlushIfSolo(d gstack.Deferrer) {
	if dq, ok := d.(*deferred); ok && dq.solo {
		for _, q := range e.queues {
			q.flushTx()
		}
	}
}
