package stack

import (
	"encoding/binary"
	"fmt"
	"io"
	"maps"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"runtime/pprof"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/ustack-dev/ustack/internal/testpkt"
	"github.com/ustack-dev/ustack/internal/third_party/gvisor/pkg/tcpip"
	"github.com/ustack-dev/ustack/internal/third_party/gvisor/pkg/tcpip/network/ipv4"
	"github.com/ustack-dev/ustack/internal/third_party/gvisor/pkg/tcpip/network/ipv6"
	"github.com/ustack-dev/ustack/stack/internal/link"
	"github.com/ustack-dev/ustack/xsk"
)

// The RX-path fuzz target: a stack (the target) on one end of the memory
// wire and a raw peer on the other that holds an established TCP
// connection to it and sends it the fuzzer's frames, which go through the
// real worker, checksum verification, early demux and netstack. An input
// is a sequence of frames, each preceded by its length (2 bytes, big
// endian); bytes left over are one more frame. In a frame, fields that
// must match the live connection may hold placeholders the peer fills in
// (recomputing the TCP checksum if it was valid): client port fuzzPort,
// sequence number fuzzSeq (the target's next expected byte) and
// acknowledgment number fuzzAck (the target's next sequence number).

const (
	fuzzPort       = 40000      // the peer's port in seeds
	fuzzServerPort = 80         // the target's listener
	fuzzUDPPort    = 53         // the target's UDP socket
	fuzzSeq        = 0x5e5e5e5e // placeholder: the target's rcv.nxt
	fuzzAck        = 0xacacacac // placeholder: the target's snd.nxt
	fuzzISN        = 1000       // the peer's initial sequence number
	fuzzMaxFrames  = 64         // frames per input
)

var (
	fuzzPeer4   = memA4.Addr()
	fuzzTarget4 = memB4.Addr()
	fuzzPeer6   = memA6.Addr()
	fuzzTarget6 = memB6.Addr()
	fuzzPeerMAC = net.HardwareAddr{2, 0, 0, 0, 1, 1}
	fuzzMAC     = net.HardwareAddr{2, 0, 0, 0, 1, 2}
)

// rxFuzzer is the raw peer.
type rxFuzzer struct {
	t      testing.TB
	s      *Stack
	peer   *memEnd
	port   uint16 // the peer's port of the live connection
	rcvNxt uint32 // the target's last acknowledgment: its rcv.nxt
	sndNxt uint32 // the target's next sequence number
	descs  [link.BatchSize]xsk.Desc
	execs  int // inputs run on this target
	// cookies is the target's Config.SynCookies.
	cookies SynCookieMode
}

// fuzzRestart is how many inputs a target takes before the fuzzer builds
// a fresh one: inputs leave connections behind (half-open, in
// CLOSE_WAIT, established and idle) that would otherwise accumulate over
// millions of executions.
const fuzzRestart = 5000

func newRXFuzzer(t testing.TB) *rxFuzzer { return newRXFuzzerCookies(t, SynCookiesAuto) }

// newRXFuzzerCookies is newRXFuzzer with the target's SynCookies set.
func newRXFuzzerCookies(t testing.TB, cookies SynCookieMode) *rxFuzzer {
	z := &rxFuzzer{t: t, cookies: cookies}
	z.start()
	t.Cleanup(z.stop)
	return z
}

// start builds the target and connects to it.
func (z *rxFuzzer) start() {
	t := z.t
	pa, pb, err := newMemWire(1024, 2048)
	if err != nil {
		t.Fatal(err)
	}
	// ACKs at once, so the peer knows rcv.nxt after every frame.
	cfg := Config{Interface: "fuzz", Addrs: []netip.Prefix{memB4, memB6}, Poll: Adaptive, DelayedAck: -1, SynCookies: z.cookies}
	cfg.setDefaults()
	s, err := newStack(cfg, []frameIO{pb}, linkInfo{mtu: 1500, mac: fuzzMAC}, nil)
	if err != nil {
		t.Fatal(err)
	}
	z.s, z.peer, z.port, z.execs = s, pa, fuzzPort-1, 0
	for _, n := range []struct {
		proto tcpip.NetworkProtocolNumber
		a     netip.Addr
	}{{ipv4.ProtocolNumber, fuzzPeer4}, {ipv6.ProtocolNumber, fuzzPeer6}} {
		if err := s.ns.AddStaticNeighbor(nicID, n.proto, tcpip.AddrFromSlice(n.a.AsSlice()), tcpip.LinkAddress(fuzzPeerMAC)); err != nil {
			t.Fatal(err)
		}
	}
	ln, err := s.Listen("tcp", fmt.Sprintf(":%d", fuzzServerPort))
	if err != nil {
		t.Fatal(err)
	}
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() { io.Copy(io.Discard, c); c.Close() }()
		}
	}()
	pc, err := s.ListenPacket("udp", fmt.Sprintf(":%d", fuzzUDPPort))
	if err != nil {
		t.Fatal(err)
	}
	go func() {
		buf := make([]byte, 2048)
		for {
			if _, _, err := pc.ReadFrom(buf); err != nil {
				return
			}
		}
	}()
	z.connect()
}

// stop closes the target (its listener and connections with it).
func (z *rxFuzzer) stop() { z.s.Close() }

// segment builds an IPv4 TCP segment from the peer to the target's
// listener with the given fields and options; the checksum is valid.
func segment(sport uint16, seq, ack uint32, flags uint8, win uint16, opts, payload []byte) []byte {
	return segmentFrom(fuzzPeer4, fuzzTarget4, sport, fuzzServerPort, seq, ack, flags, win, opts, payload)
}

func segmentFrom(src, dst netip.Addr, sport, dport uint16, seq, ack uint32, flags uint8, win uint16, opts, payload []byte) []byte {
	for len(opts)%4 != 0 {
		opts = append(opts, 0)
	}
	seg := make([]byte, 20, 20+len(opts)+len(payload))
	binary.BigEndian.PutUint16(seg[0:], sport)
	binary.BigEndian.PutUint16(seg[2:], dport)
	binary.BigEndian.PutUint32(seg[4:], seq)
	binary.BigEndian.PutUint32(seg[8:], ack)
	seg[12] = byte(20+len(opts)) / 4 << 4
	seg[13] = flags
	binary.BigEndian.PutUint16(seg[14:], win)
	seg = append(append(seg, opts...), payload...)
	binary.BigEndian.PutUint16(seg[16:], testpkt.Checksum(append(testpkt.PseudoHeader(src, dst, testpkt.ProtoTCP, len(seg)), seg...)))
	f := testpkt.IP(src, dst, testpkt.ProtoTCP, seg)
	testpkt.SetMACs(f, fuzzMAC, fuzzPeerMAC)
	return f
}

// TCP flags.
const (
	tcpFIN = 0x01
	tcpSYN = 0x02
	tcpRST = 0x04
	tcpPSH = 0x08
	tcpACK = 0x10
)

// connect opens a new connection from the next peer port whose SYN
// gets a SYN-ACK (a port still in use by an old connection gets none).
func (z *rxFuzzer) connect() {
	for range 20 {
		z.port++
		if z.port < fuzzPort {
			z.port = fuzzPort
		}
		z.sndNxt = 0
		z.send(segment(z.port, fuzzISN, 0, tcpSYN, 65535, []byte{2, 4, 0x05, 0xb4}, nil))
		deadline := time.Now().Add(200 * time.Millisecond)
		for z.sndNxt == 0 && time.Now().Before(deadline) {
			time.Sleep(10 * time.Microsecond)
			z.drain()
		}
		if z.sndNxt != 0 {
			z.rcvNxt = fuzzISN + 1
			opens := z.s.Stats().TCP.PassiveOpens
			z.send(segment(z.port, fuzzISN+1, z.sndNxt, tcpACK, 65535, nil, nil))
			// The handshake may complete after the ACK's frame came back
			// (a loaded machine): a segment sent before then would meet
			// the listener, not the connection.
			for deadline := time.Now().Add(5 * time.Second); z.s.Stats().TCP.PassiveOpens == opens && time.Now().Before(deadline); {
				time.Sleep(10 * time.Microsecond)
			}
			if z.s.Stats().TCP.PassiveOpens != opens {
				return
			}
		}
	}
	z.t.Fatalf("no SYN-ACK from the target on 20 ports; stats:\n%s", z.s.Stats().Summary())
}

// idle is how many of the peer's frames are back with it. (It takes what
// the return ring holds: the ring's count of available entries refreshes
// only once the known ones are taken.)
func (z *rxFuzzer) idle() int {
	return z.peer.wire.IdleFrames()
}

// send puts one frame on the wire and waits until the target's worker
// has processed it (the frame is back) and kicked what it sent in reply.
func (z *rxFuzzer) send(frame []byte) {
	addr, ok := z.peer.Alloc()
	for deadline := time.Now().Add(10 * time.Second); !ok; addr, ok = z.peer.Alloc() {
		if time.Now().After(deadline) {
			z.t.Fatalf("no frame came back from the target in 10s; stats:\n%s", z.s.Stats().Summary())
		}
		z.drain()
	}
	want := z.idle() + 1
	n := copy(z.peer.Frame(addr), frame)
	d := [1]xsk.Desc{{Addr: addr, Len: uint32(n)}}
	if z.peer.Enqueue(d[:]) != 1 {
		z.t.Fatal("wire full")
	}
	z.peer.Kick()
	target := z.s.ep.QueueIO(0)
	deadline := time.Now().Add(10 * time.Second)
	for z.idle() < want || target.TxQueued() > 0 {
		if time.Now().After(deadline) {
			z.t.Fatalf("target's worker did not process the frame within 10s (hung?): %x\nidle %d want %d, target's TX queue %d", frame, z.idle(), want, target.TxQueued())
		}
		time.Sleep(time.Microsecond)
	}
	z.drain()
}

// drain takes what the target sent, tracking the connection's numbers.
func (z *rxFuzzer) drain() {
	n := z.peer.Receive(z.descs[:])
	for _, d := range z.descs[:n] {
		f := z.peer.Data(d)
		s, ok := parseTCP4(f)
		if !ok || s.dstPort != z.port || s.srcPort != fuzzServerPort {
			continue
		}
		tcp := f[14+int(f[14]&0xf)*4:]
		flags := tcp[13]
		if flags&tcpSYN != 0 {
			z.sndNxt = s.seq + 1
		} else if end := s.seq + uint32(s.payload); int32(end-z.sndNxt) > 0 {
			z.sndNxt = end
		}
		if flags&tcpACK != 0 {
			z.rcvNxt = binary.BigEndian.Uint32(tcp[8:])
		}
	}
	z.peer.Recycle(z.descs[:n])
}

// fill replaces the placeholders of an IPv4 TCP segment to the target's
// listener and fixes its checksum if it was valid.
func (z *rxFuzzer) fill(f []byte) {
	if len(f) < 14+20 || binary.BigEndian.Uint16(f[12:]) != 0x0800 || f[14+9] != testpkt.ProtoTCP {
		return
	}
	ihl := int(f[14]&0xf) * 4
	total := int(binary.BigEndian.Uint16(f[16:]))
	if ihl < 20 || total < ihl+20 || 14+total > len(f) {
		return
	}
	seg := f[14+ihl : 14+total]
	src, dst := netip.AddrFrom4([4]byte(f[26:30])), netip.AddrFrom4([4]byte(f[30:34]))
	pseudo := testpkt.PseudoHeader(src, dst, testpkt.ProtoTCP, len(seg))
	valid := testpkt.Checksum(append(pseudo, seg...)) == 0
	changed := false
	if binary.BigEndian.Uint16(seg[0:]) == fuzzPort {
		binary.BigEndian.PutUint16(seg[0:], z.port)
		changed = true
	}
	for _, p := range []struct {
		off int
		ph  uint32
		v   uint32
	}{{4, fuzzSeq, z.rcvNxt}, {8, fuzzAck, z.sndNxt}} {
		if binary.BigEndian.Uint32(seg[p.off:]) == p.ph {
			binary.BigEndian.PutUint32(seg[p.off:], p.v)
			changed = true
		}
	}
	if changed && valid {
		binary.BigEndian.PutUint16(seg[16:], 0)
		binary.BigEndian.PutUint16(seg[16:], testpkt.Checksum(append(pseudo, seg...)))
	}
}

// run sends an input's frames.
func (z *rxFuzzer) run(in []byte) {
	if z.execs++; z.execs > fuzzRestart {
		z.stop()
		z.start()
	}
	var frame [2048]byte
	established := z.s.Stats().TCP.CurrentEstablished
	for i := 0; len(in) > 0 && i < fuzzMaxFrames; i++ {
		var f []byte
		if n := 0; len(in) >= 2 {
			n = int(binary.BigEndian.Uint16(in))
			if n <= len(in)-2 {
				f, in = in[2:2+n], in[2+n:]
			}
		}
		if f == nil {
			f, in = in, nil
		}
		n := copy(frame[:], f)
		z.fill(frame[:n])
		z.send(frame[:n])
	}
	// A fresh connection for the next input if this one killed it.
	if n := z.s.Stats().TCP.CurrentEstablished; n == 0 || n < established {
		z.connect()
	}
}

// encodeFrames is the input that sends frames in order.
func encodeFrames(frames ...[]byte) []byte {
	var in []byte
	for _, f := range frames {
		in = binary.BigEndian.AppendUint16(in, uint16(len(f)))
		in = append(in, f...)
	}
	return in
}

// icmp4 returns an ICMPv4 message from the peer with a valid checksum.
func icmp4(typ, code uint8, rest uint32, body []byte) []byte {
	m := make([]byte, 8, 8+len(body))
	m[0], m[1] = typ, code
	binary.BigEndian.PutUint32(m[4:], rest)
	m = append(m, body...)
	binary.BigEndian.PutUint16(m[2:], testpkt.Checksum(m))
	f := testpkt.IPv4(fuzzPeer4, fuzzTarget4, testpkt.ProtoICMP, m)
	testpkt.SetMACs(f, fuzzMAC, fuzzPeerMAC)
	return f
}

// icmp6 returns an ICMPv6 message from the peer with a valid checksum.
func icmp6(typ, code uint8, rest uint32, body []byte) []byte {
	m := make([]byte, 8, 8+len(body))
	m[0], m[1] = typ, code
	binary.BigEndian.PutUint32(m[4:], rest)
	m = append(m, body...)
	binary.BigEndian.PutUint16(m[2:], testpkt.Checksum(append(testpkt.PseudoHeader(fuzzPeer6, fuzzTarget6, testpkt.ProtoICMPv6, len(m)), m...)))
	f := testpkt.IPv6(fuzzPeer6, fuzzTarget6, testpkt.ProtoICMPv6, m)
	testpkt.SetMACs(f, fuzzMAC, fuzzPeerMAC)
	return f
}

// rxSeeds are the seed inputs, by name: the cases the fuzz target must
// cover, built from real frames.
func rxSeeds() map[string][]byte {
	data := segment(fuzzPort, fuzzSeq, fuzzAck, tcpPSH|tcpACK, 65535, nil, []byte("hello, ustack"))
	seeds := map[string][]byte{
		"data":         encodeFrames(data),
		"udp":          encodeFrames(withMACs(testpkt.UDP(fuzzPeer4, fuzzTarget4, 5000, fuzzUDPPort, []byte("query")))),
		"udp6":         encodeFrames(withMACs(testpkt.UDP(fuzzPeer6, fuzzTarget6, 5000, fuzzUDPPort, []byte("query")))),
		"arp":          encodeFrames(withMACs(testpkt.ARP(1, fuzzPeer4, fuzzTarget4))),
		"runt":         encodeFrames(data[:13]),
		"empty":        encodeFrames(nil),
		"zero-window":  encodeFrames(segment(fuzzPort, fuzzSeq, fuzzAck, tcpACK, 0, nil, nil), segment(fuzzPort, fuzzSeq-1, fuzzAck, tcpACK, 0, nil, []byte{0}), segment(fuzzPort, fuzzSeq, fuzzAck, tcpACK, 0, nil, []byte("x"))),
		"fin":          encodeFrames(segment(fuzzPort, fuzzSeq, fuzzAck, tcpFIN|tcpACK, 65535, nil, nil)),
		"syn-data-fin": encodeFrames(segment(fuzzPort, fuzzSeq, fuzzAck, tcpSYN|tcpFIN|tcpPSH|tcpACK|0xc0, 65535, []byte{2, 4, 0, 1}, []byte("xmas"))),
	}
	// Truncated frames, at every header boundary.
	for _, n := range []int{14, 20, 33, 34, 40, 53, 54, 60} {
		seeds["truncated-"+strconv.Itoa(n)] = encodeFrames(data[:n])
	}
	// Lying length fields.
	lie := func(name string, f []byte, mod func([]byte)) {
		g := append([]byte(nil), f...)
		mod(g)
		seeds[name] = encodeFrames(g)
	}
	lie("ip-total-long", data, func(g []byte) { binary.BigEndian.PutUint16(g[16:], 1500) })
	lie("ip-total-short", data, func(g []byte) { binary.BigEndian.PutUint16(g[16:], 24) })
	lie("ip-total-zero", data, func(g []byte) { binary.BigEndian.PutUint16(g[16:], 0) })
	lie("ip-ihl-4", data, func(g []byte) { g[14] = 0x44 })
	lie("ip-ihl-15", data, func(g []byte) { g[14] = 0x4f })
	lie("ip-version-6", data, func(g []byte) { g[14] = 0x65 })
	lie("tcp-doff-0", data, func(g []byte) { g[46] = 0 })
	lie("tcp-doff-15", data, func(g []byte) { g[46] = 0xf0 })
	lie("tcp-doff-4", data, func(g []byte) { g[46] = 0x40 })
	lie("bad-checksum", data, func(g []byte) { g[len(g)-1] ^= 1 })
	udp := withMACs(testpkt.UDP(fuzzPeer4, fuzzTarget4, 5000, fuzzUDPPort, []byte("query")))
	lie("udp-length-long", udp, func(g []byte) { binary.BigEndian.PutUint16(g[38:], 500) })
	lie("udp-length-short", udp, func(g []byte) { binary.BigEndian.PutUint16(g[38:], 4) })
	udp6 := withMACs(testpkt.UDP(fuzzPeer6, fuzzTarget6, 5000, fuzzUDPPort, []byte("query")))
	lie("ip6-payload-long", udp6, func(g []byte) { binary.BigEndian.PutUint16(g[18:], 1400) })
	// Option overflows.
	for name, opts := range map[string][]byte{
		"opt-len-0":        {2, 0, 1, 1},
		"opt-len-past-end": {8, 40, 0, 0},
		"opt-mss-len-3":    {2, 3, 5, 0},
		"opt-ws-255":       {3, 3, 255, 0},
		"opt-sack-odd":     {5, 11, 0, 0, 0, 1, 0, 0, 0, 2, 0, 0},
		"opt-sack-many":    append([]byte{1, 1, 5, 34}, make([]byte, 32)...),
		"opt-ts-short":     {8, 6, 0, 0, 0, 1},
		"opt-eol-garbage":  {0, 99, 99, 99},
	} {
		seeds[name] = encodeFrames(segment(fuzzPort, fuzzSeq, fuzzAck, tcpPSH|tcpACK, 65535, opts, []byte("opt")))
	}
	ipOpts := testpkt.IPv4(fuzzPeer4, fuzzTarget4, testpkt.ProtoUDP, nil)
	lie("ip-options-overflow", ipOpts, func(g []byte) { g[14] = 0x46 })
	// RST and SYN storms on the established connection: in window, at
	// rcv.nxt (accepted: ends the connection), and out of window.
	var rsts, syns [][]byte
	for i := uint32(0); i < 20; i++ {
		rsts = append(rsts, segment(fuzzPort, fuzzSeq+i*1000, 0, tcpRST, 0, nil, nil))
		syns = append(syns, segment(fuzzPort, fuzzSeq+i*1000, 0, tcpSYN, 65535, []byte{2, 4, 5, 0xb4}, nil))
	}
	seeds["rst-storm"] = encodeFrames(rsts...)
	seeds["syn-storm"] = encodeFrames(syns...)
	seeds["rst-exact"] = encodeFrames(segment(fuzzPort, fuzzSeq, 0, tcpRST, 0, nil, nil))
	seeds["rst-ack-old"] = encodeFrames(segment(fuzzPort, fuzzSeq-100000, fuzzAck, tcpRST|tcpACK, 0, nil, nil))
	seeds["syn-new-flood"] = encodeFrames(
		segment(41000, 1, 0, tcpSYN, 65535, nil, nil), segment(41001, 1, 0, tcpSYN, 65535, nil, nil),
		segment(41002, 1, 0, tcpSYN, 65535, nil, nil), segment(41000, 2, 0, tcpSYN, 65535, nil, nil))
	// Handshake segments to the listener from new ports: SYNs with every
	// option, with malformed options, with data, with other flags; a
	// RST; ACKs whose cookie cannot validate; IPv6 SYNs.
	allOpts := []byte{2, 4, 0x05, 0xb4, 4, 2, 8, 10, 0, 0, 0, 9, 0, 0, 0, 0, 1, 3, 3, 7}
	seeds["syn-all-options"] = encodeFrames(segment(41010, 1, 0, tcpSYN, 65535, allOpts, nil))
	seeds["syn-retransmitted"] = encodeFrames(segment(41011, 1, 0, tcpSYN, 65535, allOpts, nil), segment(41011, 1, 0, tcpSYN, 65535, allOpts, nil))
	seeds["syn-data"] = encodeFrames(segment(41012, 1, 0, tcpSYN, 65535, allOpts, []byte("data on the SYN")))
	seeds["syn-fin"] = encodeFrames(segment(41013, 1, 0, tcpSYN|tcpFIN, 65535, nil, nil))
	seeds["syn-rst"] = encodeFrames(segment(41014, 1, 0, tcpSYN|tcpRST, 65535, nil, nil))
	seeds["syn-ack-to-listener"] = encodeFrames(segment(41015, 1, 7, tcpSYN|tcpACK, 65535, nil, nil))
	seeds["syn-psh-urg"] = encodeFrames(segment(41016, 1, 0, tcpSYN|tcpPSH|0x20, 65535, allOpts, nil))
	seeds["rst-to-listener"] = encodeFrames(segment(41017, 1, 0, tcpRST, 0, nil, nil), segment(41017, 1, 5, tcpRST|tcpACK, 0, nil, nil))
	seeds["ack-bad-cookie"] = encodeFrames(segment(41018, 2, 12345, tcpACK, 65535, nil, nil), segment(41019, 2, 12345, tcpACK|tcpPSH, 65535, nil, []byte("x")))
	for i, opts := range [][]byte{{2, 0, 1, 1}, {8, 40, 0, 0}, {2, 3, 5, 0}, {3, 3, 255, 0}, {8, 6, 0, 0, 0, 1}, {0, 99, 99, 99}, {3, 3, 14, 0}, {2, 4, 0, 0}} {
		seeds[fmt.Sprintf("syn-bad-options-%d", i)] = encodeFrames(segment(41030+uint16(i), 1, 0, tcpSYN, 65535, opts, nil))
	}
	seeds["syn6"] = encodeFrames(segmentFrom(fuzzPeer6, fuzzTarget6, 41040, fuzzServerPort, 1, 0, tcpSYN, 65535, allOpts, nil))
	seeds["ack-future"] = encodeFrames(segment(fuzzPort, fuzzSeq, fuzzAck+100000, tcpACK, 65535, nil, []byte("future")))
	// ICMP errors quoting the target's own flow (its segments to the
	// peer): fragmentation needed with silly MTUs, port unreachable,
	// and the IPv6 packet too big, quoting truncated headers too.
	quote4 := segmentFrom(fuzzTarget4, fuzzPeer4, fuzzServerPort, fuzzPort, fuzzAck, fuzzSeq, tcpACK, 65535, nil, []byte("reply"))[14:]
	quote6 := segmentFrom(fuzzTarget6, fuzzPeer6, fuzzServerPort, fuzzPort, 1, 1, tcpACK, 65535, nil, []byte("reply"))[14:]
	for _, mtu := range []uint32{0, 68, 576, 1200, 65535} {
		seeds["icmp-frag-needed-"+strconv.Itoa(int(mtu))] = encodeFrames(icmp4(3, 4, mtu, quote4[:28]))
	}
	seeds["icmp-port-unreachable"] = encodeFrames(icmp4(3, 3, 0, quote4))
	seeds["icmp-quote-truncated"] = encodeFrames(icmp4(3, 4, 1000, quote4[:10]))
	seeds["icmp-time-exceeded"] = encodeFrames(icmp4(11, 0, 0, quote4[:28]))
	seeds["icmp-echo"] = encodeFrames(icmp4(8, 0, 0x00010001, []byte("ping")))
	seeds["icmp6-packet-too-big"] = encodeFrames(icmp6(2, 0, 1280, quote6[:48]))
	seeds["icmp6-packet-too-big-tiny"] = encodeFrames(icmp6(2, 0, 100, quote6[:48]))
	seeds["icmp6-unreachable"] = encodeFrames(icmp6(1, 4, 0, quote6))
	// Fragments: a first fragment alone, overlapping fragments, a
	// fragment past 64 KiB, an IPv6 fragment header.
	frag := func(off uint16, mf bool, id uint16, payload []byte) []byte {
		f := withMACs(testpkt.IPv4(fuzzPeer4, fuzzTarget4, testpkt.ProtoUDP, payload))
		v := off / 8
		if mf {
			v |= 0x2000
		}
		binary.BigEndian.PutUint16(f[18:], id)
		binary.BigEndian.PutUint16(f[20:], v)
		binary.BigEndian.PutUint16(f[24:], 0)
		binary.BigEndian.PutUint16(f[24:], testpkt.Checksum(f[14:34]))
		return f
	}
	udpHead := udp[34:42]
	seeds["frag-first-only"] = encodeFrames(frag(0, true, 7, append(append([]byte(nil), udpHead...), make([]byte, 16)...)))
	seeds["frag-overlap"] = encodeFrames(frag(0, true, 8, make([]byte, 24)), frag(8, true, 8, make([]byte, 24)), frag(16, false, 8, make([]byte, 8)))
	seeds["frag-past-64k"] = encodeFrames(frag(65528, false, 9, make([]byte, 64)))
	seeds["frag-tiny"] = encodeFrames(frag(0, true, 10, make([]byte, 8)), frag(8, false, 10, []byte{1}))
	f6 := make([]byte, 8, 24)
	f6[0] = testpkt.ProtoUDP
	binary.BigEndian.PutUint16(f6[2:], 0x0001) // offset 0, more fragments
	binary.BigEndian.PutUint32(f6[4:], 77)
	f6 = append(f6, udp6[54:62]...)
	f6 = append(f6, make([]byte, 8)...)
	seeds["frag6-first-only"] = encodeFrames(withMACs(testpkt.IPv6(fuzzPeer6, fuzzTarget6, testpkt.ProtoFragment, f6)))
	return seeds
}

func withMACs(f []byte) []byte {
	testpkt.SetMACs(f, fuzzMAC, fuzzPeerMAC)
	return f
}

// FuzzRX feeds arbitrary frames through the whole RX path of a stack
// with an established connection: the worker, checksum verification,
// early demux, netstack. It fails on a panic, or if the worker stops
// taking frames. Seeds: testdata/fuzz/FuzzRX (written by
// TestWriteRXSeeds) and rxSeeds.
func FuzzRX(f *testing.F) {
	for _, s := range rxSeeds() {
		f.Add(s)
	}
	z := newRXFuzzer(f)
	f.Fuzz(func(t *testing.T, in []byte) {
		// A hang shows as the fuzzer stalling; leave the stacks where
		// USTACK_FUZZ_HANG_DUMP says.
		if dump := os.Getenv("USTACK_FUZZ_HANG_DUMP"); dump != "" {
			w := time.AfterFunc(20*time.Second, func() {
				if f, err := os.Create(dump); err == nil {
					fmt.Fprintf(f, "input %x\n", in)
					pprof.Lookup("goroutine").WriteTo(f, 2)
					f.Close()
				}
			})
			defer w.Stop()
		}
		z.t = t
		z.run(in)
	})
}

// FuzzRXSynCookies is FuzzRX against a target whose listener answers
// every SYN with a SYN cookie, so that its SYNs are answered on the
// worker (tcp.Endpoint.AnswerSyn) and its connections made from cookies.
func FuzzRXSynCookies(f *testing.F) {
	for _, s := range rxSeeds() {
		f.Add(s)
	}
	z := newRXFuzzerCookies(f, SynCookiesAlways)
	f.Fuzz(func(t *testing.T, in []byte) {
		z.t = t
		z.run(in)
	})
}

// TestRXSeedsSynCookies runs every seed through a target whose listener
// answers SYNs with cookies: the worker answers the handshake seeds'
// SYNs itself, and the target still makes connections afterwards.
func TestRXSeedsSynCookies(t *testing.T) {
	z := newRXFuzzerCookies(t, SynCookiesAlways)
	before := z.s.Stats().Syn.OnWorker
	seeds := rxSeeds()
	for _, name := range slices.Sorted(maps.Keys(seeds)) {
		z.run(seeds[name])
	}
	// The listener's lock may be held by its accepting goroutine when a
	// SYN comes (netstack answers that one): most, not all.
	n := z.s.Stats().Syn.OnWorker - before
	t.Logf("the worker answered %d of the seeds' SYNs", n)
	if n < 5 {
		t.Errorf("the worker answered %d of the seeds' SYNs, want most of the handshake seeds' (about 20)", n)
	}
	opens := z.s.Stats().TCP.PassiveOpens
	z.connect()
	if z.s.Stats().TCP.PassiveOpens == opens {
		t.Error("no connection made after the seeds")
	}
}

// TestRXSeedsCounted runs every seed through the target and checks that
// each malformed frame was counted under some reason, and that the
// connection survived the inputs that must not end it.
func TestRXSeedsCounted(t *testing.T) {
	z := newRXFuzzer(t)
	survive := map[string]bool{"rst-storm": false, "rst-exact": false, "syn-storm": true, "rst-ack-old": true, "bad-checksum": true, "zero-window": true, "ack-future": true}
	seeds := rxSeeds()
	for _, name := range slices.Sorted(maps.Keys(seeds)) {
		in := seeds[name]
		if _, ok := survive[name]; ok {
			z.connect() // from a known state
		}
		before := z.s.Stats()
		port := z.port
		z.run(in)
		after := z.s.Stats()
		q0, q1 := before.Queues[0], after.Queues[0]
		dropped := (q1.RxRunt - q0.RxRunt) + (q1.RxBadChecksum - q0.RxBadChecksum) + (after.IP.Malformed - before.IP.Malformed) +
			(after.TCP.ChecksumErrors - before.TCP.ChecksumErrors)
		switch name {
		case "runt", "empty", "truncated-14", "truncated-20", "truncated-33", "truncated-40", "truncated-53", "bad-checksum", "ip-ihl-4", "ip-total-short", "tcp-doff-4":
			if dropped == 0 {
				t.Errorf("%s: malformed frame not counted as dropped: before %+v after %+v", name, q0, q1)
			}
		}
		if want, ok := survive[name]; ok {
			died := z.port != port
			// A segment can take effect after its frame came back: when
			// the connection's reader holds the endpoint, netstack leaves
			// the segment to the reader's unlock.
			for deadline := time.Now().Add(5 * time.Second); !want && !died && time.Now().Before(deadline); {
				time.Sleep(time.Millisecond)
				died = z.s.Stats().TCP.CurrentEstablished < before.TCP.CurrentEstablished
			}
			if died && z.port == port {
				z.connect()
			}
			if died == want {
				t.Errorf("%s: connection survived %v, want %v", name, !died, want)
			}
		}
	}
	// The target still serves.
	z.run(encodeFrames(segment(fuzzPort, fuzzSeq, fuzzAck, tcpPSH|tcpACK, 65535, nil, []byte("still there?"))))
	if z.s.Stats().TCP.CurrentEstablished == 0 {
		t.Error("no connection established after the seeds")
	}
}

// TestWriteRXSeeds writes the seeds to testdata/fuzz/FuzzRX when
// USTACK_WRITE_SEEDS is set (go test -run TestWriteRXSeeds).
func TestWriteRXSeeds(t *testing.T) {
	if os.Getenv("USTACK_WRITE_SEEDS") == "" {
		t.Skip("set USTACK_WRITE_SEEDS=1 to rewrite testdata/fuzz/FuzzRX")
	}
	dir := filepath.Join("testdata", "fuzz", "FuzzRX")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	for name, in := range rxSeeds() {
		body := "go test fuzz v1\n[]byte(" + strconv.Quote(string(in)) + ")\n"
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}
