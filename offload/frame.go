package offload

import (
	"encoding/binary"
	"fmt"
)

// WriteTCPFrame writes one TCP packet into frame, the common case of Tx
// without its generality: hdr holds the packet's Ethernet, IP (IPv4
// without options, or IPv6 without extension headers) and TCP headers
// whole, with the IP header's checksum, if any, already set; payload is
// the segment's bytes in pieces. It copies the headers, then the payload
// with the TCP checksum computed in that copy, and returns the frame's
// length. Nothing is segmented: the caller has cut the packet to the
// MTU. It fails with ErrMalformed if hdr is not such headers, and with
// ErrFrameTooSmall if the packet does not fit the frame.
func WriteTCPFrame(frame, hdr []byte, payload [][]byte) (int, error) {
	if len(hdr) < ethLen+20+20 {
		return 0, malformed("%d bytes of headers", len(hdr))
	}
	var l4 int
	switch binary.BigEndian.Uint16(hdr[12:]) {
	case etherTypeIPv4:
		if hdr[ethLen] != 0x45 || hdr[ethLen+9] != protoTCP {
			return 0, malformed("IPv4 header %#02x, protocol %d", int(hdr[ethLen]), int(hdr[ethLen+9]))
		}
		l4 = ethLen + 20
	case etherTypeIPv6:
		if hdr[ethLen]>>4 != 6 || hdr[ethLen+6] != protoTCP {
			return 0, malformed("IPv6 header, next header %d", int(hdr[ethLen+6]))
		}
		l4 = ethLen + 40
	default:
		return 0, malformed("ethertype %#04x", int(binary.BigEndian.Uint16(hdr[12:])))
	}
	if len(hdr) < l4+20 || int(hdr[l4+12]>>4)*4 != len(hdr)-l4 {
		return 0, malformed("TCP header of %d bytes", len(hdr)-l4)
	}
	n := len(hdr)
	for _, p := range payload {
		n += len(p)
	}
	if n > len(frame) {
		return 0, fmt.Errorf("%w: %d bytes, frame of %d", ErrFrameTooSmall, n, len(frame))
	}
	copy(frame, hdr)
	var acc uint64
	w := len(hdr)
	for _, p := range payload {
		c, s := CopySum(frame[w:], p, 0)
		if (w-l4)&1 != 0 {
			s = SumOdd(s)
		}
		acc = add(acc, s)
		w += c
	}
	tcp := frame[l4:len(hdr)]
	tcp[tcpChecksum], tcp[tcpChecksum+1] = 0, 0
	ip := frame[ethLen:l4]
	if l4 == ethLen+40 {
		acc = add(acc, PseudoHeader6(ip[8:24], ip[24:40], protoTCP, n-l4))
	} else {
		acc = add(acc, PseudoHeader4(ip[12:16], ip[16:20], protoTCP, n-l4))
	}
	binary.BigEndian.PutUint16(tcp[tcpChecksum:], ^Fold(Sum(tcp, acc)))
	return n, nil
}
