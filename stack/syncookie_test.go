package stack

import (
	"bytes"
	"errors"
	"io"
	"net"
	"net/netip"
	"slices"
	"testing"
	"time"

	"github.com/ustack-dev/ustack/internal/third_party/gvisor/pkg/tcpip"
)

// alwaysCookies has every SYN answered with a SYN cookie.
func alwaysCookies(c *Config) { c.SynCookies = SynCookiesAlways }

// cookieTSOpts is the low six bits of a cookie SYN-ACK's TSval for a
// peer's window scale shift ws (-1: none) and SACK-permitted, as Linux's
// cookie_init_timestamp lays them out.
func cookieTSOpts(ws int, sack bool) uint32 {
	o := uint32(0xf)
	if ws >= 0 {
		o = uint32(ws)
	}
	if sack {
		o |= 1 << 4
	}
	return o
}

// synCookieOpen has the peer send a SYN to a new listener on ustack and
// returns the SYN-ACK and a function that, after the script has sent the
// handshake's ACK, returns the accepted connection.
func (p *scriptPeer) synCookieOpen() (seg, func(late string) net.Conn) {
	p.t.Helper()
	ln := p.listen()
	accepted := p.start(ln.Accept)
	p.remote = netip.AddrPortFrom(p.remote.Addr(), 80)
	p.Send(seg{Flags: "S", Seq: 0})
	return p.Expect(seg{Flags: "SA", Seq: 0, Ack: 1}), accepted
}

// checkCookieStats fails the test unless ustack's SYN cookie counters
// are sent, validated and failed.
func checkCookieStats(t *testing.T, s *Stack, sent, validated, failed uint64) {
	t.Helper()
	st := s.Stats()
	if st.Syn.CookiesSent != sent || st.Syn.CookiesValidated != validated || st.Syn.CookiesFailed != failed {
		t.Errorf("syn cookies sent %d, validated %d, failed %d; want %d, %d, %d",
			st.Syn.CookiesSent, st.Syn.CookiesValidated, st.Syn.CookiesFailed, sent, validated, failed)
	}
}

// TestScriptSynCookieOptions: with cookies always on, a SYN offering
// timestamps, window scale 7 and SACK gets a cookie SYN-ACK offering
// window scale and SACK-permitted with the SYN's options in its TSval's
// low bits (as Linux's cookie_init_timestamp), and the ACK echoing them gives the
// connection both: ustack scales the peer's windows and its own, accepts
// a flight of more than 64 KiB, and SACKs an out-of-order segment.
// Without the patch the SYN-ACK offers neither.
func TestScriptSynCookieOptions(t *testing.T) {
	p := newScriptPeer(t, scriptOptions{Timestamps: true, WScale: 7, Config: alwaysCookies})
	sa, accepted := p.synCookieOpen()
	if sa.WS <= 0 || !sa.SACKPermitted || !sa.TS {
		t.Fatalf("cookie SYN-ACK %v: want window scale, SACK-permitted and timestamps", sa)
	}
	if got, want := sa.TSval&63, cookieTSOpts(7, true); got != want {
		t.Fatalf("cookie SYN-ACK's TSval %#x carries options %#x in its low bits, want %#x", sa.TSval, got, want)
	}
	ws := uint(sa.WS)
	// The ACK's window, 2 << 7 = 256 bytes, is scaled: ustack sends 256
	// bytes of a 1000-byte write, not 2.
	p.Send(seg{Flags: "A", Seq: 1, Ack: 1, Win: 2})
	c := accepted("ustack accepted no connection from the cookie's ACK")
	checkCookieStats(t, p.s, 1, 1, 0)

	// The peer's window scale, from the handshake's ACK: 256 bytes.
	out := make([]byte, 1000)
	if _, err := c.Write(out); err != nil {
		t.Fatal(err)
	}
	first, ok := p.next(scriptWait)
	if !ok || first.Seq != 1 || len(first.Payload) != 256 {
		t.Fatalf("ustack sent %v into a window of 2<<7 bytes, want 256 bytes at 1", first)
	}
	if first.TSval-sa.TSval >= 1<<31 {
		t.Errorf("TSval %d after the cookie SYN-ACK's %d: the cookie's was ahead of the clock", first.TSval, sa.TSval)
	}
	p.Send(seg{Flags: "A", Seq: 1, Ack: 257})
	for got := 256; got < len(out); {
		s, ok := p.next(scriptWait)
		if !ok {
			t.Fatalf("ustack sent %d of %d bytes", got, len(out))
		}
		got += len(s.Payload)
	}
	p.Send(seg{Flags: "A", Seq: 1, Ack: 1001})

	// SACK: a segment beyond a hole is SACKed.
	p.Send(seg{Flags: "PA", Seq: 101, Ack: 1001, Payload: bytes.Repeat([]byte{'b'}, 100)})
	p.Expect(seg{Flags: "A", Seq: 1001, Ack: 1, SACK: [][2]uint32{{101, 201}}})
	p.Send(seg{Flags: "PA", Seq: 1, Ack: 1001, Payload: bytes.Repeat([]byte{'a'}, 100)})
	p.Expect(seg{Flags: "A", Seq: 1001, Ack: 201})
	if got := readUpTo(t, c, 200); len(got) != 200 {
		t.Fatalf("read %d of 200 bytes", len(got))
	}

	// ustack's own window scale: a flight of more than 64 KiB, sent
	// within the window ustack advertises, is taken whole.
	read := make(chan []byte, 1)
	const total = 512 << 10
	go func() {
		b := make([]byte, total)
		n, _ := io.ReadFull(c, b)
		read <- b[:n]
	}()
	// maxAhead is how far past the last ACK the peer sent data that
	// ustack took: the peer never resends, so a segment dropped as out
	// of window would stall the transfer.
	next, acked, wnd := uint32(201), uint32(201), uint32(0)
	maxWnd, maxAhead := uint32(0), uint32(0)
	const mss = 1448 // 1460 less the timestamps option
	for acked < 201+total {
		var batch []seg
		for next < 201+total && next-acked+mss <= max(wnd, mss) && len(batch) < 50 {
			n := min(mss, 201+total-next)
			batch = append(batch, seg{Flags: "A", Seq: next, Ack: 1001, Payload: bytes.Repeat([]byte{byte(next)}, int(n))})
			next += n
		}
		if len(batch) > 0 {
			p.SendBatch(batch...)
			maxAhead = max(maxAhead, next-acked)
		}
		s, ok := p.next(scriptWait)
		if !ok {
			t.Fatalf("ustack acknowledged %d of %d bytes", acked-201, total)
		}
		if !bytes.Contains([]byte(s.Flags), []byte("A")) || s.Ack-acked >= 1<<31 {
			continue
		}
		acked = s.Ack
		wnd = uint32(s.Win) << ws
		maxWnd = max(maxWnd, wnd)
	}
	if maxWnd <= 65535 {
		t.Errorf("ustack's largest window %d: not scaled past 64 KiB", maxWnd)
	}
	if maxAhead <= 65535 {
		t.Errorf("ustack took data at most %d bytes past its last ACK: want more than 64 KiB", maxAhead)
	}
	select {
	case b := <-read:
		if len(b) != total {
			t.Fatalf("read %d of %d bytes", len(b), total)
		}
	case <-time.After(scriptWait):
		t.Fatal("the application did not read the transfer")
	}
	t.Logf("window scale %d, largest window %d, data taken up to %d bytes past the last ACK", ws, maxWnd, maxAhead)
}

// TestScriptSynCookieNoTimestamps: a cookie SYN-ACK to a SYN without
// timestamps offers neither window scale nor SACK (nothing would bring
// them back), as Linux's does, and the connection has neither.
func TestScriptSynCookieNoTimestamps(t *testing.T) {
	p := newScriptPeer(t, scriptOptions{WScale: 7, Config: alwaysCookies})
	sa, accepted := p.synCookieOpen()
	if sa.WS >= 0 || sa.SACKPermitted || sa.TS {
		t.Fatalf("cookie SYN-ACK %v to a SYN without timestamps: want no window scale, SACK or timestamps", sa)
	}
	p.Send(seg{Flags: "A", Seq: 1, Ack: 1, Win: 300})
	c := accepted("ustack accepted no connection from the cookie's ACK")
	checkCookieStats(t, p.s, 1, 1, 0)
	// No SACK: an out-of-order segment gets a plain duplicate ACK.
	p.Send(seg{Flags: "PA", Seq: 101, Ack: 1, Win: 300, Payload: make([]byte, 100)})
	p.Expect(seg{Flags: "A", Seq: 1, Ack: 1})
	// No window scale: a window of 300 is 300 bytes.
	if _, err := c.Write(make([]byte, 1000)); err != nil {
		t.Fatal(err)
	}
	if s, ok := p.next(scriptWait); !ok || s.Seq != 1 || len(s.Payload) != 300 {
		t.Fatalf("ustack sent %v into a window of 300, want 300 bytes at 1", s)
	}
}

// TestScriptSynCookieRetransmittedSYN: a retransmitted SYN gets a
// SYN-ACK with the same cookie, and its ACK makes one connection.
func TestScriptSynCookieRetransmittedSYN(t *testing.T) {
	p := newScriptPeer(t, scriptOptions{Timestamps: true, WScale: 7, Config: alwaysCookies})
	first, accepted := p.synCookieOpen()
	p.Send(seg{Flags: "S", Seq: 0})
	again := p.Expect(seg{Flags: "SA", Seq: 0, Ack: 1})
	if again.WS != first.WS || again.SACKPermitted != first.SACKPermitted || again.TSval&63 != first.TSval&63 {
		t.Errorf("SYN-ACKs %v and %v differ in their options", first, again)
	}
	p.Send(seg{Flags: "A", Seq: 1, Ack: 1})
	accepted("ustack accepted no connection from the cookie's ACK")
	checkCookieStats(t, p.s, 2, 1, 0)
}

// TestScriptSynCookieForged: an ACK whose cookie does not validate is
// answered with a reset (<SEQ=SEG.ACK><CTL=RST>, RFC 9293 section
// 3.10.7.2), counted as failed, and makes no connection; the peer's
// genuine ACK still does.
func TestScriptSynCookieForged(t *testing.T) {
	p := newScriptPeer(t, scriptOptions{Timestamps: true, WScale: 7, Config: alwaysCookies})
	_, accepted := p.synCookieOpen()
	p.Send(seg{Flags: "A", Seq: 1, Ack: 1 + 12345})
	p.Expect(seg{Flags: "R", Seq: 1 + 12345})
	checkCookieStats(t, p.s, 1, 0, 1)
	if st := p.s.Stats(); st.TCP.PassiveOpens != 0 {
		t.Fatalf("a forged cookie opened %d connections", st.TCP.PassiveOpens)
	}
	p.Send(seg{Flags: "A", Seq: 1, Ack: 1})
	accepted("ustack accepted no connection from the genuine cookie's ACK")
	checkCookieStats(t, p.s, 1, 1, 1)
}

// frozenClock is the system clock with netstack's monotonic time stopped
// at t: every TSval it gives a connection is the same.
type frozenClock struct {
	tcpip.Clock
	t tcpip.MonotonicTime
}

func (c *frozenClock) NowMonotonic() tcpip.MonotonicTime { return c.t }

// TestScriptSynCookieTSvalNotAhead: the cookie SYN-ACK's TSval, its low
// six bits replaced by options, is never ahead of the clock (the
// connection's later TSvals would go backwards, and the peer's PAWS
// drop them), and at most 63 ms behind it; the TSecr that echoes it
// gives no RTT sample (it would be up to 63 ms long). On a stopped
// clock, at four times 16 ms apart, so that one of them has the clock's
// low bits below the options' and one above.
func TestScriptSynCookieTSvalNotAhead(t *testing.T) {
	for k := range 4 {
		clk := &frozenClock{Clock: tcpip.NewStdClock()}
		clk.t = clk.t.Add(time.Hour + time.Duration(k)*16*time.Millisecond)
		p := newScriptPeer(t, scriptOptions{Timestamps: true, WScale: 7, Config: func(c *Config) {
			alwaysCookies(c)
			c.clock = clk
		}})
		sa, accepted := p.synCookieOpen()
		p.Send(seg{Flags: "A", Seq: 1, Ack: 1})
		c := accepted("ustack accepted no connection from the cookie's ACK")
		// The clock stands still, so any RTT sample is the TSecr's
		// options misread as time.
		var info tcpip.TCPInfoOption
		if err := c.(*tcpConn).ep.GetSockOpt(&info); err != nil {
			t.Fatal(err)
		}
		if info.RTT != 0 {
			t.Errorf("clock +%d ms: smoothed RTT %v from the cookie's TSecr: want no sample", 16*k, info.RTT)
		}
		if _, err := c.Write([]byte("x")); err != nil {
			t.Fatal(err)
		}
		s := p.Expect(seg{Flags: "PA", Seq: 1, Ack: 1, Payload: []byte("x")})
		if sa.TSval&63 != cookieTSOpts(7, true) {
			t.Errorf("clock +%d ms: cookie TSval %#x has no options in its low bits", 16*k, sa.TSval)
		}
		if d := s.TSval - sa.TSval; d >= 64 {
			t.Errorf("clock +%d ms: cookie TSval %d, the clock's %d: want at most 63 behind, never ahead", 16*k, sa.TSval, s.TSval)
		}
	}
}

// TestConfigSynCookies: auto is the default, auto and always are
// accepted, anything else is a configuration error, from validate and
// from ParseSynCookieMode alike.
func TestConfigSynCookies(t *testing.T) {
	checkConfigMode(t, "SynCookies", "auto", []string{"auto", "always"}, []string{"never", "on", "Auto"},
		func(c *Config) *string { return (*string)(&c.SynCookies) },
		func(v string) (string, error) { m, err := ParseSynCookieMode(v); return string(m), err })
}

// TestConfigXDPSyn: auto is the default, auto, on and off are accepted,
// anything else is a configuration error, from validate and from
// ParseXDPSynMode alike; auto answers in the steering program on every
// link kind but veth.
func TestConfigXDPSyn(t *testing.T) {
	checkConfigMode(t, "XDPSyn", "auto", []string{"auto", "on", "off"}, []string{"always", "On"},
		func(c *Config) *string { return (*string)(&c.XDPSyn) },
		func(v string) (string, error) { m, err := ParseXDPSynMode(v); return string(m), err })
	for _, tc := range []struct {
		m    XDPSynMode
		kind string
		want bool
	}{{XDPSynAuto, "veth", false}, {XDPSynAuto, "", true}, {XDPSynOn, "veth", true}, {XDPSynOff, "", false}} {
		if got := tc.m.answers(tc.kind); got != tc.want {
			t.Errorf("XDPSyn %q on %q: answers %v, want %v", tc.m, tc.kind, got, tc.want)
		}
	}
}

// checkConfigMode checks a string-typed Config mode: field's default is
// def, the good values pass validate and parse, the bad ones fail both
// with ErrConfig.
func checkConfigMode(t *testing.T, name, def string, good, bad []string, field func(*Config) *string, parse func(string) (string, error)) {
	t.Helper()
	addr := netip.MustParsePrefix("198.18.0.1/24")
	var c Config
	c.setDefaults()
	if got := *field(&c); got != def {
		t.Errorf("default %s %q, want %q", name, got, def)
	}
	for _, v := range append(append([]string(nil), good...), bad...) {
		ok := slices.Contains(good, v)
		c := Config{Addrs: []netip.Prefix{addr}}
		*field(&c) = v
		c.setDefaults()
		err := c.validate()
		if ok != (err == nil) || err != nil && !errors.Is(err, ErrConfig) {
			t.Errorf("%s %q: validate = %v", name, v, err)
		}
		m, err := parse(v)
		if ok != (err == nil) || err != nil && !errors.Is(err, ErrConfig) || ok && m != v {
			t.Errorf("parsing %s %q = %q, %v", name, v, m, err)
		}
	}
}

// TestMemSynCookieConnectBurst: 2,000 connections one after another,
// each writing 100 bytes right behind the handshake's ACK, to a server
// with cookies always on, all without a retransmission. The ACK and the
// data reach the listener in one batch and it hands both to the
// connection the cookie makes, and the charge for each moves with it.
// Left charged to the listener's receive memory (as upstream netstack
// leaves it), after about 1,400 connections the listener drops every
// such data segment (its queue full of nothing), so that each waits 200 ms for the
// client's retransmission.
func TestMemSynCookieConnectBurst(t *testing.T) {
	mp := newMemPairWith(t, Adaptive, alwaysCookies)
	ln, err := mp.b.Listen("tcp4", ":7")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	echo(t, ln)
	addr := netip.AddrPortFrom(memB4.Addr(), 7).String()
	msg, buf := make([]byte, 100), make([]byte, 100)
	const n = 2000
	for i := range n {
		c, err := mp.a.Dial("tcp4", addr)
		if err != nil {
			t.Fatal(err)
		}
		c.SetDeadline(time.Now().Add(10 * time.Second))
		if _, err := c.Write(msg); err != nil {
			t.Fatal(err)
		}
		if _, err := io.ReadFull(c, buf); err != nil {
			t.Fatalf("connection %d: %v", i, err)
		}
		c.Close()
	}
	if st := mp.a.Stats(); st.TCP.Retransmits != 0 {
		t.Errorf("the client retransmitted %d times in %d connections, want 0", st.TCP.Retransmits, n)
	}
	if st := mp.b.Stats(); st.Syn.CookiesValidated != n {
		t.Errorf("%d connections from cookies, want %d", st.Syn.CookiesValidated, n)
	}
}

// BenchmarkMemConnectSynCookies is BenchmarkMemConnect (connect, a
// 100-byte echo, close) with the server's SynCookies "auto" (netstack's
// half-open connection per SYN) and "always" (a cookie per SYN, the
// connection made from the handshake's ACK): what always-on cookies
// cost connection setup, both ends together.
func BenchmarkMemConnectSynCookies(b *testing.B) {
	for _, mode := range []SynCookieMode{SynCookiesAuto, SynCookiesAlways} {
		b.Run(string(mode), func(b *testing.B) {
			mp := newMemPairWith(b, Adaptive, func(c *Config) { c.SynCookies = mode })
			ln, err := mp.b.Listen("tcp4", ":7")
			if err != nil {
				b.Fatal(err)
			}
			defer ln.Close()
			echo(b, ln)
			addr := netip.AddrPortFrom(memB4.Addr(), 7).String()
			msg := make([]byte, 100)
			buf := make([]byte, 100)
			b.ReportAllocs()
			busy := func() time.Duration {
				d, _ := mp.b.Stats().WorkerTime()
				return d
			}
			busy0 := busy()
			b.ResetTimer()
			for range b.N {
				c, err := mp.a.Dial("tcp4", addr)
				if err != nil {
					b.Fatal(err)
				}
				c.Write(msg)
				if _, err := io.ReadFull(c, buf); err != nil {
					b.Fatal(err)
				}
				c.Close()
			}
			b.StopTimer()
			st := mp.b.Stats()
			if mode == "always" && st.Syn.CookiesValidated < uint64(b.N) {
				b.Fatalf("%d connections, %d from cookies", b.N, st.Syn.CookiesValidated)
			}
			b.ReportMetric(float64(st.Syn.CookiesValidated)/float64(b.N), "cookies/op")
			// The server's worker's time per connection (its busy time:
			// the listener, the echo server's goroutine apart).
			b.ReportMetric(float64((busy()-busy0).Nanoseconds())/1e3/float64(b.N), "server-worker-µs/op")
		})
	}
}
