package bpf

import (
	"encoding/binary"
	"net/netip"
)

// Minimal frame builders for tests. Checksums are left zero: the program
// does not look at them.

var (
	macA = []byte{0x02, 0, 0, 0, 0, 0xa}
	macB = []byte{0x02, 0, 0, 0, 0, 0xb}
)

func eth(etype uint16, payload []byte) []byte {
	f := make([]byte, 14, 14+len(payload))
	copy(f[0:6], macB)
	copy(f[6:12], macA)
	binary.BigEndian.PutUint16(f[12:], etype)
	return append(f, payload...)
}

func ipv4(src, dst netip.Addr, proto uint8, payload []byte) []byte {
	h := make([]byte, 20, 20+len(payload))
	h[0] = 0x45
	binary.BigEndian.PutUint16(h[2:], uint16(20+len(payload)))
	h[8] = 64
	h[9] = proto
	s, d := src.As4(), dst.As4()
	copy(h[12:], s[:])
	copy(h[16:], d[:])
	return eth(0x0800, append(h, payload...))
}

func ipv6(src, dst netip.Addr, next uint8, payload []byte) []byte {
	h := make([]byte, 40, 40+len(payload))
	h[0] = 0x60
	binary.BigEndian.PutUint16(h[4:], uint16(len(payload)))
	h[6] = next
	h[7] = 64
	s, d := src.As16(), dst.As16()
	copy(h[8:], s[:])
	copy(h[24:], d[:])
	return eth(0x86dd, append(h, payload...))
}

func l4(sport, dport uint16, n int) []byte {
	h := make([]byte, n)
	binary.BigEndian.PutUint16(h[0:], sport)
	binary.BigEndian.PutUint16(h[2:], dport)
	return h
}

func arp(op uint16, sender, target netip.Addr) []byte {
	a := make([]byte, 28)
	binary.BigEndian.PutUint16(a[0:], 1)
	binary.BigEndian.PutUint16(a[2:], 0x0800)
	a[4], a[5] = 6, 4
	binary.BigEndian.PutUint16(a[6:], op)
	copy(a[8:], macA)
	s, t := sender.As4(), target.As4()
	copy(a[14:], s[:])
	copy(a[24:], t[:])
	return eth(0x0806, a)
}

func icmp6(typ uint8, target netip.Addr) []byte {
	m := make([]byte, 24)
	m[0] = typ
	t := target.As16()
	copy(m[8:], t[:])
	return m
}
