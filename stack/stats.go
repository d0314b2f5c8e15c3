package stack

import (
	"fmt"
	"strings"
	"time"

	"github.com/ustack-dev/ustack/bpf"
	"github.com/ustack-dev/ustack/internal/third_party/gvisor/pkg/tcpip/transport/tcp"
	"github.com/ustack-dev/ustack/stack/internal/frameio"
	"github.com/ustack-dev/ustack/stack/internal/link"
	"github.com/ustack-dev/ustack/xsk"
)

// QueueStats are one queue's counters.
type QueueStats struct {
	Queue int
	// RxPackets and TxPackets count frames delivered to and packets
	// written by netstack; TxFrames the frames those packets took (more
	// than TxPackets with GSO); TxNoFrame counts writes that found no
	// free frame or TX slot; TxOversize packets larger than a frame or
	// that package offload could not write (dropped); RxRunt frames
	// shorter than an Ethernet header.
	RxPackets, TxPackets, TxFrames, TxNoFrame, TxOversize, RxRunt uint64
	// RxBadChecksum counts TCP and UDP packets whose checksum failed in
	// the worker's verification; the worker drops them.
	RxBadChecksum uint64
	// RxPartialChecksum counts TCP and UDP packets accepted with a
	// checksum left for offload (CHECKSUM_PARTIAL) by a veth peer.
	RxPartialChecksum uint64
	// RxInline counts TCP endpoints whose received segments the worker
	// processed itself, after an RX round (at most one per endpoint and
	// round: a batch, or up to four full ones), instead of waking a
	// netstack processor goroutine.
	RxInline uint64
	// RxCoalesced counts received TCP segments GRO merged into the
	// segment before them (unless Config.Debug.NoGRO).
	RxCoalesced uint64
	// WorkerBusy is the time the queue's worker spent at work: RX
	// batches and all they ran on it (TCP, handlers, queue pairs),
	// kicks of the TX ring, connections made ready off the worker. Not
	// counted: polling an empty ring, sleeping, and the application
	// goroutines it yields its P to. A spinning worker's CPU time is
	// its whole life; this is the part that did something.
	WorkerBusy time.Duration
	// KickTime is the time the queue's kicks took (sendto on the AF_XDP
	// socket), whoever made them; the worker's are part of WorkerBusy.
	// In copy mode a kick copies the frames into the kernel's buffers,
	// and on veth it runs the peer's receive path inside the call: work
	// a zero-copy NIC would not put on this CPU.
	KickTime time.Duration
	// YieldTime is the time the worker spent having yielded its P to
	// other goroutines. With one P (GOMAXPROCS=1) that is the time the
	// application's goroutines ran on the worker's CPU, so WorkerBusy
	// plus YieldTime is the server's work on it, and the rest of a
	// spinning worker's CPU time is empty polling.
	YieldTime time.Duration
	// XSK holds the AF_XDP socket's counters (zero over a memory wire).
	XSK xsk.Stats
	// FaultsRX and FaultsTX count the faults injected (Config.Faults).
	FaultsRX, FaultsTX FaultStats
	// MultiBuffer counts the frames larger than a UMEM frame, on a link
	// whose MTU needs them (zero otherwise).
	MultiBuffer MultiBufferStats
}

// MultiBufferStats count multi-buffer frames: received as a chain of UMEM
// frames and joined, chains dropped (longer than the largest frame the
// MTU allows, or no reassembly buffer free), and frames sent as chains.
type MultiBufferStats struct {
	RxChains, RxChainsDropped, TxChains uint64
}

// Stats is a snapshot of a Stack's counters.
type Stats struct {
	Queues []QueueStats
	// Steering holds the XDP program's per-reason packet counts (zero over
	// a memory wire).
	Steering bpf.Counters
	// AttachMode is how the XDP program is attached.
	AttachMode bpf.AttachMode
	// OwnedPorts is how many (address, protocol, port) entries ustack
	// currently steers to itself.
	OwnedPorts int
	// A selection of netstack's counters.
	TCPActiveOpens, TCPPassiveOpens, TCPRetransmits, TCPSegmentsSent, TCPSegmentsReceived uint64
	TCPChecksumErrors, TCPResetsSent, TCPCurrentEstablished                               uint64
	UDPPacketsReceived, UDPPacketsSent, UDPChecksumErrors                                 uint64
	IPPacketsReceived, IPPacketsSent, IPMalformed                                         uint64
	// Capture counts the packet capture's records (Config.Capture).
	Capture CaptureStats
	// Trace is the latency breakdown, nil unless Config.Trace.
	Trace *TraceStats

	// TCP loss recovery: retransmission timeouts, fast (SACK/RACK-driven)
	// retransmissions, entries into SACK recovery, recoveries a tail loss
	// probe triggered, and probes sent in SACK recovery after a probe
	// timeout without an ACK.
	TCPTimeouts, TCPFastRetransmits, TCPSACKRecoveries, TCPTLPRecoveries uint64
	TCPRecoveryProbes                                                    uint64

	// TCP connections in TIME-WAIT now, and those closed without it
	// because Config.MaxTimeWait were.
	TCPTimeWait, TCPTimeWaitOverflows uint64

	// SYN cookies (Config.SynCookies): SYN-ACKs sent with a cookie
	// instead of a half-open connection, handshake ACKs whose cookie
	// validated (a connection made from it), and ACKs reaching a
	// listener whose cookie did not (answered with a reset).
	TCPSynCookiesSent, TCPSynCookiesValidated, TCPSynCookiesFailed uint64

	// SYNs to a listener answered on the worker (Config.Debug.NoFastPath,
	// tcp.Endpoint.AnswerSyn): cookie SYN-ACKs the worker wrote itself, a
	// part of TCPSynCookiesSent; SYNs it dropped for a full accept
	// queue, as the listener drops them; and SYNs it left to netstack's
	// listener, by why: cookie (Config.SynCookies "auto" with half-open
	// connections to spare, and the worker not behind), busy (the
	// listener's lock held elsewhere, or no TX frame), route (a peer off
	// ustack's on-link prefixes with no default router of its family,
	// Config.Gateway4 and Gateway6), unresolved (an off-link peer whose
	// router's MAC is not resolved yet), other (a listener shutting
	// down, IP settings a frame cannot carry).
	TCPSynsOnWorker, TCPSynsDroppedOnWorker                            uint64
	TCPSynMissCookie, TCPSynMissBusy, TCPSynMissRoute, TCPSynMissOther uint64
	TCPSynMissUnresolved                                               uint64
	// TCPSynsOnWorkerPressure is the part of TCPSynsOnWorker answered
	// while half the queue's receive frames or more waited on the RX
	// ring (Config.UMEMSize): then every SYN gets a cookie, whatever
	// SynCookies says.
	TCPSynsOnWorkerPressure uint64

	// TCP segments of TCPSegmentsSent that the fast path's send wrote
	// (Config.Debug.NoFastPath), and the packets it left to netstack's path, by
	// why: size (a GSO packet of several segments, or one past the MTU),
	// route (loopback, IP options, firewall rules, packet sockets), or a
	// next hop not resolved yet. Zero with NoFastPath.
	TCPSegmentsDirect                                              uint64
	TCPDirectMissSize, TCPDirectMissRoute, TCPDirectMissUnresolved uint64

	// Received TCP segments the fast path's receive (header prediction,
	// Config.Debug.NoFastPath) processed, a part of TCPSegmentsReceived, and
	// those it left to netstack, by why: busy (the connection's lock held
	// elsewhere, or segments queued ahead), state (not established),
	// header (flags other than ACK and PSH, options other than the
	// timestamp, no payload: pure ACKs are always netstack's), sequence
	// (not the next expected, or past the window or buffer), ack (outside
	// [SND.UNA, SND.NXT], or PAWS), recovery (loss recovery, SACK or
	// out-of-order state, a zero window). Only segments early demux
	// (plain IPv4 and IPv6, Config.Debug.NoEarlyDemux) found an established
	// connection for are offered.
	TCPSegmentsFast                                          uint64
	TCPFastMissBusy, TCPFastMissState, TCPFastMissHeader     uint64
	TCPFastMissSequence, TCPFastMissAck, TCPFastMissRecovery uint64

	// Bytes connections read on the worker (WorkerPoller: queue pairs)
	// were given: straight from the received packet by the fast path's
	// receive (PollBytesDirect: the consumer's copy is the bytes' only
	// one, but for runs receive coalescing merged, whose bytes it copied
	// first), and from the receive queue (PollBytesQueued: the segments
	// the fast path left to netstack, or that arrived while earlier
	// bytes waited there).
	PollBytesDirect, PollBytesQueued uint64
	// The bytes of PollBytesQueued by why they went to the receive
	// queue, counted as they arrive there: slow (the segment took
	// netstack's ordinary path: a fast-path miss, TCPFastMiss* say
	// which, or data out of order), behind (the fast path took it, but
	// earlier bytes still waited in the queue), refused (the consumer
	// could not take it at once), large (a coalesced segment past 64
	// KiB), before (there before the consumer was set). Zero with
	// Config.Debug.NoFastPath, where every byte is queued.
	PollBytesLeftSlow, PollBytesLeftBehind, PollBytesLeftRefused uint64
	PollBytesLeftLarge, PollBytesLeftBefore                      uint64

	// Bytes handlers' OnTraffic was given: straight from the receive
	// frame by the fast path's receive (HandlerBytesDirect: no copy),
	// and from the receive queue (HandlerBytesQueued: what the fast
	// path left to netstack, or what arrived while the stream could
	// not take it at once).
	HandlerBytesDirect, HandlerBytesQueued uint64
	// The bytes of HandlerBytesQueued by why, as PollBytesLeft*: refused
	// means the stream was busy (its lock held, writes held back, a Wake
	// pending) or closing.
	HandlerBytesLeftSlow, HandlerBytesLeftBehind, HandlerBytesLeftRefused uint64
	HandlerBytesLeftLarge, HandlerBytesLeftBefore                         uint64
}

// WorkerTime sums the queues' WorkerBusy and KickTime: the workers' time
// at work, and what every kick took.
func (st Stats) WorkerTime() (busy, kicks time.Duration) {
	for _, q := range st.Queues {
		busy += q.WorkerBusy
		kicks += q.KickTime
	}
	return busy, kicks
}

// YieldTime sums the queues' YieldTime: the time the workers' Ps ran
// other goroutines.
func (st Stats) YieldTime() time.Duration {
	var d time.Duration
	for _, q := range st.Queues {
		d += q.YieldTime
	}
	return d
}

// Stats returns a snapshot of the stack's counters. Errors reading the
// kernel's counters leave those fields zero.
func (s *Stack) Stats() Stats {
	var st Stats
	var fast [tcp.NumFastMiss]uint64
	var syn [link.NumSynVerdicts]uint64
	var synPressure uint64
	for i := range s.ep.NumQueues() {
		c := s.ep.Counters(i)
		qs := QueueStats{
			Queue:     i,
			RxPackets: c.RxPackets, TxPackets: c.TxPackets, TxFrames: c.TxFrames,
			TxNoFrame: c.TxNoFrame, TxOversize: c.TxOversize, RxRunt: c.RxRunt,
			RxBadChecksum: c.RxBadChecksum, RxInline: c.RxInline, RxPartialChecksum: c.RxPartialChecksum, RxCoalesced: c.RxCoalesced,
			WorkerBusy: c.WorkerBusy, KickTime: c.KickTime, YieldTime: c.YieldTime,
		}
		for j := range fast {
			fast[j] += c.Fast[j]
		}
		for j := range syn {
			syn[j] += c.Syn[j]
		}
		synPressure += c.SynPressure
		var io frameio.Stats
		s.ep.QueueIO(i).ReadStats(&io)
		qs.XSK, qs.FaultsRX, qs.FaultsTX = io.XSK, FaultStats(io.FaultsRX), FaultStats(io.FaultsTX)
		qs.MultiBuffer = MultiBufferStats(io.SG)
		// One capture serves every queue: each reports the same.
		st.Capture = CaptureStats(io.Capture)
		st.Queues = append(st.Queues, qs)
	}
	if s.prog != nil {
		st.Steering, _ = s.prog.Counters()
		st.AttachMode = s.prog.Mode()
	}
	st.OwnedPorts = len(s.ports.owned())
	ns := s.ns.Stats()
	st.TCPActiveOpens = ns.TCP.ActiveConnectionOpenings.Value()
	st.TCPPassiveOpens = ns.TCP.PassiveConnectionOpenings.Value()
	st.TCPRetransmits = ns.TCP.Retransmits.Value()
	st.TCPSegmentsSent = ns.TCP.SegmentsSent.Value()
	st.TCPSegmentsReceived = ns.TCP.ValidSegmentsReceived.Value()
	st.TCPChecksumErrors = ns.TCP.ChecksumErrors.Value()
	st.TCPResetsSent = ns.TCP.ResetsSent.Value()
	st.TCPCurrentEstablished = ns.TCP.CurrentEstablished.Value()
	st.TCPTimeouts = ns.TCP.Timeouts.Value()
	st.TCPFastRetransmits = ns.TCP.FastRetransmit.Value()
	st.TCPSACKRecoveries = ns.TCP.SACKRecovery.Value()
	st.TCPTLPRecoveries = ns.TCP.TLPRecovery.Value()
	st.TCPRecoveryProbes = ns.TCP.RecoveryProbes.Value()
	st.TCPTimeWait = ns.TCP.CurrentTimeWait.Value()
	st.TCPTimeWaitOverflows = ns.TCP.TimeWaitOverflows.Value()
	st.TCPSynCookiesSent = ns.TCP.ListenOverflowSynCookieSent.Value()
	st.TCPSynCookiesValidated = ns.TCP.ListenOverflowSynCookieRcvd.Value()
	st.TCPSynCookiesFailed = ns.TCP.ListenOverflowInvalidSynCookieRcvd.Value()
	st.TCPSegmentsFast = fast[tcp.FastHit]
	st.TCPFastMissBusy, st.TCPFastMissState, st.TCPFastMissHeader = fast[tcp.FastMissBusy], fast[tcp.FastMissState], fast[tcp.FastMissHeader]
	st.TCPFastMissSequence, st.TCPFastMissAck, st.TCPFastMissRecovery = fast[tcp.FastMissSequence], fast[tcp.FastMissAck], fast[tcp.FastMissRecovery]
	st.TCPSynsOnWorker, st.TCPSynsDroppedOnWorker = syn[tcp.SynAnswered], syn[tcp.SynDropped]
	st.TCPSynMissCookie, st.TCPSynMissBusy, st.TCPSynMissRoute = syn[tcp.SynMissCookie], syn[tcp.SynMissBusy], syn[link.SynMissRoute]
	st.TCPSynMissOther = syn[tcp.SynMissState] + syn[tcp.SynMissIP]
	st.TCPSynMissUnresolved = syn[link.SynMissUnresolved]
	st.TCPSynsOnWorkerPressure = synPressure
	st.PollBytesDirect, st.PollBytesQueued = s.pollDirect.Load(), s.pollQueued.Load()
	st.HandlerBytesDirect, st.HandlerBytesQueued = s.streamDirect.Load(), s.streamQueued.Load()
	pl, sl := &s.pollLeft, &s.streamLeft
	st.PollBytesLeftSlow, st.PollBytesLeftBehind, st.PollBytesLeftRefused = pl[tcp.FastLeftSlow].Load(), pl[tcp.FastLeftBehind].Load(), pl[tcp.FastLeftRefused].Load()
	st.PollBytesLeftLarge, st.PollBytesLeftBefore = pl[tcp.FastLeftLarge].Load(), pl[tcp.FastLeftBefore].Load()
	st.HandlerBytesLeftSlow, st.HandlerBytesLeftBehind, st.HandlerBytesLeftRefused = sl[tcp.FastLeftSlow].Load(), sl[tcp.FastLeftBehind].Load(), sl[tcp.FastLeftRefused].Load()
	st.HandlerBytesLeftLarge, st.HandlerBytesLeftBefore = sl[tcp.FastLeftLarge].Load(), sl[tcp.FastLeftBefore].Load()
	st.TCPSegmentsDirect = s.ns.DirectWrites()
	st.TCPDirectMissSize, st.TCPDirectMissRoute, st.TCPDirectMissUnresolved = s.ns.DirectMisses()
	st.UDPPacketsReceived = ns.UDP.PacketsReceived.Value()
	st.UDPPacketsSent = ns.UDP.PacketsSent.Value()
	st.UDPChecksumErrors = ns.UDP.ChecksumErrors.Value()
	st.IPPacketsReceived = ns.IP.PacketsReceived.Value()
	st.IPPacketsSent = ns.IP.PacketsSent.Value()
	st.IPMalformed = ns.IP.MalformedPacketsReceived.Value()
	st.Trace = s.traceStats()
	return st
}

// Summary is a short human-readable account of the counters: one line per
// queue, then steering, TCP, UDP and IP, faults and capture when set.
func (st Stats) Summary() string {
	var b strings.Builder
	for _, q := range st.Queues {
		fmt.Fprintf(&b, "queue %d: rx %d tx %d; dropped: runt %d, bad checksum %d; partial checksums %d; tx no frame %d, oversize %d; worker busy %v, kicks %v\n",
			q.Queue, q.RxPackets, q.TxPackets, q.RxRunt, q.RxBadChecksum, q.RxPartialChecksum, q.TxNoFrame, q.TxOversize,
			q.WorkerBusy.Round(time.Microsecond), q.KickTime.Round(time.Microsecond))
		x := q.XSK
		if x != (xsk.Stats{}) {
			fmt.Fprintf(&b, "  xsk: rx %d tx %d kicks %d (retries %d); kernel drops: rx %d, rx ring full %d, fill ring empty %d, rx invalid %d, tx invalid %d\n",
				x.RxPackets, x.TxPackets, x.Kicks, x.KickRetries, x.RxDropped, x.RxRingFull, x.FillRingEmpty, x.RxInvalid, x.TxInvalid)
		}
		if m := q.MultiBuffer; m != (MultiBufferStats{}) {
			fmt.Fprintf(&b, "  multi-buffer: rx chains %d (dropped %d), tx chains %d\n", m.RxChains, m.RxChainsDropped, m.TxChains)
		}
		for _, f := range []struct {
			dir string
			s   FaultStats
		}{{"rx", q.FaultsRX}, {"tx", q.FaultsTX}} {
			if f.s != (FaultStats{}) {
				fmt.Fprintf(&b, "  faults %s: dropped %d corrupted %d duplicated %d reordered %d delayed %d (skipped %d)\n",
					f.dir, f.s.Dropped, f.s.Corrupted, f.s.Duplicated, f.s.Reordered, f.s.Delayed, f.s.Skipped)
			}
		}
	}
	if st.Steering != (bpf.Counters{}) {
		fmt.Fprintf(&b, "steering (%v):", st.AttachMode)
		for r, n := range st.Steering {
			if n != 0 {
				fmt.Fprintf(&b, " %v %d", bpf.Reason(r), n)
			}
		}
		b.WriteString("\n")
	}
	fmt.Fprintf(&b, "tcp: established %d, opens %d active %d passive; segments in %d out %d (direct %d; left to netstack: size %d, route %d, unresolved %d); retransmits %d (timeouts %d, fast %d); resets sent %d; checksum errors %d\n",
		st.TCPCurrentEstablished, st.TCPActiveOpens, st.TCPPassiveOpens, st.TCPSegmentsReceived, st.TCPSegmentsSent, st.TCPSegmentsDirect, st.TCPDirectMissSize, st.TCPDirectMissRoute, st.TCPDirectMissUnresolved,
		st.TCPRetransmits, st.TCPTimeouts, st.TCPFastRetransmits, st.TCPResetsSent, st.TCPChecksumErrors)
	fmt.Fprintf(&b, "tcp fast path: received %d; left to netstack: busy %d, state %d, header %d, sequence %d, ack %d, recovery %d\n",
		st.TCPSegmentsFast, st.TCPFastMissBusy, st.TCPFastMissState, st.TCPFastMissHeader, st.TCPFastMissSequence, st.TCPFastMissAck, st.TCPFastMissRecovery)
	if st.TCPSynCookiesSent+st.TCPSynsDroppedOnWorker+st.TCPSynMissCookie+st.TCPSynMissBusy+st.TCPSynMissRoute+st.TCPSynMissUnresolved+st.TCPSynMissOther > 0 {
		fmt.Fprintf(&b, "tcp syn cookies: sent %d (by the worker %d, %d of them behind on the RX ring), validated %d, failed %d; syns dropped by the worker %d; left to netstack: cookie %d, busy %d, route %d, unresolved %d, other %d\n",
			st.TCPSynCookiesSent, st.TCPSynsOnWorker, st.TCPSynsOnWorkerPressure, st.TCPSynCookiesValidated, st.TCPSynCookiesFailed, st.TCPSynsDroppedOnWorker,
			st.TCPSynMissCookie, st.TCPSynMissBusy, st.TCPSynMissRoute, st.TCPSynMissUnresolved, st.TCPSynMissOther)
	}
	if st.PollBytesDirect+st.PollBytesQueued > 0 {
		fmt.Fprintf(&b, "worker-read bytes: %d straight from the frame, %d from the receive queue (left there: slow %d, behind %d, refused %d, large %d, before %d)\n",
			st.PollBytesDirect, st.PollBytesQueued, st.PollBytesLeftSlow, st.PollBytesLeftBehind, st.PollBytesLeftRefused, st.PollBytesLeftLarge, st.PollBytesLeftBefore)
	}
	if st.HandlerBytesDirect+st.HandlerBytesQueued > 0 {
		fmt.Fprintf(&b, "handler bytes: %d straight from the frame, %d from the receive queue (left there: slow %d, behind %d, refused %d, large %d, before %d)\n",
			st.HandlerBytesDirect, st.HandlerBytesQueued, st.HandlerBytesLeftSlow, st.HandlerBytesLeftBehind, st.HandlerBytesLeftRefused, st.HandlerBytesLeftLarge, st.HandlerBytesLeftBefore)
	}
	fmt.Fprintf(&b, "udp: in %d out %d, checksum errors %d; ip: in %d out %d, malformed %d; owned ports %d\n",
		st.UDPPacketsReceived, st.UDPPacketsSent, st.UDPChecksumErrors, st.IPPacketsReceived, st.IPPacketsSent, st.IPMalformed, st.OwnedPorts)
	if c := st.Capture; c != (CaptureStats{}) {
		fmt.Fprintf(&b, "capture: %d frames, %d bytes; not recorded: %d over the size bound, %d on write errors\n", c.Packets, c.Bytes, c.Dropped, c.Errors)
	}
	return b.String()
}
