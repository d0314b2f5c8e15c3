package offload

import "encoding/binary"

// Receive coalescing (GRO), as Linux's tcp_gro_receive does it: within
// one RX batch, consecutive in-order TCP segments of one flow whose
// headers agree are merged into one packet before netstack sees it, so
// its per-packet work is done once per run instead of once per segment.
// Anything unusual passes as is: flags other than ACK and PSH, options
// other than NOP and timestamps, IPv4 options or fragments, IPv6
// extension headers, ECN marks, out-of-order or overlapping data.

// MaxCoalesced is the largest packet Merge builds, headers included
// but not the Ethernet header: an IPv4 total length fits 16 bits.
const MaxCoalesced = 0xffff

// Seg is a received TCP segment as GRO sees it.
type Seg struct {
	L4      int    // offset of the TCP header in the frame
	Payload int    // offset of the payload in the frame
	Len     int    // payload bytes
	Seq     uint32 // sequence number
	PSH     bool   // PSH set: the segment ends a run
}

// ParseTCP parses frame (from the Ethernet header on) as a segment GRO
// may merge: IPv4 without options and not a fragment, or IPv6 without
// extension headers; TCP with flags ACK or ACK|PSH, options none or NOP,
// NOP, timestamps; some payload; no ECN congestion mark. ok is false for
// anything else, which then passes as is. It never panics.
func ParseTCP(frame []byte) (s Seg, ok bool) {
	if len(frame) < ethLen+40 {
		return s, false
	}
	ip := frame[ethLen:]
	var total int
	switch binary.BigEndian.Uint16(frame[12:]) {
	case etherTypeIPv4:
		if ip[0] != 0x45 || ip[1]&3 == 3 || ip[9] != protoTCP ||
			binary.BigEndian.Uint16(ip[6:])&0xbfff != 0 { // MF or an offset (DF allowed)
			return s, false
		}
		total = int(binary.BigEndian.Uint16(ip[2:]))
		s.L4 = ethLen + 20
	case etherTypeIPv6:
		if ip[0]>>4 != 6 || (ip[1]>>4)&3 == 3 || ip[6] != protoTCP || len(ip) < 60 {
			return s, false
		}
		total = 40 + int(binary.BigEndian.Uint16(ip[4:]))
		s.L4 = ethLen + 40
	default:
		return s, false
	}
	if total > len(ip) || ethLen+total < s.L4+20 {
		return s, false
	}
	tcp := frame[s.L4 : ethLen+total]
	hl := int(tcp[12]>>4) * 4
	flags := tcp[13]
	if tcp[12]&0x0f != 0 || flags&^tcpFlagPSH != tcpFlagACK || binary.BigEndian.Uint16(tcp[18:]) != 0 {
		return s, false
	}
	switch hl {
	case 20:
	case 32:
		if binary.BigEndian.Uint32(tcp[20:]) != 0x0101080a {
			return s, false
		}
	default:
		return s, false
	}
	if hl >= len(tcp) {
		return s, false // no payload
	}
	s.Payload = s.L4 + hl
	s.Len = len(tcp) - hl
	s.Seq = binary.BigEndian.Uint32(tcp[4:])
	s.PSH = flags&tcpFlagPSH != 0
	return s, true
}

const tcpFlagACK = 0x10

// FindRun returns the run of segments GRO merges that starts at
// frames[0], appended to segs[:0]: frames[0] parsed (ParseTCP), then each
// frame after it that continues the run (same flow and headers, in
// order, full-sized but for the last, no PSH before the last, within
// MaxCoalesced). Fewer than two segments means there is nothing to
// merge: frames[0] passes as is. The caller passes only frames whose
// checksums it has verified, and reuses segs (cap len(frames)) so that
// nothing is allocated. Merge builds the packet from the run.
func FindRun(segs []Seg, frames [][]byte) []Seg {
	segs = segs[:0]
	if len(frames) < 2 || !sameFlow4(frames[0], frames[1]) {
		return segs
	}
	first := frames[0]
	f, ok := ParseTCP(first)
	if !ok {
		return segs
	}
	segs = append(segs, f)
	size := f.Payload - ethLen + f.Len
	for _, data := range frames[1:] {
		n, ok := ParseTCP(data)
		if !ok || !follows(first, f, segs[len(segs)-1], data, n, size) {
			break
		}
		segs = append(segs, n)
		size += n.Len
	}
	return segs
}

// sameFlow4 is a first look at whether frames a and b can start a run:
// false when both are plain IPv4 (no options) of different addresses or
// ports, which a batch of many flows' requests mostly is, so that such a
// batch costs no parsing here; true otherwise (follows decides).
func sameFlow4(a, b []byte) bool {
	const ports = ethLen + 20 + 4 // the end of the TCP ports after a 20-byte IPv4 header
	if len(a) < ports || len(b) < ports || a[12] != 0x08 || a[13] != 0x00 || b[12] != 0x08 || b[13] != 0x00 ||
		a[ethLen] != 0x45 || b[ethLen] != 0x45 {
		return true
	}
	// Source and destination addresses, then the ports.
	return string(a[ethLen+12:ports]) == string(b[ethLen+12:ports])
}

// follows reports whether segment n of frame nf continues a run
// that starts with segment f of frame ff and ends with segment p, whose
// run so far holds size bytes (IP header, TCP header, payloads): same
// flow and same headers but for the IP length, ID and checksums and the
// TCP sequence number, checksum and PSH; n starts where p ends; p is
// full-sized (as long as f) and has no PSH; n is no longer than f; the
// merged packet fits MaxCoalesced.
func follows(ff []byte, f, p Seg, nf []byte, n Seg, size int) bool {
	if p.PSH || p.Len != f.Len || n.Len > f.Len || n.Payload != f.Payload || n.Seq != p.Seq+uint32(p.Len) ||
		size+n.Len > MaxCoalesced || binary.BigEndian.Uint16(ff[12:]) != binary.BigEndian.Uint16(nf[12:]) {
		return false
	}
	a, b := ff[ethLen:], nf[ethLen:]
	if f.L4 == ethLen+20 {
		// Version, IHL, TOS; flags and fragment offset; TTL, protocol;
		// addresses.
		if a[0] != b[0] || a[1] != b[1] || string(a[6:10]) != string(b[6:10]) || string(a[12:20]) != string(b[12:20]) {
			return false
		}
	} else if string(a[0:4]) != string(b[0:4]) || string(a[6:40]) != string(b[6:40]) {
		// Version, traffic class, flow label; next header, hop limit;
		// addresses.
		return false
	}
	ta, tb := ff[f.L4:f.Payload], nf[n.L4:n.Payload]
	// Ports; acknowledgment number, data offset; flags but PSH; window;
	// urgent pointer; options (the same timestamps).
	return string(ta[0:4]) == string(tb[0:4]) && string(ta[8:13]) == string(tb[8:13]) &&
		(ta[13]^tb[13])&^tcpFlagPSH == 0 && string(ta[14:16]) == string(tb[14:16]) && string(ta[18:]) == string(tb[18:])
}

// MergedLen returns the length of the frame Merge builds from segs.
func MergedLen(segs []Seg) int {
	n := segs[0].Payload
	for _, s := range segs {
		n += s.Len
	}
	return n
}

// Merge writes into dst (at least MergedLen(segs) bytes) one frame holding
// the run segs of frames (as FindRun returned it for frames): the
// first frame's headers with the IP length fields and the IPv4 header
// checksum set for the whole, PSH if the last segment had it, and every
// payload in order. The TCP checksum field is left as the first frame
// had it: the caller has verified every segment and marks the merged
// packet verified. It returns the frame's length.
func Merge(dst []byte, frames [][]byte, segs []Seg) int {
	f := segs[0]
	w := copy(dst[:f.Payload], frames[0][:f.Payload])
	for i, s := range segs {
		w += copy(dst[w:], frames[i][s.Payload:s.Payload+s.Len])
	}
	ip := dst[ethLen:w]
	if f.L4 == ethLen+20 {
		binary.BigEndian.PutUint16(ip[ipv4TotalLen:], uint16(len(ip)))
		ip[ipv4Checksum], ip[ipv4Checksum+1] = 0, 0
		binary.BigEndian.PutUint16(ip[ipv4Checksum:], Checksum(ip[:20]))
	} else {
		binary.BigEndian.PutUint16(ip[ipv6PayLen:], uint16(len(ip)-40))
	}
	if segs[len(segs)-1].PSH {
		dst[f.L4+13] |= tcpFlagPSH
	}
	return w
}
