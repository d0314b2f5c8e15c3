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

// ustack (patch 0081): the fast path's send of a data segment. Where the
// route allows it (stack.Route.PrepareTCPFrame: a plain IPv4 or IPv6 route whose
// link endpoint writes frames itself), a segment the sender transmits
// (new data or a retransmission, one MSS at most) goes to the link as its
// TCP header and the segment's own bytes: no packet is cloned, no header
// space reserved, and the IP and NIC layers are not entered; the link
// copies header and payload once into its frame and computes the
// checksum in that copy. Everything the sender records of the segment is
// recorded by its caller, as for the ordinary path; the header, options
// and counters are sendRaw's and sendTCP's. The Ethernet and network
// headers come from the connection's frame template (patch 0090).

// sendFrameDirect sends the segment with pkt's payload as the fast path's
// frame; it reports whether it took the segment (then err is the send's
// result, as sendRaw's would be), or left it to sendRaw, having changed
// nothing.
//
// +checklocks:e.mu
func (e *Endpoint) sendFrameDirect(pkt *stack.PacketBuffer, flags header.TCPFlags, seq, ack seqnum.Value, rcvWnd seqnum.Size) (bool, tcpip.Error) {
	if g := e.gso; g.Type == stack.GSOGvisor || g.Type != stack.GSONone && pkt.Data().Size() > int(g.MSS) {
		return false, nil
	}
	// The connection's frame template (patch 0090): made by its first
	// segment, remade when what it holds has changed.
	key := stack.FrameKey{TOS: e.sendTOS, DF: e.pmtud == tcpip.PMTUDiscoveryWant || e.pmtud == tcpip.PMTUDiscoveryDo || e.pmtud == tcpip.PMTUDiscoveryProbe}
	if e.route.NetProto() == header.IPv4ProtocolNumber {
		key.TTL = int16(e.ipv4TTL)
	} else {
		key.TTL = e.ipv6HopLimit
	}
	t := e.snd.frame
	if t == nil || !e.route.FrameTemplateCurrent(t, key) {
		if !e.route.FrameWritable() {
			return false, nil
		}
		// Read before the default TTL that params take.
		epoch := e.route.FrameEpoch()
		params := stack.NetworkHeaderParams{
			Protocol:              ProtocolNumber,
			TTL:                   calculateTTL(e.route, e.ipv4TTL, e.ipv6HopLimit),
			TOS:                   key.TOS,
			DF:                    key.DF,
			ExperimentOptionValue: e.getExperimentOptionValue(e.route),
		}
		if t == nil {
			t = new(stack.FrameTemplate)
		}
		if !e.route.PrepareFrameTemplate(params, key, epoch, t) {
			return false, nil
		}
		e.snd.frame = t
	} else if e.ops.GetExperimentOptionValue() != 0 && e.getExperimentOptionValue(e.route) != 0 {
		// The experiment option is the one header field the template
		// cannot hold: such a segment takes the ordinary path. (The
		// endpoint's own value first: getExperimentOptionValue looks
		// the NIC up under the stack's lock, for a value that is
		// almost always zero.)
		return false, nil
	}
	options := e.segmentOptions(flags)
	defer putOptions(options)
	if rcvWnd > math.MaxUint16 {
		rcvWnd = math.MaxUint16
	}
	var buf [header.TCPHeaderMaximumSize]byte
	tcp := header.TCP(buf[:header.TCPMinimumSize+len(options)])
	tcp.Encode(&header.TCPFields{
		SrcPort:    e.TransportEndpointInfo.ID.LocalPort,
		DstPort:    e.TransportEndpointInfo.ID.RemotePort,
		SeqNum:     uint32(seq),
		AckNum:     uint32(ack),
		DataOffset: uint8(len(tcp)),
		Flags:      flags,
		WindowSize: uint16(rcvWnd),
	})
	copy(tcp[header.TCPMinimumSize:], options)
	stats := e.route.Stats()
	if err := e.route.WriteTCPFrame(t, tcp, pkt, e.txHash); err != nil {
		stats.TCP.SegmentSendErrors.Increment()
		e.stats.SendErrors.SegmentSendToNetworkFailed.Increment()
		return true, err
	}
	stats.TCP.SegmentsSent.Increment()
	if flags&header.TCPFlagRst != 0 {
		stats.TCP.ResetsSent.Increment()
	}
	e.stats.SegmentsSent.Increment()
	return true, nil
}
