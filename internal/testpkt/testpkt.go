// Package testpkt builds Ethernet frames for ustack's tests: IPv4, IPv6,
// ARP, TCP, UDP and ICMPv6, and names the protocol numbers they use.
// Checksums come from Checksum, a plain word-by-word RFC 1071 reference
// that shares no code with package offload, so tests can check offload
// against it. Frames go from MACA to MACB unless a test sets other
// addresses with SetMACs.
package testpkt

import (
	"encoding/binary"
	"net/netip"
)

// EtherTypes.
const (
	EtherTypeIPv4 = 0x0800
	EtherTypeARP  = 0x0806
	EtherTypeVLAN = 0x8100
	EtherTypeIPv6 = 0x86dd
	EtherTypeLLDP = 0x88cc
)

// IP protocol numbers.
const (
	ProtoICMP     = 1
	ProtoTCP      = 6
	ProtoUDP      = 17
	ProtoFragment = 44 // IPv6 fragment header
	ProtoICMPv6   = 58
)

// ICMPv6 neighbour discovery message types.
const (
	NeighborSolicitation  = 135
	NeighborAdvertisement = 136
)

// The default source and destination MAC addresses.
var (
	MACA = []byte{0x02, 0, 0, 0, 0, 0xa}
	MACB = []byte{0x02, 0, 0, 0, 0, 0xb}
)

// Checksum is the RFC 1071 Internet checksum of b, computed word by word.
func Checksum(b []byte) uint16 {
	var sum uint32
	for len(b) >= 2 {
		sum += uint32(binary.BigEndian.Uint16(b))
		b = b[2:]
	}
	if len(b) == 1 {
		sum += uint32(b[0]) << 8
	}
	for sum > 0xffff {
		sum = sum>>16 + sum&0xffff
	}
	return ^uint16(sum)
}

// Eth returns an Ethernet frame from MACA to MACB carrying payload.
func Eth(etype uint16, payload []byte) []byte {
	f := make([]byte, 14, 14+len(payload))
	copy(f[0:6], MACB)
	copy(f[6:12], MACA)
	binary.BigEndian.PutUint16(f[12:], etype)
	return append(f, payload...)
}

// SetMACs sets a frame's destination and source addresses.
func SetMACs(f []byte, dst, src []byte) {
	copy(f[0:6], dst)
	copy(f[6:12], src)
}

// IPv4 returns an IPv4 packet (a 20-byte header with its checksum, TTL
// 64) carrying payload, in an Ethernet frame.
func IPv4(src, dst netip.Addr, proto uint8, payload []byte) []byte {
	h := make([]byte, 20, 20+len(payload))
	h[0] = 0x45
	binary.BigEndian.PutUint16(h[2:], uint16(20+len(payload)))
	h[8] = 64
	h[9] = proto
	s, d := src.As4(), dst.As4()
	copy(h[12:], s[:])
	copy(h[16:], d[:])
	binary.BigEndian.PutUint16(h[10:], Checksum(h))
	return Eth(EtherTypeIPv4, append(h, payload...))
}

// IPv6 returns an IPv6 packet (hop limit 64) carrying payload, in an
// Ethernet frame.
func IPv6(src, dst netip.Addr, next uint8, payload []byte) []byte {
	h := make([]byte, 40, 40+len(payload))
	h[0] = 0x60
	binary.BigEndian.PutUint16(h[4:], uint16(len(payload)))
	h[6] = next
	h[7] = 64
	s, d := src.As16(), dst.As16()
	copy(h[8:], s[:])
	copy(h[24:], d[:])
	return Eth(EtherTypeIPv6, append(h, payload...))
}

// IP is IPv4 or IPv6, by the addresses' family.
func IP(src, dst netip.Addr, proto uint8, payload []byte) []byte {
	if src.Is4() {
		return IPv4(src, dst, proto, payload)
	}
	return IPv6(src, dst, proto, payload)
}

// L4 returns n bytes of a transport header with only its ports set
// (checksum zero), for tests that only classify.
func L4(sport, dport uint16, n int) []byte {
	h := make([]byte, n)
	binary.BigEndian.PutUint16(h[0:], sport)
	binary.BigEndian.PutUint16(h[2:], dport)
	return h
}

// PseudoHeader is the TCP/UDP checksum pseudo-header for a segment of
// length bytes from src to dst.
func PseudoHeader(src, dst netip.Addr, proto uint8, length int) []byte {
	if src.Is4() {
		s, d := src.As4(), dst.As4()
		return append(append(append([]byte{}, s[:]...), d[:]...), 0, proto, byte(length>>8), byte(length))
	}
	s, d := src.As16(), dst.As16()
	return append(append(append([]byte{}, s[:]...), d[:]...), 0, 0, byte(length>>8), byte(length), 0, 0, 0, proto)
}

// TCP returns a TCP segment (flags PSH|ACK, no options, valid checksum)
// carrying payload, in an IP packet and an Ethernet frame.
func TCP(src, dst netip.Addr, sport, dport uint16, payload []byte) []byte {
	seg := make([]byte, 20, 20+len(payload))
	binary.BigEndian.PutUint16(seg[0:], sport)
	binary.BigEndian.PutUint16(seg[2:], dport)
	seg[12] = 5 << 4
	seg[13] = 0x18
	binary.BigEndian.PutUint16(seg[14:], 65535)
	seg = append(seg, payload...)
	binary.BigEndian.PutUint16(seg[16:], Checksum(append(PseudoHeader(src, dst, ProtoTCP, len(seg)), seg...)))
	return IP(src, dst, ProtoTCP, seg)
}

// UDP returns a UDP datagram (valid checksum) carrying payload, in an IP
// packet and an Ethernet frame.
func UDP(src, dst netip.Addr, sport, dport uint16, payload []byte) []byte {
	d := make([]byte, 8, 8+len(payload))
	binary.BigEndian.PutUint16(d[0:], sport)
	binary.BigEndian.PutUint16(d[2:], dport)
	binary.BigEndian.PutUint16(d[4:], uint16(8+len(payload)))
	d = append(d, payload...)
	sum := Checksum(append(PseudoHeader(src, dst, ProtoUDP, len(d)), d...))
	if sum == 0 {
		sum = 0xffff // 0 means "no checksum" on the wire
	}
	binary.BigEndian.PutUint16(d[6:], sum)
	return IP(src, dst, ProtoUDP, d)
}

// ARP returns an ARP message (op 1 request, 2 reply) from MACA in an
// Ethernet frame.
func ARP(op uint16, sender, target netip.Addr) []byte {
	a := make([]byte, 28)
	binary.BigEndian.PutUint16(a[0:], 1)
	binary.BigEndian.PutUint16(a[2:], EtherTypeIPv4)
	a[4], a[5] = 6, 4
	binary.BigEndian.PutUint16(a[6:], op)
	copy(a[8:], MACA)
	s, t := sender.As4(), target.As4()
	copy(a[14:], s[:])
	copy(a[24:], t[:])
	return Eth(EtherTypeARP, a)
}

// NDP returns an ICMPv6 neighbour discovery message of type typ about
// target (checksum zero), as the payload of an IPv6 packet.
func NDP(typ uint8, target netip.Addr) []byte {
	m := make([]byte, 24)
	m[0] = typ
	t := target.As16()
	copy(m[8:], t[:])
	return m
}
