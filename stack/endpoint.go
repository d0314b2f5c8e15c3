package stack

import (
	"errors"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ustack-dev/ustack/internal/third_party/gvisor/pkg/tcpip"
	"github.com/ustack-dev/ustack/internal/third_party/gvisor/pkg/tcpip/header"
	gstack "github.com/ustack-dev/ustack/internal/third_party/gvisor/pkg/tcpip/stack"
	"github.com/ustack-dev/ustack/internal/third_party/gvisor/pkg/tcpip/transport/tcp"
	"github.com/ustack-dev/ustack/offload"
	"github.com/ustack-dev/ustack/xsk"
)

// batchSize is how many frames a worker takes off the RX ring at once and
// how many packets a TX batch holds.
const batchSize = 64

const ethHeaderLen = header.EthernetMinimumSize

// gsoMaxSize is the largest TCP packet netstack may hand down with GSO:
// an IPv4 packet's total length fits 16 bits.
const gsoMaxSize = 0xffff

var (
	_ gstack.LinkEndpoint       = (*endpoint)(nil)
	_ gstack.SinglePacketWriter = (*endpoint)(nil)
	_ gstack.GSOEndpoint        = (*endpoint)(nil)
)

// queue is one interface queue: its port, the worker state (RX side,
// owned by the worker goroutine) and the TX state (guarded by txMu).
type queue struct {
	io frameIO // the chain the worker and writers drive (middleware.go)

	rxDescs [batchSize]xsk.Desc // worker only
	// Worker only: the batch's verdicts, and GRO's scratch.
	rxValid   [batchSize]uint8
	groSegs   []offload.Seg
	groFrames [batchSize][]byte
	// deferred collects the TCP endpoints an RX batch touched, for the
	// worker to process once the whole batch is delivered (worker only).
	deferred deferred

	txMu    sync.Mutex
	txDescs [batchSize]xsk.Desc // under txMu
	txPos   [batchSize]txPos    // under txMu: which packet and segment txDescs[i] holds
	tx      offload.Tx          // under txMu: the packet being written
	txViews [][]byte            // under txMu: its bytes (reused)

	rxPackets, txPackets, txFrames, txNoFrame, txOversize, rxRunt, rxBadChecksum, rxPartialChecksum, rxInline, rxCoalesced atomic.Uint64
	// rxYields counts the worker's yields of its P after an RX batch
	// (tests).
	rxYields atomic.Uint64
	// rxFast counts the TCP fast path's verdicts on the segments early
	// demux offered it (tcp.FastHit, then the misses by reason).
	rxFast [tcp.NumFastMiss]atomic.Uint64
	// synFast counts the verdicts on the SYNs early demux offered a
	// listener to answer on the worker (tcp.SynVerdict, then
	// synMissRoute).
	synFast [tcp.NumSynVerdicts + 1]atomic.Uint64
	// flows is early demux's cache of established connections.
	flows flowCache
	// flags are the kick protocol's (kick.go).
	flags workerFlags
	trace *tracer // the endpoint's, nil unless tracing
}

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
	partialOK  bool        // accept offload.Partial checksums (a veth peer)
	txCsum     bool        // TX checksums computed in the copy (Config.NoTxChecksum unset)
	gso        bool        // TCP segmentation offload (not Config.NoGSO)
	gro        bool        // receive coalescing (Config.NoGRO unset)
	handOff    bool        // Config.HandOffTCP
	demux      *earlyDemux // early demux, set by newStack (nil: none)
	trace      *tracer     // nil unless Config.Trace

	// ready is the worker-read connections with something to read
	// (PollOnWorker).
	ready readyList
	// betweenRxBatches, if set, is called by a worker between the RX
	// batches of a burst it takes before TCP runs (tests only).
	betweenRxBatches atomic.Pointer[func()]

	mu         sync.RWMutex
	dispatcher gstack.NetworkDispatcher // guarded by mu; read once per batch
	onClose    func()

	stop atomic.Bool
	wg   sync.WaitGroup
}

func newEndpoint(ios []frameIO, link linkInfo, cfg *Config) *endpoint {
	e := &endpoint{mtu: link.mtu, mac: tcpip.LinkAddress(link.mac), poll: cfg.Poll, spinBudget: cfg.SpinBudget, pin: cfg.Pin,
		trustRx: cfg.TrustRxChecksum, partialOK: link.partialChecksums, handOff: cfg.HandOffTCP}
	e.caps = gstack.CapabilityResolutionRequired
	e.ready.ep = e
	e.gro = !cfg.NoGRO
	if !cfg.NoTxChecksum {
		e.txCsum = true
		e.caps |= gstack.CapabilityTXChecksumOffload
		e.gso = !cfg.NoGSO
	}
	if cfg.Trace {
		e.trace = newTracer()
	}
	for _, io := range ios {
		q := &queue{io: io, trace: e.trace, groSegs: make([]offload.Seg, 0, batchSize)}
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

// GSOMaxSize implements gstack.GSOEndpoint.
func (e *endpoint) GSOMaxSize() uint32 {
	if !e.gso {
		return 0
	}
	return gsoMaxSize
}

// SupportedGSO implements gstack.GSOEndpoint: with GSO on, the host kind,
// whose contract is a NIC's: TCP packets up to GSOMaxSize with the
// pseudo-header sum in the checksum field and the MSS in the packet's
// GSO options, cut and checksummed by the link (offload.Tx).
func (e *endpoint) SupportedGSO() gstack.SupportedGSO {
	if !e.gso {
		return gstack.GSONotSupported
	}
	return gstack.HostGSOSupported
}

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
		q.io.Interrupt()
	}
}

// stopWorkers stops the workers and waits for them, then closes every
// queue's frame I/O chain: each layer gives back what it holds (frames,
// buffered capture) and closes the one below. It must not be called with
// netstack's locks held.
func (e *endpoint) stopWorkers() error {
	e.signalStop()
	e.wg.Wait()
	var errs []error
	for _, q := range e.queues {
		errs = append(errs, q.io.Close())
	}
	return errors.Join(errs...)
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
