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
	"encoding/binary"
	"sync/atomic"
	"time"

	"github.com/ustack-dev/ustack/internal/third_party/gvisor/pkg/buffer"
	"github.com/ustack-dev/ustack/internal/third_party/gvisor/pkg/tcpip"
	"github.com/ustack-dev/ustack/internal/third_party/gvisor/pkg/tcpip/header"
	"github.com/ustack-dev/ustack/internal/third_party/gvisor/pkg/tcpip/seqnum"
	"github.com/ustack-dev/ustack/internal/third_party/gvisor/pkg/tcpip/stack"
)

// ustack (patch 0084): the fast path's receive, header prediction in
// Linux's form (tcp_rcv_established): an in-order data segment of an
// established connection, whose only option is the timestamp and whose
// ACK lies in [SND.UNA, SND.NXT], arriving while the connection is quiet
// (no loss recovery, no SACK or out-of-order state, windows open, nothing
// queued ahead of it), is processed where it is delivered: its payload
// becomes a receive-queue segment at once, RCV.NXT advances, and the ACK
// it carries goes to the sender's own ACK processing, as Linux's fast
// path calls tcp_ack. It skips the segment queue, the processor hand-off,
// the packet's clone and the generic checks a predicted segment passes
// by construction. The ACK owed for the data is decided once per receive
// batch, in RunDeferred (a reply the application writes later in the
// worker's iteration still carries it when delayed ACKs are on); the
// delayed-ACK timer is armed as its backstop. Everything else, and
// anything while the endpoint's lock is held elsewhere, is left to the
// ordinary path unchanged.

// FastMiss says whether ReceiveFast took a segment, and if not why.
type FastMiss uint8

// ReceiveFast's verdicts.
const (
	// FastHit: the fast path processed the segment.
	FastHit FastMiss = iota
	// FastMissBusy: the endpoint's lock is held elsewhere, or segments
	// wait in its queue ahead of this one.
	FastMissBusy
	// FastMissState: the connection is not simply established (or its
	// receive side is shut).
	FastMissState
	// FastMissHeader: flags other than ACK and PSH, options other than
	// the timestamp in its usual layout, or no payload.
	FastMissHeader
	// FastMissSequence: not the next in sequence, or it does not fit
	// the receive window or buffer.
	FastMissSequence
	// FastMissAck: the ACK lies outside [SND.UNA, SND.NXT], or the
	// timestamp fails PAWS.
	FastMissAck
	// FastMissRecovery: loss recovery, SACK or out-of-order state, or a
	// zero or shrunk send window.
	FastMissRecovery
	// NumFastMiss is the number of verdicts.
	NumFastMiss
)

// tsOptionWord is the first word of the timestamp option in the layout
// every stack sends it in: NOP, NOP, kind 8, length 10.
const tsOptionWord = uint32(header.TCPOptionNOP)<<24 | uint32(header.TCPOptionNOP)<<16 | uint32(header.TCPOptionTS)<<8 | header.TCPOptionTSLength

// fastAckBackstop bounds how long an owed ACK can wait when delayed ACKs
// are off and RunDeferred cannot take the endpoint's lock.
const fastAckBackstop = time.Millisecond

// ReceiveFast offers the fast path a received TCP segment of e's: hdr is
// its TCP header and payload, checksum verified, and netHdrLen the length
// of the IP header before it. If v is not nil it holds the segment's
// bytes with the payload at payloadOff, and ReceiveFast takes ownership
// of it on FastHit; otherwise the payload is copied. d runs the batch's
// deferred work (RunDeferred); it must not be nil.
//
// The segment's memory is accounted as the ordinary path accounts it,
// headers included (they stay in that path's buffer), so that the
// receive window advertised is the same whichever path took it.
func (e *Endpoint) ReceiveFast(hdr header.TCP, netHdrLen int, v *buffer.View, payloadOff int, d stack.Deferrer) FastMiss {
	off := int(hdr.DataOffset())
	if off > len(hdr) {
		return FastMissHeader
	}
	flags := hdr.Flags()
	if flags&^header.TCPFlagPsh != header.TCPFlagAck {
		return FastMissHeader
	}
	payload := hdr[off:]
	if len(payload) == 0 {
		// Pure ACKs stay with netstack, whose ACK batching leaves loss
		// detection and sending to a burst's last ACK.
		return FastMissHeader
	}
	var tsVal, tsEcr uint32
	hasTS := false
	switch off {
	case header.TCPMinimumSize:
	case header.TCPMinimumSize + 12:
		if binary.BigEndian.Uint32(hdr[header.TCPMinimumSize:]) != tsOptionWord {
			return FastMissHeader
		}
		hasTS = true
		tsVal = binary.BigEndian.Uint32(hdr[header.TCPMinimumSize+4:])
		tsEcr = binary.BigEndian.Uint32(hdr[header.TCPMinimumSize+8:])
	default:
		return FastMissHeader
	}
	if e.EndpointState() != StateEstablished {
		return FastMissState
	}
	if !e.TryLock() {
		return FastMissBusy
	}
	// The previous segment's ACK first: prediction reads the sender's
	// state.
	e.runLateAckLocked()
	if miss := e.predictLocked(hdr, len(payload), hasTS, tsVal); miss != FastHit {
		e.mu.Unlock()
		return miss
	}

	// A consumer (SetFastConsumer) takes the payload from the caller's
	// buffer if nothing waits in the receive queue ahead of it.
	consumed := false
	c := e.rcv.consumer
	if c != nil {
		e.rcvQueueMu.Lock()
		idle := e.RcvBufUsed == 0 && !e.RcvClosed
		e.rcvQueueMu.Unlock()
		switch {
		case !idle:
			c.left(len(payload), FastLeftBehind)
		case len(payload) > 1<<16:
			c.left(len(payload), FastLeftLarge)
		case c.Take(payload):
			consumed = true
		default:
			c.left(len(payload), FastLeftRefused)
		}
	}

	now := e.stack.Clock().NowMonotonic()
	if consumed {
		e.receiveFastTakenLocked(hdr, off, hasTS, tsVal, tsEcr, now, netHdrLen, c, payload, d)
		if v != nil {
			v.Release()
		}
		return FastHit
	}
	var data buffer.Buffer
	switch {
	case v != nil:
		v.TrimFront(payloadOff)
		v.CapLength(len(payload))
		data = buffer.MakeWithView(v)
	default:
		data = buffer.MakeWithData(payload)
	}
	// For the receive queue (a goroutine's read, or a consumer that
	// could not take the bytes at once): the receive side now, and the
	// timestamp a reply echoes; the ACK the segment carries after the
	// reader had its turn (runLateAckLocked, from RunDeferred), as a
	// consumer's Taken has it. The ACK is kept as its fields, not as s,
	// whose payload the reader consumes: processed with none, it would
	// pass for a duplicate ACK.
	s := e.fastSegment(hdr, hasTS, tsVal, tsEcr, now, netHdrLen, data)
	seq := s.sequenceNumber
	e.receiveFastDataLocked(seq, seqnum.Size(len(payload)), now, s, hasTS, tsVal)
	e.snd.lateAck = fastACK{pending: true, hasTS: hasTS, flags: hdr.Flags(), doff: uint8(off), window: hdr.WindowSize(),
		netHdrLen: uint16(netHdrLen), seq: seq, ack: seqnum.Value(hdr.AckNumber()), tsVal: tsVal, tsEcr: tsEcr,
		n: uint32(len(payload)), rcvdTime: now}
	// The data is owed its ACK now, whenever the pending one is
	// processed: the delayed-ACK timer (or the backstop) covers it.
	e.oweFastAckLocked(now)
	if n, ok := d.(LateAckNoter); ok {
		n.NoteLateAck()
	}
	e.mu.Unlock()
	s.DecRef()
	if !e.pendingInline.Swap(true) {
		d.Defer(e)
	}
	return FastHit
}

// fastSegment makes the segment the ordinary path would have made of a
// predicted segment (hdr, its timestamps, its ingress time) with data as
// its payload, and counts it received.
func (e *Endpoint) fastSegment(hdr header.TCP, hasTS bool, tsVal, tsEcr uint32, now tcpip.MonotonicTime, netHdrLen int, data buffer.Buffer) *segment {
	s := e.newFastSegment(seqnum.Value(hdr.SequenceNumber()), seqnum.Value(hdr.AckNumber()), hdr.Flags(), hdr.WindowSize(), int(hdr.DataOffset()),
		hasTS, tsVal, tsEcr, now, netHdrLen, data)
	e.stack.Stats().TCP.ValidSegmentsReceived.Increment()
	e.stats.SegmentsReceived.Increment()
	return s
}

// newFastSegment is fastSegment from the header's fields (doff is the
// TCP header's length), not counted.
func (e *Endpoint) newFastSegment(seq, ack seqnum.Value, flags header.TCPFlags, window uint16, doff int, hasTS bool, tsVal, tsEcr uint32, now tcpip.MonotonicTime, netHdrLen int, data buffer.Buffer) *segment {
	s := newSegment()
	s.id = e.TransportEndpointInfo.ID
	s.sequenceNumber = seq
	s.ackNumber = ack
	s.flags = flags
	s.window = seqnum.Size(window)
	s.parsedOptions.TS = hasTS
	s.parsedOptions.TSVal = tsVal
	s.parsedOptions.TSEcr = tsEcr
	s.rcvdTime = now
	s.csumValid = true
	s.pkt = stack.NewPacketBuffer(stack.PacketBufferOptions{Payload: data})
	s.pkt.RXChecksumValidated = true
	s.dataMemSize = s.pkt.MemSize() + netHdrLen + doff
	s.setOwner(e, recvQ)
	return s
}

// fastACK is what the fast path's receive keeps of a segment whose ACK
// it leaves for later (sender.lateAck): what the ACK's processing reads,
// from which runLateAckLocked makes a segment then, with a payload of
// zeros of the segment's length (as after Taken).
type fastACK struct {
	pending      bool
	hasTS        bool
	flags        header.TCPFlags
	doff         uint8
	window       uint16
	netHdrLen    uint16
	seq, ack     seqnum.Value
	tsVal, tsEcr uint32
	n            uint32
	rcvdTime     tcpip.MonotonicTime
}

// LateAckNoter is implemented by a Deferrer that wants to know that the
// fast path's receive left the ACK of a segment it queued for a reader
// to RunDeferred (ustack's worker then lets the reader run first).
type LateAckNoter interface {
	NoteLateAck()
}

// receiveFastTakenLocked processes a predicted segment whose payload a
// consumer took and will use in Taken (a handler that writes its reply
// from there): the receiver's part first, and the timestamp to echo, so
// that the reply, sent from Taken with the endpoint unlocked, carries
// the ACK for the payload and echoes the segment's TSval exactly as
// after the ordinary order; the ACK the segment carries (for our
// previous reply, most often) is processed after Taken, off the path
// from the request to the reply, as Linux leaves tcp_ack's bookkeeping
// after the data is queued. The reply is sent against the send window
// and SND.UNA as they were before this ACK: what they cannot take yet
// stays queued and goes when the ACK's processing opens them. It
// returns with the endpoint unlocked.
//
// The ACK is kept pending (sender.lateAck) during Taken, as for a
// reader, so that whoever takes the lock meanwhile acts on it first: a
// timer that fires while the handler runs (a tail loss probe, the
// retransmission or keepalive timer) must not take data this segment
// acknowledges for unacknowledged. pendingInline is set before Taken,
// so the handler's own writes leave it to the worker (UnlockUser).
// Without timestamps, a reply sent before the ACK that ends the RTT
// measurement in flight is not measured itself: one RTT sample per two
// requests rather than per request.
//
// +checklocksrelease:e.mu
func (e *Endpoint) receiveFastTakenLocked(hdr header.TCP, doff int, hasTS bool, tsVal, tsEcr uint32, now tcpip.MonotonicTime, netHdrLen int, c *FastConsumer, payload []byte, d stack.Deferrer) {
	seq := seqnum.Value(hdr.SequenceNumber())
	e.receiveFastDataLocked(seq, seqnum.Size(len(payload)), now, nil, hasTS, tsVal)
	e.stack.Stats().TCP.ValidSegmentsReceived.Increment()
	e.stats.SegmentsReceived.Increment()
	e.snd.lateAck = fastACK{pending: true, hasTS: hasTS, flags: hdr.Flags(), doff: uint8(doff), window: hdr.WindowSize(),
		netHdrLen: uint16(netHdrLen), seq: seq, ack: seqnum.Value(hdr.AckNumber()), tsVal: tsVal, tsEcr: tsEcr,
		n: uint32(len(payload)), rcvdTime: now}
	if !e.pendingInline.Swap(true) {
		d.Defer(e)
	}
	e.mu.Unlock()
	c.Taken(payload, d)
	// The worker waits for the lock here, unlike anywhere else on the
	// fast path: whoever holds it now (a timer, a write from another
	// goroutine, a Close) holds it briefly, and the ACK is best acted on
	// before the batch's next segment. runLateAckLocked finds nothing
	// if a timer ran it during Taken, and nothing to act on if Taken
	// closed the connection (an abort tears the sender down). It takes
	// a fresh clock reading as the send clock, not the segment's
	// ingress time: Taken's replies were stamped later, and data this
	// ACK lets out must not be stamped earlier than they (RACK, TSval).
	e.mu.Lock()
	e.runLateAckLocked()
	e.mu.Unlock()
}

// predictLocked is header prediction: it reports why a segment of
// payloadLen bytes with hdr's fields cannot take the fast path, or
// FastHit.
//
// +checklocks:e.mu
func (e *Endpoint) predictLocked(hdr header.TCP, payloadLen int, hasTS bool, tsVal uint32) FastMiss {
	if e.EndpointState() != StateEstablished || e.rcv.closed {
		return FastMissState
	}
	// A fast path outside netstack owns a parked connection (HandOut).
	if !e.segmentQueue.empty() || e.parked {
		return FastMissBusy
	}
	if hasTS != e.SendTSOk {
		return FastMissHeader
	}
	// PAWS (RFC 7323 §5.3), as handleSegmentLocked: a TSval more than
	// one behind TS.Recent goes to the ordinary path, which drops it.
	if hasTS && seqnum.Value(tsVal).Add(1).LessThan(seqnum.Value(e.recentTimestamp())) {
		return FastMissAck
	}
	r := e.rcv
	seq := seqnum.Value(hdr.SequenceNumber())
	if seq != r.RcvNxt {
		return FastMissSequence
	}
	if r.pendingRcvdSegments.Len() > 0 || e.sack.NumBlocks > 0 {
		return FastMissRecovery
	}
	end := seq.Add(seqnum.Size(payloadLen))
	if r.rightEdge().LessThan(end) {
		return FastMissSequence
	}
	if e.receiveMemUsed() > int(e.ops.GetReceiveBufferSize()) {
		return FastMissSequence
	}
	snd := e.snd
	ack := seqnum.Value(hdr.AckNumber())
	if ack.LessThan(snd.SndUna) || snd.SndNxt.LessThan(ack) {
		return FastMissAck
	}
	if snd.state != tcpip.Open || snd.FastRecovery.Active || snd.zeroWindowProbing || snd.SndWnd == 0 ||
		hdr.WindowSize() == 0 || !e.scoreboard.Empty() {
		return FastMissRecovery
	}
	// A window whose right edge moved left (RFC 9293 §3.8.6.2.1: the
	// sender must cope with a shrunk window): the fast path acts on the
	// ACK after the reply, which would be sent against the old edge.
	if ack.Add(seqnum.Size(hdr.WindowSize()) << snd.SndWndScale).LessThan(snd.SndUna.Add(snd.SndWnd)) {
		return FastMissRecovery
	}
	return FastHit
}

// receiveFastDataLocked is the receiver's part of processing a predicted
// segment (receiver.handleRcvdSegment's, for a segment that is exactly
// the next), for segLen bytes at seq that arrived at rcvdTime: queued is
// their segment for the receive queue, nil if a consumer took them; and
// TS.Recent, which a reply echoes. The sender's part, the ACK the
// segment carries, follows when the reply has gone (receiveFastAckLocked).
//
// +checklocks:e.mu
func (e *Endpoint) receiveFastDataLocked(seq seqnum.Value, segLen seqnum.Size, rcvdTime tcpip.MonotonicTime, queued *segment, hasTS bool, tsVal uint32) {
	r := e.rcv
	r.lastRcvdAckTime = rcvdTime
	if queued != nil {
		e.readyToRead(queued)
	}
	r.RcvNxt = seq.Add(segLen)
	if r.RcvAcc.LessThan(r.RcvNxt) {
		r.RcvAcc = r.RcvNxt
	}
	r.updateRTT(rcvdTime)
	if e.SendTSOk && hasTS {
		e.updateRecentTimestamp(tsVal, e.snd.MaxSentAck, seq)
	}
}

// receiveFastAckLocked is the sender's part of processing a predicted
// segment s: its ACK, then what handleSegmentsLocked does after a batch
// but for the owed ACK, which RunDeferred decides. now is the sender's clock for
// it: its bookkeeping and any data it lets the sender send.
//
// +checklocks:e.mu
func (e *Endpoint) receiveFastAckLocked(s *segment, now tcpip.MonotonicTime) {
	sndUna := e.snd.SndUna
	s.window <<= e.snd.SndWndScale
	e.snd.clockHint = now
	// receiveFastDataLocked judged the segment's TSval against the last
	// ACK sent when it arrived (RFC 7323 §4.3); handleRcvdSegment would
	// judge it again against a reply sent since, and take a TSval the
	// rule left out. TS.Recent is kept as it is.
	recent, recentTime := e.RecentTS, e.recentTSTime
	e.snd.handleRcvdSegment(s)
	e.RecentTS, e.recentTSTime = recent, recentTime
	e.snd.clockHint = tcpip.MonotonicTime{}
	e.probeSegmentLocked()
	if sndUna.LessThan(e.snd.SndUna) {
		e.route.ConfirmReachable()
	}
	e.oweFastAckLocked(s.rcvdTime)
	e.resetKeepaliveTimer(true /* receivedData */)
}

// oweFastAckLocked notes the ACK owed for data received at rcvdTime, if
// none has carried it yet, for RunDeferred to decide on, with the
// delayed-ACK timer (or the backstop) armed.
//
// +checklocks:e.mu
func (e *Endpoint) oweFastAckLocked(rcvdTime tcpip.MonotonicTime) {
	if e.rcv.RcvNxt != e.snd.MaxSentAck {
		e.fastAckOwed = true
		if !e.snd.delackTimer.enabled() {
			d := e.snd.delayedAck
			if d <= 0 {
				d = fastAckBackstop
			}
			e.snd.delackTimer.enableAt(rcvdTime, d)
		}
	}
}

// runLateAckLocked processes the ACK of the segment the fast path's
// receive took for the receive queue (sender.lateAck): the sender's part
// (receiveFastAckLocked), left until the reader it woke had its turn to read
// and reply, as receiveFastTakenLocked leaves it until after Taken, so
// that the reply is not held up by the bookkeeping of the ACK the
// request carried. RunDeferred runs it after the worker's yield to the
// application; whoever takes the lock first with it pending (the next
// segment, the ordinary path, a timer, an application's call once
// RunDeferred has run) runs it before acting on the sender's state. It
// does nothing if no ACK is pending.
//
// +checklocks:e.mu
func (e *Endpoint) runLateAckLocked() {
	if !e.lateAckLocked() {
		return
	}
	a := e.snd.lateAck
	e.snd.lateAck = fastACK{}
	if st := e.EndpointState(); st.connected() && st != StateTimeWait {
		s := e.newFastSegment(a.seq, a.ack, a.flags, a.window, int(a.doff), a.hasTS, a.tsVal, a.tsEcr, a.rcvdTime, int(a.netHdrLen),
			buffer.MakeWithView(consumedPayload(int(min(a.n, 1<<16)))))
		// A fresh clock reading, as after Taken: replies went out
		// after the segment's ingress time (which the segment keeps,
		// for the RTT and RACK).
		e.receiveFastAckLocked(s, e.stack.Clock().NowMonotonic())
		s.DecRef()
	}
}

// lateAckLocked reports whether the fast path left an ACK pending.
//
// +checklocks:e.mu
func (e *Endpoint) lateAckLocked() bool { return e.snd != nil && e.snd.lateAck.pending }

// lateAckAfterUnlock closes the window UnlockUser leaves: RunDeferred may
// clear pendingInline and fail to take the lock while the application
// holds it, after UnlockUser looked at pendingInline. Called unlocked.
// If another goroutine holds the lock now, its unlock, or the next
// segment or timer, runs the ACK.
func (e *Endpoint) lateAckAfterUnlock() {
	if e.pendingInline.Load() || !e.TryLock() {
		return
	}
	if e.lateAckLocked() {
		e.runLateAckLocked()
		if e.fastAckOwed {
			e.finishFastLocked()
		}
	}
	e.mu.Unlock()
}

// FastConsumer takes the payload of in-order segments straight from the
// fast path's receive (SetFastConsumer).
type FastConsumer struct {
	// Take is offered the payload of each segment the fast path
	// accepts while nothing waits in the receive queue, and reports
	// whether it takes it. It runs with the endpoint locked, on the
	// goroutine that delivered the segment, with the bytes in that
	// goroutine's buffer (the receive frame itself: no copy before
	// Take's), valid during the call. Bytes it takes are the stream's
	// next, as if read from the queue: RCV.NXT advances, the receive
	// buffer is not charged, and no readable event fires for them.
	Take func([]byte) bool
	// Taken (required) follows every Take that took the bytes, on the
	// same goroutine, with the endpoint unlocked and the same bytes
	// still valid: where the consumer, which may call the endpoint (to
	// write a reply, say), uses them. d is the Deferrer ReceiveFast was
	// given. The ACK the segment carries is processed after Taken
	// returns (the reply goes out first); the receive side, and the
	// timestamp a reply echoes, before Taken.
	Taken func(b []byte, d stack.Deferrer)
	// Left, if not nil, counts the bytes that went to the receive queue
	// rather than to Take, by why (indexed by FastLeft), as they arrive
	// there: what the consumer will read from the queue.
	Left *[NumFastLeft]atomic.Uint64
}

// FastLeft says why a FastConsumer's stream received bytes through the
// receive queue.
type FastLeft uint8

// The reasons FastConsumer.Left is given.
const (
	// FastLeftSlow: the segment took the ordinary path (ReceiveFast
	// missed it, or was not offered it), or came out of the
	// out-of-order queue.
	FastLeftSlow FastLeft = iota
	// FastLeftBehind: the fast path took the segment, but earlier bytes
	// still waited in the receive queue.
	FastLeftBehind
	// FastLeftRefused: Take declined the bytes.
	FastLeftRefused
	// FastLeftLarge: a segment of more than 64 KiB (a coalesced one).
	FastLeftLarge
	// FastLeftBefore: the bytes were in the receive queue already when
	// the consumer was set.
	FastLeftBefore
	// NumFastLeft is the number of reasons.
	NumFastLeft
)

func (c *FastConsumer) left(n int, why FastLeft) {
	if c.Left != nil && n > 0 {
		c.Left[why].Add(uint64(n))
	}
}

// SetFastConsumer has the fast path's receive hand the payload of each
// segment it accepts to c instead of the receive queue, whenever nothing
// waits there (see FastConsumer). Bytes it does not take, and everything
// that misses the fast path, go to the receive queue as always (and to
// c.Left), so a consumer that takes bytes must also be the stream's only
// reader, reading the queue in order. nil stops it. It returns false if the
// endpoint has no receive side (not connected).
func (e *Endpoint) SetFastConsumer(c *FastConsumer) bool {
	e.LockUser()
	defer e.UnlockUser()
	if e.rcv == nil {
		return false
	}
	e.rcv.consumer = c
	if c != nil {
		e.rcvQueueMu.Lock()
		before := e.RcvBufUsed
		e.rcvQueueMu.Unlock()
		c.left(before, FastLeftBefore)
	}
	return true
}

// consumedZeros backs the payload of segments whose bytes a consumer took:
// a shared view of zeros, cloned (no copy) and cut to each length. Nothing
// reads or writes it: such a segment is processed and released at once.
var consumedZeros = buffer.NewViewSize(1 << 16)

// consumedPayload returns a view of n bytes (at most 64 KiB, a GRO
// packet's most) that stands in for a consumed payload.
func consumedPayload(n int) *buffer.View {
	v := consumedZeros.Clone()
	v.CapLength(n)
	return v
}

// finishFastLocked sends the ACK the fast path's segments of this batch
// owe if it cannot wait for data of ours to carry it (ackNowLocked); the
// delayed-ACK timer the fast path armed covers the rest.
//
// +checklocks:e.mu
func (e *Endpoint) finishFastLocked() {
	if !e.fastAckOwed {
		return
	}
	e.fastAckOwed = false
	if e.EndpointState().connected() && e.rcv.RcvNxt != e.snd.MaxSentAck && e.ackNowLocked() {
		e.snd.sendAck()
	}
}

// FastState is the part of a connection's state a received segment
// changes, without times: what a test running one segment sequence with
// the fast path on and off compares.
type FastState struct {
	State                                      EndpointState
	RcvNxt, RcvAcc, SndUna, SndNxt, MaxSentAck seqnum.Value
	SndWnd                                     seqnum.Size
	SndCwnd, Outstanding                       int
	RecentTS                                   uint32
	RcvBufUsed, RcvMemUsed, PendingBufUsed     int
	SACKBlocks                                 int
	RcvClosed                                  bool
}

// FastState returns e's FastState, taking its lock as a user does.
func (e *Endpoint) FastState() FastState {
	e.LockUser()
	defer e.UnlockUser()
	st := FastState{State: e.EndpointState(), RecentTS: e.recentTimestamp(), RcvMemUsed: e.receiveMemUsed(), SACKBlocks: int(e.sack.NumBlocks)}
	if r := e.rcv; r != nil {
		st.RcvNxt, st.RcvAcc, st.PendingBufUsed = r.RcvNxt, r.RcvAcc, r.PendingBufUsed
	}
	if s := e.snd; s != nil {
		st.SndUna, st.SndNxt, st.MaxSentAck, st.SndWnd = s.SndUna, s.SndNxt, s.MaxSentAck, s.SndWnd
		st.SndCwnd, st.Outstanding = s.SndCwnd, s.Outstanding
	}
	e.rcvQueueMu.Lock()
	st.RcvBufUsed, st.RcvClosed = e.RcvBufUsed, e.RcvClosed
	e.rcvQueueMu.Unlock()
	return st
}
