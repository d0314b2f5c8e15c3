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
	"math"

	"github.com/ustack-dev/ustack/internal/third_party/gvisor/pkg/tcpip"
	"github.com/ustack-dev/ustack/internal/third_party/gvisor/pkg/tcpip/header"
	"github.com/ustack-dev/ustack/internal/third_party/gvisor/pkg/tcpip/seqnum"
	"github.com/ustack-dev/ustack/internal/third_party/gvisor/pkg/tcpip/stack"
)

// ustack (patch 0086): a SYN answered where it is delivered. When a
// listener answers a SYN with a SYN cookie it keeps nothing of it: the
// SYN-ACK is a function of the SYN, the listener's settings and the
// cookie's secret. AnswerSyn computes exactly the SYN-ACK handleListenSegment
// sends in that case (same cookie, options, window, TTL and TOS, same
// counters) and writes its TCP header into the caller's buffer, so that
// the caller (ustack's worker) builds the frame itself: no segment, no
// queueing to the listener, no route, no packet buffer. The ACK that
// completes the handshake takes the ordinary path, where the cookie is
// validated and the connection created, as before. Anything else (cookies
// not in use, a listener busy or closing, IP settings the frame cannot
// carry) is left to the ordinary path.

// SynVerdict says what AnswerSyn did with a SYN.
type SynVerdict uint8

// AnswerSyn's verdicts.
const (
	// SynAnswered: the SYN-ACK's TCP header is in the caller's buffer.
	SynAnswered SynVerdict = iota
	// SynDropped: the listener's accept queue is full; the ordinary
	// path drops such a SYN too, and it has been counted as it counts
	// it. The caller drops the SYN.
	SynDropped
	// SynMissBusy: the listener's lock is held elsewhere.
	SynMissBusy
	// SynMissState: not a listener, or one that is shutting down.
	SynMissState
	// SynMissCookie: the listener would not answer with a cookie (the
	// "auto" setting with half-open connections to spare, and the caller
	// under no pressure).
	SynMissCookie
	// SynMissIP: IP settings the caller's frame cannot carry (no DF
	// over IPv4, an experiment option), or no network endpoint.
	SynMissIP
	// NumSynVerdicts is the number of verdicts.
	NumSynVerdicts
)

// SynAck describes the SYN-ACK AnswerSyn wrote.
type SynAck struct {
	// Len is the length of the TCP header written, options included.
	Len int
	// TTL and TOS are the IP header's (hop limit and traffic class
	// over IPv6).
	TTL, TOS uint8
	// The listener's side of any cookie SYN-ACK it sends (patch 0099:
	// what an XDP program needs to answer its SYNs alike): the MSS
	// option, the window, the window scale offered to a SYN that asks
	// for one, and whether SACK-permitted is offered to one that does.
	MSS, Window uint16
	WndScale    int
	SACK        bool
	// Flood says the cookie was for want of room: the listener's
	// half-open connections at its backlog, or the caller under
	// pressure; not only because cookies are always used.
	Flood bool
}

// AnswerSyn offers listener e a SYN: syn is its TCP header, checksum
// verified, with SYN its only flag among SYN, ACK, RST and FIN (the
// caller checks), id its endpoint ID (local = its destination) and nicID
// the NIC it came in on. pressure says the caller is falling behind (its
// receive ring filling up): the SYN is then answered with a cookie even
// where the listener has half-open connections to spare, as if its
// backlog were full, since a cookie's answer costs a tenth of a half-open
// connection's and keeps nothing. On SynAnswered the SYN-ACK's TCP header, with a
// zero checksum for the caller to compute, is in out (at least
// header.TCPHeaderMaximumSize bytes), and the IP header it needs is
// described by the SynAck: DF set over IPv4, no IP options.
func (e *Endpoint) AnswerSyn(id stack.TransportEndpointID, nicID tcpip.NICID, syn header.TCP, out []byte, pressure bool) (SynAck, SynVerdict) {
	if e.EndpointState() != StateListen {
		return SynAck{}, SynMissState
	}
	if !e.TryLock() {
		return SynAck{}, SynMissBusy
	}
	defer e.mu.Unlock()
	e.rcvQueueMu.Lock()
	rcvClosed := e.RcvClosed
	e.rcvQueueMu.Unlock()
	ctx := e.listenCtx
	if e.EndpointState() != StateListen || rcvClosed || ctx == nil {
		return SynAck{}, SynMissState
	}
	netProto := header.IPv4ProtocolNumber
	ttl := e.ipv4TTL
	if id.LocalAddress.BitLen() == header.IPv6AddressSizeBits {
		netProto = header.IPv6ProtocolNumber
		ttl = uint8(e.ipv6HopLimit)
		if e.ipv6HopLimit == tcpip.UseDefaultIPv6HopLimit {
			ttl = 0
		}
	} else if ttl == tcpip.UseDefaultIPv4TTL {
		ttl = 0
	}
	df := e.pmtud == tcpip.PMTUDiscoveryWant || e.pmtud == tcpip.PMTUDiscoveryDo || e.pmtud == tcpip.PMTUDiscoveryProbe
	if (netProto == header.IPv4ProtocolNumber && !df) || e.ops.GetExperimentOptionValue() != 0 {
		return SynAck{}, SynMissIP
	}
	ne, err := e.stack.GetNetworkEndpoint(nicID, netProto)
	if err != nil {
		return SynAck{}, SynMissIP
	}
	if ttl == 0 {
		ttl = ne.DefaultTTL()
	}

	// The protocol's options, read as its Option method reads them (an
	// option read through the stack's interface escapes to the heap).
	e.protocol.mu.RLock()
	always := e.protocol.alwaysUseSynCookies
	e.protocol.mu.RUnlock()
	full := e.acceptQueueIsFull()
	// flood: answered with a cookie for want of room (half-open
	// connections at the backlog, or the caller behind), not only
	// because cookies are always used.
	flood := pressure || full
	if !full && !pressure {
		e.acceptMu.Lock()
		flood = len(e.acceptQueue.pendingEndpoints) == e.acceptQueue.capacity-1
		e.acceptMu.Unlock()
		if !always && !flood {
			return SynAck{}, SynMissCookie
		}
	}
	// The segment is the listener's from here: counted as the
	// dispatcher counts a segment it queues, and, if the accept queue
	// is full, dropped as handleListenSegment drops it.
	e.stack.Stats().TCP.ValidSegmentsReceived.Increment()
	e.stats.SegmentsReceived.Increment()
	if full {
		e.stack.Stats().TCP.ListenOverflowSynDrop.Increment()
		e.stats.ReceiveErrors.ListenOverflowSynDrop.Increment()
		e.stack.Stats().DroppedPackets.Increment()
		return SynAck{}, SynDropped
	}

	// handleListenSegment's cookie answer (cookieSynAck), from here on.
	opts := header.ParseSynOptions(syn.Options(), false)
	userMSS := e.userMSS
	maxMSS := uint16(ne.MTU() - header.TCPMinimumSize)
	mss := maxMSS
	if userMSS != 0 && userMSS < maxMSS {
		mss = userMSS
	}
	seq := seqnum.Value(syn.SequenceNumber())
	synOpts, cookie := e.cookieSynAck(ctx, id, seq, opts, mss)
	wnd := ctx.rcvWnd
	if wnd > math.MaxUint16 {
		wnd = math.MaxUint16
	}
	options := makeSynOptions(synOpts)
	n := header.TCPMinimumSize + len(options)
	header.TCP(out).Encode(&header.TCPFields{
		SrcPort:    id.LocalPort,
		DstPort:    id.RemotePort,
		SeqNum:     uint32(cookie),
		AckNum:     uint32(seq + 1),
		DataOffset: uint8(n),
		Flags:      header.TCPFlagSyn | header.TCPFlagAck,
		WindowSize: uint16(wnd),
	})
	copy(out[header.TCPMinimumSize:n], options)
	putOptions(options)

	// Counted as sendSynTCP, sendTCP and the cookie answer count it.
	e.stats.SegmentsSent.Increment()
	e.stack.Stats().TCP.SegmentsSent.Increment()
	e.stack.Stats().TCP.ListenOverflowSynCookieSent.Increment()
	e.protocol.mu.RLock()
	sack := e.protocol.sackEnabled
	e.protocol.mu.RUnlock()
	return SynAck{Len: n, TTL: ttl, TOS: e.sendTOS, MSS: mss, Window: uint16(wnd), WndScale: e.rcvWndScaleForHandshake(), SACK: sack, Flood: flood}, SynAnswered
}

// IgnoreRst takes a RST arriving at listener e as handleListenSegment
// takes it: counted and dropped (RFC 9293, section 3.10.7.2: in LISTEN
// an incoming RST is ignored). flags are the segment's; false leaves the
// segment to the ordinary path (not a listener, one shutting down, or a
// segment with SYN and ACK, which the listener answers with a reset).
func (e *Endpoint) IgnoreRst(flags header.TCPFlags) bool {
	if flags&header.TCPFlagRst == 0 || flags.Contains(header.TCPFlagSyn|header.TCPFlagAck) || e.EndpointState() != StateListen {
		return false
	}
	e.rcvQueueMu.Lock()
	rcvClosed := e.RcvClosed
	e.rcvQueueMu.Unlock()
	if rcvClosed {
		return false
	}
	// Counted as the dispatcher counts a segment it queues, and as the
	// listener counts the RST it drops.
	e.stack.Stats().TCP.ValidSegmentsReceived.Increment()
	e.stats.SegmentsReceived.Increment()
	e.stack.Stats().TCP.ResetsReceived.Increment()
	e.stack.Stats().DroppedPackets.Increment()
	return true
}
