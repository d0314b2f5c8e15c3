package fastflow

import (
	"bytes"
	"testing"

	"github.com/ustack-dev/ustack/internal/third_party/gvisor/pkg/tcpip/header"
)

// predicted returns a client that has 200 bytes in flight, and the
// segment its server would answer with: in order, acknowledging all of
// it, window unchanged, timestamps in Linux's layout.
func predicted(t *testing.T) (*end, seg) {
	a, _ := newPair(t, 1000, 5000)
	a.send(t, make([]byte, 200), Clock{Us: 10, Ms: 1})
	return a, seg{
		seq: a.f.rcvNxt, ack: a.f.sndNxt, flags: header.TCPFlagAck | header.TCPFlagPsh,
		wnd: 512, ts: true, tsVal: 2000, tsEcr: 5001, payload: []byte("reply"),
	}
}

// TestReceiveReasons drives each of the predicate's exits: a segment that
// differs from the predicted one in one way returns its Reason and leaves
// the flow exactly as it was.
func TestReceiveReasons(t *testing.T) {
	tests := []struct {
		name string
		mod  func(f *Flow, s *seg)
		want Reason
	}{
		{"predicted", func(*Flow, *seg) {}, OK},
		{"pure ACK of everything", func(_ *Flow, s *seg) { s.payload = nil; s.flags = header.TCPFlagAck }, OK},
		{"partial ACK", func(f *Flow, s *seg) { s.ack = f.sndUna + 40 }, OK},
		{"window grows", func(_ *Flow, s *seg) { s.wnd = 1024 }, OK},
		{"SYN", func(_ *Flow, s *seg) { s.flags |= header.TCPFlagSyn }, ControlFlags},
		{"FIN", func(_ *Flow, s *seg) { s.flags |= header.TCPFlagFin }, ControlFlags},
		{"RST", func(_ *Flow, s *seg) { s.flags = header.TCPFlagRst | header.TCPFlagAck }, ControlFlags},
		{"URG", func(_ *Flow, s *seg) { s.flags |= header.TCPFlagUrg }, ControlFlags},
		{"no ACK", func(_ *Flow, s *seg) { s.flags = header.TCPFlagPsh }, ControlFlags},
		{"ECE", func(_ *Flow, s *seg) { s.flags |= header.TCPFlagEce }, ECN},
		{"CWR", func(_ *Flow, s *seg) { s.flags |= header.TCPFlagCwr }, ECN},
		{"no timestamps", func(_ *Flow, s *seg) { s.ts = false }, OptionsChange},
		{"timestamps in another layout", func(_ *Flow, s *seg) {
			s.opts = []byte{8, 10, 0, 0, 7, 208, 0, 0, 19, 137, 1, 1}
		}, OptionsChange},
		{"SACK block", func(f *Flow, s *seg) {
			s.opts = []byte{1, 1, 8, 10, 0, 0, 7, 208, 0, 0, 19, 137, 1, 1, 5, 10, 0, 0, 0, 0, 0, 0, 0, 0}
		}, SACK},
		{"SACK in TS-sized options", func(f *Flow, s *seg) {
			s.opts = []byte{1, 1, 5, 10, 0, 0, 0, 0, 0, 0, 0, 0}
		}, SACK},
		{"PAWS", func(f *Flow, s *seg) { s.tsVal = f.tsRecent - 1 }, PAWS},
		{"PAWS across wrap", func(f *Flow, s *seg) { s.tsVal = f.tsRecent - 1<<31 + 1 }, PAWS},
		{"out of order", func(f *Flow, s *seg) { s.seq = f.rcvNxt + 10 }, OutOfOrder},
		{"old data", func(f *Flow, s *seg) { s.seq = f.rcvNxt - 10 }, OldData},
		{"keepalive", func(f *Flow, s *seg) { s.seq = f.rcvNxt - 1; s.payload = nil }, OldData},
		{"ACK of unsent", func(f *Flow, s *seg) { s.ack = f.sndNxt + 1 }, AckUnsent},
		{"old ACK", func(f *Flow, s *seg) { s.ack = f.sndUna - 1 }, AckOld},
		{"beyond the window", func(f *Flow, s *seg) { f.rcvEdge = f.rcvNxt + 4 }, BeyondWindow},
		{"dup ACK", func(f *Flow, s *seg) { s.ack = f.sndUna; s.payload = nil; s.flags = header.TCPFlagAck }, DupAck},
		{"zero window", func(_ *Flow, s *seg) { s.wnd = 0 }, ZeroWindow},
		{"shrunk window", func(_ *Flow, s *seg) { s.wnd = 500 }, ShrunkWindow},
		{"smaller window as the ACK moves", func(_ *Flow, s *seg) { s.wnd = 511 }, OK},
		{"window moves with the ACK", func(f *Flow, s *seg) { s.wnd = 511; s.ack = f.sndUna + 1<<7 }, OK},
		{"IP options", func(_ *Flow, s *seg) { s.ipOptions = true }, Malformed},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a, s := predicted(t)
			tt.mod(a.f, &s)
			before := *a.f
			in, r := a.f.Receive(s.build(), Clock{Us: 20, Ms: 2})
			if r != tt.want {
				t.Fatalf("reason %v, want %v", r, tt.want)
			}
			if r != OK {
				if *a.f != before {
					t.Errorf("flow changed on %v:\n got %+v\nwant %+v", r, *a.f, before)
				}
				return
			}
			if !bytes.Equal(in.Payload, s.payload) {
				t.Errorf("payload %q, want %q", in.Payload, s.payload)
			}
			if in.Acked != s.ack-before.sndUna || a.f.sndUna != s.ack {
				t.Errorf("acked %d, SND.UNA %d; want %d, %d", in.Acked, a.f.sndUna, s.ack-before.sndUna, s.ack)
			}
			if a.f.rcvNxt != s.seq+uint32(len(s.payload)) {
				t.Errorf("RCV.NXT %d, want %d", a.f.rcvNxt, s.seq+uint32(len(s.payload)))
			}
		})
	}
}

// TestReceiveTruncated feeds every prefix of a predicted frame: none may
// panic, and only the whole frame is accepted.
func TestReceiveTruncated(t *testing.T) {
	a, s := predicted(t)
	fr := s.build()
	for n := 0; n < len(fr); n++ {
		f := *a.f
		if _, r := f.Receive(fr[:n], Clock{}); r == OK {
			t.Errorf("%d of %d bytes accepted", n, len(fr))
		}
	}
	// Ethernet padding after the IP packet is not payload.
	in, r := a.f.Receive(append(fr, 0, 0, 0, 0), Clock{})
	if r != OK || !bytes.Equal(in.Payload, s.payload) {
		t.Errorf("padded frame: %v, payload %q", r, in.Payload)
	}
}

// TestReceiveWindowUpdate checks that an accepted window change becomes
// the prediction, so the next segment with it takes the one-comparison
// path, and that a segment older than the window's (SND.WL1/WL2) does not
// set it.
func TestReceiveWindowUpdate(t *testing.T) {
	a, s := predicted(t)
	s.wnd = 1024
	s.payload = nil
	if _, r := a.f.Receive(s.build(), Clock{}); r != OK {
		t.Fatal(r)
	}
	if a.f.sndWnd != 1024<<7 || a.f.predFlags&0xffff != 1024 {
		t.Fatalf("SND.WND %d, predicted window %d", a.f.sndWnd, a.f.predFlags&0xffff)
	}
	if a.f.room != a.f.cwnd {
		t.Errorf("allowance %d with nothing in flight, want cwnd %d", a.f.room, a.f.cwnd)
	}
	// An older ACK (WL2 ahead of it) in the same sequence place carries a
	// window the flow must ignore: reordered ACKs do not shrink it.
	a.send(t, make([]byte, 10), Clock{})
	old := s
	old.ack = a.f.sndUna
	old.wnd = 2048
	old.flags = header.TCPFlagAck
	a.f.sndWL2 = a.f.sndUna + 1 // as if a newer ACK had set the window
	if _, r := a.f.Receive(old.build(), Clock{}); r != OK {
		t.Fatal(r)
	}
	if a.f.sndWnd != 1024<<7 {
		t.Errorf("SND.WND %d taken from an older segment", a.f.sndWnd)
	}
}

// TestReceiveTSRecent checks RFC 7323 §4.3: TS.Recent follows a segment
// only when it starts at or before Last.ACK.sent, judged at its arrival.
func TestReceiveTSRecent(t *testing.T) {
	a, s := predicted(t)
	s.tsVal = 3000
	if _, r := a.f.Receive(s.build(), Clock{}); r != OK {
		t.Fatal(r)
	}
	if a.f.tsRecent != 3000 {
		t.Fatalf("TS.Recent %d, want 3000", a.f.tsRecent)
	}
	// Nothing acknowledged the reply yet: Last.ACK.sent is before this
	// segment, which must not move TS.Recent.
	s2 := s
	s2.seq = a.f.rcvNxt
	s2.tsVal = 4000
	if _, r := a.f.Receive(s2.build(), Clock{}); r != OK {
		t.Fatal(r)
	}
	if a.f.tsRecent != 3000 {
		t.Errorf("TS.Recent %d moved by a segment after Last.ACK.sent", a.f.tsRecent)
	}
}

// TestReceiveAckOwed checks the ACK rules the caller acts on: one segment
// of data owes a delayed ACK, more than one MSS an immediate one, and a
// segment sent clears both.
func TestReceiveAckOwed(t *testing.T) {
	a, s := predicted(t)
	s.payload = make([]byte, 1000)
	in, r := a.f.Receive(s.build(), Clock{Us: 100})
	if r != OK || in.AckNow {
		t.Fatalf("%v, AckNow %v after 1000 bytes", r, in.AckNow)
	}
	if owed, due := a.f.AckOwed(); !owed || due != 100+DelayedAck {
		t.Fatalf("owed %v due %d", owed, due)
	}
	s.seq = a.f.rcvNxt
	s.ack = a.f.sndNxt
	in, r = a.f.Receive(s.build(), Clock{Us: 200})
	if r != OK || !in.AckNow {
		t.Fatalf("%v, AckNow %v after 2000 bytes", r, in.AckNow)
	}
	if _, due := a.f.AckOwed(); due != 100+DelayedAck {
		t.Errorf("deadline moved to %d by a later segment", due)
	}
	fr := make([]byte, HeaderLen)
	n, r := a.f.Ack(fr, Clock{Us: 300})
	if r != OK || n != HeaderLen {
		t.Fatalf("ack: %d, %v", n, r)
	}
	p := parse(t, fr[:n])
	if p.tcp.AckNumber() != a.f.rcvNxt || p.tcp.Flags() != header.TCPFlagAck || len(p.payload) != 0 {
		t.Errorf("pure ACK %d flags %v, want %d", p.tcp.AckNumber(), p.tcp.Flags(), a.f.rcvNxt)
	}
	if owed, _ := a.f.AckOwed(); owed || a.f.lastAckSent != a.f.rcvNxt {
		t.Errorf("still owed after the ACK")
	}
}

// TestReceiveRTT checks the RTT sample from the in-flight record and RFC
// 6298's first and second updates.
func TestReceiveRTT(t *testing.T) {
	a, s := predicted(t) // sent at 10 µs
	if _, r := a.f.Receive(s.build(), Clock{Us: 90}); r != OK {
		t.Fatal(r)
	}
	if srtt, rttvar, rto := a.f.RTT(); srtt != 80 || rttvar != 40 || rto != minRTO {
		t.Fatalf("after 80 µs: SRTT %d RTTVAR %d RTO %d", srtt, rttvar, rto)
	}
	a.send(t, []byte("x"), Clock{Us: 100})
	s.seq, s.ack = a.f.rcvNxt, a.f.sndNxt
	if _, r := a.f.Receive(s.build(), Clock{Us: 260}); r != OK {
		t.Fatal(r)
	}
	// RTTVAR = 3/4·40 + 1/4·|80−160| = 50; SRTT = 7/8·80 + 1/8·160 = 90.
	if srtt, rttvar, _ := a.f.RTT(); srtt != 90 || rttvar != 50 {
		t.Errorf("after 160 µs: SRTT %d RTTVAR %d, want 90 50", srtt, rttvar)
	}
	if a.f.fltLen != 0 || a.f.InFlight() != 0 {
		t.Errorf("%d records, %d bytes in flight after a full ACK", a.f.fltLen, a.f.InFlight())
	}
}
