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

package stack

import (
	"sync"

	"github.com/ustack-dev/ustack/internal/third_party/gvisor/pkg/tcpip"
	"github.com/ustack-dev/ustack/internal/third_party/gvisor/pkg/tcpip/header"
)

// ustack (patch 0081): the fast path's send of a data segment. A link
// endpoint that writes frames itself (FrameWriter: ustack's, which copies
// into a UMEM frame and checksums in the copy) takes a TCP segment as its
// headers and the segment's own bytes: no packet is cloned for it and
// the IP and NIC layers are not entered.

// FrameWriter is a link endpoint that writes a whole Ethernet frame from
// its headers and a packet's payload, copying each once into the frame
// it sends (ustack's link endpoint: the transport checksum is its to
// compute, in that copy). hash picks a queue, as PacketBuffer.Hash does.
type FrameWriter interface {
	WriteFrame(hdr []byte, payload *PacketBuffer, hash uint32) tcpip.Error
}

// frameHeaderMax is the most header bytes WriteTCPFrame writes.
const frameHeaderMax = header.EthernetMinimumSize + header.IPv6MinimumSize + header.TCPHeaderMaximumSize

// frameHeaders are WriteTCPFrame's header buffers.
var frameHeaders = sync.Pool{New: func() any { return new([frameHeaderMax]byte) }}

// FrameRoute is a route's next hop and link, resolved by
// PrepareTCPFrame for WriteTCPFrame.
type FrameRoute struct {
	w        FrameWriter
	src, dst tcpip.LinkAddress
	ipLen    int // the network header's
	mtu      int
}

// PrepareTCPFrame reports whether a TCP segment on r can be written as a
// frame by the link endpoint itself (WriteTCPFrame): WriteDirect's
// conditions (but for the packet's size, which WriteTCPFrame checks),
// the link endpoint a FrameWriter with no queueing discipline of its
// own, and the TX checksum left to it. It fills fr for WriteTCPFrame; it
// changes nothing else.
func (r *Route) PrepareTCPFrame(params NetworkHeaderParams, fr *FrameRoute) bool {
	n := r.outgoingNIC
	s := n.stack
	if !s.directWrite.Load() || r.RequiresTXTransportChecksum() {
		return false
	}
	hl, ok := r.directRouteUnchecked(params)
	if !ok {
		return false
	}
	w, ok := n.NetworkLinkEndpoint.(FrameWriter)
	if !ok {
		return false
	}
	if q, ok := n.qDisc.(*delegatingQueueingDiscipline); !ok || q == nil {
		return false
	}
	// The route's validity and its next hop in one read of the route,
	// where directRoute and resolveInto took it twice and checked the
	// validity twice: the same conditions, once per segment.
	r.mu.RLock()
	if !r.isValidForOutgoingRLocked() {
		r.mu.RUnlock()
		return false
	}
	dst := r.remoteLinkAddress
	required := len(dst) == 0 && r.linkRes != nil && !r.local()
	nEntry := r.neighborEntry
	r.mu.RUnlock()
	if required {
		addr, ok := tcpip.LinkAddress(""), false
		if nEntry != nil {
			addr, ok = nEntry.getRemoteLinkAddress()
		}
		if !ok {
			var ri RouteInfo
			if r.resolveIntoSlow(&ri) != nil {
				return false
			}
			addr = ri.RemoteLinkAddress
		}
		dst = addr
	}
	*fr = FrameRoute{w: w, src: n.LinkAddress(), dst: dst, ipLen: hl, mtu: int(n.MTU())}
	return true
}

// WriteTCPFrame writes a TCP segment (tcp: its header, options included,
// the checksum left to the link; payload: pkt's data) on the route fr
// was prepared for, with the Ethernet and network headers WriteDirect
// writes. It counts what WriteDirect counts. A segment larger than the
// MTU is an error: the caller segments to the MSS.
func (r *Route) WriteTCPFrame(fr *FrameRoute, params NetworkHeaderParams, tcp []byte, pkt *PacketBuffer, hash uint32) tcpip.Error {
	n := r.outgoingNIC
	s := n.stack
	size := len(tcp) + pkt.Data().Size()
	if fr.ipLen+size > fr.mtu || len(tcp) > header.TCPHeaderMaximumSize {
		return &tcpip.ErrMessageTooLong{}
	}
	// The headers go to the link through an interface, so they cannot
	// live on this frame: a pooled buffer, no allocation per frame.
	bp := frameHeaders.Get().(*[frameHeaderMax]byte)
	defer frameHeaders.Put(bp)
	buf := bp[:]
	header.Ethernet(buf).Encode(&header.EthernetFields{SrcAddr: fr.src, DstAddr: fr.dst, Type: r.NetProto()})
	hl := header.EthernetMinimumSize
	putIPHeader(buf[hl:hl+fr.ipLen], r, params, size)
	hl += fr.ipLen
	hl += copy(buf[hl:], tcp)
	if err := fr.w.WriteFrame(buf[:hl], pkt, hash); err != nil {
		if _, ok := err.(*tcpip.ErrNoBufferSpace); ok {
			n.stats.txPacketsDroppedNoBufferSpace.Increment()
		}
		s.stats.IP.OutgoingPacketErrors.Increment()
		return err
	}
	n.stats.tx.packets.Increment()
	n.stats.tx.bytes.IncrementBy(uint64(header.EthernetMinimumSize + fr.ipLen + size))
	s.stats.IP.PacketsSent.Increment()
	s.directWrites.Add(1)
	return nil
}
