package fastflow

import "encoding/binary"

// Input is what Receive took from a segment.
type Input struct {
	// Payload is the segment's in-order payload, a subslice of the frame
	// passed to Receive (no copy): valid for as long as the frame is.
	// It is empty for a pure ACK.
	Payload []byte
	// Acked is the number of bytes the segment newly acknowledged, which
	// Receive has released from the send ring.
	Acked uint32
	// AckNow reports that more than one MSS has arrived unacknowledged
	// (RFC 9293 §3.8.6.3, Linux __tcp_ack_snd_check): the caller sends an
	// ACK before the batch ends if no reply carries one.
	AckNow bool
}

// hpMask keeps the bits of the TCP header's word at byte 12 (data offset,
// flags, window) that header prediction compares: all but PSH and the
// reserved bits (Linux's TCP_HP_BITS).
const hpMask = ^uint32(0x0e000000 | flagPSH<<16)

// Receive runs one Ethernet frame of this flow through the fast path:
// header prediction in the form of Linux's tcp_rcv_established, then the
// ACK (SND.UNA, the RTT sample, the send ring's release, the peer's
// window), then the payload, returned in place.
//
// The frame must hold an IPv4 TCP segment of this flow whose checksums
// the receive path has verified. Receive reads the frame and never keeps
// it; Input.Payload aliases it.
//
// A Reason other than OK means the segment is not the predicted kind: the
// flow is left exactly as it was and the caller hands the connection, and
// this same segment, to the slow path.
func (f *Flow) Receive(frame []byte, clk Clock) (Input, Reason) {
	if len(frame) < ethLen+ipLen+tcpLen {
		return Input{}, Malformed
	}
	ip := frame[ethLen:]
	tot := int(binary.BigEndian.Uint16(ip[2:]))
	// Version 4, no IP options, TCP, not a fragment, and a total length
	// the frame holds (Ethernet padding may follow it).
	if ip[0] != 0x45 || ip[9] != 6 || binary.BigEndian.Uint16(ip[6:])&0x3fff != 0 ||
		tot < ipLen+tcpLen || tot > len(ip) {
		return Input{}, Malformed
	}
	tcp := ip[ipLen:tot]
	hw := binary.BigEndian.Uint32(tcp[12:])
	winChanged := false
	if hw&hpMask != f.predFlags {
		if r := f.mispredicted(tcp, hw); r != OK {
			return Input{}, r
		}
		winChanged = true
	}
	hl := int(hw>>28) * 4
	if hl > len(tcp) {
		return Input{}, Malformed
	}
	var tsVal uint32
	if f.flags&flagTS != 0 {
		if binary.BigEndian.Uint32(tcp[20:]) != tsWord {
			return Input{}, optionsReason(tcp[tcpLen:hl])
		}
		tsVal = binary.BigEndian.Uint32(tcp[24:])
		if seqLT(tsVal, f.tsRecent) {
			return Input{}, PAWS
		}
	}
	seq := binary.BigEndian.Uint32(tcp[4:])
	ack := binary.BigEndian.Uint32(tcp[8:])
	n := uint32(len(tcp) - hl)
	switch {
	case seq != f.rcvNxt:
		if seqLT(f.rcvNxt, seq) {
			return Input{}, OutOfOrder
		}
		return Input{}, OldData
	case seqLT(f.sndNxt, ack):
		return Input{}, AckUnsent
	case seqLT(ack, f.sndUna):
		return Input{}, AckOld
	case n > 0 && seqLT(f.rcvEdge, seq+n):
		return Input{}, BeyondWindow
	}
	// The window is taken only from a segment newer than the one that
	// last set it (RFC 9293 §3.10.7.4: SND.WL1/WL2).
	newer := seqLT(f.sndWL1, seq) || f.sndWL1 == seq && seqLE(f.sndWL2, ack)
	wnd := f.sndWnd
	if winChanged && newer {
		raw := hw & 0xffff
		if raw == 0 {
			return Input{}, ZeroWindow
		}
		wnd = raw << f.sndShift
		if seqLT(ack+wnd, f.sndUna+f.sndWnd) {
			return Input{}, ShrunkWindow
		}
	}
	if n == 0 && ack == f.sndUna && f.sndUna != f.sndNxt && !winChanged {
		return Input{}, DupAck
	}

	// Accepted: from here on the flow changes.
	if f.flags&flagTS != 0 && seqLE(seq, f.lastAckSent) {
		// RFC 7323 §4.3: judged at arrival, before RCV.NXT moves.
		f.tsRecent = tsVal
	}
	var in Input
	if ack != f.sndUna {
		in.Acked = ack - f.sndUna
		f.sndUna = ack
		f.ackInflight(ack, clk)
	}
	if newer {
		f.sndWnd = wnd
		f.sndWL1, f.sndWL2 = seq, ack
		f.predFlags = f.predFlags&^0xffff | hw&0xffff
	}
	f.updateRoom()
	f.segsIn++
	f.lastRecv = clk.Us
	if n > 0 {
		f.rcvNxt += n
		f.bytesIn += n
		f.rcvdSinceAck += n
		if f.flags&flagAckOwed == 0 {
			f.flags |= flagAckOwed
			f.delackAt = clk.Us + DelayedAck
		}
		if f.rcvdSinceAck > uint32(f.mss) {
			f.flags |= flagAckNow
			in.AckNow = true
		}
		in.Payload = tcp[hl:]
	}
	return in, OK
}

// DelayedAck is how long, in microseconds, an ACK may wait for a reply to
// carry it: Config.DelayedAck's default, so a flow owes its ACK as long
// on the fast path as under netstack (RFC 9293
// §3.8.6.3 allows up to 500 ms).
const DelayedAck = 500

// mispredicted says why the header word hw at byte 12 differs from the
// predicted one, or OK if only the window differs (and the header has the
// flow's length), which Receive then judges.
func (f *Flow) mispredicted(tcp []byte, hw uint32) Reason {
	fl := uint8(hw >> 16)
	switch {
	case fl&(flagSYN|flagFIN|flagRST|flagURG) != 0 || fl&flagACK == 0:
		return ControlFlags
	case fl&(flagECE|flagCWR) != 0:
		return ECN
	case (hw^f.predFlags)&hpMask&^0xffff != 0:
		// The data offset (or the AE bit) differs.
		hl := int(hw>>28) * 4
		if hl < tcpLen || hl > len(tcp) {
			return Malformed
		}
		return optionsReason(tcp[tcpLen:hl])
	}
	return OK
}

// optionsReason tells a SACK option from other option changes, so that
// the demotion counters say which.
func optionsReason(opts []byte) Reason {
	for i := 0; i < len(opts); {
		switch kind := opts[i]; kind {
		case 0:
			return OptionsChange
		case 1:
			i++
		default:
			if kind == 5 {
				return SACK
			}
			if i+1 >= len(opts) || opts[i+1] < 2 {
				return OptionsChange
			}
			i += int(opts[i+1])
		}
	}
	return OptionsChange
}

// ackInflight pops the in-flight records that ack covers, takes an RTT
// sample from the oldest of them (RFC 6298 §3: none is a retransmission,
// since the fast path never retransmits; Linux takes its SRTT sample from
// the oldest acknowledged skb too), and re-arms or clears the
// retransmission deadline. Samples come from the Clock, not TSecr: the
// timestamp clock ticks in milliseconds, coarser than a local RTT.
func (f *Flow) ackInflight(ack uint32, clk Clock) {
	sampled, segs := false, f.fltLen
	for f.fltLen > 0 {
		s := &f.inflight[f.fltHead]
		if seqLT(ack, s.end) {
			break
		}
		if !sampled {
			f.sampleRTT(clk.Us - s.at)
			sampled = true
		}
		f.fltHead = (f.fltHead + 1) % maxInflight
		f.fltLen--
	}
	if f.sndUna != f.sndNxt {
		// RFC 6298 §5.3: restart the timer on an ACK of new data;
		// and the probe, from the ACK, with the segments outstanding
		// before it, as netstack arms it.
		f.lossAt = clk.Us + f.rto
		f.probeAt = clk.Us + f.pto(segs)
	}
}
