package fastflow

import (
	"bytes"
	"math/rand/v2"
	"testing"

	"github.com/ustack-dev/ustack/internal/third_party/gvisor/pkg/tcpip/header"
)

// TestCutChecksums cuts segments of every payload length up to an MSS at
// ring positions that make the payload wrap, on odd and even splits, and
// has gVisor's header package check both checksums and every field.
func TestCutChecksums(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for n := 0; n <= 1448; n++ {
		// Start the ring so that the payload wraps after k bytes.
		k := uint32(rng.IntN(n + 1))
		a, _ := newPair(t, 4096-k-1, 77) // SND.NXT ≡ −k mod the ring
		payload := make([]byte, n)
		for i := range payload {
			payload[i] = byte(rng.Uint32())
		}
		clk := Clock{Us: uint32(n), Ms: uint32(n)}
		var fr []byte
		if n == 0 {
			fr = make([]byte, 128)
			m, r := a.f.Ack(fr, clk)
			if r != OK {
				t.Fatal(r)
			}
			fr = fr[:m]
		} else {
			fr = a.send(t, payload, clk)
		}
		p := parse(t, fr)
		tcp := p.tcp
		switch {
		case !bytes.Equal(p.payload, payload):
			t.Fatalf("%d bytes (wrap at %d): payload differs", n, k)
		case tcp.SequenceNumber() != 4096-k || tcp.AckNumber() != 78:
			t.Fatalf("%d bytes: seq %d ack %d", n, tcp.SequenceNumber(), tcp.AckNumber())
		case tcp.SourcePort() != portA || tcp.DestinationPort() != portB:
			t.Fatalf("ports %d→%d", tcp.SourcePort(), tcp.DestinationPort())
		case p.ip.SourceAddress().As4() != ipA || p.ip.DestinationAddress().As4() != ipB || p.ip.TTL() != 64:
			t.Fatalf("IP %v→%v TTL %d", p.ip.SourceAddress(), p.ip.DestinationAddress(), p.ip.TTL())
		case p.ip.Flags() != header.IPv4FlagDontFragment:
			t.Fatalf("IP flags %#x", p.ip.Flags())
		case !p.opts.TS || p.opts.TSVal != 5000+uint32(n) || p.opts.TSEcr != 1000:
			t.Fatalf("timestamps %+v", p.opts)
		case tcp.WindowSize() != 512:
			t.Fatalf("window %d", tcp.WindowSize())
		}
		want := header.TCPFlagAck
		if n > 0 {
			want |= header.TCPFlagPsh
		}
		if tcp.Flags() != want {
			t.Fatalf("%d bytes: flags %v, want %v", n, tcp.Flags(), want)
		}
	}
}

// TestCutWithoutTimestamps covers a connection that did not negotiate
// RFC 7323 timestamps: a 20-byte TCP header, and a predicate that expects
// one.
func TestCutWithoutTimestamps(t *testing.T) {
	sa, sb := states(1, 2)
	sa.TS, sb.TS = false, false
	a, b := newEnd(t, sa), newEnd(t, sb)
	fr := a.send(t, []byte("hello"), Clock{})
	p := parse(t, fr)
	if p.tcp.DataOffset() != 20 || p.opts.TS || len(fr) != HeaderLen-tsOptLen+5 {
		t.Fatalf("header %d bytes, TS %v", p.tcp.DataOffset(), p.opts.TS)
	}
	in, r := b.f.Receive(fr, Clock{})
	if r != OK || string(in.Payload) != "hello" {
		t.Fatalf("%v %q", r, in.Payload)
	}
}

// TestCutSegments cuts a write larger than one MSS into MSS-sized
// segments, PSH on the last only.
func TestCutSegments(t *testing.T) {
	a, b := newPair(t, 1, 2)
	data := make([]byte, 3000)
	for i := range data {
		data[i] = byte(i)
	}
	a.f.Write(a.ring, data)
	var got []byte
	for i, want := range []int{1448, 1448, 104} {
		fr := make([]byte, 2048)
		n, r := a.f.Cut(fr, a.ring, Clock{})
		if r != OK || n != HeaderLen+want {
			t.Fatalf("segment %d: %d bytes, %v", i, n, r)
		}
		p := parse(t, fr[:n])
		if psh := p.tcp.Flags()&header.TCPFlagPsh != 0; psh != (i == 2) {
			t.Errorf("segment %d: PSH %v", i, psh)
		}
		in, r := b.f.Receive(fr[:n], Clock{})
		if r != OK {
			t.Fatalf("segment %d: receive %v", i, r)
		}
		got = append(got, in.Payload...)
	}
	if !bytes.Equal(got, data) {
		t.Error("bytes differ")
	}
	if n, r := a.f.Cut(make([]byte, 2048), a.ring, Clock{}); n != 0 || r != OK {
		t.Errorf("nothing left to cut: %d, %v", n, r)
	}
}

// TestSendLimits covers the transmit side's exits: the allowance (one
// comparison), the in-flight record, the ring and the frame.
func TestSendLimits(t *testing.T) {
	t.Run("window-limited", func(t *testing.T) {
		a, _ := newPair(t, 1, 2)
		a.f.SetCwnd(1000)
		a.f.Write(a.ring, make([]byte, 1001))
		before := *a.f
		if n, r := a.f.Cut(make([]byte, 2048), a.ring, Clock{}); n != 0 || r != WindowLimited {
			t.Fatalf("%d, %v", n, r)
		}
		if *a.f != before {
			t.Error("flow changed")
		}
	})
	t.Run("inflight-full", func(t *testing.T) {
		a, _ := newPair(t, 1, 2)
		for i := 0; i < maxInflight; i++ {
			a.send(t, []byte("x"), Clock{})
		}
		a.f.Write(a.ring, []byte("x"))
		if n, r := a.f.Cut(make([]byte, 2048), a.ring, Clock{}); n != 0 || r != InflightFull {
			t.Fatalf("%d, %v", n, r)
		}
		if st := a.f.Export(); len(st.InFlight) != maxInflight || st.InFlight[0].End != 3 || st.SndNxt-st.SndUna != maxInflight {
			t.Errorf("export %+v", st.InFlight)
		}
	})
	t.Run("ring-full", func(t *testing.T) {
		a, _ := newPair(t, 1, 2)
		if n, r := a.f.Write(a.ring, make([]byte, 5000)); n != 4096 || r != RingFull {
			t.Fatalf("%d, %v", n, r)
		}
		if n, r := a.f.Write(a.ring, []byte("x")); n != 0 || r != RingFull {
			t.Fatalf("%d, %v", n, r)
		}
	})
	t.Run("frame-too-small", func(t *testing.T) {
		a, _ := newPair(t, 1, 2)
		a.f.Write(a.ring, make([]byte, 100))
		if n, r := a.f.Cut(make([]byte, HeaderLen+99), a.ring, Clock{}); n != 0 || r != FrameTooSmall {
			t.Fatalf("%d, %v", n, r)
		}
	})
}

// TestRoundTripWrap runs request and reply round trips across the 2³²
// wrap of both sequence spaces, and of the timestamp and microsecond
// clocks, checking every frame with gVisor's parser.
func TestRoundTripWrap(t *testing.T) {
	a, b := newPair(t, 1<<32-3000, 1<<32-2000)
	clk := Clock{Us: 1<<32 - 500, Ms: 1<<32 - 5 - 5000}
	// Each side last saw the other's TSval of a millisecond ago; a's
	// TSval wraps after five rounds.
	b.f.tsRecent = a.f.tsOffset + clk.Ms - 1
	a.f.tsRecent = b.f.tsOffset + clk.Ms - 1
	for i := 0; i < 200; i++ {
		req := bytes.Repeat([]byte{byte(i)}, 1+i*7%64)
		fr := a.send(t, req, clk)
		parse(t, fr)
		in, r := b.f.Receive(fr, clk)
		if r != OK || !bytes.Equal(in.Payload, req) {
			t.Fatalf("round %d: server %v", i, r)
		}
		clk.Us += 7
		reply := b.send(t, in.Payload, clk)
		p := parse(t, reply)
		if p.tcp.AckNumber() != b.f.rcvNxt {
			t.Fatalf("round %d: reply ACKs %d, want %d", i, p.tcp.AckNumber(), b.f.rcvNxt)
		}
		in, r = a.f.Receive(reply, clk)
		if r != OK || !bytes.Equal(in.Payload, req) || in.Acked != uint32(len(req)) {
			t.Fatalf("round %d: client %v, acked %d", i, r, in.Acked)
		}
		if a.f.InFlight() != 0 || a.f.fltLen != 0 {
			t.Fatalf("round %d: %d bytes in flight", i, a.f.InFlight())
		}
		clk.Us += 13
		clk.Ms++
	}
	if a.f.sndNxt > 1<<31 || b.f.sndNxt > 1<<31 {
		t.Fatalf("no wrap: SND.NXT %d, %d", a.f.sndNxt, b.f.sndNxt)
	}
	if want := a.f.tsOffset + clk.Ms - 1; b.f.tsRecent != want || want > 1<<31 {
		t.Errorf("server TS.Recent %d, want %d after the wrap", b.f.tsRecent, want)
	}
	if srtt, _, _ := a.f.RTT(); srtt != 7 {
		t.Errorf("client SRTT %d µs, want 7", srtt)
	}
}

// TestRightEdgeNeverLeft shrinks and grows the receive space at random,
// against window scales 0–14 and data arriving in between, and checks that
// no advertisement moves the right edge left (RFC 7323 §2.4) and that an
// edge ahead of the space is held exactly, not overshot.
func TestRightEdgeNeverLeft(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for shift := uint8(0); shift <= 14; shift++ {
		sa, sb := states(1<<32-100_000, 7)
		sa.RcvShift, sb.SndShift = shift, shift
		sa.RcvSpace = min(sa.RcvSpace, 0xffff<<shift)
		sa.RcvEdge = sa.RcvNxt + sa.RcvSpace
		sb.SndWnd = sa.RcvSpace
		a, b := newEnd(t, sa), newEnd(t, sb)
		fr := make([]byte, 2048)
		for i := 0; i < 2000; i++ {
			prev := a.f.rcvEdge
			a.f.SetRcvSpace(uint32(rng.IntN(int(min(1<<20, 0xffff<<shift)))))
			n, r := a.f.Ack(fr, Clock{})
			if r != OK {
				t.Fatal(r)
			}
			p := parse(t, fr[:n])
			edge := p.tcp.AckNumber() + uint32(p.tcp.WindowSize())<<shift
			if seqLT(edge, prev) {
				t.Fatalf("shift %d: edge %d left of %d", shift, edge, prev)
			}
			if edge != a.f.rcvEdge {
				t.Fatalf("shift %d: advertised %d, recorded %d", shift, edge, a.f.rcvEdge)
			}
			if seqLT(prev, a.f.rcvNxt+a.f.rcvSpace) == false && edge-prev >= 1<<shift {
				t.Fatalf("shift %d: edge %d overshoots %d by a unit", shift, edge, prev)
			}
			// Data from b, within what a advertised.
			if room := a.f.rcvEdge - a.f.rcvNxt; room > 0 && rng.IntN(2) == 0 {
				m := min(uint32(rng.IntN(1448)+1), room)
				b.f.sndWnd = room
				b.f.predFlags = b.f.predFlags&^0xffff | uint32(p.tcp.WindowSize())
				b.f.room = m
				b.f.Write(b.ring, make([]byte, m))
				c, r := b.f.Cut(fr, b.ring, Clock{})
				if r != OK {
					t.Fatalf("shift %d: cut %v (room %d)", shift, r, room)
				}
				b.f.sndUna = b.f.sndNxt // as if acknowledged
				b.f.fltLen = 0
				if _, r := a.f.Receive(fr[:c], Clock{}); r != OK && r != ShrunkWindow && r != ZeroWindow {
					t.Fatalf("shift %d: receive %v", shift, r)
				}
			}
		}
	}
}
