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
	"github.com/ustack-dev/ustack/internal/third_party/gvisor/pkg/tcpip"
	"github.com/ustack-dev/ustack/internal/third_party/gvisor/pkg/tcpip/header"
)

// ustack (patch 0079): the direct write, the first part of the TCP fast
// path's send. A TCP segment on a plain IPv4 route goes from the transport
// endpoint to the NIC's link layer with its IPv4 header built here, not by
// the IPv4 endpoint's general path (output and postrouting hooks, NAT
// checks, fragmentation, two NIC-name lookups), which for such a segment
// only finds that there is nothing to do.

// SetDirectWrite turns WriteDirect on or off for every route of s (it is
// off until turned on).
func (s *Stack) SetDirectWrite(on bool) { s.directWrite.Store(on) }

// DirectWrites returns how many packets WriteDirect has written.
func (s *Stack) DirectWrites() uint64 { return s.directWrites.Load() }

// DirectMisses returns how many packets WriteDirect, turned on, left to
// WritePacket, by why: size, a GSO packet of several segments or one past
// the MTU; route, a route or a stack it does not take (loopback, IP
// options, firewall rules ever installed, packet sockets, a protocol other
// than IPv4 and IPv6, an invalid route); unresolved, a next hop whose link
// address is not known yet.
func (s *Stack) DirectMisses() (size, route, unresolved uint64) {
	return s.directMisses[missSize].Load(), s.directMisses[missRoute].Load(), s.directMisses[missUnresolved].Load()
}

// WriteDirect's miss reasons, indexes of Stack.directMisses.
const (
	missSize = iota
	missRoute
	missUnresolved
	numMisses
)

// WriteDirect writes pkt, whose transport header is built, as WritePacket
// would, when the route and the packet need nothing of the network
// endpoint but its header: the stack has direct writes on, the route is
// IPv4 or IPv6 and leaves the host (not looped back), params ask for no
// IP option or extension header (and, over IPv4, for DF), the packet is
// one segment (GSO options stay, for the link's checksum) and fits the
// NIC's MTU, no iptables or nftables rule was ever installed, no packet
// socket listens on the NIC, and the next hop is resolved. The header is
// the one the network endpoint writes (IPv4: ID 0, as RFC 6864 allows an
// atomic datagram; IPv6: flow label 0); the packet then takes the NIC's
// path to the link endpoint (link header, queueing discipline, NIC
// counters). IP.PacketsSent is counted (the network endpoint's per-NIC
// copy of the counters is not). It reports false, having changed
// nothing, if any condition fails: the caller then calls WritePacket.
func (r *Route) WriteDirect(params NetworkHeaderParams, pkt *PacketBuffer) (bool, tcpip.Error) {
	n := r.outgoingNIC
	s := n.stack
	if !s.directWrite.Load() {
		return false, nil
	}
	hl, ok := r.directRoute(params)
	if !ok {
		s.directMisses[missRoute].Add(1)
		return false, nil
	}
	if !fitsOneSegment(pkt) || pkt.Size()+hl > int(n.MTU()) {
		s.directMisses[missSize].Add(1)
		return false, nil
	}
	if r.resolveInto(&pkt.EgressRoute) != nil {
		s.directMisses[missUnresolved].Add(1)
		return false, nil
	}
	size := pkt.Size()
	putIPHeader(pkt.NetworkHeader().Push(hl), r, params, size)
	pkt.NetworkProtocolNumber = r.NetProto()
	if err := n.writePacket(pkt); err != nil {
		s.stats.IP.OutgoingPacketErrors.Increment()
		return true, err
	}
	s.stats.IP.PacketsSent.Increment()
	s.directWrites.Add(1)
	return true, nil
}

// directRoute reports whether the direct paths take r's packets with
// params (the route leaves the host, no IP option or extension header, DF
// over IPv4, no firewall rule ever installed, no packet socket, a valid
// route), and the size of the network header they write.
func (r *Route) directRoute(params NetworkHeaderParams) (int, bool) {
	hl, ok := r.directRouteUnchecked(params)
	if !ok || !r.isValidForOutgoing() {
		return 0, false
	}
	return hl, true
}

// directRouteUnchecked is directRoute but for the route's validity, which
// the caller checks (PrepareTCPFrame, under the route's lock it takes
// anyway).
func (r *Route) directRouteUnchecked(params NetworkHeaderParams) (int, bool) {
	n := r.outgoingNIC
	s := n.stack
	if params.ExperimentOptionValue != 0 || r.Loop() != PacketOut || n.deliverLinkPackets ||
		s.tables.everModified.Load() || s.IsNFTablesConfigured() {
		return 0, false
	}
	switch r.NetProto() {
	case header.IPv4ProtocolNumber:
		return header.IPv4MinimumSize, params.DF
	case header.IPv6ProtocolNumber:
		return header.IPv6MinimumSize, true
	}
	return 0, false
}

// putIPHeader writes into b (directRoute's size) the network header the IPv4
// or IPv6 endpoint writes on a packet of r with params whose transport
// header and payload take size bytes.
func putIPHeader(b []byte, r *Route, params NetworkHeaderParams, size int) {
	if r.NetProto() == header.IPv6ProtocolNumber {
		header.IPv6(b).Encode(&header.IPv6Fields{
			PayloadLength:     uint16(size),
			TransportProtocol: params.Protocol,
			HopLimit:          params.TTL,
			TrafficClass:      params.TOS,
			SrcAddr:           r.LocalAddress(),
			DstAddr:           r.RemoteAddress(),
		})
		return
	}
	ip := header.IPv4(b)
	ip.Encode(&header.IPv4Fields{
		TotalLength: uint16(header.IPv4MinimumSize + size),
		TTL:         params.TTL,
		TOS:         params.TOS,
		Protocol:    uint8(params.Protocol),
		Flags:       header.IPv4FlagDontFragment,
		SrcAddr:     r.LocalAddress(),
		DstAddr:     r.RemoteAddress(),
	})
	ip.SetChecksum(^ip.CalculateChecksum())
}

// fitsOneSegment reports whether pkt is not GSO, or is but its payload
// fits one segment: the link then sends it as it is.
func fitsOneSegment(pkt *PacketBuffer) bool {
	g := &pkt.GSOOptions
	return g.Type == GSONone || (g.Type != GSOGvisor && pkt.Data().Size() <= int(g.MSS))
}
