package fastflow

import (
	"encoding/binary"

	"github.com/ustack-dev/ustack/offload"
)

// Write appends b to the flow's send ring, the record of written bytes
// until the peer acknowledges them. ring is the flow's ring (Slab.Ring);
// b is copied and not kept. It returns the bytes taken: fewer than len(b),
// with RingFull, if the ring lacks room for all of them.
func (f *Flow) Write(ring, b []byte) (int, Reason) {
	space := uint32(len(ring)) - (f.sndEnd - f.sndUna)
	r := OK
	if uint32(len(b)) > space {
		b = b[:space]
		r = RingFull
	}
	mask := uint32(len(ring) - 1)
	c := copy(ring[f.sndEnd&mask:], b)
	copy(ring, b[c:])
	f.sndEnd += uint32(len(b))
	return len(b), r
}

// Cut cuts the next segment of written, unsent bytes (at most one MSS)
// from ring into frame, headers from the flow's template, with the ACK,
// the window and timestamps riding on it, and the IPv4 and TCP checksums
// computed as it copies. It returns the frame's length, or 0 if nothing
// waits to be sent or the Reason is not OK.
//
// frame is the caller's (a UMEM frame); Cut writes frame[:n] and keeps
// nothing. The send check is one comparison against the precomputed
// allowance: a segment it does not fit returns WindowLimited, and one
// more than the in-flight record holds InflightFull, both leaving the
// flow unchanged for the slow path.
func (f *Flow) Cut(frame, ring []byte, clk Clock) (int, Reason) {
	n := min(f.sndEnd-f.sndNxt, uint32(f.mss))
	if n == 0 {
		return 0, OK
	}
	if n > f.room {
		return 0, WindowLimited
	}
	if f.fltLen == maxInflight {
		return 0, InflightFull
	}
	return f.segment(frame, ring, n, clk)
}

// Ack writes a pure ACK into frame, for an ACK owed that no data segment
// carries (AckNow, or the delayed-ACK deadline). It returns the frame's
// length, or FrameTooSmall.
func (f *Flow) Ack(frame []byte, clk Clock) (int, Reason) {
	return f.segment(frame, nil, 0, clk)
}

// segment writes the headers and n payload bytes from SND.NXT, and does
// the bookkeeping once the frame is written (TCPDirect's order: the
// packet first, the records after).
func (f *Flow) segment(frame, ring []byte, n uint32, clk Clock) (int, Reason) {
	hl := uint32(tcpLen)
	if f.flags&flagTS != 0 {
		hl += tsOptLen
	}
	total := ethLen + ipLen + hl + n
	if uint32(len(frame)) < total {
		return 0, FrameTooSmall
	}
	frame = frame[:total]
	copy(frame, f.hdr[:])

	ip := frame[ethLen : ethLen+ipLen]
	ipTot := uint16(ipLen + hl + n)
	binary.BigEndian.PutUint16(ip[2:], ipTot)
	binary.BigEndian.PutUint16(ip[4:], f.ipID)
	binary.BigEndian.PutUint16(ip[10:], ^fold(uint64(f.ipSum)+uint64(ipTot)+uint64(f.ipID)))
	f.ipID++

	tcp := frame[ethLen+ipLen:]
	binary.BigEndian.PutUint32(tcp[4:], f.sndNxt)
	binary.BigEndian.PutUint32(tcp[8:], f.rcvNxt)
	fl := uint8(flagACK)
	if n > 0 && f.sndNxt+n == f.sndEnd {
		fl |= flagPSH
	}
	tcp[13] = fl
	wnd := f.window()
	binary.BigEndian.PutUint16(tcp[14:], wnd)
	// The header's sum from the values just written, as big-endian
	// 16-bit words in a uint64 (a dozen words cannot carry out of it),
	// rather than summing the bytes back.
	sum := uint64(f.tcpSum) + uint64(hl+n) +
		uint64(f.sndNxt>>16) + uint64(f.sndNxt&0xffff) +
		uint64(f.rcvNxt>>16) + uint64(f.rcvNxt&0xffff) +
		uint64(hl/4)<<12 + uint64(fl) + uint64(wnd)
	if hl > tcpLen {
		tsVal := f.tsOffset + clk.Ms
		binary.BigEndian.PutUint32(tcp[20:], tsWord)
		binary.BigEndian.PutUint32(tcp[24:], tsVal)
		binary.BigEndian.PutUint32(tcp[28:], f.tsRecent)
		sum += tsWord>>16 + tsWord&0xffff +
			uint64(tsVal>>16) + uint64(tsVal&0xffff) +
			uint64(f.tsRecent>>16) + uint64(f.tsRecent&0xffff)
	}
	if n > 0 {
		var acc uint64
		mask := uint32(len(ring) - 1)
		at := f.sndNxt & mask
		first := min(n, uint32(len(ring))-at)
		c, s := offload.CopySum(tcp[hl:], ring[at:at+first], 0)
		acc = offload.Add(acc, s)
		if first < n {
			_, s = offload.CopySum(tcp[hl+uint32(c):], ring[:n-first], 0)
			if first&1 != 0 {
				s = offload.SumOdd(s)
			}
			acc = offload.Add(acc, s)
		}
		sum += uint64(offload.Fold(acc))
	}
	binary.BigEndian.PutUint16(tcp[16:], ^fold(sum))

	// The frame is written; now the records.
	if n > 0 {
		if f.sndUna == f.sndNxt {
			f.lossAt = clk.Us + f.rto
		}
		i := (f.fltHead + f.fltLen) % maxInflight
		f.inflight[i] = sent{end: f.sndNxt + n, at: clk.Us}
		f.fltLen++
		f.probeAt = clk.Us + f.pto(f.fltLen)
		f.sndNxt += n
		f.room -= n
		f.bytesOut += n
	}
	f.lastAckSent = f.rcvNxt
	f.rcvdSinceAck = 0
	f.flags &^= flagAckOwed | flagAckNow
	f.segsOut++
	return int(total), OK
}

// window returns the window field to advertise: the consumer's space
// scaled down, rounded down unless that would move the right edge left of
// one already advertised (RFC 7323 §2.4, RFC 9293 §3.8.6.2.2), in which
// case the edge stays where it was. It records the new right edge.
func (f *Flow) window() uint16 {
	need := f.rcvEdge - f.rcvNxt // bytes to the edge already advertised
	space := max(f.rcvSpace, need)
	w := space >> f.rcvShift
	if w<<f.rcvShift < need {
		w++
	}
	w = min(w, 0xffff)
	if edge := f.rcvNxt + w<<f.rcvShift; seqLT(f.rcvEdge, edge) {
		f.rcvEdge = edge
	}
	return uint16(w)
}

// fold folds a sum of big-endian 16-bit words, of up to 2³² words, into
// their 16-bit one's-complement sum.
func fold(s uint64) uint16 {
	s = s>>32 + s&0xffffffff
	s = s>>16 + s&0xffff
	s = s>>16 + s&0xffff
	return uint16(s>>16 + s&0xffff)
}
