package reflector

import (
	"encoding/binary"
	"net"
	"net/netip"

	"github.com/ustack-dev/ustack/offload"
)

// The TCP-shaped floors' segments: Ethernet, IPv4 without options, and a
// TCP header with the timestamp option (NOP, NOP, kind 8) that a Linux or
// ustack connection carries on every segment.
const (
	tcpLen       = 20
	tcpTSLen     = 12
	tcpTSHdr     = ethLen + ipv4Len + tcpLen + tcpTSLen // 66
	tcpOptTS     = 8
	tcpOptNOP    = 1
	tcpOptMSS    = 2
	tcpOptWS     = 3
	tcpOptSACKOK = 4
	tcpOptSACK   = 5
)

// tcpTemplate is one flow's headers, written once and copied into each
// segment's frame, as a TCP's cached header is: only the lengths,
// sequence numbers, flags, timestamps and checksums change per segment.
type tcpTemplate struct {
	hdr [tcpTSHdr]byte
	n   int // the headers' length: tcpTSHdr, or 12 less without timestamps
	// ipSum is the IPv4 header's sum with a total length of 0.
	ipSum uint64
	key   flowKey
}

// flowKey names a flow by its peer's address and port and the local
// port.
type flowKey struct {
	peer  [4]byte
	pport uint16
	lport uint16
	ts    bool
	used  bool
}

// init writes the headers of src's segments to dst; with ts they carry
// the timestamp option.
func (t *tcpTemplate) init(dstMAC, srcMAC net.HardwareAddr, src, dst netip.AddrPort, ts bool) {
	h := t.hdr[:]
	clear(h)
	copy(h[0:6], dstMAC)
	copy(h[6:12], srcMAC)
	binary.BigEndian.PutUint16(h[12:], etherTypeIPv4)
	ip := h[ethLen:]
	ip[0] = 0x45
	binary.BigEndian.PutUint32(ip[4:], 0x4000) // ID 0, DF
	ip[8], ip[9] = 64, protoTCP
	s4, d4 := src.Addr().As4(), dst.Addr().As4()
	copy(ip[12:16], s4[:])
	copy(ip[16:20], d4[:])
	t.ipSum = offload.Sum(ip[:ipv4Len], 0)
	tcp := ip[ipv4Len:]
	binary.BigEndian.PutUint16(tcp[0:], src.Port())
	binary.BigEndian.PutUint16(tcp[2:], dst.Port())
	binary.BigEndian.PutUint16(tcp[14:], 0xffff) // window
	t.n = tcpTSHdr - tcpTSLen
	tcp[12] = tcpLen / 4 << 4
	if ts {
		t.n = tcpTSHdr
		tcp[12] = (tcpLen + tcpTSLen) / 4 << 4
		tcp[20], tcp[21], tcp[22], tcp[23] = tcpOptNOP, tcpOptNOP, tcpOptTS, 10
	}
}

// write writes one segment into out: the template's headers with seq,
// ack, flags and (if the template has them) timestamps filled in, then
// payload, with the TCP checksum computed in that copy. It returns the
// frame's length, 0 if out cannot hold it.
func (t *tcpTemplate) write(out []byte, seq, ack uint32, flags byte, tsval, tsecr uint32, payload []byte) int {
	n := t.n + len(payload)
	if n > len(out) {
		return 0
	}
	copy(out, t.hdr[:t.n])
	ip := out[ethLen : ethLen+ipv4Len]
	binary.BigEndian.PutUint16(ip[2:], uint16(n-ethLen))
	binary.BigEndian.PutUint16(ip[10:], ^offload.Fold(offload.Add(t.ipSum, offload.Word(uint16(n-ethLen)))))
	tcp := out[ethLen+ipv4Len : t.n]
	binary.BigEndian.PutUint32(tcp[4:], seq)
	binary.BigEndian.PutUint32(tcp[8:], ack)
	tcp[13] = flags
	if len(tcp) > tcpLen {
		binary.BigEndian.PutUint32(tcp[24:], tsval)
		binary.BigEndian.PutUint32(tcp[28:], tsecr)
	}
	// The payload starts at an even offset of the segment (the TCP
	// header's length is a multiple of 4).
	_, acc := offload.CopySum(out[t.n:n], payload, 0)
	acc = offload.Add(acc, offload.PseudoHeader4(ip[12:16], ip[16:20], protoTCP, n-ethLen-ipv4Len))
	binary.BigEndian.PutUint16(tcp[16:], ^offload.Fold(offload.Sum(tcp, acc)))
	return n
}

// tcp4 is what parseTCP4 finds in a frame.
type tcp4 struct {
	src, dst   netip.AddrPort
	seq, ack   uint32
	flags      byte
	ts         bool // the segment carries a timestamp option
	tsval      uint32
	tsecr      uint32
	wnd        uint16 // the window field, unscaled
	mss        uint16 // the MSS option's, 0 without one (a SYN's)
	wscale     int8   // the window scale option's shift, -1 without one (a SYN's)
	sackOK     bool   // the SACK-permitted option (a SYN's)
	payload    []byte // aliases the frame
	frameLen   int    // Ethernet header and IP datagram
	ipOptional bool   // the IP header has options
}

// parseTCP4 parses an Ethernet/IPv4/TCP frame, or reports false. It does
// not check checksums (offload.Verify does).
func parseTCP4(f []byte) (s tcp4, ok bool) {
	if len(f) < ethLen+ipv4Len+tcpLen || binary.BigEndian.Uint16(f[12:]) != etherTypeIPv4 {
		return s, false
	}
	ip := f[ethLen:]
	ihl := int(ip[0]&0xf) * 4
	total := int(binary.BigEndian.Uint16(ip[2:]))
	if ip[0]>>4 != 4 || ip[9] != protoTCP || ihl < ipv4Len || total < ihl+tcpLen || total > len(ip) {
		return s, false
	}
	tcp := ip[ihl:total]
	doff := int(tcp[12]>>4) * 4
	if doff < tcpLen || doff > len(tcp) {
		return s, false
	}
	s.src = netip.AddrPortFrom(netip.AddrFrom4([4]byte(ip[12:16])), binary.BigEndian.Uint16(tcp[0:]))
	s.dst = netip.AddrPortFrom(netip.AddrFrom4([4]byte(ip[16:20])), binary.BigEndian.Uint16(tcp[2:]))
	s.seq = binary.BigEndian.Uint32(tcp[4:])
	s.ack = binary.BigEndian.Uint32(tcp[8:])
	s.flags = tcp[13]
	s.wnd = binary.BigEndian.Uint16(tcp[14:])
	s.wscale = -1
	s.payload = tcp[doff:]
	s.frameLen = ethLen + total
	s.ipOptional = ihl > ipv4Len
	// The timestamp option, where Linux and ustack put it (after two
	// NOPs) or anywhere else.
	opts := tcp[tcpLen:doff]
	for len(opts) > 0 {
		switch opts[0] {
		case 0: // end of options
			return s, true
		case tcpOptNOP:
			opts = opts[1:]
			continue
		}
		if len(opts) < 2 || int(opts[1]) < 2 || int(opts[1]) > len(opts) {
			return s, true
		}
		switch {
		case opts[0] == tcpOptTS && opts[1] == 10:
			s.ts = true
			s.tsval = binary.BigEndian.Uint32(opts[2:])
			s.tsecr = binary.BigEndian.Uint32(opts[6:])
		case opts[0] == tcpOptMSS && opts[1] == 4:
			s.mss = binary.BigEndian.Uint16(opts[2:])
		case opts[0] == tcpOptWS && opts[1] == 3:
			s.wscale = int8(min(opts[2], 14)) // RFC 7323 §2.3
		case opts[0] == tcpOptSACKOK && opts[1] == 2:
			s.sackOK = true
		}
		opts = opts[opts[1]:]
	}
	return s, true
}
