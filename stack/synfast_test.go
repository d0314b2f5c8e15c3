package stack

import (
	"bytes"
	"encoding/binary"
	"net/netip"
	"runtime"
	"testing"
	"time"

	"github.com/ustack-dev/ustack/internal/third_party/gvisor/pkg/tcpip"

	"github.com/ustack-dev/ustack/internal/third_party/gvisor/pkg/tcpip/checksum"
	"github.com/ustack-dev/ustack/internal/third_party/gvisor/pkg/tcpip/header"
	"github.com/ustack-dev/ustack/internal/third_party/gvisor/pkg/tcpip/transport/tcp"
	"github.com/ustack-dev/ustack/xsk"
)

// synAckFrames has the script peer keep a copy of every SYN-ACK frame
// ustack sends.
func (p *scriptPeer) synAckFrames() *[][]byte {
	var frames [][]byte
	p.frame = func(b []byte) {
		if l4 := synAckL4(b); l4 > 0 {
			frames = append(frames, append([]byte(nil), b...))
		}
	}
	return &frames
}

// synAckL4 returns the offset of frame's TCP header if frame is a TCP
// SYN-ACK over IPv4 or IPv6, else 0.
func synAckL4(frame []byte) int {
	l4 := 0
	switch binary.BigEndian.Uint16(frame[12:14]) {
	case uint16(header.IPv4ProtocolNumber):
		l4 = ethHeaderLen + header.IPv4MinimumSize
	case uint16(header.IPv6ProtocolNumber):
		l4 = ethHeaderLen + header.IPv6MinimumSize
	default:
		return 0
	}
	if len(frame) < l4+header.TCPMinimumSize || header.TCP(frame[l4:]).Flags() != header.TCPFlagSyn|header.TCPFlagAck {
		return 0
	}
	return l4
}

// withoutTSvalAndChecksum returns a copy of a SYN-ACK frame with its TCP
// checksum and its TSval's clock bits (all but the low six, which carry
// the SYN's options) zeroed: what two SYN-ACKs to one SYN, sent moments
// apart, share.
func withoutTSvalAndChecksum(t *testing.T, frame []byte) []byte {
	t.Helper()
	b := append([]byte(nil), frame...)
	l4 := synAckL4(b)
	th := header.TCP(b[l4:])
	th.SetChecksum(0)
	opts := b[l4+header.TCPMinimumSize : l4+int(th.DataOffset())]
	for i := 0; i < len(opts); {
		switch opts[i] {
		case header.TCPOptionEOL:
			i = len(opts)
		case header.TCPOptionNOP:
			i++
		default:
			if i+1 >= len(opts) || opts[i+1] < 2 {
				t.Fatalf("malformed options %x", opts)
			}
			if opts[i] == header.TCPOptionTS {
				v := binary.BigEndian.Uint32(opts[i+2:])
				binary.BigEndian.PutUint32(opts[i+2:], v&63)
			}
			i += int(opts[i+1])
		}
	}
	return b
}

// TestScriptSynOnWorkerMatchesListener: with SYN cookies always on, the
// worker answers a listener's SYN itself (tcp.Endpoint.AnswerSyn), and its
// SYN-ACK is the one netstack's listener sends for the same SYN, byte
// for byte (Ethernet, IP and TCP headers, cookie and options) but for the
// clock's part of the TSval and so the checksum; the cookie validates and
// makes the connection. Over IPv4 and IPv6, with the SYN's options
// varied (timestamps or not, window scale, SACK-permitted).
func TestScriptSynOnWorkerMatchesListener(t *testing.T) {
	for _, tc := range []struct {
		name string
		o    scriptOptions
	}{
		{"ipv4-ts-ws-sack", scriptOptions{Timestamps: true, WScale: 7}},
		{"ipv4-no-ts", scriptOptions{WScale: 7}},
		{"ipv4-ts-only", scriptOptions{Timestamps: true, NoSACK: true}},
		{"ipv4-mss-536", scriptOptions{Timestamps: true, WScale: 2, MSS: 536}},
		{"ipv6-ts-ws-sack", scriptOptions{IPv6: true, Timestamps: true, WScale: 9}},
		{"ipv6-no-ts", scriptOptions{IPv6: true, NoSACK: true}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.o.Config = alwaysCookies
			p := newScriptPeer(t, tc.o)
			frames := p.synAckFrames()
			ln := p.listen()
			p.remote = netip.AddrPortFrom(p.remote.Addr(), 80)
			// The same SYN twice: the same timestamps too.
			syn := seg{Flags: "S", Seq: 0, TSval: 5000, TSecr: 1}
			p.Send(syn)
			p.Expect(seg{Flags: "SA", Seq: 0, Ack: 1})
			if st := p.s.Stats(); st.Syn.OnWorker != 1 || st.Syn.CookiesSent != 1 {
				t.Fatalf("first SYN: %d answered on the worker, %d cookies sent; want 1, 1", st.Syn.OnWorker, st.Syn.CookiesSent)
			}
			p.s.ep.Demux().LeaveSyns(true)
			p.Send(syn)
			p.Expect(seg{Flags: "SA", Seq: 0, Ack: 1})
			if st := p.s.Stats(); st.Syn.OnWorker != 1 || st.Syn.CookiesSent != 2 {
				t.Fatalf("second SYN: %d answered on the worker, %d cookies sent; want 1, 2", st.Syn.OnWorker, st.Syn.CookiesSent)
			}
			if len(*frames) != 2 {
				t.Fatalf("%d SYN-ACK frames, want 2", len(*frames))
			}
			worker, listener := (*frames)[0], (*frames)[1]
			if a, b := withoutTSvalAndChecksum(t, worker), withoutTSvalAndChecksum(t, listener); !bytes.Equal(a, b) {
				t.Fatalf("the worker's SYN-ACK differs from the listener's:\nworker   %x\nlistener %x", a, b)
			}
			p.s.ep.Demux().LeaveSyns(false)
			// Accept only now: an Accept under way holds the
			// listener's lock for a moment, and a SYN then is
			// netstack's to answer.
			accepted := p.start(ln.Accept)
			p.Send(seg{Flags: "A", Seq: 1, Ack: 1})
			accepted("ustack accepted no connection from the cookie's ACK")
			checkCookieStats(t, p.s, 2, 1, 0)
		})
	}
}

// TestScriptSynOnWorkerAuto: with SynCookies "auto" and half-open
// connections to spare, the worker leaves a SYN to netstack's listener,
// which answers it with a half-open connection, as before; counted as a
// cookie miss.
func TestScriptSynOnWorkerAuto(t *testing.T) {
	p := newScriptPeer(t, scriptOptions{Timestamps: true, WScale: 7})
	ln := p.listen()
	p.remote = netip.AddrPortFrom(p.remote.Addr(), 80)
	p.Send(seg{Flags: "S", Seq: 0})
	p.Expect(seg{Flags: "SA", Seq: 0, Ack: 1})
	accepted := p.start(ln.Accept) // after the SYN (see above)
	p.Send(seg{Flags: "A", Seq: 1, Ack: 1})
	accepted("ustack accepted no connection")
	st := p.s.Stats()
	if st.Syn.OnWorker != 0 || st.Syn.MissCookie != 1 || st.Syn.CookiesSent != 0 {
		t.Fatalf("%d SYNs answered on the worker, %d left for want of cookies, %d cookies sent; want 0, 1, 0",
			st.Syn.OnWorker, st.Syn.MissCookie, st.Syn.CookiesSent)
	}
}

// TestScriptSynOnWorkerPressure: with SynCookies "auto" and half-open
// connections to spare, a worker that has fallen behind (half its
// receive frames waiting on the RX ring; here the threshold lowered to
// none) answers a listener's SYN itself with a cookie, counted as
// answered under pressure, and the cookie's ACK makes the connection.
func TestScriptSynOnWorkerPressure(t *testing.T) {
	p := newScriptPeer(t, scriptOptions{Timestamps: true, WScale: 7})
	ln := p.listen()
	p.s.ep.SetRxPressure(0)
	p.remote = netip.AddrPortFrom(p.remote.Addr(), 80)
	p.Send(seg{Flags: "S", Seq: 0, TSval: 5000, TSecr: 1})
	p.Expect(seg{Flags: "SA", Seq: 0, Ack: 1})
	accepted := p.start(ln.Accept) // after the SYN (see above)
	p.Send(seg{Flags: "A", Seq: 1, Ack: 1})
	accepted("ustack accepted no connection from the cookie's ACK")
	st := p.s.Stats()
	if st.Syn.OnWorker != 1 || st.Syn.OnWorkerPressure != 1 || st.Syn.MissCookie != 0 || st.Syn.CookiesValidated != 1 {
		t.Fatalf("%d SYNs answered on the worker (%d under pressure), %d left for want of cookies, %d cookies validated; want 1 (1), 0, 1",
			st.Syn.OnWorker, st.Syn.OnWorkerPressure, st.Syn.MissCookie, st.Syn.CookiesValidated)
	}
}

// TestScriptSynOnWorkerOffLink: a SYN from a peer off ustack's prefixes
// is answered on the worker too, through the default router
// (Config.Gateway4), the route's next hop: the SYN-ACK goes to the MAC
// netstack's neighbour cache holds for the router, not to the SYN's
// source MAC, and the cookie's ACK makes the connection.
func TestScriptSynOnWorkerOffLink(t *testing.T) {
	gw := memB4.Addr()
	p := newScriptPeer(t, scriptOptions{Timestamps: true, WScale: 7, Config: func(c *Config) {
		alwaysCookies(c)
		c.Gateway4 = gw
	}})
	frames := p.synAckFrames()
	ln := p.listen()
	// The peer's static neighbour entry is the router's (memB4); the
	// SYN arrives from another MAC, as from a last hop that is not the
	// way back.
	routerMAC := p.peerMAC
	p.peerMAC = tcpip.LinkAddress([]byte{2, 0, 0, 0, 3, 7})
	p.local = netip.AddrPortFrom(netip.MustParseAddr("198.19.5.5"), 40000)
	p.remote = netip.AddrPortFrom(p.remote.Addr(), 80)
	p.Send(seg{Flags: "S", Seq: 0, TSval: 5000, TSecr: 1})
	p.Expect(seg{Flags: "SA", Seq: 0, Ack: 1})
	st := p.s.Stats()
	if st.Syn.OnWorker != 1 || st.Syn.MissRoute != 0 || st.Syn.MissUnresolved != 0 {
		t.Fatalf("%d SYNs answered on the worker, %d left for want of a route, %d for the router's MAC; want 1, 0, 0",
			st.Syn.OnWorker, st.Syn.MissRoute, st.Syn.MissUnresolved)
	}
	if len(*frames) != 1 {
		t.Fatalf("%d SYN-ACK frames, want 1", len(*frames))
	}
	if dst := tcpip.LinkAddress((*frames)[0][0:6]); dst != routerMAC {
		t.Fatalf("the SYN-ACK went to %v, want the router's %v", dst, routerMAC)
	}
	accepted := p.start(ln.Accept)
	p.Send(seg{Flags: "A", Seq: 1, Ack: 1})
	accepted("ustack accepted no connection from the off-link cookie's ACK")
}

// TestScriptSynOnWorkerUnresolvedRouter: while the default router's MAC
// is unknown, an off-link peer's SYNs go to netstack (which resolves the
// router), counted as unresolved, not as wanting a route.
func TestScriptSynOnWorkerUnresolvedRouter(t *testing.T) {
	p := newScriptPeer(t, scriptOptions{Config: func(c *Config) {
		alwaysCookies(c)
		c.Gateway4 = netip.MustParseAddr("198.18.1.9") // no neighbour entry
	}})
	p.listen()
	p.local = netip.AddrPortFrom(netip.MustParseAddr("198.19.5.5"), 40000)
	p.remote = netip.AddrPortFrom(p.remote.Addr(), 80)
	for i := range 3 {
		p.Send(seg{Flags: "S", Seq: uint32(i)})
	}
	for deadline := time.Now().Add(5 * time.Second); ; {
		st := p.s.Stats()
		if st.Syn.MissUnresolved == 3 && st.Syn.OnWorker == 0 && st.Syn.MissRoute == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d SYNs left to netstack for the router's MAC, %d for want of a route, %d answered on the worker; want 3, 0, 0",
				st.Syn.MissUnresolved, st.Syn.MissRoute, st.Syn.OnWorker)
		}
		time.Sleep(time.Millisecond)
	}
}

// TestScriptSynOnWorkerFullAcceptQueue: a listener whose accept queue is
// full drops a SYN unanswered, on the worker as in netstack's listener
// (counted in both), and answers again once the application accepts.
func TestScriptSynOnWorkerFullAcceptQueue(t *testing.T) {
	p := newScriptPeer(t, scriptOptions{Timestamps: true, WScale: 7, Config: alwaysCookies})
	ep, _, keys, err := p.s.bind("listen", "tcp4", ":80", tcp.ProtocolNumber)
	if err != nil {
		t.Fatal(err)
	}
	defer p.s.ports.releaseAll(keys)
	defer ep.Close()
	// A backlog of 2: netstack's accept queue then holds 2.
	if terr := ep.Listen(2); terr != nil {
		t.Fatal(terr)
	}
	p.remote = netip.AddrPortFrom(p.remote.Addr(), 80)
	handshake := func(port uint16) {
		t.Helper()
		p.local = netip.AddrPortFrom(p.local.Addr(), port)
		p.synced = false
		p.Send(seg{Flags: "S", Seq: 0})
		p.Expect(seg{Flags: "SA", Seq: 0, Ack: 1})
		p.Send(seg{Flags: "A", Seq: 1, Ack: 1})
	}
	handshake(40000)
	handshake(40001)
	for deadline := time.Now().Add(scriptWait); p.s.Stats().Syn.CookiesValidated < 2; time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("%d connections made from cookies, want 2", p.s.Stats().Syn.CookiesValidated)
		}
	}
	for _, off := range []bool{false, true} {
		p.s.ep.Demux().LeaveSyns(off)
		p.local = netip.AddrPortFrom(p.local.Addr(), 40002)
		p.Send(seg{Flags: "S", Seq: 0})
		p.ExpectNothing(100 * time.Millisecond)
	}
	st := p.s.Stats()
	if st.Syn.OnWorker != 2 || st.Syn.DroppedOnWorker != 1 {
		t.Fatalf("%d SYNs answered on the worker, %d dropped; want 2, 1", st.Syn.OnWorker, st.Syn.DroppedOnWorker)
	}
	if n := p.s.ns.Stats().TCP.ListenOverflowSynDrop.Value(); n != 2 {
		t.Fatalf("netstack counted %d SYNs dropped for a full accept queue, want 2 (one each way)", n)
	}
	p.s.ep.Demux().LeaveSyns(false)
	if _, _, terr := ep.Accept(nil); terr != nil {
		t.Fatal(terr)
	}
	p.synced = false
	p.Send(seg{Flags: "S", Seq: 0})
	p.Expect(seg{Flags: "SA", Seq: 0, Ack: 1})
}

// TestScriptListenerIgnoresRst: a RST to a listener is dropped and
// counted on the worker as netstack's listener drops and counts it
// (RFC 9293, 3.10.7.2), and the listener answers the next SYN.
func TestScriptListenerIgnoresRst(t *testing.T) {
	p := newScriptPeer(t, scriptOptions{Timestamps: true, WScale: 7, Config: alwaysCookies})
	p.listen()
	p.remote = netip.AddrPortFrom(p.remote.Addr(), 80)
	ns := p.s.ns.Stats()
	for _, off := range []bool{false, true} {
		p.s.ep.Demux().LeaveSyns(off)
		p.Send(seg{Flags: "R", Seq: 0})
		p.ExpectNothing(50 * time.Millisecond)
	}
	if got := ns.TCP.ResetsReceived.Value(); got != 2 {
		t.Errorf("netstack counted %d resets received, want 2 (one each way)", got)
	}
	if got := ns.DroppedPackets.Value(); got != 2 {
		t.Errorf("netstack counted %d packets dropped, want 2 (one each way)", got)
	}
	p.s.ep.Demux().LeaveSyns(false)
	p.Send(seg{Flags: "S", Seq: 0})
	p.Expect(seg{Flags: "SA", Seq: 0, Ack: 1})
}

// TestScriptSynCookieSynWithData: a SYN carrying data, answered with a
// cookie, has only the SYN acknowledged (the data is not kept: nothing
// is, until the handshake's ACK), as with Linux's cookies; the peer
// sends the data again after the handshake and the application reads
// it once.
func TestScriptSynCookieSynWithData(t *testing.T) {
	p := newScriptPeer(t, scriptOptions{Timestamps: true, WScale: 7, Config: alwaysCookies})
	ln := p.listen()
	p.remote = netip.AddrPortFrom(p.remote.Addr(), 80)
	p.Send(seg{Flags: "S", Seq: 0, Payload: []byte("early")})
	p.Expect(seg{Flags: "SA", Seq: 0, Ack: 1})
	if st := p.s.Stats(); st.Syn.OnWorker != 1 {
		t.Fatalf("%d SYNs answered on the worker, want 1", st.Syn.OnWorker)
	}
	accepted := p.start(ln.Accept) // after the SYN (see above)
	p.Send(seg{Flags: "PA", Seq: 1, Ack: 1, Payload: []byte("early")})
	c := accepted("ustack accepted no connection from the cookie's ACK")
	if got := readUpTo(t, c, 5); string(got) != "early" {
		t.Fatalf("read %q, want %q", got, "early")
	}
}

// TestMemSynAnswerAllocs: a SYN answered on the worker, frame in to
// SYN-ACK frame out, allocates nothing (a flood's SYNs are answered this
// way, each with a SYN cookie: two hashes, the options, the frame).
func TestMemSynAnswerAllocs(t *testing.T) {
	if raceEnabled {
		t.Skip("allocation counts are meaningless under the race detector")
	}
	t.Run("on-link", func(t *testing.T) { testSynAnswerAllocs(t, false) })
	t.Run("off-link", func(t *testing.T) { testSynAnswerAllocs(t, true) })
}

// newSynPeer is a scripted peer beside a spinning Stack whose listener
// (p.listen) answers every SYN with a cookie: from an on-link address, or
// if offLink from 198.19.5.5 through the default router (the peer's
// address as ustack's gateway).
func newSynPeer(tb testing.TB, offLink bool) *scriptPeer {
	gw := memB4.Addr()
	p := newScriptPeer(tb, scriptOptions{Config: func(c *Config) {
		alwaysCookies(c)
		c.Poll = Spin
		if offLink {
			c.Gateway4 = gw
		}
	}})
	p.listen()
	if offLink {
		p.local = netip.AddrPortFrom(netip.MustParseAddr("198.19.5.5"), p.local.Port())
	}
	return p
}

// testSynAnswerAllocs is TestMemSynAnswerAllocs from an on-link peer, or
// from an off-link one through the default router.
func testSynAnswerAllocs(t *testing.T, offLink bool) {
	p := newSynPeer(t, offLink)
	tmpl := p.synFrame()

	w := p.wire
	var tx [1]xsk.Desc
	var rx [16]xsk.Desc
	round := func() {
		addr, ok := w.Alloc()
		if !ok {
			t.Fatal("no free frame on the wire")
		}
		tx[0] = xsk.Desc{Addr: addr, Len: uint32(copy(w.Frame(addr), tmpl))}
		if w.Enqueue(tx[:]) != 1 {
			t.Fatal("the wire's ring is full")
		}
		w.Kick()
		for deadline := time.Now().Add(5 * time.Second); ; {
			k := w.Receive(rx[:])
			got := false
			for _, d := range rx[:k] {
				if l4 := synAckL4(w.Data(d)); l4 > 0 {
					got = true
				}
			}
			w.Recycle(rx[:k])
			if got {
				return
			}
			if k == 0 {
				// AllocsPerRun runs at GOMAXPROCS=1: the worker
				// needs this P.
				runtime.Gosched()
			}
			if time.Now().After(deadline) {
				t.Fatal("no SYN-ACK in 5 s")
			}
		}
	}
	for range 100 {
		round()
	}
	before := p.s.Stats().Syn.OnWorker
	if a := testing.AllocsPerRun(1000, round); a > 0.01 {
		t.Fatalf("%.2f allocations per SYN answered, want 0", a)
	}
	if st := p.s.Stats(); st.Syn.MissRoute+st.Syn.MissUnresolved != 0 {
		t.Fatalf("%d SYNs left to netstack for want of a route, %d for the router's MAC", st.Syn.MissRoute, st.Syn.MissUnresolved)
	}
	if got := p.s.Stats().Syn.OnWorker - before; got < 1000 {
		t.Fatalf("%d SYNs answered on the worker during the measurement, want all 1,001", got)
	}
}

// synFrame returns the frame of a SYN from the peer's address and port to
// ustack's port 80, with the options Linux sends (MSS, SACK permitted,
// timestamps, window scale) and valid checksums.
func (p *scriptPeer) synFrame() []byte {
	src, dst := tcpip.AddrFromSlice(p.local.Addr().AsSlice()), tcpip.AddrFromSlice(p.remote.Addr().AsSlice())
	var opts [40]byte
	n := header.EncodeMSSOption(1460, opts[:])
	n += header.EncodeSACKPermittedOption(opts[n:])
	n += header.EncodeTSOption(1000, 0, opts[n:])
	n += header.EncodeNOP(opts[n:])
	n += header.EncodeWSOption(7, opts[n:])
	n += header.AddTCPOptionPadding(opts[:], n)
	tcpLen := header.TCPMinimumSize + n
	frame := make([]byte, header.EthernetMinimumSize+header.IPv4MinimumSize+tcpLen)
	header.Ethernet(frame).Encode(&header.EthernetFields{SrcAddr: p.peerMAC, DstAddr: p.stackMAC, Type: header.IPv4ProtocolNumber})
	ip := header.IPv4(frame[header.EthernetMinimumSize:])
	ip.Encode(&header.IPv4Fields{TotalLength: uint16(header.IPv4MinimumSize + tcpLen), TTL: 64, Protocol: uint8(header.TCPProtocolNumber), SrcAddr: src, DstAddr: dst})
	ip.SetChecksum(^ip.CalculateChecksum())
	th := header.TCP(ip[header.IPv4MinimumSize:])
	th.Encode(&header.TCPFields{SrcPort: p.local.Port(), DstPort: 80, SeqNum: 1, DataOffset: uint8(tcpLen), Flags: header.TCPFlagSyn, WindowSize: 65535})
	copy(th[header.TCPMinimumSize:], opts[:n])
	th.SetChecksum(^checksum.Checksum(th, header.PseudoHeaderChecksum(header.TCPProtocolNumber, src, dst, uint16(tcpLen))))
	return frame
}

// BenchmarkMemSynFlood: a flood of SYNs, batches of 64 from as many
// source ports, answered on the worker with cookies, from an on-link peer
// and from an off-link one through the default router. It reports the
// worker's busy time per SYN answered (syn-worker-ns): what a SYN flood
// costs the worker apart from the kernel's (a kick on veth runs the
// peer's receive of each SYN-ACK).
func BenchmarkMemSynFlood(b *testing.B) {
	for _, offLink := range []bool{false, true} {
		name := "on-link"
		if offLink {
			name = "off-link"
		}
		b.Run(name, func(b *testing.B) {
			p := newSynPeer(b, offLink)
			tmpl := p.synFrame()
			const batch = 64
			w := p.wire
			var tx [batch]xsk.Desc
			var rx [batch]xsk.Desc
			port := uint16(1024)
			flood := func(n int) {
				for i := range n {
					addr, ok := w.Alloc()
					if !ok {
						b.Fatal("no free frame on the wire")
					}
					f := w.Frame(addr)
					copy(f, tmpl)
					// Another source port: the checksum changes by the
					// difference (RFC 1624).
					th := header.TCP(f[header.EthernetMinimumSize+header.IPv4MinimumSize:])
					old := th.SourcePort()
					port++
					if port == 0 {
						port = 1024
					}
					th.SetSourcePort(port)
					th.SetChecksum(^checksum.Combine(checksum.Combine(^th.Checksum(), ^old), port))
					tx[i] = xsk.Desc{Addr: addr, Len: uint32(len(tmpl))}
				}
				if w.Enqueue(tx[:n]) != n {
					b.Fatal("the wire's ring is full")
				}
				w.Kick()
				for got, deadline := 0, time.Now().Add(5*time.Second); got < n; {
					k := w.Receive(rx[:])
					for _, d := range rx[:k] {
						if synAckL4(w.Data(d)) > 0 {
							got++
						}
					}
					w.Recycle(rx[:k])
					if k == 0 {
						runtime.Gosched()
					}
					if time.Now().After(deadline) {
						b.Fatalf("%d of %d SYN-ACKs in 5 s", got, n)
					}
				}
			}
			flood(batch)
			st0 := p.s.Stats()
			busy0, _ := st0.WorkerTime()
			b.ReportAllocs()
			b.ResetTimer()
			for done := 0; done < b.N; done += batch {
				flood(min(batch, b.N-done))
			}
			b.StopTimer()
			st := p.s.Stats()
			busy, _ := st.WorkerTime()
			if got := st.Syn.OnWorker - st0.Syn.OnWorker; got != uint64(b.N) {
				b.Fatalf("%d of %d SYNs answered on the worker", got, b.N)
			}
			b.ReportMetric(float64((busy-busy0).Nanoseconds())/float64(b.N), "syn-worker-ns")
		})
	}
}
