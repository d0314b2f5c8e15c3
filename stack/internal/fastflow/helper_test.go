package fastflow

import (
	"encoding/binary"
	"testing"

	"github.com/ustack-dev/ustack/internal/third_party/gvisor/pkg/tcpip"
	"github.com/ustack-dev/ustack/internal/third_party/gvisor/pkg/tcpip/checksum"
	"github.com/ustack-dev/ustack/internal/third_party/gvisor/pkg/tcpip/header"
)

var (
	macA  = [6]byte{2, 0, 0, 0, 0, 1}
	macB  = [6]byte{2, 0, 0, 0, 0, 2}
	ipA   = [4]byte{198, 18, 0, 1}
	ipB   = [4]byte{198, 18, 0, 2}
	portA = uint16(40000)
	portB = uint16(7)
)

// end is one side of a connection in a test: a flow in a slab of one.
type end struct {
	slab *Slab
	id   uint32
	f    *Flow
	ring []byte
}

// states returns the two sides of an established connection as a
// handshake would leave them: a (the client) started its sequence at
// issA, b (the server) at issB, timestamps on, window scale 7.
func states(issA, issB uint32) (a, b State) {
	a = State{
		SrcMAC: macA, DstMAC: macB, SrcIP: ipA, DstIP: ipB, SrcPort: portA, DstPort: portB, TTL: 64,
		SndUna: issA + 1, SndNxt: issA + 1, SndWnd: 64 << 10, SndWL1: issB + 1, SndWL2: issA + 1, SndShift: 7,
		MSS: 1448, Cwnd: 10 * 1448,
		RcvNxt: issB + 1, RcvEdge: issB + 1 + 64<<10, RcvSpace: 64 << 10, RcvShift: 7,
		TS: true, TSRecent: 1000, TSOffset: 5000, LastAckSent: issB + 1,
	}
	b = State{
		SrcMAC: macB, DstMAC: macA, SrcIP: ipB, DstIP: ipA, SrcPort: portB, DstPort: portA, TTL: 64,
		SndUna: issB + 1, SndNxt: issB + 1, SndWnd: 64 << 10, SndWL1: issA + 1, SndWL2: issB + 1, SndShift: 7,
		MSS: 1448, Cwnd: 10 * 1448,
		RcvNxt: issA + 1, RcvEdge: issA + 1 + 64<<10, RcvSpace: 64 << 10, RcvShift: 7,
		TS: true, TSRecent: 5000, TSOffset: 1000, LastAckSent: issA + 1,
	}
	return a, b
}

func newEnd(tb testing.TB, st State) *end {
	tb.Helper()
	s, err := NewSlab(SlabConfig{Flows: 1, RingSize: 4096})
	if err != nil {
		tb.Fatal(err)
	}
	id, err := s.Alloc()
	if err != nil {
		tb.Fatal(err)
	}
	r, err := s.AllocRing()
	if err != nil {
		tb.Fatal(err)
	}
	e := &end{slab: s, id: id, f: s.Flow(id), ring: s.Ring(r)}
	if err := e.f.Init(&st); err != nil {
		tb.Fatal(err)
	}
	return e
}

func newPair(tb testing.TB, issA, issB uint32) (a, b *end) {
	sa, sb := states(issA, issB)
	return newEnd(tb, sa), newEnd(tb, sb)
}

// send writes p on e and cuts it into one frame.
func (e *end) send(tb testing.TB, p []byte, clk Clock) []byte {
	tb.Helper()
	if _, r := e.f.Write(e.ring, p); r != OK {
		tb.Fatalf("write: %v", r)
	}
	fr := make([]byte, 2048)
	n, r := e.f.Cut(fr, e.ring, clk)
	if r != OK || n == 0 {
		tb.Fatalf("cut: %d bytes, %v", n, r)
	}
	return fr[:n]
}

// seg describes a segment to build with gVisor's header package, an
// encoder independent of the one under test.
type seg struct {
	seq, ack     uint32
	flags        header.TCPFlags
	wnd          uint16
	ts           bool // the NOP NOP TS layout
	tsVal, tsEcr uint32
	opts         []byte // other options, replacing the TS ones when set
	payload      []byte
	ipOptions    bool
}

// build encodes s from b's address to a's, as a frame a receives.
func (s seg) build() []byte {
	var opts []byte
	switch {
	case s.opts != nil:
		opts = s.opts
	case s.ts:
		opts = make([]byte, 12)
		opts[0], opts[1] = 1, 1
		header.EncodeTSOption(s.tsVal, s.tsEcr, opts[2:])
	}
	ihl := header.IPv4MinimumSize
	if s.ipOptions {
		ihl += 4
	}
	tl := ihl + header.TCPMinimumSize + len(opts) + len(s.payload)
	fr := make([]byte, header.EthernetMinimumSize+tl)
	header.Ethernet(fr).Encode(&header.EthernetFields{
		SrcAddr: tcpip.LinkAddress(macB[:]), DstAddr: tcpip.LinkAddress(macA[:]), Type: header.IPv4ProtocolNumber,
	})
	ip := header.IPv4(fr[header.EthernetMinimumSize:])
	ip.Encode(&header.IPv4Fields{
		TotalLength: uint16(tl), TTL: 64, Protocol: uint8(header.TCPProtocolNumber), Flags: header.IPv4FlagDontFragment,
		SrcAddr: tcpip.AddrFrom4(ipB), DstAddr: tcpip.AddrFrom4(ipA),
	})
	if s.ipOptions {
		ip[0] = 0x46
		ip[20] = 1 // NOPs
		ip[21], ip[22], ip[23] = 1, 1, 0
	}
	ip.SetChecksum(^ip.CalculateChecksum())
	tcp := header.TCP(fr[header.EthernetMinimumSize+ihl:])
	tcp.Encode(&header.TCPFields{
		SrcPort: portB, DstPort: portA, SeqNum: s.seq, AckNum: s.ack,
		DataOffset: uint8(header.TCPMinimumSize + len(opts)), Flags: s.flags, WindowSize: s.wnd,
	})
	copy(tcp[header.TCPMinimumSize:], opts)
	copy(tcp[header.TCPMinimumSize+len(opts):], s.payload)
	xsum := header.PseudoHeaderChecksum(header.TCPProtocolNumber, tcpip.AddrFrom4(ipB), tcpip.AddrFrom4(ipA), uint16(len(tcp)))
	xsum = checksum.Checksum(s.payload, xsum)
	tcp.SetChecksum(^tcp.CalculateChecksum(xsum))
	return fr
}

// parsed is a frame as gVisor's header package reads it.
type parsed struct {
	ip      header.IPv4
	tcp     header.TCP
	opts    header.TCPOptions
	payload []byte
}

// parse reads a frame Cut wrote with gVisor's header package and fails
// tb unless both checksums and every length agree.
func parse(tb testing.TB, fr []byte) parsed {
	tb.Helper()
	eth := header.Ethernet(fr)
	if eth.Type() != header.IPv4ProtocolNumber {
		tb.Fatalf("ethertype %#x", eth.Type())
	}
	ip := header.IPv4(fr[header.EthernetMinimumSize:])
	if !ip.IsValid(len(fr) - header.EthernetMinimumSize) {
		tb.Fatalf("invalid IPv4 header % x", []byte(ip[:20]))
	}
	if !ip.IsChecksumValid() {
		tb.Fatalf("IPv4 checksum %#04x invalid", ip.Checksum())
	}
	if int(ip.TotalLength()) != len(fr)-header.EthernetMinimumSize {
		tb.Fatalf("IPv4 total length %d, frame holds %d", ip.TotalLength(), len(fr)-header.EthernetMinimumSize)
	}
	tcp := header.TCP(ip.Payload())
	payload := tcp[tcp.DataOffset():]
	if !tcp.IsChecksumValid(ip.SourceAddress(), ip.DestinationAddress(), checksum.Checksum(payload, 0), uint16(len(payload))) {
		tb.Fatalf("TCP checksum %#04x invalid (%d bytes of payload)", tcp.Checksum(), len(payload))
	}
	return parsed{ip: ip, tcp: tcp, opts: tcp.ParsedOptions(), payload: payload}
}

// be32 reads a big-endian word, for assertions on raw frames.
func be32(b []byte) uint32 { return binary.BigEndian.Uint32(b) }
