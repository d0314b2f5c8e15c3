package fastflow

import (
	"bytes"
	"testing"

	"github.com/ustack-dev/ustack/internal/third_party/gvisor/pkg/tcpip/header"
)

// model is the reference the fuzzer holds Receive to: the predicted
// subset of RFC 9293 receive processing, written over int64 distances
// from the flow's edges instead of serial arithmetic, deciding first and
// changing state after.
type model struct {
	rcvNxt, sndUna, sndNxt, rcvEdge uint32
	sndWnd, sndWL1, sndWL2          uint32
	tsRecent, lastAckSent           uint32
	rawWnd                          uint16
	shift                           uint8
}

func modelOf(f *Flow) model {
	return model{
		rcvNxt: f.rcvNxt, sndUna: f.sndUna, sndNxt: f.sndNxt, rcvEdge: f.rcvEdge,
		sndWnd: f.sndWnd, sndWL1: f.sndWL1, sndWL2: f.sndWL2,
		tsRecent: f.tsRecent, lastAckSent: f.lastAckSent,
		rawWnd: uint16(f.predFlags), shift: f.sndShift,
	}
}

// dist is b − a as a signed distance (|b − a| < 2³¹).
func dist(a, b uint32) int64 { return int64(int32(b - a)) }

// layouts of the options a fuzzed segment carries.
const (
	optTS      = iota // NOP NOP TS: the predicted layout
	optNone           // no options
	optTSOther        // TS first, then NOP NOP: same length, other layout
	optSACK           // NOP NOP TS and a SACK block
	numOpt
)

// receive returns what the model expects of s, and the model after it.
func (m model) receive(s seg, opt int) (Reason, model) {
	fl := uint8(s.flags)
	n := int64(len(s.payload))
	switch {
	case fl&(flagSYN|flagFIN|flagRST|flagURG) != 0 || fl&flagACK == 0:
		return ControlFlags, m
	case fl&(flagECE|flagCWR) != 0:
		return ECN, m
	case opt == optSACK:
		return SACK, m
	case opt != optTS:
		return OptionsChange, m
	case dist(m.tsRecent, s.tsVal) < 0:
		return PAWS, m
	case dist(m.rcvNxt, s.seq) > 0:
		return OutOfOrder, m
	case dist(m.rcvNxt, s.seq) < 0:
		return OldData, m
	case dist(m.sndUna, s.ack) > dist(m.sndUna, m.sndNxt):
		return AckUnsent, m
	case dist(m.sndUna, s.ack) < 0:
		return AckOld, m
	case n > 0 && dist(m.rcvNxt, m.rcvEdge) < n:
		return BeyondWindow, m
	}
	changed := s.wnd != m.rawWnd
	newer := dist(m.sndWL1, s.seq) > 0 || s.seq == m.sndWL1 && dist(m.sndWL2, s.ack) >= 0
	if changed && newer {
		if s.wnd == 0 {
			return ZeroWindow, m
		}
		// The new right edge, from SND.UNA, against the old one.
		if dist(m.sndUna, s.ack)+int64(s.wnd)<<m.shift < int64(m.sndWnd) {
			return ShrunkWindow, m
		}
	}
	if n == 0 && s.ack == m.sndUna && m.sndNxt != m.sndUna && !changed {
		return DupAck, m
	}
	if dist(s.seq, m.lastAckSent) >= 0 {
		m.tsRecent = s.tsVal
	}
	m.sndUna = s.ack
	if newer {
		m.sndWnd, m.sndWL1, m.sndWL2, m.rawWnd = uint32(s.wnd)<<m.shift, s.seq, s.ack, s.wnd
	}
	m.rcvNxt += uint32(n)
	return OK, m
}

// FuzzReceive holds Receive to the model over segments built by gVisor's
// encoder around a client with up to four segments in flight, both
// sequence spaces starting near the 2³² wrap, and every window scale,
// and checks the flow's invariants after each segment and a reply.
func FuzzReceive(f *testing.F) {
	f.Add(uint8(0x18), int32(0), int32(200), uint16(512), uint8(0), int32(1), uint16(5), uint8(2), uint8(7))
	f.Add(uint8(0x10), int32(0), int32(0), uint16(512), uint8(0), int32(0), uint16(0), uint8(2), uint8(7))
	f.Add(uint8(0x10), int32(0), int32(100), uint16(0), uint8(0), int32(0), uint16(0), uint8(1), uint8(0))
	f.Add(uint8(0x11), int32(10), int32(-1), uint16(100), uint8(3), int32(-1), uint16(1448), uint8(4), uint8(14))
	f.Fuzz(func(t *testing.T, flags uint8, seqD, ackD int32, wnd uint16, opt uint8, tsD int32, plen uint16, segs, shift uint8) {
		sa, sb := states(1<<32-150, 1<<32-10)
		sa.SndShift = shift % 15
		sa.SndWnd = min(sa.SndWnd, 0xffff<<sa.SndShift)
		a, _ := newEnd(t, sa), newEnd(t, sb)
		for i := 0; i < int(segs%5); i++ {
			a.send(t, make([]byte, 100), Clock{Us: uint32(i)})
		}
		s := seg{
			seq: a.f.rcvNxt + uint32(seqD%3000), ack: a.f.sndUna + uint32(ackD%600),
			flags: header.TCPFlags(flags), wnd: wnd,
			ts: true, tsVal: a.f.tsRecent + uint32(tsD), tsEcr: 1,
			payload: bytes.Repeat([]byte{0xa5}, int(plen%1600)),
		}
		o := int(opt % numOpt)
		switch o {
		case optNone:
			s.ts = false
		case optTSOther:
			s.opts = []byte{8, 10, 0, 0, 0, 1, 0, 0, 0, 1, 1, 1}
		case optSACK:
			s.opts = []byte{1, 1, 8, 10, 0, 0, 0, 1, 0, 0, 0, 1, 1, 1, 5, 10, 0, 0, 0, 0, 0, 0, 0, 0}
		}
		m := modelOf(a.f)
		want, wm := m.receive(s, o)
		before := *a.f
		in, got := a.f.Receive(s.build(), Clock{Us: 1000})
		if got != want {
			t.Fatalf("reason %v, model %v (segment %+v)", got, want, s)
		}
		if got != OK {
			if *a.f != before {
				t.Fatalf("flow changed on %v", got)
			}
			return
		}
		if gm := modelOf(a.f); gm != wm {
			t.Fatalf("state\n got %+v\nwant %+v", gm, wm)
		}
		if !bytes.Equal(in.Payload, s.payload) || in.Acked != s.ack-before.sndUna {
			t.Fatalf("payload %d bytes, acked %d", len(in.Payload), in.Acked)
		}
		checkInvariants(t, a.f, &before)

		// A reply (or a pure ACK) after it: parsed back, ACK and edge
		// consistent.
		prev := *a.f
		fr := make([]byte, 2048)
		a.f.Write(a.ring, []byte("reply"))
		n, r := a.f.Cut(fr, a.ring, Clock{Us: 2000})
		if r == WindowLimited || r == InflightFull {
			n, r = a.f.Ack(fr, Clock{Us: 2000})
		}
		if r != OK {
			t.Fatalf("cut: %v", r)
		}
		p := parse(t, fr[:n])
		if p.tcp.AckNumber() != a.f.rcvNxt || p.tcp.SequenceNumber() != prev.sndNxt {
			t.Fatalf("reply seq %d ack %d", p.tcp.SequenceNumber(), p.tcp.AckNumber())
		}
		checkInvariants(t, a.f, &prev)
	})
}

// checkInvariants checks what holds after every event: SND.UNA ≤ SND.NXT
// ≤ the ring's end, no more in flight than the allowance let out, the
// in-flight record matching the bytes in flight, and the right edge and
// RCV.NXT never moving left.
func checkInvariants(t *testing.T, f, prev *Flow) {
	t.Helper()
	switch {
	case dist(f.sndUna, f.sndNxt) < 0 || dist(f.sndNxt, f.sndEnd) < 0:
		t.Fatalf("SND.UNA %d, SND.NXT %d, end %d out of order", f.sndUna, f.sndNxt, f.sndEnd)
	case f.room > min(f.cwnd, f.sndWnd):
		t.Fatalf("allowance %d over min(cwnd %d, SND.WND %d)", f.room, f.cwnd, f.sndWnd)
	case dist(f.rcvEdge, prev.rcvEdge) > 0 || dist(f.rcvNxt, prev.rcvNxt) > 0:
		t.Fatalf("right edge %d→%d, RCV.NXT %d→%d", prev.rcvEdge, f.rcvEdge, prev.rcvNxt, f.rcvNxt)
	case (f.fltLen == 0) != (f.sndUna == f.sndNxt):
		t.Fatalf("%d records for %d bytes in flight", f.fltLen, f.sndNxt-f.sndUna)
	}
	if f.fltLen > 0 {
		last := f.inflight[(int(f.fltHead)+int(f.fltLen)-1)%maxInflight]
		if last.end != f.sndNxt {
			t.Fatalf("newest record ends at %d, SND.NXT %d", last.end, f.sndNxt)
		}
	}
}
