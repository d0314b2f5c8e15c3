package stack

// TCP behaviour a user relies on, from RFC 9293, 5961 and 2018, checked
// with the scripted peer (script_test.go). Each test says which rule it
// checks; a test whose rule needed an engine patch names the patch.

import (
	"bytes"
	"fmt"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ustack-dev/ustack/internal/third_party/gvisor/pkg/tcpip"
	"github.com/ustack-dev/ustack/stack/internal/link"
)

// TestRFCAckOfUnsentData: a segment whose ACK acknowledges data ustack
// never sent (SND.NXT < SEG.ACK) is answered with an ACK and dropped, its
// data never delivered (RFC 9293 §3.10.7.4, RFC 5961 §5.2: a blind
// injection must not get data in). Upstream netstack delivers the data.
func TestRFCAckOfUnsentData(t *testing.T) {
	for _, tc := range []struct {
		name   string
		sent   int  // bytes ustack has sent (and the peer acknowledged)
		v6     bool // over IPv6
		active bool // ustack opened the connection
	}{
		{name: "idle", sent: 0},
		{name: "after-data", sent: 10},
		{name: "after-data/ipv6", sent: 10, v6: true},
		{name: "after-data/active-open", sent: 10, active: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := newScriptPeer(t, scriptOptions{IPv6: tc.v6})
			var c net.Conn
			if tc.active {
				c = p.Accept()
			} else {
				c = p.Connect()
			}
			nxt := uint32(1)
			if tc.sent > 0 {
				data := bytes.Repeat([]byte("s"), tc.sent)
				if _, err := c.Write(data); err != nil {
					t.Fatal(err)
				}
				p.Expect(seg{Flags: "PA", Seq: 1, Ack: 1, Payload: data})
				nxt += uint32(tc.sent)
				p.Send(seg{Flags: "A", Seq: 1, Ack: nxt})
			}
			p.Send(seg{Flags: "PA", Seq: 1, Ack: nxt + 1000, Payload: []byte("evil")})
			p.Expect(seg{Flags: "A", Seq: nxt, Ack: 1})
			// The same bytes with an acceptable ACK are new data: had
			// the forged segment been accepted, "good" would be a
			// duplicate and the application would read "evil".
			p.Send(seg{Flags: "PA", Seq: 1, Ack: nxt, Payload: []byte("good")})
			p.Expect(seg{Flags: "A", Seq: nxt, Ack: 5})
			if got := readAvailable(t, c, time.Second); string(got) != "good" {
				t.Fatalf("application read %q, want %q", got, "good")
			}
		})
	}
}

// TestRFCResetInWindow: a RST whose sequence number is in the window but
// not RCV.NXT gets a challenge ACK and leaves the connection up (RFC 5961
// §3.2); a RST outside the window is dropped silently; one at exactly
// RCV.NXT resets the connection.
func TestRFCResetInWindow(t *testing.T) {
	p := newScriptPeer(t, scriptOptions{})
	c := p.Connect()
	p.Send(seg{Flags: "R", Seq: 1 + 1000})
	p.Expect(seg{Flags: "A", Seq: 1, Ack: 1})
	p.Send(seg{Flags: "R", Seq: 1 + 1<<30})
	p.ExpectNothing(50 * time.Millisecond)
	p.Send(seg{Flags: "PA", Seq: 1, Ack: 1, Payload: []byte("alive")})
	p.Expect(seg{Flags: "A", Seq: 1, Ack: 6})
	if got := readAvailable(t, c, time.Second); string(got) != "alive" {
		t.Fatalf("application read %q, want %q", got, "alive")
	}
	p.Send(seg{Flags: "R", Seq: 6})
	p.ExpectNothing(50 * time.Millisecond)
	c.SetReadDeadline(time.Now().Add(scriptWait))
	if _, err := c.Read(make([]byte, 1)); err == nil || isTimeout(err) {
		t.Fatalf("read after an exact RST: %v, want connection reset", err)
	}
}

// TestRFCSynOnEstablished: a SYN on an established connection, in the
// window or not, gets a challenge ACK and is otherwise ignored (RFC 5961
// §4.2, RFC 9293 §3.10.7.4).
func TestRFCSynOnEstablished(t *testing.T) {
	for _, tc := range []struct {
		name string
		seq  uint32
	}{{"in-window", 1 + 100}, {"at-rcv-nxt", 1}, {"out-of-window", 1 << 31}} {
		t.Run(tc.name, func(t *testing.T) {
			p := newScriptPeer(t, scriptOptions{})
			c := p.Connect()
			p.Send(seg{Flags: "S", Seq: tc.seq})
			p.Expect(seg{Flags: "A", Seq: 1, Ack: 1})
			p.Send(seg{Flags: "PA", Seq: 1, Ack: 1, Payload: []byte("alive")})
			p.Expect(seg{Flags: "A", Seq: 1, Ack: 6})
			if got := readAvailable(t, c, time.Second); string(got) != "alive" {
				t.Fatalf("application read %q, want %q", got, "alive")
			}
		})
	}
}

// TestRFCOutOfWindowData: data entirely beyond the window, or entirely
// before RCV.NXT (a retransmission), is answered with a duplicate ACK and
// not delivered (RFC 9293 §3.10.7.4); the retransmission's ACK reports it
// as a duplicate (D-SACK, RFC 2883).
func TestRFCOutOfWindowData(t *testing.T) {
	p := newScriptPeer(t, scriptOptions{})
	c := p.Connect()
	p.Send(seg{Flags: "PA", Seq: 1, Ack: 1, Payload: []byte("hello")})
	p.Expect(seg{Flags: "A", Seq: 1, Ack: 6})
	p.Send(seg{Flags: "PA", Seq: 6 + 1<<20, Ack: 1, Payload: []byte("beyond")})
	p.Expect(seg{Flags: "A", Seq: 1, Ack: 6})
	p.Send(seg{Flags: "PA", Seq: 1, Ack: 1, Payload: []byte("hello")})
	p.Expect(seg{Flags: "A", Seq: 1, Ack: 6, SACK: [][2]uint32{{1, 6}}})
	p.Send(seg{Flags: "PA", Seq: 6, Ack: 1, Payload: []byte(" world")})
	p.Expect(seg{Flags: "A", Seq: 1, Ack: 12})
	got := readUpTo(t, c, len("hello world"))
	if string(got) != "hello world" {
		t.Fatalf("application read %q, want %q", got, "hello world")
	}
}

// TestRFCSACKHoles: segments after a hole are acknowledged with SACK
// blocks, the most recent first (RFC 2018 §4); filling the holes
// advances the cumulative ACK and retires the blocks.
func TestRFCSACKHoles(t *testing.T) {
	p := newScriptPeer(t, scriptOptions{})
	c := p.Connect()
	chunk := func(i int) []byte { return bytes.Repeat([]byte{'a' + byte(i)}, 100) }
	p.Send(seg{Flags: "A", Seq: 1, Ack: 1, Payload: chunk(0)})
	p.Expect(seg{Flags: "A", Seq: 1, Ack: 101})
	p.Send(seg{Flags: "A", Seq: 201, Ack: 1, Payload: chunk(2)})
	p.Expect(seg{Flags: "A", Seq: 1, Ack: 101, SACK: [][2]uint32{{201, 301}}})
	p.Send(seg{Flags: "A", Seq: 401, Ack: 1, Payload: chunk(4)})
	p.Expect(seg{Flags: "A", Seq: 1, Ack: 101, SACK: [][2]uint32{{401, 501}, {201, 301}}})
	p.Send(seg{Flags: "A", Seq: 101, Ack: 1, Payload: chunk(1)})
	p.Expect(seg{Flags: "A", Seq: 1, Ack: 301, SACK: [][2]uint32{{401, 501}}})
	p.Send(seg{Flags: "A", Seq: 301, Ack: 1, Payload: chunk(3)})
	p.Expect(seg{Flags: "A", Seq: 1, Ack: 501})
	var want, got []byte
	for i := 0; i < 5; i++ {
		want = append(want, chunk(i)...)
	}
	for len(got) < len(want) {
		b := readAvailable(t, c, time.Second)
		if len(b) == 0 {
			break
		}
		got = append(got, b...)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("application read %q, want %q", got, want)
	}
}

// TestRFCSACKAfterOwnFIN: a connection that has sent its FIN still
// receives, and reports holes with SACK blocks in FIN-WAIT-2 as in
// ESTABLISHED (RFC 2018 does not restrict SACK to ESTABLISHED; Linux
// sends them in any state). Upstream netstack sends SACK blocks only in
// ESTABLISHED, so a half-closed receiver (a client that sent its request
// and shut down writing) leaves its sender to recover holes without them.
func TestRFCSACKAfterOwnFIN(t *testing.T) {
	p := newScriptPeer(t, scriptOptions{})
	c := p.Connect()
	if err := c.(interface{ CloseWrite() error }).CloseWrite(); err != nil {
		t.Fatal(err)
	}
	p.Expect(seg{Flags: "FA", Seq: 1, Ack: 1})
	p.Send(seg{Flags: "A", Seq: 1, Ack: 2})
	chunk := bytes.Repeat([]byte("x"), 100)
	p.Send(seg{Flags: "A", Seq: 101, Ack: 2, Payload: chunk})
	p.Expect(seg{Flags: "A", Seq: 2, Ack: 1, SACK: [][2]uint32{{101, 201}}})
	p.Send(seg{Flags: "A", Seq: 1, Ack: 2, Payload: chunk})
	p.Expect(seg{Flags: "A", Seq: 2, Ack: 201})
}

// TestRFCDSACK: a segment that arrives twice is reported as a duplicate
// in the first SACK block of the ACK it draws (RFC 2883 section 4): below
// RCV.NXT on its own, and out of order followed by the block that holds
// it. A sender uses it to tell a spurious retransmission; upstream
// netstack sends no D-SACK.
func TestRFCDSACK(t *testing.T) {
	p := newScriptPeer(t, scriptOptions{})
	c := p.Connect()
	chunk := bytes.Repeat([]byte("d"), 100)
	p.Send(seg{Flags: "A", Seq: 1, Ack: 1, Payload: chunk})
	p.Expect(seg{Flags: "A", Seq: 1, Ack: 101})
	p.Send(seg{Flags: "A", Seq: 1, Ack: 1, Payload: chunk})
	p.Expect(seg{Flags: "A", Seq: 1, Ack: 101, SACK: [][2]uint32{{1, 101}}})
	p.Send(seg{Flags: "A", Seq: 201, Ack: 1, Payload: chunk})
	p.Expect(seg{Flags: "A", Seq: 1, Ack: 101, SACK: [][2]uint32{{201, 301}}})
	p.Send(seg{Flags: "A", Seq: 201, Ack: 1, Payload: chunk})
	p.Expect(seg{Flags: "A", Seq: 1, Ack: 101, SACK: [][2]uint32{{201, 301}, {201, 301}}})
	p.Send(seg{Flags: "A", Seq: 101, Ack: 1, Payload: chunk})
	p.Expect(seg{Flags: "A", Seq: 1, Ack: 301})
	if got := readUpTo(t, c, 300); len(got) != 300 {
		t.Fatalf("application read %d bytes, want 300", len(got))
	}
}

// TestScriptDSACKCountsAsReordering: a D-SACK for a segment ustack sent
// twice says the resend was spurious, the path having delayed the first
// copy; ustack then counts reordering as seen (TCP_INFO's reorder flag),
// which lets RACK's reordering window, widened by each D-SACK round,
// apply in recovery as well (as Linux's tcp_sacktag_one counts such a
// D-SACK toward reord_seen).
func TestScriptDSACKCountsAsReordering(t *testing.T) {
	p := newScriptPeer(t, scriptOptions{})
	c := p.Connect()
	data := make([]byte, 4*1424)
	starts, _ := p.writeFlight(c, data)
	end := uint32(len(data)) + 1
	// Segment 0 looks lost (1-3 SACKed): ustack resends it.
	p.Send(seg{Flags: "A", Seq: 1, Ack: 1, SACK: [][2]uint32{{starts[1], end}}})
	p.awaitResend(1, "segment 0")
	reord := func() bool {
		var info tcpip.TCPInfoOption
		if err := c.(*tcpConn).ep.GetSockOpt(&info); err != nil {
			t.Fatal(err)
		}
		return info.ReorderSeen
	}
	if reord() {
		t.Fatal("reordering seen before any D-SACK")
	}
	// Both copies arrived: everything acknowledged, segment 0 reported
	// twice.
	p.Send(seg{Flags: "A", Seq: 1, Ack: end, SACK: [][2]uint32{{1, starts[1]}}})
	deadline := time.Now().Add(scriptWait)
	for !reord() {
		if time.Now().After(deadline) {
			t.Fatal("a D-SACK of a resent segment did not count as reordering")
		}
		time.Sleep(time.Millisecond)
	}
}

// TestRFCWindowFromNewestSegment: the send window is taken only from a
// segment no older than the one that last set it (RFC 9293 §3.10.7.4:
// SND.WL1 < SEG.SEQ, or SND.WL1 = SEG.SEQ and SND.WL2 =< SEG.ACK). The
// peer's bytes 5 arrive before bytes 1–4, with a window of 8,000 on the
// later segment and 100 on the earlier: the window stays 8,000, so a
// 1,000-byte write goes out whole. Before (netstack took every
// segment's window), it sent 100 bytes.
func TestRFCWindowFromNewestSegment(t *testing.T) {
	p := newScriptPeer(t, scriptOptions{})
	c := p.Connect()
	p.Send(seg{Flags: "PA", Seq: 5, Ack: 1, Payload: []byte("e"), Win: 8000})
	p.Expect(seg{Flags: "A", Seq: 1, Ack: 1, SACK: [][2]uint32{{5, 6}}})
	p.Send(seg{Flags: "PA", Seq: 1, Ack: 1, Payload: []byte("abcd"), Win: 100})
	p.expectAck(6)
	if got := readUpTo(t, c, 5); string(got) != "abcde" {
		t.Fatalf("read %q", got)
	}
	if _, err := c.Write(make([]byte, 1000)); err != nil {
		t.Fatal(err)
	}
	p.Expect(seg{Flags: "PA", Seq: 1, Ack: 6, Payload: make([]byte, 1000)})
}

// TestRFCZeroWindow: with the application not reading, the window closes
// to 0; a zero-window probe (one byte beyond the window, RFC 9293
// §3.8.6.1, or Linux's empty segment one below RCV.NXT) is answered with
// an ACK that still shows window 0 and does not acknowledge the byte; once the application reads, ustack reopens
// the window unprompted (a window update), and the probe byte is then
// accepted.
func TestRFCZeroWindow(t *testing.T) {
	p := newScriptPeer(t, scriptOptions{Config: func(c *Config) { c.TCPReceiveBuffer = 4096 }})
	c := p.Connect()
	win := p.stackSyn.Win
	nxt := uint32(1)
	var sent []byte
	for i := 0; win != zeroWin; i++ {
		if i > 100 {
			t.Fatal("the window did not close")
		}
		n := min(win, 1000)
		data := bytes.Repeat([]byte{'a' + byte(i%26)}, n)
		p.Send(seg{Flags: "A", Seq: nxt, Ack: 1, Payload: data})
		nxt += uint32(n)
		sent = append(sent, data...)
		got := p.Expect(seg{Flags: "A", Seq: 1, Ack: nxt})
		win = got.Win
	}
	t.Logf("window closed after %d bytes", len(sent))
	p.Send(seg{Flags: "A", Seq: nxt, Ack: 1, Payload: []byte("!")})
	p.Expect(seg{Flags: "A", Seq: 1, Ack: nxt, Win: zeroWin})
	// Linux's probe: no data, the sequence number one below RCV.NXT.
	p.Send(seg{Flags: "A", Seq: nxt - 1, Ack: 1})
	p.Expect(seg{Flags: "A", Seq: 1, Ack: nxt, Win: zeroWin})
	p.ExpectNothing(50 * time.Millisecond)

	got := readUpTo(t, c, len(sent))
	if !bytes.Equal(got, sent) {
		t.Fatalf("application read %d bytes, want the %d sent", len(got), len(sent))
	}
	upd := p.Expect(seg{Flags: "A", Seq: 1, Ack: nxt})
	if upd.Win == zeroWin {
		t.Fatalf("window update %v still shows window 0", upd)
	}
	p.Send(seg{Flags: "A", Seq: nxt, Ack: 1, Payload: []byte("!")})
	p.Expect(seg{Flags: "A", Seq: 1, Ack: nxt + 1})
	if b := readAvailable(t, c, time.Second); string(b) != "!" {
		t.Fatalf("application read %q after the window reopened, want %q", b, "!")
	}
}

// TestRFCTooOldAck: a segment whose ACK is below SND.UNA - MAX.SND.WND
// (acknowledging bytes from further back than any window the peer ever
// offered, or from before ustack's ISN) is answered with an ACK and
// dropped, data included (RFC 5961 §5.2, RFC 9293 §3.10.7.4 for stacks
// that implement RFC 5961). An old ACK within that range is a plain
// duplicate, and its data is delivered.
func TestRFCTooOldAck(t *testing.T) {
	p := newScriptPeer(t, scriptOptions{})
	c := p.Connect()
	data := bytes.Repeat([]byte("s"), 100)
	if _, err := c.Write(data); err != nil {
		t.Fatal(err)
	}
	p.Expect(seg{Flags: "PA", Seq: 1, Ack: 1, Payload: data})
	p.Send(seg{Flags: "A", Seq: 1, Ack: 101})
	// The peer never offered more than 65535 bytes: an ACK 50 bytes
	// back is plausible (a reordered duplicate), one 100000 back is not.
	back := uint32(100000)
	p.Send(seg{Flags: "PA", Seq: 1, Ack: 101 - back, Payload: []byte("evil")})
	p.Expect(seg{Flags: "A", Seq: 101, Ack: 1})
	p.Send(seg{Flags: "PA", Seq: 1, Ack: 51, Payload: []byte("good")})
	p.Expect(seg{Flags: "A", Seq: 101, Ack: 5})
	if got := readAvailable(t, c, time.Second); string(got) != "good" {
		t.Fatalf("application read %q, want %q", got, "good")
	}
}

// TestRFCSACKBlockLimit: with more islands than fit, the ACK carries as
// many blocks as the option space holds (4, or 3 beside timestamps), the
// newest first, then the most recently reported (RFC 2018 §4).
func TestRFCSACKBlockLimit(t *testing.T) {
	for _, tc := range []struct {
		name      string
		v6, ts    bool
		maxBlocks int
	}{{"ipv4", false, false, 4}, {"ipv6", true, false, 4}, {"timestamps", false, true, 3}} {
		t.Run(tc.name, func(t *testing.T) {
			p := newScriptPeer(t, scriptOptions{IPv6: tc.v6, Timestamps: tc.ts})
			p.Connect()
			chunk := bytes.Repeat([]byte("x"), 100)
			p.Send(seg{Flags: "A", Seq: 1, Ack: 1, Payload: chunk})
			p.Expect(seg{Flags: "A", Seq: 1, Ack: 101})
			var blocks [][2]uint32
			for i := uint32(2); i <= 10; i += 2 {
				start := 1 + 100*i
				p.Send(seg{Flags: "A", Seq: start, Ack: 1, Payload: chunk})
				blocks = append([][2]uint32{{start, start + 100}}, blocks...)
				p.Expect(seg{Flags: "A", Seq: 1, Ack: 101, SACK: blocks[:min(len(blocks), tc.maxBlocks)]})
			}
		})
	}
}

// TestRFCPAWS: on a connection with timestamps, an in-window segment whose
// TSval is older than TS.Recent is answered with an ACK and dropped (RFC
// 7323 §5.3 R1, Linux's tcp_paws_discard); the same data with a current
// TSval is then accepted. Upstream netstack does not check PAWS.
func TestRFCPAWS(t *testing.T) {
	p := newScriptPeer(t, scriptOptions{Timestamps: true})
	c := p.Connect()
	if !p.stackSyn.TS {
		t.Fatal("ustack did not agree to timestamps")
	}
	p.Send(seg{Flags: "PA", Seq: 1, Ack: 1, Payload: []byte("hello")})
	p.Expect(seg{Flags: "A", Seq: 1, Ack: 6})
	p.Send(seg{Flags: "PA", Seq: 6, Ack: 1, Payload: []byte("stale"), TSval: 5})
	p.Expect(seg{Flags: "A", Seq: 1, Ack: 6})
	p.Send(seg{Flags: "PA", Seq: 6, Ack: 1, Payload: []byte(" world")})
	p.Expect(seg{Flags: "A", Seq: 1, Ack: 12})
	got := readUpTo(t, c, len("hello world"))
	if string(got) != "hello world" {
		t.Fatalf("application read %q, want %q", got, "hello world")
	}
}

// TestScriptZeroWindowSegmentAckProcessed: at zero window, a segment that
// starts at RCV.NXT carries data ustack cannot take, and an ACK for data
// ustack sent. The data is refused (a duplicate ACK shows window 0) but
// the ACK is processed (RFC 9293 §3.10.7.4), which frees ustack's full
// send buffer: a Write blocked on it completes and its byte goes out.
// Upstream netstack drops the ACK with the data, so the Write stays
// blocked until a retransmission timeout.
func TestScriptZeroWindowSegmentAckProcessed(t *testing.T) {
	p := newScriptPeer(t, scriptOptions{Config: func(c *Config) {
		c.TCPReceiveBuffer, c.TCPSendBuffer = 4096, 4096
	}})
	c := p.Connect()
	// ustack sends a send buffer's worth, which the peer does not ACK yet.
	out := bytes.Repeat([]byte("o"), 4096)
	if _, err := c.Write(out); err != nil {
		t.Fatal(err)
	}
	got := 0
	for got < len(out) {
		s, ok := p.next(3 * time.Second)
		if !ok {
			t.Fatalf("ustack sent %d of %d bytes", got, len(out))
		}
		got += len(s.Payload)
	}
	sndNxt := uint32(1 + len(out))
	// A further Write blocks: the send buffer is full of unacknowledged
	// data.
	wrote := make(chan error, 1)
	go func() {
		_, err := c.Write([]byte("x"))
		wrote <- err
	}()
	// The peer fills ustack's receive window, acknowledging nothing.
	win := p.stackSyn.Win
	nxt := uint32(1)
	for i := 0; win != zeroWin; i++ {
		if i > 100 {
			t.Fatal("the window did not close")
		}
		n := min(win, 1000)
		p.Send(seg{Flags: "A", Seq: nxt, Ack: 1, Payload: bytes.Repeat([]byte{'i'}, n)})
		nxt += uint32(n)
		// The ACK may ride on a retransmission of ustack's data.
		win = awaitSegment(t, p, func(s seg) bool { return s.Ack == nxt }).Win
	}
	select {
	case err := <-wrote:
		t.Fatalf("Write returned (%v) with the send buffer full", err)
	default:
	}
	// Zero window. Data at RCV.NXT with an ACK for all ustack sent.
	p.Send(seg{Flags: "A", Seq: nxt, Ack: sndNxt, Payload: []byte("!")})
	// The ACK freed the send buffer: the blocked byte goes out (after
	// the duplicate ACK refusing "!", which may ride on it).
	x := awaitSegment(t, p, func(s seg) bool { return len(s.Payload) > 0 && s.Seq >= sndNxt })
	if string(x.Payload) != "x" || x.Seq != sndNxt || x.Ack != nxt {
		t.Fatalf("after the ACK: %v, want the blocked byte at seq %d", x, sndNxt)
	}
	select {
	case err := <-wrote:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(3 * time.Second):
		t.Fatal("Write still blocked")
	}
}

// awaitSegment returns the next segment ustack sends that
// matches ok, passing over the others, such as retransmissions of its
// data below sndNxt (a tail-loss probe or timeout can send one at any
// time while the peer withholds its ACK); it fails the test after 3 s
// without one.
func awaitSegment(t *testing.T, p *scriptPeer, ok func(seg) bool) seg {
	t.Helper()
	deadline := time.Now().Add(3 * time.Second)
	for {
		s, got := p.next(time.Until(deadline))
		if !got {
			t.Fatal("no expected segment from ustack in 3s")
		}
		if ok(s) {
			return s
		}
	}
}

// TestRFCSACKBlocksInAnyOrder: after the first, an ACK's SACK blocks come
// in no particular order (RFC 2018 §4), so an island can be reported
// only below a higher one. ustack takes every block: once RACK finds the
// holes lost (RFC 8985), it resends the holes and never a segment the
// peer SACKed, whichever place its block had.
func TestRFCSACKBlocksInAnyOrder(t *testing.T) {
	p := newScriptPeer(t, scriptOptions{})
	c := p.Connect()
	data := make([]byte, 10*1000)
	for i := range data {
		data[i] = byte(i / 997)
	}
	starts, _ := p.writeFlight(c, data)
	if len(starts) < 6 {
		t.Fatalf("ustack sent %d bytes in %d segments, want 6 or more", len(data), len(starts))
	}
	// Holes at segments 0, 1 and 3; segment 2 is an island only ever
	// reported second, below segments 4 and 5. What follows 5 is left
	// unacknowledged (a tail loss probe may resend it).
	end := func(i int) uint32 { return starts[i+1] }
	sacked := func(seq uint32) bool {
		return seq >= starts[2] && seq < end(2) || seq >= starts[4] && seq < end(5)
	}
	p.Send(seg{Flags: "A", Seq: 1, Ack: 1, SACK: [][2]uint32{{starts[4], end(5)}, {starts[2], end(2)}}})
	holes := map[uint32]bool{starts[0]: false, starts[1]: false, starts[3]: false}
	for n := 0; n < len(holes); {
		s, ok := p.next(scriptWait)
		if !ok {
			t.Fatalf("ustack resent %v of the holes, then nothing", holes)
		}
		if len(s.Payload) == 0 {
			continue
		}
		if sacked(s.Seq) {
			t.Fatalf("ustack resent SACKed data at %d", s.Seq)
		}
		if !bytes.Equal(s.Payload, data[s.Seq-1:s.Seq-1+uint32(len(s.Payload))]) {
			t.Fatalf("resent %d bytes at %d that are not the data sent there", len(s.Payload), s.Seq)
		}
		if done, hole := holes[s.Seq]; hole && !done {
			holes[s.Seq] = true
			n++
		}
	}
	p.Send(seg{Flags: "A", Seq: 1, Ack: uint32(len(data)) + 1})
}

// TestScriptACKBatchActsOnItsLastACK: two ACKs reach ustack in one
// receive batch, as a burst that waited on the RX ring does. The first
// SACKs segments 5 to 7 of 10, which alone has RACK take 0 to 4 for lost
// (three segments SACKed above them: no reordering window) and resend
// them; the second, right behind it, acknowledges 0 to 7 cumulatively.
// Loss detection and sending wait for a batch's last ACK, so nothing
// below 7 is resent: the first ACK's view is stale.
//
// With 64 copies of the first ACK in front (duplicate ACKs, three of
// which alone start fast retransmit), the last ACK is in the RX ring's
// second batch: the worker takes a full batch's successors before TCP
// runs (maxRxBatches), so it is seen as well.
//
// In the third case an application's call takes and releases the
// connection's lock between the two batches, as a Read, a Write or a
// timer (a tail loss probe, say) may on a busy machine. Upstream
// netstack then hands the first batch's segments to its processor
// goroutine, which acts on them before the second batch is in (the
// second case fails that way about once in 300 runs under load). The
// carried netstack leaves them to the worker's RunDeferred after its
// burst, whoever releases the lock.
func TestScriptACKBatchActsOnItsLastACK(t *testing.T) {
	for _, repeat := range []int{0, link.BatchSize} {
		t.Run(fmt.Sprintf("%d duplicates", repeat), func(t *testing.T) { testACKBatch(t, repeat, false) })
	}
	t.Run("64 duplicates, lock taken between the batches", func(t *testing.T) { testACKBatch(t, link.BatchSize, true) })
}

func testACKBatch(t *testing.T, repeat int, lockBetween bool) {
	// A slow handshake puts ustack's probe timeout near 60 ms: on a busy
	// machine the burst may come some milliseconds after the flight, and
	// with a 2 ms timeout a tail loss probe, then a recovery probe of
	// segment 0, went out first (a resend this test would blame on the
	// burst).
	p := newScriptPeer(t, scriptOptions{HandshakeRTT: 30 * time.Millisecond})
	c := p.Connect()
	if lockBetween {
		ep := c.(*tcpConn).ep
		var once sync.Once
		hook := func() {
			once.Do(func() {
				ep.LockUser()
				ep.UnlockUser()
				// Give a processor goroutine handed the segments
				// the time to act on them.
				time.Sleep(20 * time.Millisecond)
			})
		}
		p.s.ep.SetBetweenRxBatches(hook)
		defer p.s.ep.SetBetweenRxBatches(nil)
	}
	// Ten segments of the MSS ustack uses here (1424), its initial
	// window.
	data := make([]byte, 10*1424)
	starts, _ := p.writeFlight(c, data)
	if len(starts) < 10 {
		t.Fatalf("ustack sent %d bytes in %d segments, want 10", len(data), len(starts))
	}
	end7 := starts[8]
	first := seg{Flags: "A", Seq: 1, Ack: 1, SACK: [][2]uint32{{starts[5], end7}}}
	batch := []seg{first}
	for range repeat {
		batch = append(batch, first)
	}
	p.SendBatch(append(batch, seg{Flags: "A", Seq: 1, Ack: end7})...)
	deadline := time.Now().Add(100 * time.Millisecond)
	for {
		s, ok := p.next(time.Until(deadline))
		if !ok {
			break
		}
		if len(s.Payload) > 0 && s.Seq < end7 {
			t.Fatalf("ustack resent %d bytes at %d, acknowledged by the last ACK of the burst", len(s.Payload), s.Seq)
		}
	}
	p.Send(seg{Flags: "A", Seq: 1, Ack: uint32(len(data)) + 1})
}

// TestScriptFINLostInRecovery: ustack writes four segments and closes; the
// first segment is lost, and once it is resent the peer acknowledges all
// the data but never the FIN, which stays lost. The FIN, outside the
// pipe's count of segments (it carries no data), must still be resent by
// the retransmission timer once the recovery probes are spent (RFC 6298
// §5.1: the timer runs while anything is unacknowledged). Armed only
// with segments counted in flight, a connection closing through loss
// (TestMemFaultsIntegrity/corrupt2) would stall in LAST-ACK with no
// timer at all.
func TestScriptFINLostInRecovery(t *testing.T) {
	p := newScriptPeer(t, scriptOptions{})
	c := p.Connect()
	data := make([]byte, 4*1424)
	if _, err := c.Write(data); err != nil {
		t.Fatal(err)
	}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	var starts []uint32
	var fin uint32
	for fin == 0 {
		s, ok := p.next(scriptWait)
		if !ok {
			t.Fatalf("ustack sent %d segments and no FIN", len(starts))
		}
		if len(s.Payload) > 0 && (len(starts) == 0 || s.Seq > starts[len(starts)-1]) {
			starts = append(starts, s.Seq)
		}
		if strings.Contains(s.Flags, "F") {
			fin = s.Seq + uint32(len(s.Payload))
		}
	}
	if len(starts) < 4 {
		t.Fatalf("ustack sent the data in %d segments, want 4 or more", len(starts))
	}
	end := uint32(len(data)) + 1
	p.Send(seg{Flags: "A", Seq: 1, Ack: 1, SACK: [][2]uint32{{starts[1], end}}})
	p.awaitResend(1, "the lost first segment")
	p.Send(seg{Flags: "A", Seq: 1, Ack: end})
	// Recovery probes (at most four) and then the retransmission
	// timer resend the FIN; two more than the probes show the timer.
	fins := 0
	for fins < 6 {
		s, ok := p.next(scriptWait)
		if !ok {
			t.Fatalf("ustack sent the FIN %d times after the data was acknowledged, then nothing for %v", fins, scriptWait)
		}
		if strings.Contains(s.Flags, "F") && s.Seq+uint32(len(s.Payload)) == fin {
			fins++
		}
	}
	p.Send(seg{Flags: "A", Seq: 1, Ack: fin + 1})
}

// TestScriptLateOriginalKeepsRACKClock: segments 0-2 of a ten-segment
// flight are taken for lost (3-5 SACKed) and resent; then an ACK
// acknowledges 0-5 cumulatively with a TSecr that echoes the first
// sending, not the resend: the originals arrived late. Timing segment 2
// from its resend would set RACK's clock after segments 6-9, sent with
// the originals and not yet acknowledged, and resend them all at once;
// with the TSecr check (RFC 7323 §4.3: the echo names the sending that
// arrived) they stay in flight (probes may resend 6 or 9 later).
func TestScriptLateOriginalKeepsRACKClock(t *testing.T) {
	p := newScriptPeer(t, scriptOptions{Timestamps: true})
	c := p.Connect()
	data := make([]byte, 10*1412)
	starts, firstTS := p.writeFlight(c, data)
	if len(starts) != 10 {
		t.Fatalf("ustack sent the data in %d segments, want 10", len(starts))
	}
	// The resends must carry a later TSval (a millisecond clock).
	time.Sleep(3 * time.Millisecond)
	p.Send(seg{Flags: "A", Seq: 1, Ack: 1, SACK: [][2]uint32{{starts[3], starts[6]}}, TSecr: firstTS})
	resent := map[uint32]bool{}
	for len(resent) < 3 {
		s, ok := p.next(scriptWait)
		if !ok {
			t.Fatalf("ustack resent %v of segments 0-2", resent)
		}
		if len(s.Payload) > 0 && s.Seq < starts[3] {
			resent[s.Seq] = true
		}
	}
	// Long enough after the resends for their round trip to count
	// (the check against the minimum RTT lets it through).
	time.Sleep(3 * time.Millisecond)
	p.Send(seg{Flags: "A", Seq: 1, Ack: starts[6], TSecr: firstTS})
	deadline := time.Now().Add(50 * time.Millisecond)
	for {
		s, ok := p.next(time.Until(deadline))
		if !ok {
			break
		}
		// A recovery probe may resend the first unacknowledged
		// segment, 6, and a tail loss probe the last, 9; RACK taking
		// 6-9 for lost resends 7 and 8 as well.
		if len(s.Payload) > 0 && (s.Seq == starts[7] || s.Seq == starts[8]) {
			t.Fatalf("ustack resent segment at %d (7 and 8 are in flight, sent with the late originals)", s.Seq)
		}
	}
	p.Send(seg{Flags: "A", Seq: 1, Ack: uint32(len(data)) + 1})
}

// TestScriptLossKeepsBBRWindow: one segment of a flight lost. Reno
// halves its window when RACK finds the loss (RFC 5681 §3.2: ssthresh is
// half the flight, the window ssthresh plus three); BBR does not take
// random loss for congestion, and for the first round of recovery sends
// one segment for each one delivered (packet conservation, as Linux's
// tcp_bbr.c), so its window is the flight the SACK says was delivered.
func TestScriptLossKeepsBBRWindow(t *testing.T) {
	for _, tc := range []struct {
		cc     CongestionControl
		ok     func(cwnd, flight int) bool
		expect string
	}{
		{CongestionReno, func(cwnd, flight int) bool { return cwnd <= flight/2+3 }, "at most half the flight plus 3"},
		{CongestionBBR, func(cwnd, flight int) bool { return cwnd >= flight-1 }, "at least the flight delivered"},
	} {
		t.Run(string(tc.cc), func(t *testing.T) {
			p := newScriptPeer(t, scriptOptions{Config: func(c *Config) { c.CongestionControl = tc.cc }})
			c := p.Connect()
			data := make([]byte, 256<<10)
			go c.Write(data)
			// The initial window, acknowledged in one ACK: both grow
			// the window by what it delivered (slow start, BBR's
			// STARTUP), and send the next flight.
			var end uint32
			for n := 0; n < 10; n++ {
				s, ok := p.next(scriptWait)
				if !ok {
					t.Fatalf("ustack sent %d segments of its initial window", n)
				}
				end = s.Seq + uint32(len(s.Payload))
			}
			p.Send(seg{Flags: "A", Seq: 1, Ack: end})
			// The window is 20 segments now; take them (what the
			// probe timer resends meanwhile is not new).
			const flight = 20
			var starts []uint32
			for len(starts) < flight {
				s, ok := p.next(scriptWait)
				if !ok {
					t.Fatalf("ustack sent a second flight of %d segments, want %d", len(starts), flight)
				}
				if len(s.Payload) > 0 && s.Seq >= end {
					starts = append(starts, s.Seq)
					end = s.Seq + uint32(len(s.Payload))
				}
			}
			// Everything but the flight's first segment arrived.
			p.Send(seg{Flags: "A", Seq: 1, Ack: starts[0], SACK: [][2]uint32{{starts[1], end}}})
			p.awaitResend(starts[0], "the lost segment")
			var info tcpip.TCPInfoOption
			if err := c.(*tcpConn).ep.GetSockOpt(&info); err != nil {
				t.Fatal(err)
			}
			t.Logf("%s: flight %d, window %d in recovery", tc.cc, flight, info.SndCwnd)
			if !tc.ok(int(info.SndCwnd), flight) {
				t.Errorf("%s: window %d after losing 1 of %d segments, want %s", tc.cc, info.SndCwnd, flight, tc.expect)
			}
		})
	}
}

// TestScriptSimultaneousOpen: ustack dials, and the peer, dialing at the
// same moment, sends its own SYN instead of a SYN-ACK (RFC 9293, section
// 3.5, figure 8): ustack answers with a SYN-ACK and the connection opens
// on the peer's SYN-ACK, as Linux's does.
func TestScriptSimultaneousOpen(t *testing.T) {
	p := newScriptPeer(t, scriptOptions{Timestamps: true, WScale: 7})
	dialed := p.start(func() (net.Conn, error) { return p.s.Dial("tcp4", p.local.String()) })
	p.Expect(seg{Flags: "S", Seq: 0})
	p.Send(seg{Flags: "S", Seq: 0})
	p.Expect(seg{Flags: "SA", Seq: 0, Ack: 1})
	p.Send(seg{Flags: "SA", Seq: 0, Ack: 1})
	c := dialed("the dial did not complete on a simultaneous open")
	if _, err := c.Write([]byte("x")); err != nil {
		t.Fatal(err)
	}
	p.Expect(seg{Flags: "PA", Seq: 1, Ack: 1, Payload: []byte("x")})
}
