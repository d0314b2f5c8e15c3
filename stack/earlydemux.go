package stack

import (
	"encoding/binary"

	"github.com/ustack-dev/ustack/internal/third_party/gvisor/pkg/buffer"
	"github.com/ustack-dev/ustack/internal/third_party/gvisor/pkg/tcpip"
	"github.com/ustack-dev/ustack/internal/third_party/gvisor/pkg/tcpip/header"
	"github.com/ustack-dev/ustack/internal/third_party/gvisor/pkg/tcpip/header/parse"
	gstack "github.com/ustack-dev/ustack/internal/third_party/gvisor/pkg/tcpip/stack"
)

// segmentQueuer is netstack's TCP protocol as the transport demuxer sees
// it: it queues a segment to a connection.
type segmentQueuer interface {
	QueuePacket(ep gstack.TransportEndpoint, id gstack.TransportEndpointID, pkt *gstack.PacketBuffer)
}

// earlyDemux is early demux, as Linux's tcp_v4_early_demux: a verified TCP
// segment over plain IPv4 (no options, not a fragment) for an established
// connection goes straight to that connection's queue, skipping netstack's
// NIC, IPv4 and demuxer layers, which for such a segment only find the
// same connection again. Everything else (SYNs to listeners, IPv6, ICMP,
// options, fragments) takes netstack's path. Its counters are kept.
type earlyDemux struct {
	ns  *gstack.Stack
	tcp segmentQueuer
	// netstack's IP counters the skipped layers would have counted.
	received, valid, delivered *tcpip.StatCounter
}

func newEarlyDemux(ns *gstack.Stack, tcp segmentQueuer) *earlyDemux {
	ip := ns.Stats().IP
	return &earlyDemux{ns: ns, tcp: tcp, received: ip.PacketsReceived, valid: ip.ValidPacketsReceived, delivered: ip.PacketsDelivered}
}

// deliver queues frame to its connection and reports whether it did; the
// caller delivers it the ordinary way if not. frame's checksums have been
// verified. If v is not nil, frame is v's bytes and deliver takes
// ownership of v when it returns true (the frame is then not copied);
// otherwise it copies frame.
func (f *earlyDemux) deliver(frame []byte, v *buffer.View, deferrer gstack.Deferrer) bool {
	if len(frame) < ethHeaderLen+header.IPv4MinimumSize+header.TCPMinimumSize ||
		binary.BigEndian.Uint16(frame[12:14]) != uint16(header.IPv4ProtocolNumber) {
		return false
	}
	ip := header.IPv4(frame[ethHeaderLen:])
	total := int(ip.TotalLength())
	if ip[0] != 0x45 || ip.Protocol() != uint8(header.TCPProtocolNumber) || ip.More() || ip.FragmentOffset() != 0 ||
		total < header.IPv4MinimumSize+header.TCPMinimumSize || total > len(ip) {
		return false
	}
	tcp := header.TCP(ip[header.IPv4MinimumSize:total])
	if off := int(tcp.DataOffset()); off < header.TCPMinimumSize || off > len(tcp) {
		// Checked here, before v is taken: parse.TCP below then cannot
		// fail after the caller's view has become the packet's.
		return false
	}
	id := gstack.TransportEndpointID{
		LocalPort:     tcp.DestinationPort(),
		LocalAddress:  ip.DestinationAddress(),
		RemotePort:    tcp.SourcePort(),
		RemoteAddress: ip.SourceAddress(),
	}
	ep := f.ns.FindTransportEndpoint(header.IPv4ProtocolNumber, header.TCPProtocolNumber, id, nicID)
	if ep == nil {
		return false
	}
	var payload buffer.Buffer
	if v != nil {
		v.TrimFront(ethHeaderLen)
		v.CapLength(total)
		payload = buffer.MakeWithView(v)
	} else {
		payload = buffer.MakeWithData(ip[:total])
	}
	pkt := gstack.NewPacketBuffer(gstack.PacketBufferOptions{Payload: payload})
	defer pkt.DecRef()
	pkt.NetworkProtocolNumber = header.IPv4ProtocolNumber
	pkt.TransportProtocolNumber = header.TCPProtocolNumber
	pkt.NetworkHeader().Consume(header.IPv4MinimumSize)
	if !parse.TCP(pkt) {
		return false
	}
	pkt.NICID = nicID
	pkt.PktType = tcpip.PacketHost
	pkt.RXChecksumValidated = true
	pkt.Deferrer = deferrer
	f.received.Increment()
	f.valid.Increment()
	f.delivered.Increment()
	f.tcp.QueuePacket(ep, id, pkt)
	return true
}
