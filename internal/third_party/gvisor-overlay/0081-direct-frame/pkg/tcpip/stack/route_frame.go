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
	"github.com/ustack-dev/ustack/internal/third_party/gvisor/pkg/tcpip/checksum"
	"github.com/ustack-dev/ustack/internal/third_party/gvisor/pkg/tcpip/header"
)

// ustack (patch 0081): the fast path's send of a data segment. A link
// endpoint that writes frames itself (FrameWriter: ustack's, which copies
// into a UMEM frame and checksums in the copy) takes a TCP segment as its
// headers and the segment's own bytes: no packet is cloned for it and
// the IP and NIC layers are not entered. Patch 0090: the Ethernet and
// network headers are a per-connection template (FrameTemplate), made
// once and patched per segment (the lengths and the IPv4 checksum), not
// built anew from the route, the neighbour and the protocol each time.

// FrameWriter is a link endpoint that writes a whole Ethernet frame from
// its headers and a packet's payload, copying each once into the frame
// it sends (ustack's link endpoint: the transport checksum is its to
// compute, in that copy). hash picks a queue, as PacketBuffer.Hash does.
// Its link address must not change: frame templates hold it.
type FrameWriter interface {
	WriteFrame(hdr []byte, payload *PacketBuffer, hash uint32) tcpip.Error
}

// frameHeaderMax is the most header bytes WriteTCPFrame writes.
const frameHeaderMax = header.EthernetMinimumSize + header.IPv6MinimumSize + header.TCPHeaderMaximumSize

// frameHeaders are WriteTCPFrame's header buffers.
var frameHeaders = sync.Pool{New: func() any { return new([frameHeaderMax]byte) }}

// FrameTemplate is a connection's Ethernet and network headers for
// WriteTCPFrame, made by PrepareFrameTemplate and kept by the caller
// from one segment to the next; its zero value is made by none. The
// route's validity is checked per segment, as WritePacket checks it; what
// else the template holds (the next hop's link address, the default TTL)
// is checked by the stack's frame epoch, which changes whenever a
// neighbour's state or link address or a protocol's default TTL does.
type FrameTemplate struct {
	route *Route
	epoch uint32
	key   FrameKey
	ipSum uint16 // IPv4: the header's sum with length and checksum zero
	hl    uint8  // Ethernet and network header bytes in hdr
	hdr   [header.EthernetMinimumSize + header.IPv6MinimumSize]byte
}

// FrameKey is what a FrameTemplate was made for on the caller's side: the
// endpoint's raw TTL option (before the default applies), type of
// service and don't-fragment setting. A template serves only the key it
// was made with.
type FrameKey struct {
	TTL int16
	TOS uint8
	DF  bool
}

// InvalidateFrameTemplates makes every frame template of s stale: the
// next segment of each connection makes its own anew.
func (s *Stack) InvalidateFrameTemplates() { s.frameEpoch.Add(1) }

// FrameTemplatesMade returns how many frame templates
// PrepareFrameTemplate has made: once per connection that sends, and
// again after each change the epoch records.
func (s *Stack) FrameTemplatesMade() uint64 { return s.frameTemplates.Load() }

// FrameTemplateCurrent reports whether t was made by
// PrepareFrameTemplate for r and key and still holds: nothing it copied
// has changed since, the stack still takes direct frames, and r is
// valid for sending.
func (r *Route) FrameTemplateCurrent(t *FrameTemplate, key FrameKey) bool {
	s := r.outgoingNIC.stack
	return t.route == r && t.key == key && t.epoch == s.frameEpoch.Load() &&
		s.directWrite.Load() && !s.tables.everModified.Load() && !s.IsNFTablesConfigured() &&
		r.isValidForOutgoing()
}

// FrameEpoch returns the epoch a template made now records: a caller
// reads it before what it derives PrepareFrameTemplate's params from (a
// protocol's default TTL), so that a change after it makes the template
// stale.
func (r *Route) FrameEpoch() uint32 { return r.outgoingNIC.stack.frameEpoch.Load() }

// FrameWritable reports PrepareFrameTemplate's first conditions, which
// cost two loads: a caller checks it before it builds params (and its
// template), which otherwise would be built and dropped on every segment
// of a stack that takes no direct frames.
func (r *Route) FrameWritable() bool {
	return r.outgoingNIC.stack.directWrite.Load() && !r.RequiresTXTransportChecksum()
}

// PrepareFrameTemplate reports whether a TCP segment on r can be written
// as a frame by the link endpoint itself (WriteTCPFrame): WriteDirect's
// conditions (but for the packet's size, which WriteTCPFrame checks),
// the link endpoint a FrameWriter with no queueing discipline of its
// own, and the TX checksum left to it. If so it makes t for params and
// key (key: what the caller derived params from) as of epoch
// (FrameEpoch, read before params); if not it changes nothing.
func (r *Route) PrepareFrameTemplate(params NetworkHeaderParams, key FrameKey, epoch uint32, t *FrameTemplate) bool {
	n := r.outgoingNIC
	s := n.stack
	if !r.FrameWritable() {
		return false
	}
	hl, ok := r.directRouteUnchecked(params)
	if !ok {
		return false
	}
	if _, ok := n.NetworkLinkEndpoint.(FrameWriter); !ok {
		return false
	}
	if q, ok := n.qDisc.(*delegatingQueueingDiscipline); !ok || q == nil {
		return false
	}
	// The route's validity and its next hop in one read of the route,
	// where directRoute and resolveInto took it twice and checked the
	// validity twice.
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
			// Resolution, or NUD's move out of Stale, changes the
			// entry and so the epoch: this template is made stale
			// by the resolution it starts.
			var ri RouteInfo
			if r.resolveIntoSlow(&ri) != nil {
				return false
			}
			addr = ri.RemoteLinkAddress
		}
		dst = addr
	}
	s.frameTemplates.Add(1)
	*t = FrameTemplate{route: r, epoch: epoch, key: key, hl: uint8(header.EthernetMinimumSize + hl)}
	header.Ethernet(t.hdr[:]).Encode(&header.EthernetFields{SrcAddr: n.LinkAddress(), DstAddr: dst, Type: r.NetProto()})
	ip := t.hdr[header.EthernetMinimumSize:t.hl]
	putIPHeader(ip, r, params, 0)
	if r.NetProto() == header.IPv4ProtocolNumber {
		v4 := header.IPv4(ip)
		v4.SetTotalLength(0)
		v4.SetChecksum(0)
		t.ipSum = v4.CalculateChecksum()
	}
	return true
}

// WriteTCPFrame writes a TCP segment (tcp: its header, options included,
// the checksum left to the link; payload: pkt's data) on the route t
// was made for (FrameTemplateCurrent), with the Ethernet and network
// headers WriteDirect writes. It counts what WriteDirect counts. A
// segment larger than the MTU is an error: the caller segments to the
// MSS.
func (r *Route) WriteTCPFrame(t *FrameTemplate, tcp []byte, pkt *PacketBuffer, hash uint32) tcpip.Error {
	n := r.outgoingNIC
	s := n.stack
	ipLen := int(t.hl) - header.EthernetMinimumSize
	size := len(tcp) + pkt.Data().Size()
	if ipLen+size > int(n.MTU()) || len(tcp) > header.TCPHeaderMaximumSize {
		return &tcpip.ErrMessageTooLong{}
	}
	w, ok := n.NetworkLinkEndpoint.(FrameWriter)
	if !ok {
		return &tcpip.ErrInvalidEndpointState{}
	}
	// The headers go to the link through an interface, so they cannot
	// live on this frame: a pooled buffer, no allocation per frame.
	bp := frameHeaders.Get().(*[frameHeaderMax]byte)
	defer frameHeaders.Put(bp)
	buf := bp[:]
	hl := copy(buf, t.hdr[:t.hl])
	if r.NetProto() == header.IPv4ProtocolNumber {
		ip := header.IPv4(buf[header.EthernetMinimumSize:])
		total := uint16(header.IPv4MinimumSize + size)
		ip.SetTotalLength(total)
		ip.SetChecksum(^checksum.Combine(t.ipSum, total))
	} else {
		header.IPv6(buf[header.EthernetMinimumSize:]).SetPayloadLength(uint16(size))
	}
	hl += copy(buf[hl:], tcp)
	if err := w.WriteFrame(buf[:hl], pkt, hash); err != nil {
		if _, ok := err.(*tcpip.ErrNoBufferSpace); ok {
			n.stats.txPacketsDroppedNoBufferSpace.Increment()
		}
		s.stats.IP.OutgoingPacketErrors.Increment()
		return err
	}
	n.stats.tx.packets.Increment()
	n.stats.tx.bytes.IncrementBy(uint64(int(t.hl) + size))
	s.stats.IP.PacketsSent.Increment()
	s.directWrites.Add(1)
	return nil
}
