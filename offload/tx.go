package offload

import (
	"encoding/binary"
	"errors"
	"fmt"
)

// Errors from Tx.
var (
	// ErrMalformed reports a packet whose headers Tx cannot use.
	ErrMalformed = errors.New("malformed packet")
	// ErrFrameTooSmall reports a frame too small for the segment.
	ErrFrameTooSmall = errors.New("frame too small for segment")
)

// MaxHeaderLen is the most header bytes (Ethernet, IP with its options
// or extension headers, TCP or UDP) a packet given to Tx may have.
const MaxHeaderLen = 256

const (
	ethLen       = 14
	tcpFlagFIN   = 0x01
	tcpFlagPSH   = 0x08
	tcpFlagCWR   = 0x80
	tcpChecksum  = 16
	udpChecksum  = 6
	ipv4TotalLen = 2
	ipv4ID       = 4
	ipv4Checksum = 10
	ipv6PayLen   = 4
	ipv6Fragment = 44
)

// Tx writes one outgoing packet into transmit frames: the whole packet
// into one frame, or, for a TCP packet larger than its MSS (netstack's
// GSO packets), one frame per MSS of payload, as a NIC's TSO would cut
// it. Either way the TCP or UDP checksum is computed while the payload is
// copied (CopySum): one pass over the bytes. The packet's own checksum
// field is ignored (netstack leaves it zero or partial when the link
// offloads checksums).
//
// Each segment carries the packet's headers with, for segment i of n:
// the IPv4 total length and ID + i (header checksum updated as RFC 1624
// says) or the IPv6 payload length; the TCP sequence number + i×MSS; FIN
// and PSH only if i = n-1, CWR only if i = 0; the checksums. It is what
// Linux's tcp_gso_segment and inet_gso_segment produce.
//
// A Tx is reused packet after packet; it keeps no reference to the
// packet's bytes after the next Reset. Not safe for concurrent use.
type Tx struct {
	bufs    [][]byte // the packet's bytes, in order (the caller's)
	hdr     [MaxHeaderLen]byte
	hdrLen  int
	l4      int // offset of the TCP/UDP header (0: neither; copy only)
	ipv6    bool
	proto   uint8
	mss     int
	payload int // bytes after the headers
	segs    int

	// The payload cursor: the next payload byte is bufs[cb][co], at
	// payload offset pos.
	cb, co, pos int
}

// malformed is Reset's error: a function of its own, taking ints, so
// that Reset's frame holds no argument lists for fmt (Reset runs on the
// writing goroutine's stack below netstack's send path).
//
//go:noinline
func malformed(format string, args ...int) error {
	a := make([]any, 1, 1+len(args))
	a[0] = ErrMalformed
	for _, v := range args {
		a = append(a, v)
	}
	return fmt.Errorf("%w: "+format, a...)
}

// init sets every field but hdr, which is read only up to hdrLen and
// gathered before that. Assigning a whole Tx literal instead built it
// (hdr is 256 bytes) on the stack: Reset's frame was 840 bytes, on the
// writing goroutine's stack below netstack's send path.
func (t *Tx) init(bufs [][]byte, mss int) {
	t.bufs, t.mss = bufs, mss
	t.hdrLen, t.l4, t.ipv6, t.proto, t.payload, t.segs = 0, 0, false, 0, 0, 0
	t.cb, t.co, t.pos = 0, 0, 0
}

// Reset prepares Tx for a packet whose bytes, from the Ethernet header
// on, are the concatenation of bufs (which must stay unchanged until the
// packet is written). l4 is the offset of its transport header and proto
// the transport protocol (6 TCP, 17 UDP; anything else is copied as is,
// with l4 ignored). mss > 0 asks for TCP segmentation into segments of at
// most mss payload bytes; 0 for one frame.
func (t *Tx) Reset(bufs [][]byte, l4 int, proto uint8, mss int) error {
	t.init(bufs, mss)
	total := 0
	for _, b := range bufs {
		total += len(b)
	}
	if proto != protoTCP && proto != protoUDP {
		if mss > 0 {
			return malformed("segmentation of protocol %d", int(proto))
		}
		t.payload, t.segs = total, 1
		return nil
	}
	if total < ethLen {
		return malformed("%d bytes", total)
	}
	var eth [ethLen]byte
	t.gather(eth[:])
	switch binary.BigEndian.Uint16(eth[12:]) {
	case etherTypeIPv4:
		if l4 < ethLen+20 {
			return malformed("IPv4 transport header at %d", l4)
		}
	case etherTypeIPv6:
		t.ipv6 = true
		if l4 < ethLen+40 {
			return malformed("IPv6 transport header at %d", l4)
		}
	default:
		return malformed("ethertype %#04x", int(binary.BigEndian.Uint16(eth[12:])))
	}
	hl := 8
	if proto == protoTCP {
		hl = 20
	} else if mss > 0 {
		return malformed("UDP segmentation")
	}
	if l4+hl > total || l4+hl > MaxHeaderLen {
		return malformed("headers of %d bytes in a packet of %d", l4+hl, total)
	}
	t.gather(t.hdr[:l4+hl])
	if proto == protoTCP {
		hl = int(t.hdr[l4+12]>>4) * 4
		if hl < 20 || l4+hl > total || l4+hl > MaxHeaderLen {
			return malformed("TCP header of %d bytes", hl)
		}
		t.gather(t.hdr[:l4+hl])
	}
	t.l4, t.proto, t.hdrLen = l4, proto, l4+hl
	if v := t.hdr[ethLen] >> 4; t.ipv6 && v != 6 || !t.ipv6 && v != 4 {
		return malformed("IP version %d", int(v))
	}
	if t.ipv6 && t.hdr[ethLen+6] == ipv6Fragment ||
		!t.ipv6 && binary.BigEndian.Uint16(t.hdr[ethLen+6:])&0x3fff != 0 {
		// A fragment: its checksum, if any, covers the whole datagram
		// and was computed before fragmentation.
		if mss > 0 {
			return malformed("segmentation of a fragment")
		}
		t.init(bufs, 0)
		t.payload, t.segs = total, 1
		return nil
	}
	t.payload = total - t.hdrLen
	if t.payload > 0xffff {
		return malformed("%d bytes of payload", t.payload)
	}
	t.segs = 1
	if mss > 0 && t.payload > mss {
		t.segs = (t.payload + mss - 1) / mss
	}
	t.seek(0)
	return nil
}

// gather copies the packet's first len(dst) bytes into dst.
func (t *Tx) gather(dst []byte) {
	w := 0
	for _, b := range t.bufs {
		if w == len(dst) {
			break
		}
		w += copy(dst[w:], b)
	}
}

// Segments returns how many frames the packet takes.
func (t *Tx) Segments() int { return t.segs }

// SegmentLen returns the length of segment i's frame.
func (t *Tx) SegmentLen(i int) int {
	if t.l4 == 0 {
		return t.payload
	}
	return t.hdrLen + t.segPayload(i)
}

func (t *Tx) segPayload(i int) int {
	if t.segs == 1 {
		return t.payload
	}
	return min(t.mss, t.payload-i*t.mss)
}

// seek moves the payload cursor to payload offset off.
func (t *Tx) seek(off int) {
	skip := t.hdrLen + off // from the start of the packet
	if t.l4 == 0 {
		skip = off
	}
	t.cb, t.co, t.pos = 0, 0, off
	for t.cb < len(t.bufs) && skip >= len(t.bufs[t.cb]) {
		skip -= len(t.bufs[t.cb])
		t.cb++
	}
	t.co = skip
}

// copyPayload copies n payload bytes from the cursor into dst, returning
// their accumulator (dst starts at an even offset of the checksummed
// data).
func (t *Tx) copyPayload(dst []byte, n int) uint64 {
	var acc uint64
	w := 0
	for w < n && t.cb < len(t.bufs) {
		src := t.bufs[t.cb][t.co:]
		if len(src) > n-w {
			src = src[:n-w]
		}
		var c int
		if t.l4 == 0 {
			c = copy(dst[w:], src) // no checksum to compute
		} else {
			var s uint64
			c, s = CopySum(dst[w:], src, 0)
			if w&1 != 0 {
				s = SumOdd(s)
			}
			acc = add(acc, s)
		}
		w += c
		t.co += c
		if t.co == len(t.bufs[t.cb]) {
			t.cb, t.co = t.cb+1, 0
		}
	}
	t.pos += w
	return acc
}

// WriteSegment writes segment i (0 ≤ i < Segments()) into frame and
// returns its length. Segments written in order cost no search.
func (t *Tx) WriteSegment(frame []byte, i int) (int, error) {
	if i < 0 || i >= t.segs {
		return 0, fmt.Errorf("%w: segment %d of %d", ErrMalformed, i, t.segs)
	}
	n := t.SegmentLen(i)
	if n > len(frame) {
		return 0, fmt.Errorf("%w: %d bytes, frame of %d", ErrFrameTooSmall, n, len(frame))
	}
	p := t.segPayload(i)
	off := i * t.mss
	if t.segs == 1 {
		off = 0
	}
	if t.pos != off {
		t.seek(off)
	}
	if t.l4 == 0 {
		t.copyPayload(frame, p)
		return n, nil
	}
	h := frame[:t.hdrLen]
	copy(h, t.hdr[:t.hdrLen])
	l4len := t.hdrLen - t.l4 + p
	if t.segs > 1 {
		ip := h[ethLen:]
		if t.ipv6 {
			binary.BigEndian.PutUint16(ip[ipv6PayLen:], uint16(t.hdrLen-ethLen-40+p))
		} else {
			oldLen, oldID := binary.BigEndian.Uint16(ip[ipv4TotalLen:]), binary.BigEndian.Uint16(ip[ipv4ID:])
			newLen, newID := uint16(t.hdrLen-ethLen+p), oldID+uint16(i)
			binary.BigEndian.PutUint16(ip[ipv4TotalLen:], newLen)
			binary.BigEndian.PutUint16(ip[ipv4ID:], newID)
			sum := binary.BigEndian.Uint16(ip[ipv4Checksum:])
			binary.BigEndian.PutUint16(ip[ipv4Checksum:], Update16(Update16(sum, oldLen, newLen), oldID, newID))
		}
		tcp := h[t.l4:]
		seq := binary.BigEndian.Uint32(tcp[4:])
		binary.BigEndian.PutUint32(tcp[4:], seq+uint32(off))
		if i != t.segs-1 {
			tcp[13] &^= tcpFlagFIN | tcpFlagPSH
		}
		if i != 0 {
			tcp[13] &^= tcpFlagCWR
		}
	}
	sumOff := tcpChecksum
	if t.proto == protoUDP {
		sumOff = udpChecksum
	}
	l4h := h[t.l4:]
	l4h[sumOff], l4h[sumOff+1] = 0, 0
	acc := t.copyPayload(frame[t.hdrLen:], p)
	if len(l4h)&1 != 0 {
		acc = SumOdd(acc) // cannot happen for TCP and UDP; kept exact
	}
	ip := h[ethLen:]
	if t.ipv6 {
		acc = add(acc, PseudoHeader6(ip[8:24], ip[24:40], t.proto, l4len))
	} else {
		acc = add(acc, PseudoHeader4(ip[12:16], ip[16:20], t.proto, l4len))
	}
	sum := ^Fold(Sum(l4h, acc))
	if sum == 0 && t.proto == protoUDP {
		sum = 0xffff // RFC 768: a computed zero is sent as all ones
	}
	binary.BigEndian.PutUint16(l4h[sumOff:], sum)
	return n, nil
}
