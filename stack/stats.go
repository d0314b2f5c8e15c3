package stack

import (
	"fmt"
	"sort"
	"strings"
	"sync/atomic"
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
	// shorter than an Ethernet header; TxRingFull frames written that
	// found the TX ring full and were freed unsent (netstack retries
	// them, and Config.Capture records them again when it does).
	RxPackets, TxPackets, TxFrames, TxNoFrame, TxOversize, RxRunt uint64
	TxRingFull                                                    uint64
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

// Stats is a snapshot of a Stack's counters, grouped by layer as
// netstack's tcpip.Stats groups its own: the queues and steering (the
// link), IP, TCP, ustack's TCP fast path, SYN handling, UDP, then the
// capture and the latency trace.
type Stats struct {
	// Queues holds each queue's link counters.
	Queues []QueueStats
	// Steering holds the XDP program's per-reason packet counts (zero over
	// a memory wire).
	Steering bpf.Counters
	// AttachMode is how the XDP program is attached.
	AttachMode bpf.AttachMode
	// OwnedPorts is how many (address, protocol, port) entries ustack
	// currently steers to itself.
	OwnedPorts int
	// IP holds netstack's IP counters.
	IP IPStats
	// TCP holds netstack's TCP counters.
	TCP TCPStats
	// FastPath counts what ustack's TCP fast path took and left.
	FastPath FastPathStats
	// Syn counts how SYNs to listeners were answered.
	Syn SynStats
	// UDP holds netstack's UDP counters.
	UDP UDPStats
	// Capture counts the packet capture's records (Config.Capture).
	Capture CaptureStats
	// Trace is the latency breakdown, nil unless Config.Trace.
	Trace *TraceStats
}

// IPStats are netstack's IPv4 and IPv6 counters, together.
type IPStats struct {
	PacketsReceived uint64 // packets netstack's IP layer received
	PacketsSent     uint64 // packets netstack's IP layer sent
	Malformed       uint64 // received packets with a bad IP header
}

// UDPStats are netstack's UDP counters.
type UDPStats struct {
	PacketsReceived uint64 // datagrams received
	PacketsSent     uint64 // datagrams sent
	ChecksumErrors  uint64 // datagrams dropped for a bad checksum
}

// TCPStats are a selection of netstack's TCP counters.
type TCPStats struct {
	ActiveOpens        uint64 // connections opened by Dial
	PassiveOpens       uint64 // connections accepted by listeners
	CurrentEstablished uint64 // connections established now
	SegmentsSent       uint64 // segments netstack sent, its fast path's included (the owned fast path's: FastPath.Owned)
	SegmentsReceived   uint64 // valid segments netstack received, its fast path's included (the owned fast path's: FastPath.Owned)
	ChecksumErrors     uint64 // segments dropped for a bad checksum
	ResetsSent         uint64 // RSTs sent
	Retransmits        uint64 // segments retransmitted
	// Loss recovery: retransmission timeouts, fast (SACK/RACK-driven)
	// retransmissions, entries into SACK recovery, recoveries a tail
	// loss probe triggered, and probes sent in SACK recovery after a
	// probe timeout without an ACK.
	Timeouts, FastRetransmits, SACKRecoveries, TLPRecoveries, RecoveryProbes uint64
	// TimeWait is the connections in TIME-WAIT now; TimeWaitOverflows
	// those closed without it because Config.MaxTimeWait were.
	TimeWait, TimeWaitOverflows uint64
}

// FastPathStats count what ustack's TCP fast path (Config.Debug.NoFastPath
// turns it off) took and what it left to netstack.
type FastPathStats struct {
	// Received is the segments the fast path's receive (header
	// prediction) processed, a part of TCP.SegmentsReceived. Only
	// segments early demux (plain IPv4 and IPv6,
	// Config.Debug.NoEarlyDemux) found an established connection for
	// are offered.
	Received uint64
	// The segments it left to netstack, by why: busy (the connection's
	// lock held elsewhere, or segments queued ahead), state (not
	// established), header (flags other than ACK and PSH, options other
	// than the timestamp, no payload: pure ACKs are always netstack's),
	// sequence (not the next expected, or past the window or buffer),
	// ack (outside [SND.UNA, SND.NXT], or PAWS), recovery (loss
	// recovery, SACK or out-of-order state, a zero window).
	MissBusy, MissState, MissHeader, MissSequence, MissAck, MissRecovery uint64

	// Sent is the segments of TCP.SegmentsSent that the fast path's send
	// wrote straight to the link.
	Sent uint64
	// The packets it left to netstack's path, by why: size (a GSO packet
	// of several segments, or one past the MTU), route (loopback, IP
	// options, firewall rules, packet sockets), or a next hop not
	// resolved yet.
	SendMissSize, SendMissRoute, SendMissUnresolved uint64

	// Poll counts the bytes connections read on the worker
	// (WorkerPoller: queue pairs) were given. Direct bytes come straight
	// from the received packet (the consumer's copy is their only one,
	// but for runs receive coalescing merged, whose bytes it copied
	// first); refused means the consumer could not take them at once.
	Poll DeliveryStats
	// Handler counts the bytes handlers' OnTraffic was given. Direct
	// bytes come straight from the receive frame, with no copy; refused
	// means the stream was busy (its lock held, writes held back, a Wake
	// pending) or closing.
	Handler DeliveryStats

	// Owned counts the owned fast path's work: handlers' connections,
	// and connections read on the worker (PollOnWorker: queue pairs'),
	// that ustack carries itself (Config.Debug.NetstackFastPath).
	Owned OwnedStats
}

// DeliveryStats count the bytes one kind of consumer was given: straight
// from the frame by the fast path's receive, or from the connection's
// receive queue, and why those went there, counted as they arrive
// there: slow (the segment took netstack's ordinary path: a fast-path
// miss, FastPathStats.Miss* say which, or data out of order), behind
// (the fast path took it, but earlier bytes still waited in the queue),
// refused (the consumer could not take it), large (a coalesced segment
// past 64 KiB), before (there before the consumer was set). With
// Config.Debug.NoFastPath every byte is queued and the reasons are zero.
type DeliveryStats struct {
	Direct, Queued                                           uint64
	LeftSlow, LeftBehind, LeftRefused, LeftLarge, LeftBefore uint64
}

// SynStats count how SYNs to listeners were answered.
type SynStats struct {
	// SYN cookies (Config.SynCookies): SYN-ACKs sent with a cookie
	// instead of a half-open connection, handshake ACKs whose cookie
	// validated (a connection made from it), and ACKs reaching a
	// listener whose cookie did not (answered with a reset).
	CookiesSent, CookiesValidated, CookiesFailed uint64
	// OnWorker is the cookie SYN-ACKs the worker wrote itself, from the
	// SYN's frame (tcp.Endpoint.AnswerSyn; Config.Debug.NoFastPath turns
	// it off), a part of CookiesSent. OnWorkerPressure is the part of
	// them answered while half the queue's receive frames or more waited
	// on the RX ring (Config.UMEMSize): then every SYN gets a cookie,
	// whatever Config.SynCookies says. DroppedOnWorker is the SYNs the
	// worker dropped for a full accept queue, as the listener drops them.
	OnWorker, OnWorkerPressure, DroppedOnWorker uint64
	// The SYNs the worker left to netstack's listener, by why: cookie
	// (SynCookiesAuto with half-open connections to spare, and the
	// worker not behind), busy (the listener's lock held elsewhere, or
	// no TX frame), route (a peer off ustack's on-link prefixes with no
	// default router of its family, Config.Gateway4 and Gateway6),
	// unresolved (an off-link peer whose router's MAC is not resolved
	// yet), other (a listener shutting down, IP settings a frame cannot
	// carry).
	MissCookie, MissBusy, MissRoute, MissUnresolved, MissOther uint64
	// InXDP is the cookie SYN-ACKs the steering program sent itself
	// (Config.XDPSyn), not counted in CookiesSent;
	// XDPRenewed the times the worker had it answer a listener's SYNs
	// for a while longer, XDPFailed the times that failed.
	InXDP, XDPRenewed, XDPFailed uint64
}

// OwnedStats count the owned fast path's work: the handler
// connections ustack carries itself while they are in the common case,
// netstack's parked meanwhile (Config.Debug.NetstackFastPath).
type OwnedStats struct {
	// Flows is how many connections it carries now.
	Flows int
	// Promotions counts connections netstack handed to it; Demotions
	// those it handed back, and DemotionsBy by why: a fastflow reason
	// (a segment or a send it does not do: "dup-ack", "out-of-order",
	// "window-limited", ...), "timeout" (data in flight past its tail
	// loss probe's or retransmission deadline), "close" (the handler
	// or the connection's owner closed or shut it down), "owner" (a
	// worker-read connection another worker was reading), "held" (a
	// segment reached netstack's ordinary path: IP options, a fragment).
	Promotions, Demotions uint64
	DemotionsBy           map[string]uint64
	// PromoteRefused counts promotions not made, and PromoteRefusedBy by
	// why: netstack's tcp.HandOutMiss ("busy", "recovery", "unsent",
	// "in-flight", ...), or "fast-path" (its slab full, say).
	PromoteRefused   uint64
	PromoteRefusedBy map[string]uint64
	// Segments and payload bytes it received and sent, and the pure
	// ACKs among the segments sent (the rest carried data).
	SegmentsIn, SegmentsOut, BytesIn, BytesOut, PureAcks uint64
	// TakeBackFailed counts connections netstack would not take back
	// (their state inconsistent: a bug), which ended.
	TakeBackFailed uint64
}

// ownedStats sums the queues' owned fast path counters.
func (s *Stack) ownedStats() OwnedStats {
	var f OwnedStats
	for i := range s.ep.NumQueues() {
		c := s.ep.OwnedCounters(i)
		f.Flows += c.Flows
		f.Promotions += c.Promotions
		f.SegmentsIn += c.SegsIn
		f.SegmentsOut += c.SegsOut
		f.BytesIn += c.BytesIn
		f.BytesOut += c.BytesOut
		f.PureAcks += c.PureAcks
		f.TakeBackFailed += c.TakeBackFailed
		for r, n := range c.Demotions {
			if n == 0 {
				continue
			}
			if f.DemotionsBy == nil {
				f.DemotionsBy = make(map[string]uint64)
			}
			f.Demotions += n
			f.DemotionsBy[link.DemoteReasonName(r)] += n
		}
		for r, n := range c.PromoteRefused {
			if n == 0 {
				continue
			}
			if f.PromoteRefusedBy == nil {
				f.PromoteRefusedBy = make(map[string]uint64)
			}
			name := tcp.HandOutMiss(r).String()
			if r == int(tcp.HandOutOK) {
				name = "fast-path"
			}
			f.PromoteRefused += n
			f.PromoteRefusedBy[name] += n
		}
	}
	return f
}

// byReason formats counts by reason as ": a 1, b 2", sorted; empty if
// none.
func byReason(m map[string]uint64) string {
	if len(m) == 0 {
		return ""
	}
	names := make([]string, 0, len(m))
	for r := range m {
		names = append(names, r)
	}
	sort.Strings(names)
	var b strings.Builder
	for i, r := range names {
		sep := ", "
		if i == 0 {
			sep = ": "
		}
		fmt.Fprintf(&b, "%s%s %d", sep, r, m[r])
	}
	return b.String()
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
			TxNoFrame: c.TxNoFrame, TxRingFull: c.TxRingFull, TxOversize: c.TxOversize, RxRunt: c.RxRunt,
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
	st.FastPath.Owned = s.ownedStats()
	ns := s.ns.Stats()
	st.IP = IPStats{
		PacketsReceived: ns.IP.PacketsReceived.Value(),
		PacketsSent:     ns.IP.PacketsSent.Value(),
		Malformed:       ns.IP.MalformedPacketsReceived.Value(),
	}
	st.TCP = TCPStats{
		ActiveOpens:        ns.TCP.ActiveConnectionOpenings.Value(),
		PassiveOpens:       ns.TCP.PassiveConnectionOpenings.Value(),
		CurrentEstablished: ns.TCP.CurrentEstablished.Value(),
		SegmentsSent:       ns.TCP.SegmentsSent.Value(),
		SegmentsReceived:   ns.TCP.ValidSegmentsReceived.Value(),
		ChecksumErrors:     ns.TCP.ChecksumErrors.Value(),
		ResetsSent:         ns.TCP.ResetsSent.Value(),
		Retransmits:        ns.TCP.Retransmits.Value(),
		Timeouts:           ns.TCP.Timeouts.Value(),
		FastRetransmits:    ns.TCP.FastRetransmit.Value(),
		SACKRecoveries:     ns.TCP.SACKRecovery.Value(),
		TLPRecoveries:      ns.TCP.TLPRecovery.Value(),
		RecoveryProbes:     ns.TCP.RecoveryProbes.Value(),
		TimeWait:           ns.TCP.CurrentTimeWait.Value(),
		TimeWaitOverflows:  ns.TCP.TimeWaitOverflows.Value(),
	}
	f := &st.FastPath
	f.Received = fast[tcp.FastHit]
	f.MissBusy, f.MissState, f.MissHeader = fast[tcp.FastMissBusy], fast[tcp.FastMissState], fast[tcp.FastMissHeader]
	f.MissSequence, f.MissAck, f.MissRecovery = fast[tcp.FastMissSequence], fast[tcp.FastMissAck], fast[tcp.FastMissRecovery]
	f.Sent = s.ns.DirectWrites()
	f.SendMissSize, f.SendMissRoute, f.SendMissUnresolved = s.ns.DirectMisses()
	f.Poll = deliveryStats(s.pollDirect.Load(), s.pollQueued.Load(), &s.pollLeft)
	f.Handler = deliveryStats(s.streamDirect.Load(), s.streamQueued.Load(), &s.streamLeft)
	st.Syn = SynStats{
		CookiesSent:      ns.TCP.ListenOverflowSynCookieSent.Value(),
		CookiesValidated: ns.TCP.ListenOverflowSynCookieRcvd.Value(),
		CookiesFailed:    ns.TCP.ListenOverflowInvalidSynCookieRcvd.Value(),
		OnWorker:         syn[tcp.SynAnswered],
		OnWorkerPressure: synPressure,
		DroppedOnWorker:  syn[tcp.SynDropped],
		MissCookie:       syn[tcp.SynMissCookie],
		MissBusy:         syn[tcp.SynMissBusy],
		MissRoute:        syn[link.SynMissRoute],
		MissUnresolved:   syn[link.SynMissUnresolved],
		MissOther:        syn[tcp.SynMissState] + syn[tcp.SynMissIP],
		InXDP:            st.Steering[bpf.TxSynAck],
	}
	if x := s.xdpSyn; x != nil {
		st.Syn.XDPRenewed, st.Syn.XDPFailed = x.renewed.Load(), x.failed.Load()
	}
	st.UDP = UDPStats{
		PacketsReceived: ns.UDP.PacketsReceived.Value(),
		PacketsSent:     ns.UDP.PacketsSent.Value(),
		ChecksumErrors:  ns.UDP.ChecksumErrors.Value(),
	}
	st.Trace = s.traceStats()
	return st
}

// deliveryStats reads one consumer kind's byte counters.
func deliveryStats(direct, queued uint64, left *[tcp.NumFastLeft]atomic.Uint64) DeliveryStats {
	return DeliveryStats{Direct: direct, Queued: queued,
		LeftSlow: left[tcp.FastLeftSlow].Load(), LeftBehind: left[tcp.FastLeftBehind].Load(), LeftRefused: left[tcp.FastLeftRefused].Load(),
		LeftLarge: left[tcp.FastLeftLarge].Load(), LeftBefore: left[tcp.FastLeftBefore].Load()}
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
	t, f, y := st.TCP, st.FastPath, st.Syn
	fmt.Fprintf(&b, "tcp: established %d, opens %d active %d passive; segments in %d out %d (direct %d; left to netstack: size %d, route %d, unresolved %d); retransmits %d (timeouts %d, fast %d); resets sent %d; checksum errors %d\n",
		t.CurrentEstablished, t.ActiveOpens, t.PassiveOpens, t.SegmentsReceived, t.SegmentsSent, f.Sent, f.SendMissSize, f.SendMissRoute, f.SendMissUnresolved,
		t.Retransmits, t.Timeouts, t.FastRetransmits, t.ResetsSent, t.ChecksumErrors)
	fmt.Fprintf(&b, "tcp fast path: received %d; left to netstack: busy %d, state %d, header %d, sequence %d, ack %d, recovery %d\n",
		f.Received, f.MissBusy, f.MissState, f.MissHeader, f.MissSequence, f.MissAck, f.MissRecovery)
	if o := f.Owned; o.Promotions+o.PromoteRefused > 0 {
		fmt.Fprintf(&b, "owned fast path: %d connections now; promotions %d (refused %d%s), demotions %d%s; segments in %d out %d (pure ACKs %d), bytes in %d out %d\n",
			o.Flows, o.Promotions, o.PromoteRefused, byReason(o.PromoteRefusedBy), o.Demotions, byReason(o.DemotionsBy),
			o.SegmentsIn, o.SegmentsOut, o.PureAcks, o.BytesIn, o.BytesOut)
	}
	if y.CookiesSent+y.InXDP+y.DroppedOnWorker+y.MissCookie+y.MissBusy+y.MissRoute+y.MissUnresolved+y.MissOther > 0 {
		fmt.Fprintf(&b, "tcp syn cookies: sent %d (by the worker %d, %d of them behind on the RX ring), validated %d, failed %d; sent by the steering program %d (handed to it %d times, failed %d); syns dropped by the worker %d; left to netstack: cookie %d, busy %d, route %d, unresolved %d, other %d\n",
			y.CookiesSent, y.OnWorker, y.OnWorkerPressure, y.CookiesValidated, y.CookiesFailed, y.InXDP, y.XDPRenewed, y.XDPFailed, y.DroppedOnWorker,
			y.MissCookie, y.MissBusy, y.MissRoute, y.MissUnresolved, y.MissOther)
	}
	for _, d := range []struct {
		what string
		s    DeliveryStats
	}{{"worker-read", f.Poll}, {"handler", f.Handler}} {
		if d.s.Direct+d.s.Queued > 0 {
			fmt.Fprintf(&b, "%s bytes: %d straight from the frame, %d from the receive queue (left there: slow %d, behind %d, refused %d, large %d, before %d)\n",
				d.what, d.s.Direct, d.s.Queued, d.s.LeftSlow, d.s.LeftBehind, d.s.LeftRefused, d.s.LeftLarge, d.s.LeftBefore)
		}
	}
	fmt.Fprintf(&b, "udp: in %d out %d, checksum errors %d; ip: in %d out %d, malformed %d; owned ports %d\n",
		st.UDP.PacketsReceived, st.UDP.PacketsSent, st.UDP.ChecksumErrors, st.IP.PacketsReceived, st.IP.PacketsSent, st.IP.Malformed, st.OwnedPorts)
	if c := st.Capture; c != (CaptureStats{}) {
		fmt.Fprintf(&b, "capture: %d frames, %d bytes; not recorded: %d over the size bound, %d on write errors\n", c.Packets, c.Bytes, c.Dropped, c.Errors)
	}
	return b.String()
}
