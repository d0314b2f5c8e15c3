package stack

import (
	"net/netip"

	"github.com/ustack-dev/ustack/internal/third_party/gvisor/pkg/tcpip"
	"github.com/ustack-dev/ustack/internal/third_party/gvisor/pkg/tcpip/checksum"
	"github.com/ustack-dev/ustack/internal/third_party/gvisor/pkg/tcpip/header"
	gstack "github.com/ustack-dev/ustack/internal/third_party/gvisor/pkg/tcpip/stack"
	"github.com/ustack-dev/ustack/internal/third_party/gvisor/pkg/tcpip/transport/tcp"
	"github.com/ustack-dev/ustack/xsk"
)

// SYNs answered on the worker (netstack patch 0086). A SYN that a
// listener answers with a SYN cookie leaves nothing behind, so the worker
// answers it where early demux finds the listener: netstack's listener
// computes the SYN-ACK's TCP header (cookie, options, window) straight
// into a UMEM frame, and the worker adds the Ethernet and IP headers and
// the checksums and puts it on the TX ring; the batch's one kick sends
// it. No segment, queueing, route or packet buffer is made for it. The
// handshake's last ACK goes the ordinary way: the listener validates the
// cookie and creates the connection.
//
// The frame goes back to the MAC the SYN came from, as an XDP SYN proxy
// answers: so only for peers on one of ustack's on-link prefixes, whose
// MAC that is. Anything else (a routed peer, cookies not in use, the
// listener busy) takes netstack's path.

// synMissRoute is the worker's own verdict beside netstack's
// tcp.SynVerdict ones: a peer off ustack's prefixes, or a frame from a
// multicast MAC.
const synMissRoute = tcp.NumSynVerdicts

// numSynVerdicts is how many verdicts queue.synFast counts.
const numSynVerdicts = tcp.NumSynVerdicts + 1

// synFrameMax is the largest SYN-ACK frame: Ethernet, IPv6 and a TCP
// header with every option.
const synFrameMax = ethHeaderLen + header.IPv6MinimumSize + header.TCPHeaderMaximumSize

// answerSyn offers listener ep the SYN th, received in frame with an IP
// header of ipLen bytes, and reports whether the SYN is dealt with
// (answered, or dropped as the listener would drop it).
func (f *earlyDemux) answerSyn(q *queue, frame []byte, ipLen int, th header.TCP, id *gstack.TransportEndpointID, ep *tcp.Endpoint) bool {
	if frame[6]&1 != 0 || !f.onLink(id.RemoteAddress) {
		q.synFast[synMissRoute].Add(1)
		return false
	}
	q.txMu.Lock()
	defer q.txMu.Unlock()
	q.io.Complete()
	addr, ok := q.allocFrame()
	if !ok {
		// Out of TX frames: netstack's path waits for one.
		q.synFast[tcp.SynMissBusy].Add(1)
		return false
	}
	out := q.io.Frame(addr)
	if len(out) < synFrameMax {
		q.io.Free(addr)
		q.synFast[synMissRoute].Add(1)
		return false
	}
	l4 := ethHeaderLen + ipLen
	syn, v := ep.AnswerSyn(*id, nicID, th, out[l4:])
	q.synFast[v].Add(1)
	if v != tcp.SynAnswered {
		q.io.Free(addr)
		return v == tcp.SynDropped
	}
	// Ethernet: back to where the SYN came from.
	copy(out[0:6], frame[6:12])
	copy(out[6:12], f.mac)
	copy(out[12:14], frame[12:14])
	tcpHdr := header.TCP(out[l4 : l4+syn.Len])
	var xsum uint16
	if ipLen == header.IPv4MinimumSize {
		ip := header.IPv4(out[ethHeaderLen:l4])
		ip.Encode(&header.IPv4Fields{
			TotalLength: uint16(header.IPv4MinimumSize + syn.Len),
			TTL:         syn.TTL,
			TOS:         syn.TOS,
			Protocol:    uint8(header.TCPProtocolNumber),
			Flags:       header.IPv4FlagDontFragment,
			SrcAddr:     id.LocalAddress,
			DstAddr:     id.RemoteAddress,
		})
		ip.SetChecksum(^ip.CalculateChecksum())
	} else {
		header.IPv6(out[ethHeaderLen:l4]).Encode(&header.IPv6Fields{
			PayloadLength:     uint16(syn.Len),
			TransportProtocol: header.TCPProtocolNumber,
			HopLimit:          syn.TTL,
			TrafficClass:      syn.TOS,
			SrcAddr:           id.LocalAddress,
			DstAddr:           id.RemoteAddress,
		})
	}
	xsum = header.PseudoHeaderChecksum(header.TCPProtocolNumber, id.LocalAddress, id.RemoteAddress, uint16(syn.Len))
	tcpHdr.SetChecksum(^checksum.Checksum(tcpHdr, xsum))
	q.txDescs[0] = xsk.Desc{Addr: addr, Len: uint32(l4 + syn.Len)}
	if q.io.Enqueue(q.txDescs[:1]) != 1 {
		// TX ring full: the SYN-ACK is lost as if on the wire; the
		// peer retransmits its SYN.
		q.io.Free(addr)
		q.txNoFrame.Add(1)
		return true
	}
	q.txFrames.Add(1)
	q.txPackets.Add(1)
	f.sent.Increment()
	return true
}

// onLink reports whether a is on one of ustack's prefixes.
func (f *earlyDemux) onLink(a tcpip.Address) bool {
	ip, ok := netip.AddrFromSlice(a.AsSlice())
	if !ok {
		return false
	}
	for _, p := range f.prefixes {
		if p.Contains(ip) {
			return true
		}
	}
	return false
}
