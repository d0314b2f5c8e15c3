package offload

import "encoding/binary"

// Verdict is what Verify found.
type Verdict int

const (
	// Unchecked: not an IPv4/IPv6 TCP or UDP packet this function checks
	// (other protocols, IPv6 extension headers, fragments, malformed
	// headers); netstack checks it.
	Unchecked Verdict = iota
	// Valid: a TCP or UDP packet whose checksums are correct.
	Valid
	// Invalid: a TCP or UDP packet with a wrong transport checksum or,
	// for IPv4, a wrong header checksum.
	Invalid
	// Partial: a TCP or UDP packet whose checksum field holds only the
	// folded pseudo-header sum, as a Linux sender leaves it for checksum
	// offload (CHECKSUM_PARTIAL) and as a local veth peer delivers it
	// when its TX checksum offload is on (the default). The IPv4 header
	// checksum is correct. Trust it only from such a peer.
	Partial
)

func (v Verdict) String() string {
	switch v {
	case Unchecked:
		return "unchecked"
	case Valid:
		return "valid"
	case Invalid:
		return "invalid"
	case Partial:
		return "partial"
	}
	return "Verdict(?)"
}

const (
	etherTypeIPv4 = 0x0800
	etherTypeIPv6 = 0x86dd
	protoTCP      = 6
	protoUDP      = 17
)

// Verify checks the TCP or UDP checksum (and for IPv4 the header
// checksum) of an Ethernet frame carrying IPv4 or IPv6 without extension
// headers. An IPv4 UDP datagram without a checksum (field 0) is Valid, as
// RFC 768 allows; over IPv6 it is Invalid (RFC 8200 §8.1). It never
// panics on malformed input.
func Verify(frame []byte) Verdict {
	if len(frame) < 14 {
		return Unchecked
	}
	ip := frame[14:]
	var seg []byte
	var sum uint64
	var proto byte
	switch binary.BigEndian.Uint16(frame[12:]) {
	case etherTypeIPv4:
		if len(ip) < 20 || ip[0]>>4 != 4 {
			return Unchecked
		}
		proto = ip[9]
		ihl := int(ip[0]&0xf) * 4
		total := int(binary.BigEndian.Uint16(ip[2:]))
		if proto != protoTCP && proto != protoUDP || ihl < 20 || total < ihl || total > len(ip) ||
			binary.BigEndian.Uint16(ip[6:])&0x3fff != 0 {
			return Unchecked
		}
		// Marking a packet verified also skips netstack's IPv4 header
		// check, so the header checksum is verified here too.
		if Fold(Sum(ip[:ihl], 0)) != 0xffff {
			return Invalid
		}
		seg = ip[ihl:total]
		if proto == protoUDP && len(seg) >= 8 && seg[6] == 0 && seg[7] == 0 {
			return udpLength(seg)
		}
		sum = PseudoHeader4(ip[12:16], ip[16:20], proto, len(seg))
	case etherTypeIPv6:
		if len(ip) < 40 || ip[0]>>4 != 6 {
			return Unchecked
		}
		proto = ip[6]
		plen := int(binary.BigEndian.Uint16(ip[4:]))
		if proto != protoTCP && proto != protoUDP || 40+plen > len(ip) {
			return Unchecked
		}
		seg = ip[40 : 40+plen]
		sum = PseudoHeader6(ip[8:24], ip[24:40], proto, len(seg))
	default:
		return Unchecked
	}
	switch proto {
	case protoTCP:
		if len(seg) < 20 {
			return Unchecked
		}
	case protoUDP:
		if v := udpLength(seg); v != Valid {
			return v
		}
	}
	if Fold(Sum(seg, sum)) == 0xffff {
		return Valid
	}
	// The field at offset 16 (TCP) or 6 (UDP) holding the folded
	// pseudo-header sum: Linux's tcp_v4_send_check and udp4_hwcsum
	// leave ~csum_tcpudp_magic(…, 0) there for the device to finish.
	off := 16
	if proto == protoUDP {
		off = 6
	}
	if binary.BigEndian.Uint16(seg[off:]) == Fold(sum) {
		return Partial
	}
	return Invalid
}

// udpLength checks that a UDP header's length field covers the whole
// payload the IP header gives it: netstack treats any other length as
// malformed, so such datagrams are left to it.
func udpLength(seg []byte) Verdict {
	if len(seg) < 8 || int(binary.BigEndian.Uint16(seg[4:])) != len(seg) {
		return Unchecked
	}
	return Valid
}
