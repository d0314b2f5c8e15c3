package stack

import (
	"github.com/ustack-dev/ustack/bpf"
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
	// processed itself, after an RX batch (at most one per endpoint and
	// batch), instead of waking a netstack processor goroutine.
	RxInline uint64
	// RxCoalesced counts received TCP segments GRO merged into the
	// segment before them (unless Config.NoGRO).
	RxCoalesced uint64
	// XSK holds the AF_XDP socket's counters (zero over a memory wire).
	XSK xsk.Stats
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
	// Trace is the latency breakdown, nil unless Config.Trace.
	Trace *TraceStats

	// TCP loss recovery: retransmission timeouts, fast (SACK/RACK-driven)
	// retransmissions, entries into SACK recovery, and recoveries a tail
	// loss probe triggered.
	TCPTimeouts, TCPFastRetransmits, TCPSACKRecoveries, TCPTLPRecoveries uint64

	// TCP connections in TIME-WAIT now, and those closed without it
	// because Config.MaxTimeWait were.
	TCPTimeWait, TCPTimeWaitOverflows uint64
}

// Stats returns a snapshot of the stack's counters. Errors reading the
// kernel's counters leave those fields zero.
func (s *Stack) Stats() Stats {
	var st Stats
	for i, q := range s.ep.queues {
		qs := QueueStats{
			Queue:     i,
			RxPackets: q.rxPackets.Load(), TxPackets: q.txPackets.Load(), TxFrames: q.txFrames.Load(),
			TxNoFrame: q.txNoFrame.Load(), TxOversize: q.txOversize.Load(), RxRunt: q.rxRunt.Load(),
			RxBadChecksum: q.rxBadChecksum.Load(), RxInline: q.rxInline.Load(), RxPartialChecksum: q.rxPartialChecksum.Load(), RxCoalesced: q.rxCoalesced.Load(),
		}
		if xp, ok := q.io.(interface{ Stats() (xsk.Stats, error) }); ok {
			qs.XSK, _ = xp.Stats()
		}
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
	st.TCPTimeWait = ns.TCP.CurrentTimeWait.Value()
	st.TCPTimeWaitOverflows = ns.TCP.TimeWaitOverflows.Value()
	st.UDPPacketsReceived = ns.UDP.PacketsReceived.Value()
	st.UDPPacketsSent = ns.UDP.PacketsSent.Value()
	st.UDPChecksumErrors = ns.UDP.ChecksumErrors.Value()
	st.IPPacketsReceived = ns.IP.PacketsReceived.Value()
	st.IPPacketsSent = ns.IP.PacketsSent.Value()
	st.IPMalformed = ns.IP.MalformedPacketsReceived.Value()
	if t := s.ep.trace; t != nil {
		st.Trace = t.stats()
	}
	return st
}
