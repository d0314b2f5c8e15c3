package fastflow

import (
	"bytes"
	"errors"
	"reflect"
	"testing"

	"github.com/ustack-dev/ustack/internal/third_party/gvisor/pkg/tcpip/header"
)

func TestSlab(t *testing.T) {
	for _, c := range []SlabConfig{{0, 4096}, {1, 4095}, {1, 2048}, {1, 3 << 12}} {
		if _, err := NewSlab(c); err == nil {
			t.Errorf("NewSlab(%+v) accepted", c)
		}
	}
	const n = 70 // more than a chunk of flows
	s, err := NewSlab(SlabConfig{Flows: n, RingSize: 4096})
	if err != nil {
		t.Fatal(err)
	}
	seen := map[uint32]bool{}
	flows := map[*Flow]bool{}
	for i := 0; i < n; i++ {
		id, err := s.Alloc()
		if err != nil || seen[id] || id >= n {
			t.Fatalf("alloc %d: id %d, %v", i, id, err)
		}
		seen[id] = true
		flows[s.Flow(id)] = true
	}
	if len(flows) != n {
		t.Fatalf("%d distinct flows for %d indices", len(flows), n)
	}
	if _, err := s.Alloc(); !errors.Is(err, ErrSlabFull) {
		t.Fatalf("alloc past Flows: %v", err)
	}
	rings := map[uint32]bool{}
	for i := 0; i < n; i++ {
		id, err := s.AllocRing()
		if err != nil || rings[id] {
			t.Fatalf("ring %d: id %d, %v", i, id, err)
		}
		rings[id] = true
		r := s.Ring(id)
		if len(r) != 4096 || cap(r) != 4096 {
			t.Fatalf("ring %d: len %d cap %d", id, len(r), cap(r))
		}
		r[0], r[4095] = byte(id+1), byte(id+1)
	}
	if _, err := s.AllocRing(); !errors.Is(err, ErrSlabFull) {
		t.Fatalf("ring past Flows: %v", err)
	}
	for id := range rings {
		if r := s.Ring(id); r[0] != byte(id+1) || r[4095] != byte(id+1) {
			t.Errorf("ring %d overlaps another", id)
		}
	}
	s.FreeRing(5)
	if id, err := s.AllocRing(); err != nil || id != 5 {
		t.Errorf("ring realloc: %d, %v", id, err)
	}
	sa, _ := states(1, 2)
	if err := s.Flow(1).Init(&sa); err != nil {
		t.Fatal(err)
	}
	s.Free(1)
	if s.Len() != n-1 || *s.Flow(1) != (Flow{}) {
		t.Errorf("after Free: %d in use, flow not cleared", s.Len())
	}
	if id, err := s.Alloc(); err != nil || id != 1 {
		t.Errorf("realloc: %d, %v", id, err)
	}
}

// A slab makes its memory as flows and rings are taken, not at NewSlab.
func TestSlabGrowsWithUse(t *testing.T) {
	s, err := NewSlab(DefaultSlabConfig())
	if err != nil {
		t.Fatal(err)
	}
	if s.made != 0 || s.madeRings != 0 {
		t.Fatalf("NewSlab made %d flow chunks, %d ring chunks", s.made, s.madeRings)
	}
	for i := 0; i < chunkFlows+1; i++ {
		if _, err := s.Alloc(); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := s.AllocRing(); err != nil {
		t.Fatal(err)
	}
	if s.made != 2 || s.madeRings != 1 {
		t.Fatalf("%d flows made %d flow chunks, one ring %d ring chunks", chunkFlows+1, s.made, s.madeRings)
	}
}

// TestInitRefuses covers the states Init refuses (ErrState).
func TestInitRefuses(t *testing.T) {
	for name, mod := range map[string]func(*State){
		"in flight":         func(s *State) { s.SndNxt++ },
		"MSS 0":             func(s *State) { s.MSS = 0 },
		"scale 15":          func(s *State) { s.RcvShift = 15 },
		"zero window":       func(s *State) { s.SndWnd = 0 },
		"edge behind":       func(s *State) { s.RcvEdge = s.RcvNxt - 1 },
		"ACK ahead":         func(s *State) { s.LastAckSent = s.RcvNxt + 1 },
		"space over scale":  func(s *State) { s.RcvSpace = 0x10000 << s.RcvShift },
		"window over scale": func(s *State) { s.SndWnd = 0x10000 << s.SndShift },
	} {
		st, _ := states(1, 2)
		mod(&st)
		var f Flow
		if err := f.Init(&st); !errors.Is(err, ErrState) {
			t.Errorf("%s: %v", name, err)
		}
	}
	st, _ := states(1, 2)
	var f Flow
	if err := f.Init(&st); err != nil {
		t.Fatal(err)
	}
	got := f.Export()
	if got.SndUna != st.SndUna || got.RcvEdge != st.RcvEdge || got.SrcIP != st.SrcIP || got.DstMAC != st.DstMAC ||
		got.DstPort != st.DstPort || !got.TS || got.TSRecent != st.TSRecent || got.RTO != initialRTO {
		t.Errorf("export %+v of %+v", got, st)
	}
}

// A flow exported with segments in flight and imported by InitInFlight
// behaves as the original: the same next segment, the same release and
// RTT sample when the peer acknowledges.
func TestInitInFlightContinues(t *testing.T) {
	a, b := newPair(t, 100, 9000)
	clk := Clock{Us: 1000, Ms: 1}
	for i := 0; i < 3; i++ {
		fr := a.send(t, []byte("request "+string(rune('0'+i))), clk)
		if _, r := b.f.Receive(fr, clk); r != OK {
			t.Fatalf("receive %d: %v", i, r)
		}
		clk.Us += 10
	}
	st := a.f.Export()
	if len(st.InFlight) != 3 {
		t.Fatalf("%d segments in flight, want 3", len(st.InFlight))
	}
	unacked := make([]byte, a.f.InFlight())
	mask := uint32(len(a.ring) - 1)
	for i := range unacked {
		unacked[i] = a.ring[(st.SndUna+uint32(i))&mask]
	}
	s, err := NewSlab(SlabConfig{Flows: 1, RingSize: 4096})
	if err != nil {
		t.Fatal(err)
	}
	id, _ := s.Alloc()
	r, _ := s.AllocRing()
	c := &end{slab: s, f: s.Flow(id), ring: s.Ring(r)}
	if err := c.f.InitInFlight(&st, c.ring, unacked); err != nil {
		t.Fatal(err)
	}
	// Counters start again at a promotion; the rest is the same.
	noCounts := func(st State) State {
		st.SegsIn, st.SegsOut, st.BytesIn, st.BytesOut = 0, 0, 0, 0
		return st
	}
	if got, want := noCounts(c.f.Export()), noCounts(a.f.Export()); !reflect.DeepEqual(got, want) {
		t.Fatalf("imported state differs:\n got %+v\nwant %+v", got, want)
	}
	// The peer acknowledges the first two; both flows release the same.
	ack := b.f.Export()
	ackFr := seg{seq: ack.SndNxt, ack: st.InFlight[1].End, flags: header.TCPFlagAck, wnd: 512, ts: true, tsVal: 6000, tsEcr: 1}.build()
	ia, ra := a.f.Receive(ackFr, clk)
	ic, rc := c.f.Receive(ackFr, clk)
	if ra != OK || rc != OK || ia.Acked != ic.Acked || ia.Acked == 0 {
		t.Fatalf("ack: original %+v %v, imported %+v %v", ia, ra, ic, rc)
	}
	if got, want := noCounts(c.f.Export()), noCounts(a.f.Export()); !reflect.DeepEqual(got, want) {
		t.Fatalf("after the ACK:\n got %+v\nwant %+v", got, want)
	}
	fa := a.send(t, []byte("next"), clk)
	fc := c.send(t, []byte("next"), clk)
	if !bytes.Equal(fa, fc) {
		t.Fatalf("next segment differs")
	}
	// Refusals: a record that does not end at SND.NXT, bytes missing.
	bad := st
	bad.InFlight = bad.InFlight[:2]
	if err := c.f.InitInFlight(&bad, c.ring, unacked); !errors.Is(err, ErrState) {
		t.Fatalf("short record: %v", err)
	}
	if err := c.f.InitInFlight(&st, c.ring, unacked[1:]); !errors.Is(err, ErrState) {
		t.Fatalf("short bytes: %v", err)
	}
}

// ProbeAt is the deadline netstack keeps for the segments in flight.
// With tail loss probes (State.Probe) it is the probe's, armed as
// netstack's RACK-TLP arms it: at each send, 2·SRTT plus the peer's
// worst-case delayed ACK for one segment in flight, plus 2 ms for more;
// at an ACK of some with more in flight, from the ACK with the segments
// outstanding before it; not capped by the retransmission deadline, which
// netstack arms only after the probe. Without probes it is the
// retransmission deadline.
func TestProbeAt(t *testing.T) {
	a, _ := newPair(t, 100, 9000)
	clk := Clock{Us: 1000, Ms: 1}
	a.send(t, []byte("one"), clk)
	if got, want := a.f.ProbeAt(), a.f.LossAt(); got != want {
		t.Fatalf("without probes: deadline %d, want the loss deadline %d", got, want)
	}

	a, _ = newPair(t, 100, 9000)
	a.f.flags |= flagProbe
	a.send(t, []byte("one"), clk)
	if got, want := a.f.ProbeAt(), clk.Us+initialRTO; got != want {
		t.Fatalf("no RTT sample: probe at %d, want %d", got, want)
	}
	a.f.sampleRTT(300)
	clk.Us += 50
	a.send(t, []byte("two"), clk)
	if got, want := a.f.ProbeAt(), clk.Us+600+probeMin; got != want {
		t.Errorf("two segments: probe at %d, want %d", got, want)
	}
	a.f.lossAt = clk.Us + 100
	if got, want := a.f.ProbeAt(), clk.Us+600+probeMin; got != want {
		t.Errorf("loss deadline sooner: probe at %d, want %d (not capped)", got, want)
	}

	// An ACK of the first segment: the probe from the ACK, with the two
	// segments outstanding before it.
	ack := seg{seq: a.f.rcvNxt, ack: a.f.sndUna + 3, flags: header.TCPFlagAck, wnd: 512, ts: true, tsVal: 2000, tsEcr: 5001}
	clk.Us += 400
	if _, r := a.f.Receive(ack.build(), clk); r != OK {
		t.Fatal(r)
	}
	if got, want := a.f.ProbeAt(), clk.Us+2*a.f.srtt+probeMin; got != want {
		t.Errorf("after an ACK of one of two: probe at %d, want %d", got, want)
	}
	// The last one alone in flight: the next send counts one segment.
	st := a.f.Export()
	if !st.Probe || st.ProbeAt != a.f.ProbeAt() {
		t.Errorf("Export: Probe %v, ProbeAt %d; want true, %d", st.Probe, st.ProbeAt, a.f.ProbeAt())
	}
}

// InitInFlight takes the slow path's probe deadline, or makes one from the
// last segment's send time.
func TestInitInFlightProbe(t *testing.T) {
	for _, given := range []uint32{0, 77_777} {
		a, _ := newPair(t, 100, 9000)
		st := a.f.Export()
		st.Probe, st.ProbeAt, st.SRTT = true, given, 500
		st.SndNxt = st.SndUna + 10
		st.InFlight = []Sent{{End: st.SndUna + 4, At: 1000}, {End: st.SndNxt, At: 1200}}
		var f Flow
		if err := f.InitInFlight(&st, a.ring, make([]byte, 10)); err != nil {
			t.Fatal(err)
		}
		want := given
		if want == 0 {
			want = 1200 + 2*500 + probeMin
		}
		if got := f.ProbeAt(); got != want {
			t.Errorf("ProbeAt given %d: %d, want %d", given, got, want)
		}
	}
}

// A state with data received and not yet acknowledged (RCV.NXT past
// Last.ACK.sent) comes in owing its ACK, due when the state says; the
// next segment cut carries it.
func TestInitAckOwed(t *testing.T) {
	st, _ := states(100, 9000)
	st.LastAckSent = st.RcvNxt - 10
	st.DelAckAt = 4242
	var f Flow
	if err := f.Init(&st); err != nil {
		t.Fatal(err)
	}
	if owed, due := f.AckOwed(); !owed || due != 4242 {
		t.Fatalf("AckOwed() = %v, %d; want true, 4242", owed, due)
	}
	fr := make([]byte, 128)
	if _, r := f.Ack(fr, Clock{Us: 1000, Ms: 1}); r != OK {
		t.Fatal(r)
	}
	if owed, _ := f.AckOwed(); owed || f.Export().LastAckSent != st.RcvNxt {
		t.Fatalf("after the ACK: owed %v, Last.ACK.sent %d, want %d", owed, f.Export().LastAckSent, st.RcvNxt)
	}
}

// Rings all free in a chunk go back to the runtime, but for one chunk's
// worth kept spare; rings are made again as flows need them.
func TestSlabGivesRingsBack(t *testing.T) {
	s, rings := slabWithRings(t, 4096, 3*ringChunk)
	if s.madeRings != 3 {
		t.Fatalf("%d ring chunks made for %d rings, want 3", s.madeRings, len(rings))
	}
	for _, r := range rings {
		s.FreeRing(r)
	}
	if s.madeRings != 1 || len(s.freeRings) != ringChunk {
		t.Fatalf("all free: %d chunks kept, %d free rings; want 1 and %d", s.madeRings, len(s.freeRings), ringChunk)
	}
	seen := map[uint32]bool{}
	for range 2 * ringChunk {
		r, err := s.AllocRing()
		if err != nil || seen[r] {
			t.Fatalf("ring %d, %v (seen before: %v)", r, err, seen[r])
		}
		seen[r] = true
		b := s.Ring(r)
		b[0], b[len(b)-1] = 1, 1 // made and addressable
	}
	if s.madeRings != 2 {
		t.Fatalf("%d ring chunks for %d rings, want 2", s.madeRings, 2*ringChunk)
	}
}

// slabWithRings returns a slab of 64 flows with rings of ringSize bytes,
// n of them taken.
func slabWithRings(t *testing.T, ringSize, n int) (*Slab, []uint32) {
	t.Helper()
	s, err := NewSlab(SlabConfig{Flows: 64, RingSize: ringSize})
	if err != nil {
		t.Fatal(err)
	}
	rings := make([]uint32, n)
	for i := range rings {
		if rings[i], err = s.AllocRing(); err != nil {
			t.Fatal(err)
		}
	}
	return s, rings
}
