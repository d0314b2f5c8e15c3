package stack

import (
	"bytes"
	"fmt"
	"net"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/ustack-dev/ustack/internal/third_party/gvisor/pkg/tcpip"
	"github.com/ustack-dev/ustack/internal/third_party/gvisor/pkg/tcpip/checksum"
	"github.com/ustack-dev/ustack/internal/third_party/gvisor/pkg/tcpip/header"
	"github.com/ustack-dev/ustack/internal/third_party/gvisor/pkg/tcpip/network/ipv4"
	"github.com/ustack-dev/ustack/internal/third_party/gvisor/pkg/tcpip/network/ipv6"
	"github.com/ustack-dev/ustack/internal/third_party/gvisor/pkg/tcpip/seqnum"
	"github.com/ustack-dev/ustack/stack/internal/link"
	"github.com/ustack-dev/ustack/xsk"
)

// A scripted peer plays the remote TCP against one Stack over the memory
// wire, in the spirit of packetdrill: the test injects segments it writes
// byte for byte and asserts on the segments ustack sends back. Sequence and
// acknowledgement numbers in a seg are relative to the connection: the
// peer's own numbers to its ISN, ustack's numbers to the ISN ustack chose
// (learned from its SYN or SYN-ACK), so the SYN is 0 and the first data
// byte 1 on both sides.

// scriptWait bounds every wait for a segment from ustack. Tests assert on
// order and content, never on timing; the bound only turns a missing
// segment into a failure instead of a hang.
const scriptWait = 3 * time.Second

// zeroWin in seg.Win means a window field of 0 (0 itself means "the
// peer's usual window" when sending and "don't care" when expecting).
const zeroWin = -1

// peerISN is the peer's initial sequence number: close to the wrap, so
// every test's sequence arithmetic crosses 2^32 after a few KiB.
const peerISN seqnum.Value = 0xffff_f000

// seg is one TCP segment as a script writes or reads it.
type seg struct {
	// Flags are letters of "SAFRPU" (SYN, ACK, FIN, RST, PSH, URG) in any
	// order. Expect compares them exactly.
	Flags string
	// Seq is relative to the sender's ISN. Ack is relative to the
	// receiver's ISN and only meaningful (and compared) with flag A.
	Seq, Ack uint32
	// Win is the window field as on the wire (unscaled). Sending: 0 sends
	// the peer's usual window, zeroWin sends 0. Expecting: 0 does not
	// check, zeroWin wants 0, anything else wants exactly that.
	Win int
	// Payload is the segment's data; Expect wants exactly it (nil: none).
	Payload []byte
	// SACK blocks, relative to the ISN of the side whose data they cover.
	// Expect wants exactly them (nil: no SACK option).
	SACK [][2]uint32
	// TSval and TSecr are the timestamps option (RFC 7323) on a
	// connection that uses it. Sending: 0 has the peer fill them in (its
	// own clock; the last TSval ustack sent). Expect does not compare them.
	TSval, TSecr uint32
	// TS is set on segments from ustack that carry the timestamps option.
	TS bool
	// IPOptions (sending, IPv4) puts a 4-byte IP option (NOPs, then End
	// of Option List) in the segment's IP header.
	IPOptions bool

	// Parsed from segments ustack sends: the SYN options (MSS 0 and WS
	// -1 when absent).
	MSS           uint16
	WS            int
	SACKPermitted bool
}

func (s seg) String() string {
	var b strings.Builder
	// Signed, so that numbers before the ISN read as such.
	fmt.Fprintf(&b, "[%s] seq %d", s.Flags, int32(s.Seq))
	if strings.Contains(s.Flags, "A") {
		fmt.Fprintf(&b, " ack %d", int32(s.Ack))
	}
	switch {
	case s.Win == zeroWin:
		b.WriteString(" win 0")
	case s.Win != 0:
		fmt.Fprintf(&b, " win %d", s.Win)
	}
	if len(s.Payload) > 0 {
		fmt.Fprintf(&b, " len %d", len(s.Payload))
	}
	for _, blk := range s.SACK {
		fmt.Fprintf(&b, " sack %d:%d", blk[0], blk[1])
	}
	if s.MSS != 0 {
		fmt.Fprintf(&b, " mss %d", s.MSS)
	}
	if s.WS >= 0 && strings.Contains(s.Flags, "S") {
		fmt.Fprintf(&b, " wscale %d", s.WS)
	}
	if s.SACKPermitted {
		b.WriteString(" sackOK")
	}
	if s.TS || s.TSval != 0 {
		fmt.Fprintf(&b, " ts %d/%d", s.TSval, s.TSecr)
	}
	return b.String()
}

const flagLetters = "FSRPAU" // in header.TCPFlags bit order

func parseFlags(t testing.TB, s string) header.TCPFlags {
	t.Helper()
	var f header.TCPFlags
	for _, c := range s {
		i := strings.IndexRune(flagLetters, c)
		if i < 0 {
			t.Fatalf("flag %q in %q is not one of %s", c, s, flagLetters)
		}
		f |= 1 << i
	}
	return f
}

func formatFlags(f header.TCPFlags) string {
	var b []byte
	for _, c := range "SFRPAU" { // tcpdump's order
		if f&(1<<strings.IndexRune(flagLetters, c)) != 0 {
			b = append(b, byte(c))
		}
	}
	return string(b)
}

// scriptOptions configures a scripted peer; the zero value is an IPv4
// peer offering MSS 1460 and SACK, without window scaling (so ustack's
// window fields are plain byte counts) or timestamps.
type scriptOptions struct {
	// IPv6 runs the connection over IPv6 instead of IPv4.
	IPv6 bool
	// MSS the peer offers in its SYN (default 1460).
	MSS uint16
	// WScale, when nonzero, is the window scale shift the peer offers.
	WScale int
	// NoSACK leaves out SACK-permitted from the peer's SYN.
	NoSACK bool
	// Timestamps has the peer offer the timestamps option and, if ustack
	// agrees, put it on every segment.
	Timestamps bool
	// Config, when set, adjusts the Stack's configuration.
	Config func(*Config)
	// HandshakeRTT delays the peer's ACK of ustack's SYN-ACK in Connect
	// (its SYN-ACK in Accept), so that ustack's first RTT sample, its
	// smoothed RTT and so its probe timeout (2·SRTT + 2 ms) are at least
	// that long. Zero means defaultHandshakeRTT, well above a busy
	// machine's scheduling delays: over a memory wire a true sample is
	// microseconds, and a script that takes a few milliseconds between
	// ustack's segment and the peer's ACK would otherwise see a tail
	// loss probe it did not ask for. Negative means no delay.
	HandshakeRTT time.Duration
}

// scriptPeer is the remote end of one TCP connection to a Stack.
type scriptPeer struct {
	t    testing.TB
	s    *Stack
	wire *memEnd // the peer's end of the wire
	o    scriptOptions

	peerMAC, stackMAC tcpip.LinkAddress
	local             netip.AddrPort // the peer's address
	remote            netip.AddrPort // ustack's address; port 0 until learned

	irs    seqnum.Value // ustack's ISN
	synced bool         // irs is known
	// stackSyn is ustack's SYN or SYN-ACK, with its options.
	stackSyn seg
	// The peer's timestamps clock and the last TSval ustack sent.
	tsClock, tsRecent uint32

	rx      [link.BatchSize]xsk.Desc
	pending []seg // received from ustack, not yet expected
	// frame, when set, sees every frame ustack sends, before parsing.
	frame func([]byte)
}

// newScriptPeer builds a Stack on one end of a memory wire and a peer on
// the other. ustack has the address 198.18.1.1 (2001:2:0:1::1), the peer
// 198.18.1.2 (2001:2:0:1::2) port 40000, each in the other's neighbor
// table.
func newScriptPeer(t testing.TB, o scriptOptions) *scriptPeer {
	t.Helper()
	if o.MSS == 0 {
		o.MSS = 1460
	}
	stackEnd, peerEnd, err := newMemWire(256, 2048)
	if err != nil {
		t.Fatal(err)
	}
	cfg := Config{Interface: "mem", Addrs: []netip.Prefix{memA4, memA6}}
	if o.Config != nil {
		o.Config(&cfg)
	}
	cfg.setDefaults()
	if err := cfg.validate(); err != nil {
		t.Fatal(err)
	}
	p := &scriptPeer{
		t:        t,
		wire:     peerEnd,
		o:        o,
		stackMAC: tcpip.LinkAddress([]byte{2, 0, 0, 0, 3, 1}),
		peerMAC:  tcpip.LinkAddress([]byte{2, 0, 0, 0, 3, 2}),
		local:    netip.AddrPortFrom(memB4.Addr(), 40000),
		remote:   netip.AddrPortFrom(memA4.Addr(), 0),
	}
	proto := ipv4.ProtocolNumber
	if o.IPv6 {
		p.local = netip.AddrPortFrom(memB6.Addr(), 40000)
		p.remote = netip.AddrPortFrom(memA6.Addr(), 0)
		proto = ipv6.ProtocolNumber
	}
	s, err := newStack(cfg, []frameIO{stackEnd}, linkInfo{mtu: 1500, mac: net.HardwareAddr(p.stackMAC)}, &fakeOwner{ports: map[portKey]bool{}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	p.s = s
	// A static neighbor rather than answering ARP and NDP: the script
	// then sees only the segments of its connection.
	if err := s.ns.AddStaticNeighbor(nicID, proto, tcpip.AddrFromSlice(p.local.Addr().AsSlice()), p.peerMAC); err != nil {
		t.Fatalf("add static neighbor: %v", err)
	}
	return p
}

// listen opens a listener on ustack's address, port 80.
func (p *scriptPeer) listen() net.Listener {
	p.t.Helper()
	network := "tcp4"
	if p.o.IPv6 {
		network = "tcp6"
	}
	ln, err := p.s.Listen(network, netip.AddrPortFrom(p.remote.Addr(), 80).String())
	if err != nil {
		p.t.Fatal(err)
	}
	p.t.Cleanup(func() { ln.Close() })
	return ln
}

// Connect opens a connection to a new listener on ustack as the client:
// SYN, SYN-ACK, ACK. It returns the connection ustack accepted.
func (p *scriptPeer) Connect() net.Conn {
	p.t.Helper()
	ln := p.listen()
	accepted := p.start(ln.Accept)
	p.remote = netip.AddrPortFrom(p.remote.Addr(), 80)
	p.Send(seg{Flags: "S", Seq: 0})
	p.Expect(seg{Flags: "SA", Seq: 0, Ack: 1})
	p.handshakeDelay()
	p.Send(seg{Flags: "A", Seq: 1, Ack: 1})
	return accepted("ustack completed no connection after the handshake")
}

// defaultHandshakeRTT is scriptOptions.HandshakeRTT's zero value.
const defaultHandshakeRTT = 50 * time.Millisecond

// handshakeDelay holds the peer's answer in a handshake for HandshakeRTT.
func (p *scriptPeer) handshakeDelay() {
	switch d := p.o.HandshakeRTT; {
	case d == 0:
		time.Sleep(defaultHandshakeRTT)
	case d > 0:
		time.Sleep(d)
	}
}

// start runs open (ustack's Accept or Dial) while the script drives the
// handshake, and returns a function that waits for its connection,
// failing the test with late if it errs or takes longer than scriptWait.
func (p *scriptPeer) start(open func() (net.Conn, error)) func(late string) net.Conn {
	type result struct {
		c   net.Conn
		err error
	}
	done := make(chan result, 1)
	go func() {
		c, err := open()
		done <- result{c, err}
	}()
	return func(late string) net.Conn {
		p.t.Helper()
		select {
		case r := <-done:
			if r.err != nil {
				p.t.Fatal(r.err)
			}
			p.t.Cleanup(func() { r.c.Close() })
			return r.c
		case <-time.After(scriptWait):
			p.t.Fatal(late)
			return nil
		}
	}
}

// Accept has ustack dial the peer and answers as the server: SYN,
// SYN-ACK, ACK. It returns ustack's connection.
func (p *scriptPeer) Accept() net.Conn {
	p.t.Helper()
	network := "tcp4"
	if p.o.IPv6 {
		network = "tcp6"
	}
	dialed := p.start(func() (net.Conn, error) { return p.s.Dial(network, p.local.String()) })
	p.Expect(seg{Flags: "S", Seq: 0})
	p.handshakeDelay()
	p.Send(seg{Flags: "SA", Seq: 0, Ack: 1})
	p.Expect(seg{Flags: "A", Seq: 1, Ack: 1})
	return dialed("dial did not return after the handshake")
}

// Send injects s into ustack. A SYN carries the options scriptOptions
// describes; any seg carries the SACK blocks it lists.
func (p *scriptPeer) Send(s seg) {
	p.t.Helper()
	p.SendBatch(s)
}

// SendBatch injects segs into ustack at once: its worker receives them in
// one batch, as it does a burst that waited on the RX ring.
func (p *scriptPeer) SendBatch(segs ...seg) {
	p.t.Helper()
	for _, s := range segs {
		p.enqueue(s)
	}
	p.wire.Kick()
}

// enqueue writes s onto the wire's TX ring; the next Kick sends it.
func (p *scriptPeer) enqueue(s seg) {
	p.t.Helper()
	flags := parseFlags(p.t, s.Flags)
	var opts [40]byte
	n := 0
	if flags.Contains(header.TCPFlagSyn) {
		n += header.EncodeMSSOption(uint32(p.o.MSS), opts[n:])
		if p.o.WScale != 0 {
			n += header.EncodeNOP(opts[n:])
			n += header.EncodeWSOption(p.o.WScale, opts[n:])
		}
		if !p.o.NoSACK {
			n += header.EncodeNOP(opts[n:])
			n += header.EncodeNOP(opts[n:])
			n += header.EncodeSACKPermittedOption(opts[n:])
		}
	}
	if p.o.Timestamps && (flags.Contains(header.TCPFlagSyn) || p.stackSyn.TS) {
		if s.TSval == 0 {
			p.tsClock++
			s.TSval = 1000 + p.tsClock
		}
		if s.TSecr == 0 {
			s.TSecr = p.tsRecent
		}
		n += header.EncodeNOP(opts[n:])
		n += header.EncodeNOP(opts[n:])
		n += header.EncodeTSOption(s.TSval, s.TSecr, opts[n:])
	}
	if len(s.SACK) > 0 {
		blocks := make([]header.SACKBlock, len(s.SACK))
		for i, b := range s.SACK {
			blocks[i] = header.SACKBlock{Start: p.irs.Add(seqnum.Size(b[0])), End: p.irs.Add(seqnum.Size(b[1]))}
		}
		n += header.EncodeNOP(opts[n:])
		n += header.EncodeNOP(opts[n:])
		n += header.EncodeSACKBlocks(blocks, opts[n:])
	}
	n += header.AddTCPOptionPadding(opts[:], n)

	win := uint16(65535)
	switch {
	case s.Win == zeroWin:
		win = 0
	case s.Win != 0:
		win = uint16(s.Win)
	}
	var ack uint32
	if flags.Contains(header.TCPFlagAck) {
		ack = uint32(p.irs.Add(seqnum.Size(s.Ack)))
	}

	addr, ok := p.wire.Alloc()
	if !ok {
		p.t.Fatal("scripted peer: no free frame on the wire")
	}
	frame := p.wire.Frame(addr)
	ipLen := header.IPv4MinimumSize
	ethType := header.IPv4ProtocolNumber
	var ipOpts header.IPv4OptionsSerializer
	switch {
	case p.o.IPv6:
		ipLen, ethType = header.IPv6MinimumSize, header.IPv6ProtocolNumber
	case s.IPOptions:
		ipLen += 4
		ipOpts = header.IPv4OptionsSerializer{&header.IPv4SerializableNOPOption{}, &header.IPv4SerializableNOPOption{}, &header.IPv4SerializableNOPOption{}, &header.IPv4SerializableListEndOption{}}
	}
	tcpLen := header.TCPMinimumSize + n + len(s.Payload)
	total := header.EthernetMinimumSize + ipLen + tcpLen
	if total > len(frame) {
		p.t.Fatalf("scripted peer: a %d-byte frame does not fit the wire's %d", total, len(frame))
	}
	frame = frame[:total]
	header.Ethernet(frame).Encode(&header.EthernetFields{SrcAddr: p.peerMAC, DstAddr: p.stackMAC, Type: ethType})
	src, dst := tcpip.AddrFromSlice(p.local.Addr().AsSlice()), tcpip.AddrFromSlice(p.remote.Addr().AsSlice())
	ip := frame[header.EthernetMinimumSize:]
	if p.o.IPv6 {
		header.IPv6(ip).Encode(&header.IPv6Fields{
			PayloadLength: uint16(tcpLen), TransportProtocol: header.TCPProtocolNumber,
			HopLimit: 64, SrcAddr: src, DstAddr: dst,
		})
	} else {
		h := header.IPv4(ip)
		h.Encode(&header.IPv4Fields{
			TotalLength: uint16(ipLen + tcpLen), TTL: 64, Protocol: uint8(header.TCPProtocolNumber),
			SrcAddr: src, DstAddr: dst, Options: ipOpts,
		})
		h.SetChecksum(^h.CalculateChecksum())
	}
	tcp := header.TCP(ip[ipLen:])
	tcp.Encode(&header.TCPFields{
		SrcPort: p.local.Port(), DstPort: p.remote.Port(),
		SeqNum: uint32(peerISN.Add(seqnum.Size(s.Seq))), AckNum: ack,
		DataOffset: uint8(header.TCPMinimumSize + n), Flags: flags, WindowSize: win,
	})
	copy(tcp[header.TCPMinimumSize:], opts[:n])
	copy(tcp[header.TCPMinimumSize+n:], s.Payload)
	xsum := header.PseudoHeaderChecksum(header.TCPProtocolNumber, src, dst, uint16(tcpLen))
	tcp.SetChecksum(^checksum.Checksum(tcp, xsum))

	logged := s
	logged.WS = -1
	if flags.Contains(header.TCPFlagSyn) {
		logged.MSS, logged.SACKPermitted = p.o.MSS, !p.o.NoSACK
		if p.o.WScale != 0 {
			logged.WS = p.o.WScale
		}
	}
	p.t.Logf("peer  > %v", logged)
	if p.wire.Enqueue([]xsk.Desc{{Addr: addr, Len: uint32(total)}}) != 1 {
		p.t.Fatal("scripted peer: the wire's ring is full")
	}
}

// next returns the next segment ustack sends on the connection, waiting up
// to d; ok is false if none came.
func (p *scriptPeer) next(d time.Duration) (s seg, ok bool) {
	p.t.Helper()
	deadline := time.Now().Add(d)
	for len(p.pending) == 0 {
		n := p.wire.Receive(p.rx[:])
		for i := 0; i < n; i++ {
			if p.frame != nil {
				p.frame(p.wire.Data(p.rx[i]))
			}
			if s, ok := p.parse(p.wire.Data(p.rx[i])); ok {
				p.pending = append(p.pending, s)
			}
		}
		p.wire.Recycle(p.rx[:n])
		if n > 0 {
			continue
		}
		left := time.Until(deadline)
		if left <= 0 {
			return seg{}, false
		}
		p.wire.Wait(left)
	}
	s = p.pending[0]
	p.pending = p.pending[1:]
	p.t.Logf("ustack> %v", s)
	return s, true
}

// parse decodes a frame ustack sent, keeping only TCP segments of the
// connection (or, before it knows ustack's port, a SYN to the peer's). A
// malformed frame or a bad checksum fails the test.
func (p *scriptPeer) parse(frame []byte) (seg, bool) {
	p.t.Helper()
	if len(frame) < header.EthernetMinimumSize {
		p.t.Fatalf("ustack sent a %d-byte frame", len(frame))
	}
	eth := header.Ethernet(frame)
	var src, dst tcpip.Address
	var l4 []byte
	switch eth.Type() {
	case header.IPv4ProtocolNumber:
		ip := header.IPv4(frame[header.EthernetMinimumSize:])
		if !ip.IsValid(len(ip)) || ip.Protocol() != uint8(header.TCPProtocolNumber) {
			return seg{}, false
		}
		if ip.CalculateChecksum() != 0xffff {
			p.t.Fatalf("ustack sent an IPv4 header with a bad checksum")
		}
		src, dst, l4 = ip.SourceAddress(), ip.DestinationAddress(), ip.Payload()
	case header.IPv6ProtocolNumber:
		ip := header.IPv6(frame[header.EthernetMinimumSize:])
		if !ip.IsValid(len(ip)) || ip.TransportProtocol() != header.TCPProtocolNumber {
			return seg{}, false
		}
		src, dst, l4 = ip.SourceAddress(), ip.DestinationAddress(), ip.Payload()
	default:
		return seg{}, false
	}
	if src.String() != p.remote.Addr().String() || dst.String() != p.local.Addr().String() {
		return seg{}, false
	}
	if len(l4) < header.TCPMinimumSize {
		p.t.Fatalf("ustack sent a %d-byte TCP segment", len(l4))
	}
	tcp := header.TCP(l4)
	if int(tcp.DataOffset()) < header.TCPMinimumSize || int(tcp.DataOffset()) > len(tcp) {
		p.t.Fatalf("ustack sent a TCP header with data offset %d in %d bytes", tcp.DataOffset(), len(tcp))
	}
	if tcp.DestinationPort() != p.local.Port() {
		return seg{}, false
	}
	flags := tcp.Flags()
	if p.remote.Port() == 0 && flags.Contains(header.TCPFlagSyn) {
		p.remote = netip.AddrPortFrom(p.remote.Addr(), tcp.SourcePort())
	}
	if tcp.SourcePort() != p.remote.Port() {
		return seg{}, false
	}
	xsum := header.PseudoHeaderChecksum(header.TCPProtocolNumber, src, dst, uint16(len(tcp)))
	if checksum.Checksum(tcp, xsum) != 0xffff {
		p.t.Fatalf("ustack sent a TCP segment with a bad checksum")
	}
	if flags.Contains(header.TCPFlagSyn) && !p.synced {
		p.irs, p.synced = seqnum.Value(tcp.SequenceNumber()), true
	}
	s := seg{
		Flags: formatFlags(flags),
		Seq:   uint32(seqnum.Value(tcp.SequenceNumber()) - p.irs),
		Win:   int(tcp.WindowSize()),
		WS:    -1,
	}
	if s.Win == 0 {
		s.Win = zeroWin
	}
	if flags.Contains(header.TCPFlagAck) {
		s.Ack = uint32(seqnum.Value(tcp.AckNumber()) - peerISN)
	}
	if pl := tcp.Payload(); len(pl) > 0 {
		s.Payload = append([]byte(nil), pl...)
	}
	if o := header.ParseTCPOptions(tcp.Options()); o.TS {
		s.TS, s.TSval, s.TSecr = true, o.TSVal, o.TSEcr
		p.tsRecent = o.TSVal
	}
	if flags.Contains(header.TCPFlagSyn) {
		o := header.ParseSynOptions(tcp.Options(), flags.Contains(header.TCPFlagAck))
		s.MSS, s.WS, s.SACKPermitted = o.MSS, o.WS, o.SACKPermitted
		p.stackSyn = s
	} else {
		for _, b := range tcp.ParsedOptions().SACKBlocks {
			s.SACK = append(s.SACK, [2]uint32{uint32(b.Start - peerISN), uint32(b.End - peerISN)})
		}
	}
	return s, true
}

// Expect waits for ustack's next segment on the connection and fails the
// test unless it matches want (see seg for what is compared). It returns
// the segment.
func (p *scriptPeer) Expect(want seg) seg {
	p.t.Helper()
	got, ok := p.next(scriptWait)
	if !ok {
		p.t.Fatalf("expected %v from ustack, got nothing in %v", want, scriptWait)
	}
	if msg := mismatch(p.t, want, got); msg != "" {
		p.t.Fatalf("expected %v from ustack, got %v: %s", want, got, msg)
	}
	return got
}

// ExpectNothing fails the test if ustack sends a segment on the connection
// within d.
func (p *scriptPeer) ExpectNothing(d time.Duration) {
	p.t.Helper()
	if got, ok := p.next(d); ok {
		p.t.Fatalf("expected nothing from ustack, got %v", got)
	}
}

func mismatch(t testing.TB, want, got seg) string {
	t.Helper()
	wf := parseFlags(t, want.Flags)
	switch {
	case wf != parseFlags(t, got.Flags):
		return "flags differ"
	case want.Seq != got.Seq:
		return "seq differs"
	case wf.Contains(header.TCPFlagAck) && want.Ack != got.Ack:
		return "ack differs"
	case want.Win != 0 && want.Win != got.Win:
		return "window differs"
	case !bytes.Equal(want.Payload, got.Payload):
		return "payload differs"
	case fmt.Sprint(want.SACK) != fmt.Sprint(got.SACK):
		return "SACK blocks differ"
	}
	return ""
}

// writeFlight writes data on c and takes what ustack sends until all of
// it went out once, skipping what is sent again meanwhile (a probe). It
// returns each segment's first byte (relative) in order, and the TSval of
// the first.
func (p *scriptPeer) writeFlight(c net.Conn, data []byte) (starts []uint32, firstTS uint32) {
	p.t.Helper()
	if _, err := c.Write(data); err != nil {
		p.t.Fatal(err)
	}
	for got := 0; got < len(data); {
		s, ok := p.next(scriptWait)
		if !ok {
			p.t.Fatalf("ustack sent %d of %d bytes", got, len(data))
		}
		if len(s.Payload) == 0 || (len(starts) > 0 && s.Seq <= starts[len(starts)-1]) {
			continue
		}
		if len(starts) == 0 {
			firstTS = s.TSval
		}
		starts = append(starts, s.Seq)
		got += len(s.Payload)
	}
	return starts, firstTS
}

// awaitResend takes what ustack sends until it sends data at seq again,
// failing the test with what, the segment's name, if nothing comes.
func (p *scriptPeer) awaitResend(seq uint32, what string) {
	p.t.Helper()
	for {
		s, ok := p.next(scriptWait)
		if !ok {
			p.t.Fatalf("ustack did not resend %s", what)
		}
		if s.Seq == seq && len(s.Payload) > 0 {
			return
		}
	}
}

// readAvailable reads what the connection has within d (nil if nothing).
func readAvailable(t testing.TB, c net.Conn, d time.Duration) []byte {
	t.Helper()
	c.SetReadDeadline(time.Now().Add(d))
	defer c.SetReadDeadline(time.Time{})
	buf := make([]byte, 64<<10)
	n, err := c.Read(buf)
	if err != nil && !isTimeout(err) {
		t.Fatalf("read: %v", err)
	}
	return buf[:n]
}

// readUpTo reads from c until it has n bytes or a read finds nothing for
// a second.
func readUpTo(t testing.TB, c net.Conn, n int) []byte {
	t.Helper()
	var got []byte
	for len(got) < n {
		b := readAvailable(t, c, time.Second)
		if len(b) == 0 {
			break
		}
		got = append(got, b...)
	}
	return got
}

func isTimeout(err error) bool {
	ne, ok := err.(net.Error)
	return ok && ne.Timeout()
}

// TestScriptHandshake checks the harness itself: both handshakes, data
// each way, over IPv4 and IPv6.
func TestScriptHandshake(t *testing.T) {
	for _, v6 := range []bool{false, true} {
		name := "ipv4"
		if v6 {
			name = "ipv6"
		}
		t.Run(name+"/connect", func(t *testing.T) {
			p := newScriptPeer(t, scriptOptions{IPv6: v6})
			c := p.Connect()
			p.Send(seg{Flags: "PA", Seq: 1, Ack: 1, Payload: []byte("hello")})
			p.Expect(seg{Flags: "A", Seq: 1, Ack: 6})
			if got := readAvailable(t, c, time.Second); !bytes.Equal(got, []byte("hello")) {
				t.Fatalf("read %q", got)
			}
			if _, err := c.Write([]byte("world")); err != nil {
				t.Fatal(err)
			}
			p.Expect(seg{Flags: "PA", Seq: 1, Ack: 6, Payload: []byte("world")})
			p.Send(seg{Flags: "A", Seq: 6, Ack: 6})
			p.ExpectNothing(50 * time.Millisecond)
		})
		t.Run(name+"/accept", func(t *testing.T) {
			p := newScriptPeer(t, scriptOptions{IPv6: v6, WScale: 7})
			c := p.Accept()
			if _, err := c.Write([]byte("world")); err != nil {
				t.Fatal(err)
			}
			p.Expect(seg{Flags: "PA", Seq: 1, Ack: 1, Payload: []byte("world")})
			p.Send(seg{Flags: "PA", Seq: 1, Ack: 6, Payload: []byte("hello")})
			p.Expect(seg{Flags: "A", Seq: 6, Ack: 6})
			if got := readAvailable(t, c, time.Second); !bytes.Equal(got, []byte("hello")) {
				t.Fatalf("read %q", got)
			}
		})
	}
}
