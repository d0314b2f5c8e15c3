package offload

import "encoding/binary"

// Verdict is what VerifyTCP found.
type Verdict int

const (
	// NotTCP: not an IPv4/IPv6 TCP segment this function checks (other
	// protocols, IPv6 extension headers, fragments, malformed headers);
	// leave it to netstack.
	NotTCP Verdict = iota
	// Valid: a TCP segment whose checksum is correct.
	Valid
	// Invalid: a TCP segment whose checksum is wrong.
	Invalid
)

// VerifyTCP checks the TCP checksum (and for IPv4 the header checksum) of
// an Ethernet frame carrying IPv4 or IPv6 without extension headers. It
// never panics on malformed input.
func VerifyTCP(frame []byte) Verdict {
	if len(frame) < 14 {
		return NotTCP
	}
	ip := frame[14:]
	switch binary.BigEndian.Uint16(frame[12:]) {
	case 0x0800:
		if len(ip) < 20 || ip[0]>>4 != 4 || ip[9] != 6 {
			return NotTCP
		}
		ihl := int(ip[0]&0xf) * 4
		total := int(binary.BigEndian.Uint16(ip[2:]))
		if ihl < 20 || total < ihl+20 || total > len(ip) || binary.BigEndian.Uint16(ip[6:])&0x3fff != 0 {
			return NotTCP
		}
		// Marking a packet verified also skips netstack's IPv4 header
		// check, so the header checksum is verified here too.
		if Fold(Sum(ip[:ihl], 0)) != 0xffff {
			return Invalid
		}
		seg := ip[ihl:total]
		if Fold(Sum(seg, PseudoHeader4(ip[12:16], ip[16:20], 6, len(seg)))) == 0xffff {
			return Valid
		}
		return Invalid
	case 0x86dd:
		if len(ip) < 40 || ip[0]>>4 != 6 || ip[6] != 6 {
			return NotTCP
		}
		plen := int(binary.BigEndian.Uint16(ip[4:]))
		if plen < 20 || 40+plen > len(ip) {
			return NotTCP
		}
		seg := ip[40 : 40+plen]
		if Fold(Sum(seg, PseudoHeader6(ip[8:24], ip[24:40], 6, len(seg)))) == 0xffff {
			return Valid
		}
		return Invalid
	}
	return NotTCP
}
