package reflector

import (
	"encoding/binary"

	"github.com/ustack-dev/ustack/offload"
)

// TCP flags the echo reads and writes.
const (
	tcpFin = 0x01
	tcpSyn = 0x02
	tcpRst = 0x04
	tcpPsh = 0x08
	tcpAck = 0x10
)

// floorMSS is the MSS the TCP echo announces: an IPv4 datagram of 1,500
// bytes, the MTU of the benchmark's links.
const floorMSS = 1460

// Reply rewrites the frame f in place into its reply and returns the
// reply's length, 0 for none: what Handle answers (ARP, UDP), and TCP to
// IP, echoed with no connection state (replyTCP). f's capacity past its
// length is room for a reply longer than the request.
func (r *Responder) Reply(f []byte) int {
	if len(f) >= ethLen+ipv4Len && binary.BigEndian.Uint16(f[12:]) == etherTypeIPv4 && f[ethLen+9] == protoTCP {
		return r.replyTCP(f)
	}
	if r.Handle(f) {
		return len(f)
	}
	return 0
}

const protoTCP = 6

// replyTCP is a TCP echo server without connection state, the least work
// a TCP peer can do for a client's ping-pong: the floor of the same work
// ustack's TCP does, where the UDP echo is a floor of less (the kernel's
// TCP client costs more than its UDP one). It answers
//
//   - a SYN with a SYN-ACK whose initial sequence number is the client's
//     own, announcing only an MSS (no window scaling, SACK or
//     timestamps): from then on the echo's byte k has the sequence
//     number of the client's byte k, so
//   - a segment of n bytes at SEQ (with FIN, n+1) is answered by the same
//     bytes at SEQ, acknowledging SEQ+n (+1 with FIN, echoed as FIN):
//     segments cut anywhere, retransmitted or pipelined are echoed
//     consistently, and the client's close is answered by a close;
//   - pure ACKs and RSTs with nothing.
//
// It is not a TCP for anything but a client that waits for its echo: it
// never retransmits, and it trusts the client's window to be open.
func (r *Responder) replyTCP(f []byte) int {
	ip := f[ethLen:]
	ihl := int(ip[0]&0xf) * 4
	total := int(binary.BigEndian.Uint16(ip[2:]))
	if ip[0]>>4 != 4 || ihl < ipv4Len || total < ihl+20 || ethLen+total > len(f) || [4]byte(ip[16:20]) != r.IP {
		r.Ignored.Add(1)
		return 0
	}
	switch offload.Verify(f[:ethLen+total]) {
	case offload.Valid, offload.Partial:
	default:
		r.BadChecksums.Add(1)
		return 0
	}
	tcp := ip[ihl:total]
	doff := int(tcp[12]>>4) * 4
	flags := tcp[13]
	if doff < 20 || doff > len(tcp) || flags&tcpRst != 0 {
		r.Ignored.Add(1)
		return 0
	}
	seq := binary.BigEndian.Uint32(tcp[4:])
	n := len(tcp) - doff
	var out []byte // the reply's TCP header and payload
	switch {
	case flags&(tcpSyn|tcpAck) == tcpSyn:
		if cap(f) < ethLen+ipv4Len+24 {
			r.Ignored.Add(1)
			return 0
		}
		f = f[:ethLen+ipv4Len+24]
		ip = f[ethLen:]
		// Ports first: an IP header with options moves the TCP
		// header.
		sport, dport := binary.BigEndian.Uint16(tcp[0:]), binary.BigEndian.Uint16(tcp[2:])
		out = ip[ipv4Len:]
		binary.BigEndian.PutUint16(out[0:], dport)
		binary.BigEndian.PutUint16(out[2:], sport)
		binary.BigEndian.PutUint32(out[4:], seq)
		binary.BigEndian.PutUint32(out[8:], seq+1)
		out[12], out[13] = 6<<4, tcpSyn|tcpAck
		out[20], out[21] = 2, 4 // MSS
		binary.BigEndian.PutUint16(out[22:], floorMSS)
	case flags&tcpSyn != 0 || flags&tcpAck == 0 || n == 0 && flags&tcpFin == 0:
		r.Ignored.Add(1) // a pure ACK, or nothing a client sends
		return 0
	default:
		ack := seq + uint32(n)
		reply := byte(tcpAck)
		if n > 0 {
			reply |= tcpPsh
		}
		if flags&tcpFin != 0 {
			ack++
			reply |= tcpFin
		}
		out = tcp
		sport := binary.BigEndian.Uint16(tcp[0:])
		copy(out[0:2], tcp[2:4])
		binary.BigEndian.PutUint16(out[2:], sport)
		binary.BigEndian.PutUint32(out[8:], ack)
		out[13] = reply
		if ihl > ipv4Len { // keep the reply's IP header plain
			copy(ip[ipv4Len:], out)
			out = ip[ipv4Len : ipv4Len+len(out)]
			f = f[:ethLen+ipv4Len+len(out)]
		} else {
			f = f[:ethLen+total]
		}
	}
	binary.BigEndian.PutUint16(out[14:], 0xffff) // window
	binary.BigEndian.PutUint16(out[16:], 0)      // checksum
	binary.BigEndian.PutUint16(out[18:], 0)      // urgent pointer
	r.TCP.Add(1)

	swapAddrs(f)
	ip[0] = 0x45
	binary.BigEndian.PutUint16(ip[2:], uint16(ipv4Len+len(out)))
	ip[8] = 64
	binary.BigEndian.PutUint16(ip[10:], 0)
	binary.BigEndian.PutUint16(ip[10:], offload.Checksum(ip[:ipv4Len]))
	sum := ^offload.Fold(offload.Sum(out, offload.PseudoHeader4(ip[12:16], ip[16:20], protoTCP, len(out))))
	binary.BigEndian.PutUint16(out[16:], sum)
	return len(f)
}
