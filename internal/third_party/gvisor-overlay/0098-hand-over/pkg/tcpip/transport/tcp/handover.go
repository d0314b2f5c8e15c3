// Copyright 2026 The ustack Authors.
//
// Licensed under the Apache License, Version 2.0 (the "License");
// you may not use this file except in compliance with the License.
// You may obtain a copy of the License at
//
//     http://www.apache.org/licenses/LICENSE-2.0
//
// Unless required by applicable law or agreed to in writing, software
// distributed under the License is distributed on an "AS IS" BASIS,
// WITHOUT WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied.
// See the License for the specific language governing permissions and
// limitations under the License.

package tcp

import (
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/ustack-dev/ustack/internal/third_party/gvisor/pkg/buffer"
	"github.com/ustack-dev/ustack/internal/third_party/gvisor/pkg/tcpip"
	"github.com/ustack-dev/ustack/internal/third_party/gvisor/pkg/tcpip/header"
	"github.com/ustack-dev/ustack/internal/third_party/gvisor/pkg/tcpip/seqnum"
	"github.com/ustack-dev/ustack/internal/third_party/gvisor/pkg/tcpip/stack"
	"github.com/ustack-dev/ustack/internal/third_party/gvisor/pkg/waiter"
)

// ustack: the hand-over of an established connection between netstack and
// a fast path outside it (ustack's own, which owns a connection while it
// is in the common case). HandOut exports the connection's state at a
// quiet point and parks the endpoint: netstack then leaves the connection
// alone until TakeBack imports the fast path's state and netstack goes on
// as if it had done the fast path's work itself. Linux's TCP_REPAIR
// exports and imports a socket the same way.
//
// While e is parked (e.parked):
//   - ReceiveFast misses with FastMissBusy;
//   - segments that reach the ordinary path (one whose headers the fast
//     path cannot read, say, or one that raced with the hand-out) are
//     held in the segment queue and the stack's hook (SetHeldHook) is
//     told, so that the fast path's owner takes the connection back;
//     TakeBack's unlock then has them processed. Without a hook they are
//     dropped (counted as dropped from the segment queue), a loss the
//     peer repairs;
//   - timers do nothing (HandOut stopped them; TakeBack arms them again),
//     and a segment netstack would send (a window update after a
//     receive buffer change, say) is not sent;
//   - Write returns ErrWouldBlock, so a blocking writer waits for the
//     writable event TakeBack raises; Read finds the receive queue as
//     HandOut left it, empty, and waits likewise;
//   - Close, Abort and a write shutdown end the connection without a
//     segment (netstack does not know the current sequence numbers to put
//     on a FIN or RST; the peer's next segment draws a RST), and a later
//     TakeBack returns ErrNotParked. The fast path's owner takes the
//     connection back before it closes it.

// HandOver is an established connection's state as a fast path outside
// netstack takes it (HandOut) and returns it (TakeBack), in plain values.
// Sequence numbers are absolute.
type HandOver struct {
	// SndUna and SndNxt are SND.UNA and SND.NXT.
	SndUna, SndNxt uint32
	// SndWnd is the peer's window in bytes, already scaled.
	SndWnd uint32
	// SndWL1 and SndWL2 are the sequence and acknowledgement numbers of
	// the segment that last set SndWnd (RFC 9293's SND.WL1, SND.WL2).
	SndWL1, SndWL2 uint32
	// SndShift is the peer's window scale.
	SndShift uint8
	// MSS is the largest payload to send in one segment.
	MSS uint16
	// Cwnd is the congestion window in bytes (netstack's, in segments,
	// times MSS); TakeBack rounds it up to whole segments.
	Cwnd uint32
	// RcvNxt is RCV.NXT.
	RcvNxt uint32
	// RcvEdge is the right edge of the receive window already
	// advertised (RCV.NXT plus RCV.WND as sent). It never moves left.
	RcvEdge uint32
	// RcvSpace is how many bytes beyond RCV.NXT the receiver accepts now
	// (its free buffer space, at most what a window field can say at
	// RcvShift): the window to advertise, in bytes, before the rule that
	// RcvEdge never moves left.
	RcvSpace uint32
	// RcvShift is our window scale.
	RcvShift uint8
	// TS is set if the connection uses timestamps (RFC 7323).
	TS bool
	// TSRecent is TS.Recent, the TSval an ACK echoes.
	TSRecent uint32
	// TSVal is the TSval netstack would send at Now: the fast path's
	// timestamp clock continues netstack's (TSVal plus the milliseconds
	// since Now).
	TSVal uint32
	// LastAckSent is the acknowledgement number last sent.
	LastAckSent uint32
	// SRTT and RTTVar are the smoothed round-trip time and its
	// variation (RFC 6298); SRTT 0 means no sample yet. RTO is the
	// retransmission timeout.
	SRTT, RTTVar, RTO time.Duration
	// Now is when HandOut took this state, on the stack's clock.
	Now tcpip.MonotonicTime
	// LastSend is when a segment of the connection was last sent. In a
	// TakeBack, zero means the newest of InFlight's times, or Now if
	// none is in flight.
	LastSend tcpip.MonotonicTime
	// InFlight are the segments sent and not acknowledged, oldest
	// first: [SndUna, InFlight[0].End), [InFlight[0].End,
	// InFlight[1].End), ... up to SndNxt.
	InFlight []HandOverSeg
	// Probe is set if netstack guards the segments in flight with a
	// tail loss probe (RACK-TLP with SACK, RFC 8985 section 7): its probe
	// timer then stands in for the retransmission timer, which it arms
	// only once the probe has gone. Without it, the retransmission
	// timer runs from the oldest segment's send (RFC 6298).
	Probe bool
	// ProbeAt is the probe's deadline, while Probe and data is in
	// flight: in a HandOut the probe timer's target, zero if it was not
	// armed; in a TakeBack the deadline the fast path kept (armed as it
	// is, not capped by the retransmission timeout, as netstack arms a
	// probe after new data), or zero for one from LastSend.
	ProbeAt tcpip.MonotonicTime
	// AckOwed (TakeBack only) is set if data was received that no
	// segment sent has acknowledged.
	AckOwed bool
	// TTL (IPv4) or hop limit (IPv6), and TOS (IPv4) or traffic class
	// (IPv6), for the fast path's headers.
	TTL, TOS uint8
}

// HandOverSeg is one segment in flight.
type HandOverSeg struct {
	// End is the sequence number just past the segment.
	End uint32
	// At is its transmission time, its only one.
	At tcpip.MonotonicTime
}

// HandOutMiss says whether HandOut handed a connection out, and if not
// why.
type HandOutMiss uint8

// HandOut's verdicts.
const (
	// HandOutOK: the connection is handed out and e is parked.
	HandOutOK HandOutMiss = iota
	// HandOutBusy: the endpoint's lock is held elsewhere, segments
	// wait in its queue, an ACK the fast path's receive left is still
	// to be processed or sent, or e is parked already.
	HandOutBusy
	// HandOutState: the connection is not established, or a FIN was
	// sent, received or queued, or a side of it is shut down.
	HandOutState
	// HandOutRecovery: loss recovery, duplicate ACKs, SACK or RACK
	// state, a tail loss probe or retransmitted segment in flight, a
	// zero-window probe, or a corked write held.
	HandOutRecovery
	// HandOutReceive: out-of-order data held, or data in the receive
	// queue the application has yet to read.
	HandOutReceive
	// HandOutUnsent: data written and not yet sent.
	HandOutUnsent
	// HandOutInFlight: more than maxSegs segments in flight.
	HandOutInFlight
	// HandOutWindow: the peer's window or ours is zero.
	HandOutWindow
	// HandOutKeepalive: keepalive probes are unanswered.
	HandOutKeepalive
	// NumHandOutMiss is the number of verdicts.
	NumHandOutMiss
)

var handOutMissNames = [NumHandOutMiss]string{"ok", "busy", "state", "recovery", "receive", "unsent", "in-flight", "window", "keepalive"}

func (m HandOutMiss) String() string {
	if m < NumHandOutMiss {
		return handOutMissNames[m]
	}
	return fmt.Sprintf("HandOutMiss(%d)", uint8(m))
}

// Errors TakeBack returns.
var (
	// ErrNotParked: the endpoint is not parked (never handed out,
	// taken back already, or closed while parked).
	ErrNotParked = errors.New("tcp: endpoint not parked")
	// ErrBadHandOver: the state given is inconsistent; the endpoint
	// stays parked and unchanged.
	ErrBadHandOver = errors.New("tcp: inconsistent hand-over state")
)

// HandOut hands e's connection to a fast path at a quiet point: e is
// established and simply so (no FIN sent or received, nothing shut down,
// no loss recovery, no duplicate ACKs, no SACK scoreboard, no out-of-order
// data, no SACK blocks to send), the application has read everything
// received, everything written has been sent, each segment in flight was
// sent once and there are at most maxSegs of them, both windows are open,
// no keepalive probe is unanswered, no zero-window probe, tail loss probe
// or RACK reordering timer is pending, and nothing else holds the
// endpoint's lock or waits for it (segments queued, an ACK the fast
// path's receive left pending).
//
// It returns the connection's state and buf with the bytes in flight
// (SND.UNA to SND.NXT) appended. Segments are counted as sent: each MSS
// of a larger segment that went by segmentation offload is one. On
// HandOutOK e is parked (see above): the segments in flight are released
// from the write list (the fast path now holds their bytes), the timers
// are stopped, and netstack leaves the connection alone until TakeBack.
// Otherwise it returns why and changes nothing. Handing out a connection
// with nothing in flight allocates nothing but what buf's growth needs.
func (e *Endpoint) HandOut(buf []byte, maxSegs int) (HandOver, []byte, HandOutMiss) {
	if e.EndpointState() != StateEstablished {
		return HandOver{}, buf, HandOutState
	}
	if !e.TryLock() {
		return HandOver{}, buf, HandOutBusy
	}
	defer e.mu.Unlock()
	if miss := e.handOutCheckLocked(maxSegs); miss != HandOutOK {
		return HandOver{}, buf, miss
	}

	s, r := e.snd, e.rcv
	now := e.stack.Clock().NowMonotonic()
	h := HandOver{
		SndUna:      uint32(s.SndUna),
		SndNxt:      uint32(s.SndNxt),
		SndWnd:      uint32(s.SndWnd),
		SndWL1:      uint32(s.sndWL1),
		SndWL2:      uint32(s.sndWL2),
		SndShift:    s.SndWndScale,
		MSS:         uint16(s.MaxPayloadSize),
		Cwnd:        uint32(s.SndCwnd) * uint32(s.MaxPayloadSize),
		RcvNxt:      uint32(r.RcvNxt),
		RcvEdge:     uint32(r.rightEdge()),
		RcvSpace:    min(uint32(e.selectWindow()), math.MaxUint16<<r.RcvWndScale),
		RcvShift:    r.RcvWndScale,
		TS:          e.SendTSOk,
		TSRecent:    e.recentTimestamp(),
		LastAckSent: uint32(s.MaxSentAck),
		RTO:         s.RTO,
		Now:         now,
		LastSend:    s.LastSendTime,
		Probe:       s.shouldSchedulePTO(),
		TTL:         calculateTTL(e.route, e.ipv4TTL, e.ipv6HopLimit),
		TOS:         e.sendTOS,
	}
	if e.SendTSOk {
		h.TSVal = e.tsVal(now)
	}
	if h.Probe && s.probeTimer.enabled() {
		h.ProbeAt = s.probeTimer.target
	}
	s.rtt.Lock()
	if s.rtt.TCPRTTState.SRTTInited {
		h.SRTT, h.RTTVar = s.rtt.TCPRTTState.SRTT, s.rtt.TCPRTTState.RTTVar
	}
	s.rtt.Unlock()

	// A segment of the write list larger than MSS went as several
	// (segmentation offload): the fast path sees each.
	mss := s.MaxPayloadSize
	if n := s.Outstanding; n > 0 {
		h.InFlight = make([]HandOverSeg, 0, n)
	}
	size := 0
	for seg := s.writeList.Front(); seg != nil; seg = s.writeList.Front() {
		l := seg.payloadSize()
		for off := min(mss, l); ; off = min(off+mss, l) {
			h.InFlight = append(h.InFlight, HandOverSeg{End: uint32(seg.sequenceNumber.Add(seqnum.Size(off))), At: seg.xmitTime})
			if off == l {
				break
			}
		}
		w := appendWriter{buf}
		seg.pkt.Data().ReadTo(&w, true /* peek */)
		buf = w.b
		size += l
		s.writeList.Remove(seg)
		seg.DecRef()
	}
	if size > 0 {
		e.sndQueueInfo.sndQueueMu.Lock()
		e.sndQueueInfo.SndBufUsed -= size
		e.sndQueueInfo.sndQueueMu.Unlock()
	}
	s.Outstanding = 0

	s.resendTimer.disable()
	s.probeTimer.disable()
	s.reorderTimer.disable()
	s.corkTimer.disable()
	s.delackTimer.disable()
	e.disableKeepaliveTimer()
	e.parked = true
	return h, buf, HandOutOK
}

// handOutCheckLocked is HandOut's test for a quiet point.
//
// +checklocks:e.mu
func (e *Endpoint) handOutCheckLocked(maxSegs int) HandOutMiss {
	if e.parked || !e.segmentQueue.empty() || e.lateAckLocked() || e.fastAckOwed {
		return HandOutBusy
	}
	s, r := e.snd, e.rcv
	if e.EndpointState() != StateEstablished || e.closed || e.shutdownFlags != 0 || s == nil || r == nil ||
		s.Closed || r.closed || s.finSent {
		return HandOutState
	}
	e.sndQueueInfo.sndQueueMu.Lock()
	sndClosed := e.sndQueueInfo.SndClosed
	e.sndQueueInfo.sndQueueMu.Unlock()
	e.rcvQueueMu.Lock()
	rcvUsed, rcvClosed := e.RcvBufUsed, e.RcvClosed
	e.rcvQueueMu.Unlock()
	if sndClosed || rcvClosed {
		return HandOutState
	}
	if s.state != tcpip.Open || s.FastRecovery.Active || s.DupAckCount != 0 || s.SackedOut != 0 ||
		!e.scoreboard.Empty() || s.zeroWindowProbing || s.rc.tlpRxtOut || s.rc.probes != 0 ||
		s.reorderTimer.enabled() || s.startCork || s.ackPending || s.lateAck.pending {
		return HandOutRecovery
	}
	if r.pendingRcvdSegments.Len() > 0 || e.sack.NumBlocks > 0 || rcvUsed > 0 {
		return HandOutReceive
	}
	if s.writeNext != nil {
		return HandOutUnsent
	}
	// The write list holds what is in flight and nothing else: each
	// segment sent once, contiguous from SND.UNA to SND.NXT.
	next, n := s.SndUna, 0
	for seg := s.writeList.Front(); seg != nil; seg = seg.Next() {
		l := seg.payloadSize()
		if !s.isAssignedSequenceNumber(seg) || l == 0 || seg.flags&header.TCPFlagFin != 0 {
			return HandOutUnsent
		}
		if seg.xmitCount != 1 || seg.acked || seg.lost || seg.sequenceNumber != next {
			return HandOutRecovery
		}
		next = next.Add(seqnum.Size(l))
		n += s.pCount(seg, s.MaxPayloadSize)
	}
	if next != s.SndNxt {
		return HandOutRecovery
	}
	if n > maxSegs {
		return HandOutInFlight
	}
	if s.SndWnd == 0 || r.rightEdge() == r.RcvNxt {
		return HandOutWindow
	}
	e.keepalive.Lock()
	unacked := e.keepalive.unacked
	e.keepalive.Unlock()
	if unacked > 0 {
		return HandOutKeepalive
	}
	return HandOutOK
}

// TakeBack returns a parked connection to netstack with the fast path's
// state h: its sequence numbers, windows (the right edge advertised never
// moves left: RcvEdge below the edge HandOut reported is an error),
// RTT and RTO, congestion window (bytes rounded up to segments),
// TS.Recent and last ACK sent. inflight holds the bytes SND.UNA to
// SND.NXT, which become the write list's sent segments, one per
// h.InFlight entry, with its send time (sent once); unsent holds bytes
// the application wrote that the fast path has not sent (from SND.NXT
// on), queued behind them as unsent. TakeBack copies both; the caller
// keeps its buffers.
//
// The retransmission timer is armed if anything is in flight, for the
// oldest segment's send time plus RTO; the ACK owed (h.AckOwed) is sent
// at once or on the delayed-ACK timer, as netstack decides for data it
// received; keepalive is restored; the unsent bytes go as the windows
// allow; writers waiting are woken. netstack's counters do not count
// the fast path's segments.
//
// TakeBack reads neither MSS, RcvSpace, TSVal, TTL nor TOS (netstack
// has its own), and Now only as LastSend's fallback.
//
// On an error e stays parked and unchanged: ErrNotParked if e is not
// parked, ErrBadHandOver (wrapped with the reason) if h is inconsistent.
func (e *Endpoint) TakeBack(h *HandOver, inflight, unsent []byte) error {
	e.LockUser()
	err := e.takeBackLocked(h, inflight, unsent)
	e.UnlockUser()
	if err == nil {
		e.waiterQueue.Notify(waiter.WritableEvents)
	}
	return err
}

// +checklocks:e.mu
func (e *Endpoint) takeBackLocked(h *HandOver, inflight, unsent []byte) error {
	if !e.parked {
		return ErrNotParked
	}
	s, r := e.snd, e.rcv
	if s == nil || r == nil || e.EndpointState() != StateEstablished {
		return ErrNotParked
	}
	una, nxt := seqnum.Value(h.SndUna), seqnum.Value(h.SndNxt)
	if nxt.LessThan(una) {
		return fmt.Errorf("%w: SND.NXT %d before SND.UNA %d", ErrBadHandOver, h.SndNxt, h.SndUna)
	}
	// No check against the state at the hand-out: a fast path that
	// carried a long transfer may have moved SND.UNA or RCV.NXT on by
	// more than 2^31, where serial arithmetic calls it a move back.
	if int(una.Size(nxt)) != len(inflight) {
		return fmt.Errorf("%w: %d bytes in flight for SND.UNA %d to SND.NXT %d", ErrBadHandOver, len(inflight), h.SndUna, h.SndNxt)
	}
	if len(inflight) > 0 && len(h.InFlight) == 0 {
		return fmt.Errorf("%w: %d bytes in flight and no segment", ErrBadHandOver, len(inflight))
	}
	prev := una
	for i, seg := range h.InFlight {
		end := seqnum.Value(seg.End)
		if !prev.LessThan(end) || nxt.LessThan(end) {
			return fmt.Errorf("%w: segment %d ends at %d, outside (%d, %d]", ErrBadHandOver, i, seg.End, uint32(prev), h.SndNxt)
		}
		prev = end
	}
	if prev != nxt {
		return fmt.Errorf("%w: the segments in flight end at %d, not SND.NXT %d", ErrBadHandOver, uint32(prev), h.SndNxt)
	}
	rcvNxt, edge := seqnum.Value(h.RcvNxt), seqnum.Value(h.RcvEdge)
	if edge.LessThan(rcvNxt) {
		return fmt.Errorf("%w: receive window's right edge %d before RCV.NXT %d", ErrBadHandOver, h.RcvEdge, h.RcvNxt)
	}
	lastAck := seqnum.Value(h.LastAckSent)
	if rcvNxt.LessThan(lastAck) {
		return fmt.Errorf("%w: last ACK sent %d beyond RCV.NXT %d", ErrBadHandOver, h.LastAckSent, h.RcvNxt)
	}
	if h.SndShift != s.SndWndScale || h.RcvShift != r.RcvWndScale || h.TS != e.SendTSOk {
		return fmt.Errorf("%w: window scales or timestamps changed", ErrBadHandOver)
	}

	now := e.stack.Clock().NowMonotonic()
	// The sender.
	s.SndUna, s.SndNxt = una, nxt
	// Marks of the sequence space from before the hand-out, as far
	// behind SND.UNA as the fast path moved it: NewReno's recovery point
	// (RFC 6582's recover) is below SND.UNA at a quiet point, so one that
	// now reads as at or past it wrapped, and would keep fast retransmit
	// from starting; RACK's most forward ACK and its last delivered
	// segment are at most SND.UNA with no SACK scoreboard.
	if !s.FastRecovery.Last.LessThan(una) {
		s.FastRecovery.Last = una - 1
	}
	s.rc.FACK = una
	s.rc.EndSequence = una
	s.SndWnd = seqnum.Size(h.SndWnd)
	if s.maxSndWnd < s.SndWnd {
		s.maxSndWnd = s.SndWnd
	}
	s.sndWL1, s.sndWL2 = seqnum.Value(h.SndWL1), seqnum.Value(h.SndWL2)
	if mss := uint32(s.MaxPayloadSize); mss > 0 {
		s.SndCwnd = max(1, int((h.Cwnd+mss-1)/mss))
	}
	if h.RTO > 0 {
		s.RTO = min(max(h.RTO, s.minRTO), s.maxRTO)
	}
	if h.SRTT > 0 {
		s.rtt.Lock()
		s.rtt.TCPRTTState = TCPRTTState{SRTT: h.SRTT, RTTVar: h.RTTVar, SRTTInited: true}
		s.RTTState = s.rtt.TCPRTTState
		s.rtt.Unlock()
	}
	// No RTT measurement in flight: the next segment sent starts one.
	s.RTTMeasureSeqNum = nxt
	s.MaxSentAck = lastAck
	// FastRecovery's marks (RFC 6582's recover, RFC 6675's HighRxt and
	// RescueRxt) stay: a fast path that moved SND.UNA on without loss
	// leaves them where netstack would have.
	switch last := h.LastSend; {
	case last != (tcpip.MonotonicTime{}):
		s.LastSendTime = last
	case len(h.InFlight) > 0:
		s.LastSendTime = h.InFlight[len(h.InFlight)-1].At
	case h.Now != (tcpip.MonotonicTime{}):
		s.LastSendTime = h.Now
	}

	// The receiver: the window as last advertised, with the last ACK.
	r.RcvNxt = rcvNxt
	r.RcvAcc = edge
	r.rcvWUP = lastAck
	r.rcvWnd = lastAck.Size(edge)
	if e.SendTSOk && h.TSRecent != e.RecentTS {
		e.setRecentTimestamp(h.TSRecent)
	}

	// The write list: the segments in flight, then the unsent bytes.
	mark := e.ops.GetMark()
	start := una
	for i, hs := range h.InFlight {
		end := seqnum.Value(hs.End)
		b := inflight[una.Size(start):una.Size(end)]
		seg := newOutgoingSegment(e.TransportEndpointInfo.ID, e.stack.Clock(), buffer.MakeWithData(b), mark)
		seg.sequenceNumber = start
		// PSH as netstack sends a write cut into segments: on the
		// last, not on a full one cut from the same send (the next
		// sent at the same time).
		seg.flags = header.TCPFlagAck | header.TCPFlagPsh
		if len(b) == s.MaxPayloadSize && i+1 < len(h.InFlight) && h.InFlight[i+1].At == hs.At {
			seg.flags = header.TCPFlagAck
		}
		seg.xmitTime = hs.At
		seg.xmitCount = 1
		s.writeList.PushBack(seg)
		s.Outstanding += s.pCount(seg, s.MaxPayloadSize)
		start = end
	}
	var next *segment
	if len(unsent) > 0 {
		next = newOutgoingSegment(e.TransportEndpointInfo.ID, e.stack.Clock(), buffer.MakeWithData(unsent), mark)
		s.writeList.PushBack(next)
	}
	if n := len(inflight) + len(unsent); n > 0 {
		e.sndQueueInfo.sndQueueMu.Lock()
		e.sndQueueInfo.SndBufUsed += n
		e.sndQueueInfo.sndQueueMu.Unlock()
	}
	e.parked = false // what it held is processed at the unlock

	// Timers.
	if len(h.InFlight) > 0 {
		switch {
		case s.shouldSchedulePTO() && h.ProbeAt != (tcpip.MonotonicTime{}):
			// The probe the fast path kept, as netstack arms it after
			// new data or an ACK of some (RACK-TLP, RFC 8985 section
			// 7.5.1): the retransmission timer waits for the probe.
			s.probeTimer.enableAt(now, max(h.ProbeAt.Sub(now), 0))
		default:
			d := h.InFlight[0].At.Add(s.RTO).Sub(now)
			s.resendTimer.enableAt(now, max(d, 0))
			if s.shouldSchedulePTO() {
				// A probe from the last segment sent: a fast path
				// that hands the connection back at its own probe
				// deadline has the probe sent at once.
				s.schedulePTOFrom(s.LastSendTime)
			}
		}
	}
	if h.AckOwed && r.RcvNxt != s.MaxSentAck {
		if e.ackNowLocked() {
			s.sendAck()
		} else {
			s.delackTimer.enableAt(now, s.delayedAck)
		}
	}
	e.resetKeepaliveTimer(false)
	if next != nil {
		e.sendData(next)
	}
	return nil
}

// abandonParkedLocked ends a parked connection without a segment: Close,
// Abort and a write shutdown of a parked endpoint (see above). It reports
// whether e was parked.
//
// +checklocks:e.mu
func (e *Endpoint) abandonParkedLocked() bool {
	if !e.parked {
		return false
	}
	e.parked = false
	e.hardError = &tcpip.ErrConnectionAborted{}
	e.purgeWriteQueue()
	e.purgePendingRcvQueue()
	e.cleanupLocked()
	e.setEndpointState(StateError)
	return true
}

// SetHeldHook has hook told, with the endpoint's lock held and from
// whichever goroutine processes the segment, when a parked endpoint of
// s's TCP holds a segment that came through the ordinary path. hook must
// neither block nor take the endpoint's lock, and should have the
// connection taken back soon (TakeBack). Set it before traffic starts.
func SetHeldHook(s *stack.Stack, hook func(*Endpoint)) error {
	p, ok := s.TransportProtocolInstance(ProtocolNumber).(*protocol)
	if !ok {
		return errors.New("tcp: the stack has no TCP")
	}
	p.held = hook
	return nil
}

// HoldsSegments reports whether segments wait in e's queue: for a parked
// endpoint, those it holds for TakeBack.
func (e *Endpoint) HoldsSegments() bool { return !e.segmentQueue.empty() }

// dropParkedLocked keeps a parked endpoint's queued segments from
// processing and reports whether it did (handleSegmentsLocked's hook):
// it holds them for TakeBack and tells the stack's hook (SetHeldHook),
// or without one drops them.
//
// +checklocks:e.mu
func (e *Endpoint) dropParkedLocked() bool {
	if !e.parked {
		return false
	}
	if hook := e.protocol.held; hook != nil {
		if !e.segmentQueue.empty() {
			hook(e)
		}
		return true
	}
	for s := e.segmentQueue.dequeue(); s != nil; s = e.segmentQueue.dequeue() {
		e.stack.Stats().DroppedPackets.Increment()
		e.stats.ReceiveErrors.SegmentQueueDropped.Increment()
		s.DecRef()
	}
	return true
}

// Parked reports whether e is parked: handed out (HandOut) and not yet
// taken back.
func (e *Endpoint) Parked() bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.parked
}

// appendWriter is an io.Writer that appends to b.
type appendWriter struct{ b []byte }

func (w *appendWriter) Write(p []byte) (int, error) {
	w.b = append(w.b, p...)
	return len(p), nil
}

// schedulePTOFrom arms the probe timer as schedulePTO does, but for a
// probe timeout counted from at (the last transmission) rather than from
// now.
//
// +checklocks:s.ep.mu
// +checklocksexclude:s.rtt.rttMutex
func (s *sender) schedulePTOFrom(at tcpip.MonotonicTime) {
	pto := time.Second
	s.rtt.Lock()
	if s.rtt.TCPRTTState.SRTTInited && s.rtt.TCPRTTState.SRTT > 0 {
		pto = s.rtt.TCPRTTState.SRTT * 2
		if s.Outstanding == 1 && s.state != tcpip.SACKRecovery {
			pto += wcDelayedACKTimeout
		} else {
			pto += tlpTimeoutMin
		}
	}
	s.rtt.Unlock()
	now := s.now()
	d := max(at.Add(pto).Sub(now), 0)
	if s.resendTimer.enabled() {
		if rd := s.resendTimer.target.Sub(now); d > rd {
			d = max(rd, 0)
		}
		s.resendTimer.disable()
	}
	s.probeTimer.enableAt(now, d)
}
