package reflector

import (
	"bytes"
	"encoding/binary"
	"testing"

	"github.com/ustack-dev/ustack/internal/testpkt"
	"github.com/ustack-dev/ustack/offload"
)

// linuxSynOpts are the options of a Linux client's SYN: MSS 1460,
// SACK permitted, timestamps, window scale 7.
var linuxSynOpts = []byte{2, 4, 0x05, 0xb4, 4, 2, 8, 10, 0, 0, 0, 1, 0, 0, 0, 0, 1, 3, 3, 7}

// bulkSegment returns a frame from the client (port 40000) to the
// floor's port: a TCP segment with the given fields, options and
// payload, in a buffer with a UMEM frame's room after it.
func bulkSegment(port uint16, seq, ack uint32, flags byte, wnd uint16, opts, payload []byte) []byte {
	seg := make([]byte, 20+len(opts), 20+len(opts)+len(payload))
	binary.BigEndian.PutUint16(seg[0:], 40000)
	binary.BigEndian.PutUint16(seg[2:], port)
	binary.BigEndian.PutUint32(seg[4:], seq)
	binary.BigEndian.PutUint32(seg[8:], ack)
	seg[12] = byte((20+len(opts))/4) << 4
	seg[13] = flags
	binary.BigEndian.PutUint16(seg[14:], wnd)
	copy(seg[20:], opts)
	seg = append(seg, payload...)
	binary.BigEndian.PutUint16(seg[16:], testpkt.Checksum(append(testpkt.PseudoHeader(tcpClient, tcpFloor, testpkt.ProtoTCP, len(seg)), seg...)))
	f := testpkt.IPv4(tcpClient, tcpFloor, testpkt.ProtoTCP, seg)
	return append(make([]byte, 0, 2048), f...)
}

// fromFloor checks that f is a valid segment from the floor's port to
// the client and returns it parsed.
func fromFloor(t *testing.T, f []byte, port uint16) tcp4 {
	t.Helper()
	if v := offload.Verify(f); v != offload.Valid {
		t.Fatalf("checksums: %v", v)
	}
	s, ok := parseTCP4(f)
	if !ok || s.src.Addr() != tcpFloor || s.src.Port() != port || s.dst.Addr() != tcpClient || s.dst.Port() != 40000 ||
		!bytes.Equal(f[0:6], testpkt.MACA) || !bytes.Equal(f[6:12], testpkt.MACB) {
		t.Fatalf("not a segment from the floor's port %d to the client: %+v", port, s)
	}
	return s
}

// newTestBulk returns the floor's TCP bulk endpoints (sink on port 7001,
// source on 7002) with their responder and counters, and in, which feeds
// them one segment written in a frame and returns what they answer in
// place (the frame's length) and the flow.
func newTestBulk(t *testing.T) (*Responder, *TCPBulkStats, *bulkTCP, func([]byte) (int, *bulkFlow)) {
	r := &Responder{MAC: testpkt.MACB, IP: tcpFloor.As4()}
	st := new(TCPBulkStats)
	b := newBulkTCP(r, st, 7000, 1500)
	in := func(f []byte) (int, *bulkFlow) {
		t.Helper()
		s, ok := parseTCP4(f)
		if !ok {
			t.Fatal("unparsable segment")
		}
		return b.input(f[:cap(f)], s)
	}
	return r, st, b, in
}

// TestTCPSink: the sink answers a Linux SYN with its MSS and a window
// scale, takes data in order (a retransmission's new part too, a segment
// past RCV.NXT not at all, counted), acknowledges RCV.NXT with an 8 MiB
// window, answers the client's FIN (again if it comes again) with the
// count of what it took and a FIN, across sequence number wrap, and
// allocates nothing per segment.
func TestTCPSink(t *testing.T) {
	r, st, _, in := newTestBulk(t)
	const port = 7001
	const isn = 0xfffff000
	f := bulkSegment(port, isn, 0, tcpSyn, 64240, linuxSynOpts, nil)
	n, _ := in(f)
	syn := fromFloor(t, f[:n], port)
	if syn.flags != tcpSyn|tcpAck || syn.seq != isn || syn.ack != isn+1 || syn.mss != 1460 || syn.wscale != bulkWScale || !syn.sackOK || syn.ts {
		t.Fatalf("SYN-ACK %+v", syn)
	}
	ack := func(fl *bulkFlow, want uint32) {
		t.Helper()
		if fl == nil {
			t.Fatal("no ACK owed")
		}
		out := make([]byte, 2048)
		a := fromFloor(t, out[:fl.writeAck(out)], port)
		if a.flags != tcpAck || a.ack != want || a.seq != isn+1 || a.wnd != 0xffff || len(a.payload) != 0 {
			t.Errorf("ACK %+v, want ack %#x", a, want)
		}
	}
	payload := make([]byte, 3000)
	for i := range payload {
		payload[i] = byte(i * 13)
	}
	next := uint32(isn + 1)
	for i := range 3 {
		_, fl := in(bulkSegment(port, next, isn+1, tcpAck, 502, nil, payload[:1000]))
		next += 1000
		ack(fl, next)
		if i == 0 {
			// A pure ACK is owed nothing.
			if n, fl := in(bulkSegment(port, next, isn+1, tcpAck, 502, nil, nil)); n != 0 || fl != nil {
				t.Error("a pure ACK answered")
			}
		}
	}
	// Past a hole: acknowledged at once, RCV.NXT again, the range in a
	// SACK block.
	f = bulkSegment(port, next+1000, isn+1, tcpAck, 502, nil, payload[:1000])
	n, _ = in(f)
	if a := fromFloor(t, f[:n], port); a.flags != tcpAck || a.ack != next || a.seq != isn+1 || len(a.payload) != 0 ||
		n != tcpTSHdr-tcpTSLen+12 || !bytes.Equal(f[n-12:n-8], []byte{1, 1, 5, 10}) ||
		binary.BigEndian.Uint32(f[n-8:]) != next+1000 || binary.BigEndian.Uint32(f[n-4:]) != next+2000 {
		t.Errorf("answer to a segment past a hole: %+v, options % x, want ack %#x and a SACK block", a, f[tcpTSHdr-tcpTSLen:n], next)
	}
	if st.OutOfOrder.Load() != 1 {
		t.Errorf("%d out of order, want 1", st.OutOfOrder.Load())
	}
	var fl *bulkFlow
	_, fl = in(bulkSegment(port, next-500, isn+1, tcpAck, 502, nil, payload[:1000]))
	next += 500
	ack(fl, next)
	_, fl = in(bulkSegment(port, next-1000, isn+1, tcpAck, 502, nil, payload[:1000]))
	ack(fl, next) // all of it old
	// The hole filled: RCV.NXT moves past the range that came after it.
	_, fl = in(bulkSegment(port, next, isn+1, tcpAck, 502, nil, payload[:500]))
	next += 1500
	ack(fl, next)
	if st.SinkBytes.Load() != 5000 {
		t.Errorf("took %d bytes, want 5000", st.SinkBytes.Load())
	}
	// An ACK with SACK blocks allocates nothing either.
	fl.holes.add(next+5000, next+6000)
	sackOut := make([]byte, 2048)
	if a := testing.AllocsPerRun(100, func() { fl.writeAck(sackOut) }); a != 0 {
		t.Errorf("%v allocations per ACK with SACK blocks", a)
	}
	fl.holes = seqRanges{}

	keep := bulkSegment(port, next, isn+1, tcpAck, 502, nil, payload[:1000])
	seg := append(make([]byte, 0, 2048), keep...)
	out := make([]byte, 2048)
	if a := testing.AllocsPerRun(100, func() {
		seg = append(seg[:0], keep...)
		_, fl := in(seg)
		fl.writeAck(out)
		fl.rcvNxt -= 1000 // the same segment again, new each time
		fl.received -= 1000
	}); a != 0 {
		t.Errorf("%v allocations per segment", a)
	}

	for range 2 { // the FIN again: the same answer
		f = bulkSegment(port, next, isn+1, tcpAck|tcpFin, 502, nil, payload[:100])
		n, _ = in(f)
		c := fromFloor(t, f[:n], port)
		if c.flags != tcpAck|tcpPsh|tcpFin || c.seq != isn+1 || c.ack != next+101 || len(c.payload) != 8 || binary.BigEndian.Uint64(c.payload) != 5100 {
			t.Errorf("answer to FIN: %+v, count %x", c, c.payload)
		}
	}
	_, fl = in(bulkSegment(port, next+101, isn+10, tcpAck, 502, nil, []byte("late")))
	if fl == nil {
		t.Fatal("data after the FIN: no ACK owed")
	}
	out = make([]byte, 2048)
	if a := fromFloor(t, out[:fl.writeAck(out)], port); a.seq != isn+10 || a.ack != next+101 {
		t.Errorf("ACK after the FIN: seq %#x ack %#x", a.seq, a.ack)
	}

	bad := bulkSegment(port, next, isn+1, tcpAck, 502, nil, payload[:10])
	bad[len(bad)-1] ^= 1
	other := bulkSegment(port, next, isn+1, tcpAck, 502, nil, payload[:10])
	binary.BigEndian.PutUint16(other[ethLen+ipv4Len:], 40001)
	binary.BigEndian.PutUint16(other[ethLen+ipv4Len+16:], binary.BigEndian.Uint16(other[ethLen+ipv4Len+16:])-1)
	for name, f := range map[string][]byte{"a bad checksum": bad, "another flow": other} {
		if n, fl := in(f); n != 0 || fl != nil {
			t.Errorf("%s answered", name)
		}
	}
	if r.BadChecksums.Load() != 1 || st.Ignored.Load() != 1 {
		t.Errorf("%d bad checksums, %d ignored; want 1, 1", r.BadChecksums.Load(), st.Ignored.Load())
	}

	// A link that needs multi-buffer frames: nothing answered.
	b9 := newBulkTCP(r, st, 7000, 9000)
	f = bulkSegment(port, isn, 0, tcpSyn, 64240, linuxSynOpts, nil)
	s9, ok := parseTCP4(f)
	if !ok {
		t.Fatal("unparsable segment")
	}
	if n, _ := b9.input(f[:cap(f)], s9); n != 0 {
		t.Error("a SYN answered at MTU 9000")
	}
}

// TestSeqRanges: ranges past RCV.NXT merge where they touch or overlap,
// across sequence number wrap, the latest grown first, at most eight are
// kept, and RCV.NXT moves past those that start at or before it.
func TestSeqRanges(t *testing.T) {
	base := uint32(0xffffff00) // the ranges from base+256 on wrap
	var q seqRanges
	q.add(base+100, base+200)
	q.add(base+300, base+400)
	q.add(base+200, base+300) // joins both
	if q.n != 1 || q.r[0] != [2]uint32{base + 100, base + 400} {
		t.Fatalf("ranges %v", q.r[:q.n])
	}
	for i := range uint32(8) { // seven more, then one too many
		q.add(base+500+200*i, base+600+200*i)
	}
	if q.n != 8 || q.r[0] != [2]uint32{base + 1700, base + 1800} || q.r[7] != [2]uint32{base + 100, base + 400} {
		t.Fatalf("%d ranges, want 8, the latest first: %v", q.n, q.r[:q.n])
	}
	if got := q.take(base + 50); got != base+50 || q.n != 8 {
		t.Errorf("take before the ranges: %#x, %d left", got, q.n)
	}
	if got := q.take(base + 100); got != base+400 || q.n != 7 {
		t.Errorf("take at a range: %#x, %d left", got, q.n)
	}
	q.add(base+350, base+950) // overlaps three
	if q.n != 5 || q.r[0] != [2]uint32{base + 350, base + 1000} {
		t.Errorf("after merging: %v", q.r[:q.n])
	}
	if got := q.take(base + 400); got != base+1000 || q.n != 4 {
		t.Errorf("take after merging: %#x, %d left: %v", got, q.n, q.r[:q.n])
	}
}

// TestTCPSource drives the source against a receiver in memory, as a
// kernel client's TCP receives: in order only, one cumulative ACK a
// segment, a window of 64 KiB scaled by 7. The source sends full
// segments up to the window's right edge and never past it, the bytes
// arrive in order as the pattern, a segment lost once is sent again
// after three duplicate ACKs (counted as one retransmission), and the
// FIN after the stream's end is acknowledged.
func TestTCPSource(t *testing.T) {
	_, st, _, in := newTestBulk(t)
	const port = 7002
	const isn = 0xffff0000
	f := bulkSegment(port, isn, 0, tcpSyn, 64240, linuxSynOpts, nil)
	n, _ := in(f)
	if syn := fromFloor(t, f[:n], port); syn.flags != tcpSyn|tcpAck || syn.ack != isn+1 || syn.mss != 1460 {
		t.Fatalf("SYN-ACK %+v", syn)
	}
	var req [8]byte
	binary.BigEndian.PutUint64(req[:], 1e9)
	_, fl := in(bulkSegment(port, isn+1, isn+1, tcpAck|tcpPsh, 502, nil, req[:]))
	if fl == nil || !fl.source || fl.streamFor != 1e9 || fl.rcvNxt != isn+9 {
		t.Fatalf("request: flow %+v", fl)
	}

	const wnd = 64 << 10
	const total = 1 << 20
	pattern := newPattern(fl.mss)
	var got []byte
	rcvNxt := uint32(isn + 1)
	lost := false
	out := make([]byte, 2048)
	finAcked := false
	// The right edge the receiver announced: its request's window
	// (502 << 7), beyond the SYN's.
	edge := uint32(isn + 1 + 502<<7)
	for round := 0; round < 10000 && !finAcked; round++ {
		sent := 0
		for {
			m, p := fl.nextSegment(out, pattern)
			if m == 0 {
				break
			}
			s := fromFloor(t, out[:m], port)
			sent++
			if seqGT(s.seq+uint32(p), edge) {
				t.Fatalf("segment %#x+%d past the window's right edge %#x", s.seq, p, edge)
			}
			if p != fl.mss && !fl.ended {
				t.Fatalf("a %d-byte segment in the stream", p)
			}
			if s.ack != isn+9 {
				t.Fatalf("segment acknowledges %#x", s.ack)
			}
			if len(got) > 100_000 && !lost {
				lost = true
				continue
			}
			switch {
			case s.seq == rcvNxt && s.flags&tcpFin != 0:
				rcvNxt++
			case s.seq == rcvNxt:
				got = append(got, s.payload...)
				rcvNxt += uint32(p)
			}
			if len(got) >= total {
				fl.endStream()
			}
			// One ACK a segment, as a receiver that acknowledges each.
			in(bulkSegment(port, isn+9, rcvNxt, tcpAck, wnd>>7, nil, nil))
			if seqGT(rcvNxt+wnd, edge) {
				edge = rcvNxt + wnd
			}
			if fl.fastRetransmit() {
				st.Retransmits.Add(1)
			}
			finAcked = fl.finAcked()
		}
		if sent == 0 && !finAcked {
			t.Fatalf("round %d: nothing to send, SND.UNA %#x SND.NXT %#x edge %#x", round, fl.sndUna, fl.sndNxt, fl.sndEdge)
		}
	}
	if !finAcked {
		t.Fatal("the FIN was never acknowledged")
	}
	off := 0
	for ; off < len(got); off += patternPeriod {
		if !bytes.Equal(got[off:min(off+patternPeriod, len(got))], pattern[:min(patternPeriod, len(got)-off)]) {
			t.Fatalf("bytes %d on are not the pattern", off)
		}
	}
	if len(got) < total || st.Retransmits.Load() != 1 {
		t.Errorf("received %d bytes with %d retransmissions; want %d or more, and one", len(got), st.Retransmits.Load(), total)
	}
	// The client's count and FIN after the stream: acknowledged.
	_, fl = in(bulkSegment(port, isn+9, rcvNxt, tcpAck|tcpPsh|tcpFin, 502, nil, make([]byte, 8)))
	if fl == nil {
		t.Fatal("the client's FIN: no ACK owed")
	}
	if a := fromFloor(t, out[:fl.writeAck(out)], port); a.ack != isn+9+8+1 || a.seq != rcvNxt {
		t.Errorf("ACK of the client's FIN: seq %#x ack %#x", a.seq, a.ack)
	}

	out2 := make([]byte, 2048)
	fl.ended, fl.sndEdge = false, fl.sndNxt+1<<30
	if a := testing.AllocsPerRun(100, func() { fl.nextSegment(out2, pattern) }); a != 0 {
		t.Errorf("%v allocations per segment", a)
	}
}
