package reflector

import (
	"encoding/binary"
	"net"
	"net/netip"

	"github.com/ustack-dev/ustack/offload"
)

// Header sizes of the frames the floor builds: Ethernet, IPv4 without
// options, UDP.
const (
	ethLen   = 14
	ipv4Len  = 20
	udpLen   = 8
	udpFrame = ethLen + ipv4Len + udpLen
)

// MaxUDPPayload returns the largest UDP payload an IPv4 datagram of mtu
// bytes carries unfragmented (1472 at MTU 1500).
func MaxUDPPayload(mtu int) int { return mtu - ipv4Len - udpLen }

// writeUDP4 writes an Ethernet/IPv4/UDP frame with payload into f, with
// both checksums, and returns its length. f must hold udpFrame+len(payload)
// bytes; payload may alias f[udpFrame:] (it is then not copied).
func writeUDP4(f []byte, dstMAC, srcMAC net.HardwareAddr, src, dst netip.AddrPort, payload []byte) int {
	copy(f[0:6], dstMAC)
	copy(f[6:12], srcMAC)
	binary.BigEndian.PutUint16(f[12:], etherTypeIPv4)
	ip := f[ethLen : ethLen+ipv4Len]
	ip[0], ip[1] = 0x45, 0
	binary.BigEndian.PutUint16(ip[2:], uint16(ipv4Len+udpLen+len(payload)))
	binary.BigEndian.PutUint32(ip[4:], 0x40000000) // ID 0, DF
	ip[8], ip[9] = 64, 17
	binary.BigEndian.PutUint16(ip[10:], 0)
	s4, d4 := src.Addr().As4(), dst.Addr().As4()
	copy(ip[12:16], s4[:])
	copy(ip[16:20], d4[:])
	binary.BigEndian.PutUint16(ip[10:], offload.Checksum(ip))
	udp := f[ethLen+ipv4Len:]
	binary.BigEndian.PutUint16(udp[0:], src.Port())
	binary.BigEndian.PutUint16(udp[2:], dst.Port())
	binary.BigEndian.PutUint16(udp[4:], uint16(udpLen+len(payload)))
	binary.BigEndian.PutUint16(udp[6:], 0)
	n := copy(udp[udpLen:], payload)
	sum := ChecksumUDP4(s4[:], d4[:], udp[:udpLen+n])
	if sum == 0 {
		sum = 0xffff
	}
	binary.BigEndian.PutUint16(udp[6:], sum)
	return udpFrame + n
}

// udp4 is what parseUDP4 finds in a frame.
type udp4 struct {
	srcMAC   net.HardwareAddr // aliases the frame
	src, dst netip.AddrPort
	payload  []byte // aliases the frame
}

// parseUDP4 parses an Ethernet/IPv4/UDP frame, or reports false.
func parseUDP4(f []byte) (u udp4, ok bool) {
	if len(f) < udpFrame || binary.BigEndian.Uint16(f[12:]) != etherTypeIPv4 {
		return u, false
	}
	ip := f[ethLen:]
	ihl := int(ip[0]&0xf) * 4
	if ip[0]>>4 != 4 || ihl < ipv4Len || ip[9] != 17 || len(ip) < ihl+udpLen {
		return u, false
	}
	udp := ip[ihl:]
	ulen := int(binary.BigEndian.Uint16(udp[4:]))
	if ulen < udpLen || ulen > len(udp) {
		return u, false
	}
	u.srcMAC = f[6:12]
	u.src = netip.AddrPortFrom(netip.AddrFrom4([4]byte(ip[12:16])), binary.BigEndian.Uint16(udp[0:]))
	u.dst = netip.AddrPortFrom(netip.AddrFrom4([4]byte(ip[16:20])), binary.BigEndian.Uint16(udp[2:]))
	u.payload = udp[udpLen:ulen]
	return u, true
}

// writeARPRequest writes an ARP request for target from (mac, ip) into f
// and returns its length.
func writeARPRequest(f []byte, mac net.HardwareAddr, ip, target netip.Addr) int {
	for i := range 6 {
		f[i] = 0xff
	}
	copy(f[6:12], mac)
	binary.BigEndian.PutUint16(f[12:], etherTypeARP)
	a := f[ethLen : ethLen+28]
	binary.BigEndian.PutUint16(a[0:], 1)      // Ethernet
	binary.BigEndian.PutUint16(a[2:], 0x0800) // IPv4
	a[4], a[5] = 6, 4
	binary.BigEndian.PutUint16(a[6:], 1) // request
	copy(a[8:14], mac)
	s4, t4 := ip.As4(), target.As4()
	copy(a[14:18], s4[:])
	clear(a[18:24])
	copy(a[24:28], t4[:])
	return ethLen + 28
}

// parseARPReply returns the sender's hardware address if f is an ARP reply
// from ip.
func parseARPReply(f []byte, ip netip.Addr) (net.HardwareAddr, bool) {
	if len(f) < ethLen+28 || binary.BigEndian.Uint16(f[12:]) != etherTypeARP {
		return nil, false
	}
	a := f[ethLen:]
	i4 := ip.As4()
	if binary.BigEndian.Uint16(a[6:]) != 2 || [4]byte(a[14:18]) != i4 {
		return nil, false
	}
	return net.HardwareAddr(append([]byte(nil), a[8:14]...)), true
}
