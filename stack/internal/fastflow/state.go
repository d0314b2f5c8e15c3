package fastflow

import (
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/ustack-dev/ustack/offload"
)

// State is a connection's fast-path state in the slow path's terms: what
// Init imports at promotion and Export hands back at demotion, in the
// spirit of Linux's TCP_REPAIR (queue sequence numbers, options, window).
type State struct {
	// Addressing, for the header template. IPv4 only.
	SrcMAC, DstMAC   [6]byte
	SrcIP, DstIP     [4]byte
	SrcPort, DstPort uint16
	TTL, TOS         uint8

	// Send side. At promotion SndNxt must equal SndUna: nothing in
	// flight, so the send ring starts empty.
	SndUna, SndNxt uint32
	SndWnd         uint32 // the peer's window in bytes (already scaled); > 0
	SndWL1, SndWL2 uint32 // RFC 9293 SND.WL1/WL2
	SndShift       uint8  // the peer's window scale, 0–14
	MSS            uint16 // the largest payload to send; > 0
	Cwnd           uint32 // the congestion window in bytes, from the slow path

	// Receive side.
	RcvNxt   uint32
	RcvEdge  uint32 // the right edge already advertised (RCV.NXT + RCV.WND)
	RcvSpace uint32 // bytes the consumer accepts beyond RCV.NXT
	RcvShift uint8  // our window scale, 0–14

	// Timestamps (RFC 7323). TSOffset is added to Clock.Ms to make TSval.
	TS                 bool
	TSRecent, TSOffset uint32
	LastAckSent        uint32 // Last.ACK.sent

	// RTT in microseconds (RFC 6298); SRTT 0 means no sample yet.
	SRTT, RTTVar, RTO uint32

	IPID uint16 // the next IPv4 identification

	// An ACK owed for data received (RCV.NXT past Last.ACK.sent
	// means one is), due at DelAckAt (microseconds) if no segment
	// carries it sooner.
	AckOwed  bool
	DelAckAt uint32

	// Segments in flight, oldest first (InitInFlight and Export).
	InFlight []Sent

	// Probe: the slow path guards data in flight with a tail loss probe
	// (RACK-TLP with SACK, RFC 8985 §7), whose timer stands in for the
	// retransmission timer until the probe is sent. ProbeAt is its
	// deadline (microseconds) while data is in flight: for InitInFlight
	// the slow path's, 0 for one from the last segment's send; from
	// Export the flow's.
	Probe   bool
	ProbeAt uint32

	// Export only: counters, and the retransmission deadline
	// (microseconds; valid while SndUna != SndNxt).
	SegsIn, SegsOut   uint32
	BytesIn, BytesOut uint32
	LossAt            uint32
}

// Sent is one segment in flight: the sequence number just past it and the
// Clock.Us of its transmission.
type Sent struct{ End, At uint32 }

// ErrState reports a State that Init cannot take.
var ErrState = errors.New("fastflow: state not promotable")

// Init makes f the fast-path state of the connection st describes,
// building its header template. It refuses, with ErrState, a state that
// is not at a quiet point or that breaks an invariant the fast path relies
// on (the checks of Linux's tcp_repair_set_window among them).
func (f *Flow) Init(st *State) error {
	switch {
	case st.SndNxt != st.SndUna:
		return fmt.Errorf("%w: %d bytes in flight", ErrState, st.SndNxt-st.SndUna)
	case st.MSS == 0:
		return fmt.Errorf("%w: MSS 0", ErrState)
	case st.SndShift > 14 || st.RcvShift > 14:
		return fmt.Errorf("%w: window scale %d/%d", ErrState, st.SndShift, st.RcvShift)
	case st.SndWnd == 0 || st.SndWnd>>st.SndShift > 0xffff:
		return fmt.Errorf("%w: send window %d at scale %d", ErrState, st.SndWnd, st.SndShift)
	case seqLT(st.RcvEdge, st.RcvNxt):
		return fmt.Errorf("%w: right edge %d before RCV.NXT %d", ErrState, st.RcvEdge, st.RcvNxt)
	case seqLT(st.RcvNxt, st.LastAckSent):
		return fmt.Errorf("%w: Last.ACK.sent %d after RCV.NXT %d", ErrState, st.LastAckSent, st.RcvNxt)
	case seqLT(st.RcvNxt+st.RcvSpace, st.RcvNxt) || st.RcvSpace>>st.RcvShift > 0xffff:
		return fmt.Errorf("%w: receive space %d at scale %d", ErrState, st.RcvSpace, st.RcvShift)
	}
	*f = Flow{
		rcvNxt:      st.RcvNxt,
		rcvEdge:     st.RcvEdge,
		rcvSpace:    st.RcvSpace,
		tsRecent:    st.TSRecent,
		lastAckSent: st.LastAckSent,
		sndUna:      st.SndUna,
		sndNxt:      st.SndNxt,
		sndEnd:      st.SndNxt,
		sndWnd:      st.SndWnd,
		sndWL1:      st.SndWL1,
		sndWL2:      st.SndWL2,
		mss:         st.MSS,
		sndShift:    st.SndShift,
		rcvShift:    st.RcvShift,
		cwnd:        st.Cwnd,
		srtt:        st.SRTT,
		rttvar:      st.RTTVar,
		rto:         st.RTO,
		tsOffset:    st.TSOffset,
		ipID:        st.IPID,
	}
	if f.rto == 0 {
		f.rto = initialRTO
	}
	if st.Probe {
		f.flags |= flagProbe
	}
	if st.AckOwed || st.LastAckSent != st.RcvNxt {
		f.flags |= flagAckOwed
		f.delackAt = st.DelAckAt
		f.rcvdSinceAck = st.RcvNxt - st.LastAckSent
	}
	hl := tcpLen
	if st.TS {
		f.flags |= flagTS
		hl += tsOptLen
	}
	f.predFlags = uint32(hl/4)<<28 | flagACK<<16 | st.SndWnd>>st.SndShift
	f.updateRoom()

	h := f.hdr[:]
	copy(h[0:6], st.DstMAC[:])
	copy(h[6:12], st.SrcMAC[:])
	binary.BigEndian.PutUint16(h[12:], 0x0800)
	ip := h[ethLen : ethLen+ipLen]
	ip[0] = 0x45
	ip[1] = st.TOS
	binary.BigEndian.PutUint16(ip[6:], 0x4000) // DF
	ip[8] = st.TTL
	ip[9] = 6
	copy(ip[12:16], st.SrcIP[:])
	copy(ip[16:20], st.DstIP[:])
	tcp := h[ethLen+ipLen:]
	binary.BigEndian.PutUint16(tcp[0:], st.SrcPort)
	binary.BigEndian.PutUint16(tcp[2:], st.DstPort)
	tcp[12] = uint8(hl/4) << 4
	f.ipSum = offload.Fold(offload.Sum(ip, 0))
	f.tcpSum = offload.Fold(offload.Sum(tcp[0:4], offload.PseudoHeader4(ip[12:16], ip[16:20], 6, 0)))
	return nil
}

// InitInFlight is Init for a connection with segments in flight, as
// the slow path hands one over after a reply it sent: st.InFlight lists
// them oldest first (at most eight, the last ending at SndNxt), and
// unacked holds their bytes, [SndUna, SndNxt), which go into ring (the
// flow's send ring) at their sequence numbers. The retransmission
// deadline runs from the oldest segment's send time.
func (f *Flow) InitInFlight(st *State, ring, unacked []byte) error {
	out := st.SndNxt - st.SndUna
	switch {
	case out == 0:
		return f.Init(st)
	case len(st.InFlight) == 0 || len(st.InFlight) > maxInflight:
		return fmt.Errorf("%w: %d segments in flight", ErrState, len(st.InFlight))
	case st.InFlight[len(st.InFlight)-1].End != st.SndNxt:
		return fmt.Errorf("%w: in-flight record ends at %d, SND.NXT %d", ErrState, st.InFlight[len(st.InFlight)-1].End, st.SndNxt)
	case uint32(len(unacked)) != out || out > uint32(len(ring)) || len(ring)&(len(ring)-1) != 0:
		return fmt.Errorf("%w: %d bytes in flight, %d given, ring %d", ErrState, out, len(unacked), len(ring))
	}
	prev := st.SndUna
	for _, s := range st.InFlight {
		if !seqLT(prev, s.End) || seqLT(st.SndNxt, s.End) {
			return fmt.Errorf("%w: in-flight segment ending at %d out of order", ErrState, s.End)
		}
		prev = s.End
	}
	quiet := *st
	quiet.SndNxt = st.SndUna
	if err := f.Init(&quiet); err != nil {
		return err
	}
	mask := uint32(len(ring) - 1)
	c := copy(ring[st.SndUna&mask:], unacked)
	copy(ring, unacked[c:])
	for i, s := range st.InFlight {
		f.inflight[i] = sent{end: s.End, at: s.At}
	}
	f.fltHead, f.fltLen = 0, uint8(len(st.InFlight))
	f.sndNxt, f.sndEnd = st.SndNxt, st.SndNxt
	f.lossAt = st.InFlight[0].At + f.rto
	f.probeAt = st.ProbeAt
	if f.probeAt == 0 {
		f.probeAt = st.InFlight[len(st.InFlight)-1].At + f.pto(f.fltLen)
	}
	f.updateRoom()
	return nil
}

// Export returns the flow's state for the slow path to continue the
// connection: the inverse of Init, with the segments in flight (their
// bytes are in the send ring at their sequence numbers) and the counters.
// The bytes [SndNxt, SndNxt+Unsent()) are written and not yet sent.
func (f *Flow) Export() State {
	st := State{
		SndUna:      f.sndUna,
		SndNxt:      f.sndNxt,
		SndWnd:      f.sndWnd,
		SndWL1:      f.sndWL1,
		SndWL2:      f.sndWL2,
		SndShift:    f.sndShift,
		MSS:         f.mss,
		Cwnd:        f.cwnd,
		RcvNxt:      f.rcvNxt,
		RcvEdge:     f.rcvEdge,
		RcvSpace:    f.rcvSpace,
		RcvShift:    f.rcvShift,
		TS:          f.flags&flagTS != 0,
		TSRecent:    f.tsRecent,
		TSOffset:    f.tsOffset,
		LastAckSent: f.lastAckSent,
		SRTT:        f.srtt,
		RTTVar:      f.rttvar,
		RTO:         f.rto,
		IPID:        f.ipID,
		SegsIn:      f.segsIn,
		SegsOut:     f.segsOut,
		BytesIn:     f.bytesIn,
		BytesOut:    f.bytesOut,
		AckOwed:     f.flags&flagAckOwed != 0,
		DelAckAt:    f.delackAt,
		LossAt:      f.lossAt,
		Probe:       f.flags&flagProbe != 0,
		ProbeAt:     f.probeAt,
	}
	h := f.hdr[:]
	copy(st.DstMAC[:], h[0:6])
	copy(st.SrcMAC[:], h[6:12])
	ip := h[ethLen : ethLen+ipLen]
	st.TOS, st.TTL = ip[1], ip[8]
	copy(st.SrcIP[:], ip[12:16])
	copy(st.DstIP[:], ip[16:20])
	tcp := h[ethLen+ipLen:]
	st.SrcPort = binary.BigEndian.Uint16(tcp[0:])
	st.DstPort = binary.BigEndian.Uint16(tcp[2:])
	for i := 0; i < int(f.fltLen); i++ {
		s := f.inflight[(int(f.fltHead)+i)%maxInflight]
		st.InFlight = append(st.InFlight, Sent{End: s.end, At: s.at})
	}
	return st
}

// Unsent returns the bytes written to the send ring and not yet sent.
func (f *Flow) Unsent() uint32 { return f.sndEnd - f.sndNxt }

// InFlight returns the bytes sent and not yet acknowledged.
func (f *Flow) InFlight() uint32 { return f.sndNxt - f.sndUna }

// AckOwed reports whether received data awaits an ACK, and when it is due
// (Clock.Us) if no segment carries it sooner.
func (f *Flow) AckOwed() (owed bool, due uint32) {
	return f.flags&flagAckOwed != 0, f.delackAt
}

// SetAckDue sets when an owed ACK is due (Clock.Us), for a delayed-ACK
// time other than DelayedAck; no-op unless an ACK is owed.
func (f *Flow) SetAckDue(us uint32) {
	if f.flags&flagAckOwed != 0 {
		f.delackAt = us
	}
}

// ProbeAt returns the deadline of the segments in flight (Clock.Us), as
// the slow path keeps it: with Probe, the tail loss probe's, armed as
// netstack's RACK-TLP arms it (RFC 8985 §7.5.1) when new data is sent or
// an ACK acknowledges some and leaves more in flight, and not capped by
// the retransmission timeout, which runs only after the probe; without,
// the retransmission deadline. Valid while data is in flight.
func (f *Flow) ProbeAt() uint32 {
	if f.flags&flagProbe != 0 {
		return f.probeAt
	}
	return f.lossAt
}

// pto returns the probe timeout with segs segments outstanding: twice
// SRTT, plus the peer's worst-case delayed ACK when one segment is in
// flight, or 2 ms when more are; a second before the first RTT sample.
func (f *Flow) pto(segs uint8) uint32 {
	if f.srtt == 0 {
		return initialRTO
	}
	if segs == 1 {
		return 2*f.srtt + worstDelayedAck
	}
	return 2*f.srtt + probeMin
}

// The probe timeout's allowances in microseconds: the peer's worst-case
// delayed ACK and the floor Linux adds (TCP_TIMEOUT_MIN), as netstack's.
const (
	worstDelayedAck = 200_000
	probeMin        = 2_000
)

// LossAt returns the retransmission deadline (Clock.Us), valid while data
// is in flight.
func (f *Flow) LossAt() uint32 { return f.lossAt }

// RcvNxt returns RCV.NXT.
func (f *Flow) RcvNxt() uint32 { return f.rcvNxt }

// SndUna returns SND.UNA.
func (f *Flow) SndUna() uint32 { return f.sndUna }

// SndNxt returns SND.NXT.
func (f *Flow) SndNxt() uint32 { return f.sndNxt }

// RcvEdge returns the highest right edge advertised.
func (f *Flow) RcvEdge() uint32 { return f.rcvEdge }

// SetRcvSpace sets the bytes the consumer accepts beyond RCV.NXT, the
// window the next segment advertises (never moving the right edge left).
func (f *Flow) SetRcvSpace(n uint32) { f.rcvSpace = n }

// SetCwnd sets the congestion window (bytes), as the slow path computes it.
func (f *Flow) SetCwnd(n uint32) {
	f.cwnd = n
	f.updateRoom()
}

// updateRoom recomputes the send allowance, so that the send check is one
// comparison (TCPDirect's fast_send_len).
func (f *Flow) updateRoom() {
	allow := min(f.cwnd, f.sndWnd)
	if out := f.sndNxt - f.sndUna; out < allow {
		f.room = allow - out
	} else {
		f.room = 0
	}
}
